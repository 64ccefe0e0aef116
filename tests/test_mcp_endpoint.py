"""Rio's MCP endpoint end to end: the ``mcp`` SDK's client drives ``rio mcp`` over real stdio,
against a real ``rio serve`` — every tool, confinement, unsaved text, a proposal approved into
one undo step, a question declined after its timeout, refusals outside a turn and for a bad,
missing or ended token. The turn owner is played by this test (gate.turn begin/end and the
agent.turn events a session's turn publishes)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rio.mcp.entry import end_conversation, mcp_server_entry
from tests.support import REPO, RioServer, rio_env

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

QUESTION_TIMEOUT_S = 4.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("mcp")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    root = base / "proj"
    root.mkdir()
    (root / "a.py").write_text("x = 1\ny = 2\nz = 3\n")
    (root / "notes.txt").write_text("alpha\nbeta\n")
    os.symlink(outside / "secret.txt", root / "link_out")
    env = rio_env(base)
    env["RIO_AGENT_QUESTION_TIMEOUT_S"] = str(QUESTION_TIMEOUT_S)
    srv = RioServer(root, base, env=env).start()
    yield srv
    srv.stop()


@pytest.fixture
def entry(server, monkeypatch):
    """The mcpServers entry the turn owner would pass, for a fresh conversation."""
    for key in ("RIO_STATE_DIR", "RIO_RUNTIME_DIR"):
        monkeypatch.setenv(key, server.env[key])
    monkeypatch.setenv("RIO_INSTANCE", server.name)
    conversation = f"c{time.monotonic_ns() % 10**9}"
    made = mcp_server_entry(conversation, server.root, agent="tester")
    made["conversation"] = conversation
    yield made
    end_conversation(conversation, server.root.resolve())


@contextlib.contextmanager
def turn(server: RioServer, conversation: str, text: str = "do it"):
    """What the turn owner does around a turn: the gate's begin/end and agent.turn events."""
    owner = server.connect("test-owner")
    owner.call("bus.register", {"name": "test-owner"})
    tid = f"{conversation}.1"
    owner.publish("agent.turn", {"conversation": conversation, "turn": tid,
                                 "state": "started", "text": text})
    owner.call("gate.turn", {"conversation": conversation, "turn": tid, "event": "begin"})
    try:
        yield tid
    finally:
        owner.call("gate.turn", {"conversation": conversation, "turn": tid, "event": "end"})
        owner.publish("agent.turn", {"conversation": conversation, "turn": tid,
                                     "state": "done"})
        owner.call("system.ping", {})     # the events are out before the connection closes
        owner.close()


def run_client(entry: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Start rio mcp as the agent would (its environment has none of Rio's variables) and
    make the calls in order; returns each CallToolResult (and the tool list first)."""
    from mcp import Client, StdioServerParameters
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/root"),
           "PYTHONPATH": str(REPO)}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env,
                                   cwd=None)

    async def go() -> list[Any]:
        out: list[Any] = []
        async with Client(params, mode="legacy") as client:
            out.append((await client.list_tools()).tools)
            for name, args in calls:
                out.append(await client.call_tool(name, args))
        return out
    return asyncio.run(go())


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


class Approver:
    """Answers every agent.propose with ``decision`` through agent.approve, as a UI would."""

    def __init__(self, server: RioServer, decision: str = "approve"):
        self.server = server
        self.decision = decision
        self.seen: list[dict[str, Any]] = []
        self.answers: list[Any] = []
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(10)

    def _run(self) -> None:
        from rio.protocol.frames import thaw
        conn = self.server.connect("approver", subscribe=("agent.propose",))
        pending: list[dict[str, Any]] = []
        conn.subscribe("agent.propose", lambda e: pending.append(thaw(e.data)))
        conn.call("system.ping", {})
        self.ready.set()
        try:
            while not self.stop.is_set():
                conn.drain()
                while pending:
                    data = pending.pop(0)
                    self.seen.append(data)
                    self.answers.append(conn.call("agent.approve", {
                        "turn": data["turn"], "proposal": data["proposal"],
                        "decision": self.decision}, timeout=30))
                self.stop.wait(0.02)
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def test_every_tool_reads_unsaved_text_and_is_annotated(server, entry):
    opened = server.call("buffer.open", {"path": "a.py"})
    server.call("buffer.replace", {"buffer": opened["buffer"], "start": 0, "end": 0,
                                   "text": "UNSAVED = 0\n", "base_version": opened["version"]})
    try:
        with turn(server, entry["conversation"]):
            tools, listed, read, ranged, searched, selection, shown = run_client(entry, [
                ("list_buffers", {}), ("read_buffer", {"path": "a.py"}),
                ("read_buffer", {"path": str(server.root / "a.py"), "start_line": 2,
                                 "end_line": 3}),
                ("search_project", {"query": "UNSAVED"}), ("get_selection", {}),
                ("open_in_editor", {"path": "notes.txt", "line": 2})])
    finally:
        server.call("buffer.close", {"buffer": opened["buffer"], "discard": True})
    hints = {t.name: t.annotations for t in tools}
    assert hints["read_buffer"].read_only_hint is True
    assert hints["propose_edit"].destructive_hint is True
    assert hints["propose_create"].read_only_hint is False
    assert len(hints) == 7
    assert not listed.is_error
    assert {"path": "a.py", "unsaved": True}.items() <= \
        listed.structured_content["buffers"][0].items()
    assert read.structured_content["text"].startswith("UNSAVED = 0\n")
    assert read.structured_content["unsaved"] is True
    assert ranged.structured_content["text"] == "x = 1\ny = 2\n"
    assert searched.structured_content["matches"] == ["a.py:1:1: UNSAVED = 0"]
    assert selection.structured_content["window"] is False
    assert "No desktop window" in selection.structured_content["message"]
    assert shown.structured_content["opened"] is False


@pytest.mark.parametrize("path", ["../outside/secret.txt", "/etc/passwd", "link_out"])
def test_paths_outside_the_project_are_refused(server, entry, path):
    with turn(server, entry["conversation"]):
        _, read, proposed = run_client(entry, [
            ("read_buffer", {"path": path}),
            ("propose_edit", {"path": path, "old_text": "TOP", "new_text": "x"})])
    for result in (read, proposed):
        assert result.is_error
        assert "outside" in text_of(result) and "SECRET" not in text_of(result)


def test_a_proposed_edit_approved_lands_as_one_undo_step(server, entry):
    approver = Approver(server)
    try:
        with turn(server, entry["conversation"], text="rename y"):
            _, first, second = run_client(entry, [
                ("propose_edit", {"path": "notes.txt", "old_text": "beta",
                                  "new_text": "gamma"}),
                ("propose_edit", {"path": str(server.root / "notes.txt"),  # absolute, inside
                                  "old_text": "alpha", "new_text": "delta"})])
    finally:
        approver.close()
    assert first.structured_content["applied"] is True, text_of(first)
    assert second.structured_content["applied"] is True, text_of(second)
    assert [s["kind"] for s in approver.seen] == ["edit", "edit"]
    assert all(s["proposal"].startswith("mcp-") and "+gamma" in approver.seen[0]["diff"]
               for s in approver.seen)
    assert approver.answers == [{"applied": True}, {"applied": True}]
    buf = next(b for b in server.call("buffer.list") if b.get("path") == "notes.txt")
    assert server.call("buffer.text", {"buffer": buf["buffer"]})["text"] == "delta\ngamma\n"
    assert (Path(server.root) / "notes.txt").read_text() == "alpha\nbeta\n"   # unsaved
    deadline = time.monotonic() + 10      # the merge runs when agent.turn says "done"
    while True:
        info = server.call("buffer.info", {"buffer": buf["buffer"]})
        if info.get("undo_label", "").startswith("Agent") or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert info["undo_label"] == "Agent: rename y"
    server.call("buffer.undo", {"buffer": buf["buffer"]})
    assert server.call("buffer.text", {"buffer": buf["buffer"]})["text"] == "alpha\nbeta\n"
    server.call("buffer.close", {"buffer": buf["buffer"], "discard": True})


def test_an_unanswered_question_is_declined_after_the_timeout(server, entry):
    with turn(server, entry["conversation"]):
        t0 = time.monotonic()
        _, created = run_client(entry, [("propose_create", {"path": "new.txt",
                                                             "text": "hello\n"})])
        waited = time.monotonic() - t0
    assert created.structured_content["applied"] is False
    assert "did not answer" in created.structured_content["message"]
    assert waited >= QUESTION_TIMEOUT_S
    assert not (Path(server.root) / "new.txt").exists()


def test_a_read_is_answered_while_a_proposal_waits_for_the_user(server, entry):
    """rio mcp serves calls at once: the question (unanswered, declined after its timeout)
    does not hold up a read made while it waits; each answer under its own request id."""
    from mcp import Client, StdioServerParameters
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/root"),
           "PYTHONPATH": str(REPO)}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
    ended: list[str] = []

    async def timed(name: str, call: Any) -> Any:
        result = await call
        ended.append(name)
        return result

    async def go() -> tuple[Any, Any]:
        async with Client(params, mode="legacy") as client:
            proposal = asyncio.ensure_future(timed("propose", client.call_tool(
                "propose_create", {"path": "waits.txt", "text": "later\n"})))
            # the question is out (so the call waits in rio mcp) before the read is made
            assert await asyncio.to_thread(watch.wait_for, lambda: asked, 20)
            read = await timed("read", client.call_tool("read_buffer", {"path": "a.py"}))
            return read, await proposal
    watch = server.connect("watch", subscribe=("agent.propose",))
    asked: list[Any] = []
    watch.subscribe("agent.propose", asked.append)
    try:
        watch.call("system.ping", {})
        with turn(server, entry["conversation"]):
            read, proposed = asyncio.run(go())
    finally:
        watch.close()
    assert ended == ["read", "propose"]
    assert "x = 1" in read.structured_content["text"], text_of(read)
    assert proposed.structured_content["applied"] is False
    assert not (Path(server.root) / "waits.txt").exists()


def test_outside_a_turn_every_call_is_refused(server, entry):
    _, result = run_client(entry, [("list_buffers", {})])
    assert result.is_error and "agent.outside_turn" in text_of(result)


def test_a_wrong_token_is_refused(server, entry, tmp_path):
    wrong = tmp_path / "wrong.token"
    wrong.write_text("not-the-token")
    os.chmod(wrong, 0o600)
    args = list(entry["args"])
    args[args.index("--token-file") + 1] = str(wrong)
    with turn(server, entry["conversation"]):
        _, result = run_client({**entry, "args": args}, [("list_buffers", {})])
    assert result.is_error and "auth.bad_token" in text_of(result)


def test_a_token_is_dead_once_its_conversation_ended(server, entry):
    token_file = Path(entry["args"][entry["args"].index("--token-file") + 1])
    token = token_file.read_text()
    end_conversation(entry["conversation"], server.root.resolve())
    assert not token_file.exists()
    with turn(server, entry["conversation"]):
        reply = server.connect("replay")
        try:
            from rio.protocol.errors import AuthError
            with pytest.raises(AuthError):
                reply.call("mcp.call", {"conversation": entry["conversation"], "token": token,
                                        "tool": "list_buffers", "args": {}})
        finally:
            reply.close()


def test_a_missing_token_file_stops_rio_mcp_with_the_reason(server, entry, tmp_path):
    import subprocess
    import sys
    args = list(entry["args"])
    args[args.index("--token-file") + 1] = str(tmp_path / "none.token")
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode != 0
    assert "bad_token" in done.stderr
    assert json.dumps(entry["args"])  # the entry itself stays JSON for session/new


def test_the_turn_limits_from_config_toml_refuse_and_tell_the_agent_to_stop(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    env = rio_env(tmp_path)
    config = Path(env["RIO_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text("[agent]\nmax_agent_changes_per_turn = 1\n"
                                        "max_agent_requests_per_turn = 3\n")
    srv = RioServer(root, tmp_path, env=env).start()
    saved = {k: os.environ.get(k) for k in ("RIO_STATE_DIR", "RIO_RUNTIME_DIR", "RIO_INSTANCE")}
    try:
        os.environ.update({"RIO_STATE_DIR": env["RIO_STATE_DIR"],
                           "RIO_RUNTIME_DIR": env["RIO_RUNTIME_DIR"], "RIO_INSTANCE": srv.name})
        made = mcp_server_entry("limits1", root)
        assert srv.call("gate.status")["limits"]["max_agent_changes"] == 1
        with turn(srv, "limits1"):
            _, shown, again, listed, over = run_client(made, [
                ("open_in_editor", {"path": "a.py"}), ("open_in_editor", {"path": "a.py"}),
                ("list_buffers", {}), ("list_buffers", {})])
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        srv.stop()
    assert not shown.is_error
    assert again.is_error and "limit of 1 changing" in text_of(again)
    assert "Stop now" in text_of(again)
    assert not listed.is_error
    assert over.is_error and "limit of 3 requests" in text_of(over)
    assert "what is left" in text_of(over)
