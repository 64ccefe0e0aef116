"""Rio's MCP endpoint end to end (ADR-0034): a real `rio serve`, a conversation with the fake
ACP agent, its session process giving the agent the endpoint — over HTTP with a bearer token
(the agent advertises ``mcpCapabilities.http``) or the stdio fallback ``rio mcp`` — and the
calls landing in the conversation's running turn: every tool, confinement, a proposal approved
into the turn's result and its one undo step, a question declined after its timeout, a call
the agent cancels, refusals outside a turn and for a missing, wrong, revoked or another
conversation's token, and the endpoint killed mid-turn coming back on the same address."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from rio.mcp.entry import read_token, token_path
from rio.protocol.errors import RioError
from tests.agent_events import AgentEvents
from tests.agent_processes import serve_fake_agent
from tests.support import REPO, RioServer, rio_env, wait_for

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

QUESTION_TIMEOUT_S = 3.0
TRANSPORTS = ["http", "stdio"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("mcp")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    root = base / "proj"
    root.mkdir()
    (root / "a.py").write_text("x = 1\ny = 2\nz = 3\n")
    (root / "notes.txt").write_text("alpha\nbeta\n")
    os.symlink(outside / "secret.txt", root / "link_out")
    script = base / "script.json"
    srv = serve_fake_agent(root, base, script, env={
        "RIO_AGENT_QUESTION_TIMEOUT_S": str(QUESTION_TIMEOUT_S),
        "RIO_MCP_PROGRESS_S": "0.3"})     # shipped: 15 s (opencode cuts a call at 60 s)
    yield srv, script
    srv.stop()


class Chat(AgentEvents):
    """A conversation with the fake agent, whose script this test writes."""

    def __init__(self, server: RioServer, script_file: Path, script: dict[str, Any],
                 transport: str):
        script_file.write_text(json.dumps({**script, "mcp_http": transport == "http"}))
        super().__init__(server, "mcp-endpoint")
        self.cid = self.call("agent.new", {"agent": "fake"})["conversation"]

    def send(self, text: str) -> str:
        return self.call("agent.send", {"conversation": self.cid, "text": text},
                         timeout=30)["turn"]

    def said(self, turn: str) -> list[str]:     # type: ignore[override]
        """What each of the fake agent's MCP calls answered, in order."""
        return super().said(turn).split("mcp: ")[1:]

    def close(self) -> None:
        self.end_session(self.cid)
        super().close()


@pytest.fixture
def chat(setup):
    server, script = setup
    made: list[Chat] = []

    def make(transport: str, turns: list[list[dict]], **more: Any) -> Chat:
        c = Chat(server, script, {"turns": turns, **more}, transport)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()


def mcp(tool: str, **args: Any) -> dict:
    return {"mcp": {"tool": tool, "args": args}}


def buffer_of(server: RioServer, path: str) -> dict:
    return server.call("buffer.open", {"path": path})


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_tool_reads_unsaved_text_and_an_approved_edit_is_the_turns(setup, chat,
                                                                         transport):
    server, _ = setup
    info = buffer_of(server, "a.py")
    server.call("buffer.replace", {"buffer": info["buffer"], "start": 0, "end": 0,
                                   "text": "# unsaved\n"})
    c = chat(transport, [[mcp("list_buffers"), mcp("read_buffer", path="a.py", start_line=1,
                                                   end_line=2),
                          mcp("search_project", query="beta"), mcp("get_selection"),
                          mcp("open_in_editor", path="notes.txt", line=2),
                          mcp("read_buffer", path="link_out"),
                          mcp("read_buffer", path="../outside/secret.txt"),
                          mcp("propose_edit", path="notes.txt", old_text="beta",
                              new_text="gamma"), {"text": "done"}]])
    turn = c.send("change notes")
    proposed = c.wait("agent.propose", turn=turn)
    assert proposed["proposal"].startswith(f"{turn}.") and "+gamma" in proposed["diff"]
    assert c.conn.call("agent.approve", {"turn": turn, "proposal": proposed["proposal"],
                                         "decision": "approve"}, timeout=30) == \
        {"applied": True}
    ended = c.wait("agent.turn", turn=turn, state="done")
    said = c.said(turn)
    listed, read, found, selection, shown, link, outside, edit = (s.strip() for s in said)
    assert '"path": "a.py"' in listed and '"unsaved": true' in listed
    assert json.loads(read)["text"] == "# unsaved\nx = 1\n"        # the editor's text
    assert "notes.txt:2:" in found
    assert json.loads(selection)["window"] is False
    assert json.loads(shown)["opened"] is False
    assert link.startswith("error: Refused (path.outside_root)")   # the symlink leads out
    assert outside.startswith("error: Refused (path.outside_root)")
    assert json.loads(edit.removesuffix("done"))["applied"] is True
    notes = buffer_of(server, "notes.txt")
    # What the agent changed through Rio's tools is the turn's: listed with its end …
    assert notes["buffer"] in ended["buffers"]
    assert server.call("buffer.text", {"buffer": notes["buffer"]})["text"] == "alpha\ngamma\n"
    assert (server.root / "notes.txt").read_text() == "alpha\nbeta\n"   # unsaved
    # … merged into the turn's one undo step
    assert wait_for(lambda: server.call("buffer.info", {"buffer": notes["buffer"]}).get(
        "undo_label") == "Agent: change notes", 10)
    server.call("buffer.undo", {"buffer": notes["buffer"]})
    assert server.call("buffer.text", {"buffer": notes["buffer"]})["text"] == "alpha\nbeta\n"
    # … and recorded with it in the conversation's history
    history = c.conn.call("agent.history", {"conversation": c.cid})
    assert history["turns"][-1]["changes"] == {"paths": ["notes.txt"]}
    tools = [d for t, d in c.events if t == "agent.tool" and d.get("turn") == turn]
    assert {d["source"] for d in tools} == {"mcp"} and len(tools) == 8
    for buf in (info, notes):
        server.call("buffer.close", {"buffer": buf["buffer"], "discard": True})


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unanswered_question_is_declined_after_its_timeout(setup, chat, transport):
    server, _ = setup
    c = chat(transport, [[mcp("propose_create", path="new.txt", text="hi\n")]])
    turn = c.send("make a file")
    proposed = c.wait("agent.propose", turn=turn)
    closed = c.wait("agent.tool_result", turn=turn, call=proposed["call"],
                    timeout=QUESTION_TIMEOUT_S + 30)
    assert closed["ok"] is False and "not answered" in closed["summary"]
    c.wait("agent.turn", turn=turn, state="done")
    assert "did not answer" in c.said(turn)[0]
    assert not (server.root / "new.txt").exists()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_call_the_agent_cancels_closes_its_question_and_applies_nothing(setup, chat,
                                                                          transport):
    server, _ = setup
    c = chat(transport, [[{"mcp": {"tool": "propose_edit", "cancel_after": 1.5, "args": {
        "path": "notes.txt", "old_text": "alpha", "new_text": "omega"}}}, {"text": "ok"}]])
    turn = c.send("edit, then give up")
    proposed = c.wait("agent.propose", turn=turn)
    closed = c.wait("agent.tool_result", turn=turn, call=proposed["call"], timeout=30)
    assert closed["ok"] is False and "cancelled" in closed["summary"]
    c.wait("agent.turn", turn=turn, state="done")
    assert c.said(turn) == ["cancelledok"]
    assert c.conn.call("agent.pending", {"conversation": c.cid}, timeout=10)["events"] == [] \
        or all(e["topic"] != "agent.propose" for e in c.conn.call(
            "agent.pending", {"conversation": c.cid}, timeout=10)["events"])
    assert (server.root / "notes.txt").read_text() == "alpha\nbeta\n"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_rio_chat_saves_undoes_and_diffs_what_the_agent_did_through_rios_tools(setup,
                                                                             transport):
    """`rio chat --agent NAME --approve yes --save`: the edit made through Rio's MCP tool is
    the turn's, so --save writes it to disk; without --save, /diff shows it and /undo takes
    it back as one step."""
    server, script = setup
    target = server.root / "chat.txt"
    target.write_text("one\ntwo\n")
    edit = mcp("propose_edit", path="chat.txt", old_text="two", new_text="three")
    try:
        script.write_text(json.dumps({"turns": [[edit, {"text": " edited"}]],
                                      "mcp_http": transport == "http"}))
        done = server.cli("chat", "--instance", server.name, "--agent", "fake", "--approve",
                          "yes", "--save", "make it three", timeout=90)
        assert done.returncode == 0, done.stderr + done.stdout
        assert target.read_text() == "one\nthree\n"
        assert "Nothing unsaved" not in done.stdout
        target.write_text("one\ntwo\n")
        for buf in server.call("buffer.list"):
            if buf.get("path") == "chat.txt":
                server.call("buffer.close", {"buffer": buf["buffer"], "discard": True})
        script.write_text(json.dumps({"turns": [[edit, {"text": " edited"}]],
                                      "mcp_http": transport == "http"}))
        typed = server.cli("chat", "--instance", server.name, "--agent", "fake", "--approve",
                           "yes", input="make it three\n/diff\n/undo\n/quit\n", timeout=90)
        assert typed.returncode == 0, typed.stderr + typed.stdout
        assert "+three" in typed.stdout and "-two" in typed.stdout
        assert "The last turn changed no buffer" not in typed.stdout
        info = next(b for b in server.call("buffer.list") if b.get("path") == "chat.txt")
        assert server.call("buffer.text", {"buffer": info["buffer"]})["text"] == "one\ntwo\n"
        assert target.read_text() == "one\ntwo\n"
        server.call("buffer.close", {"buffer": info["buffer"], "discard": True})
    finally:
        target.unlink(missing_ok=True)


def test_tokens_outside_a_turn_wrong_another_conversations_and_revoked(setup, chat):
    """The test is the MCP client here, with tokens it reads from their 0600 files."""
    server, _ = setup
    c = chat("http", [[mcp("list_buffers"), {"text": "ok"}]])
    turn = c.send("list")
    c.wait("agent.turn", turn=turn, state="done")
    path, token = token_of(server, c.cid)
    assert token and oct(path.stat().st_mode & 0o777) == "0o600"
    url = server.call("mcp.address")["url"]
    assert url.startswith("http://127.0.0.1:")

    async def call(bearer: str | None) -> Any:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        async with Client(streamable_http_client(url, http_client=create_mcp_http_client(
                headers=headers)), mode="legacy") as client:
            return await client.call_tool("list_buffers", {})

    def status_of(bearer: str | None) -> str:
        try:
            result = asyncio.run(call(bearer))
        except Exception as exc:  # noqa: BLE001 -- what the agent would see
            return " ".join(_messages(exc))
        return "".join(getattr(x, "text", "") for x in result.content)
    # outside a turn: the conversation's own token is refused by its session
    assert "agent.outside_turn" in status_of(token)
    # no token, a wrong one: the SDK's verifier answers 401, and offers no OAuth to try
    assert http_status(url, None) == http_status(url, "not-a-token") == 401
    assert http_status(url, token) == 200
    # a request naming another Host (DNS rebinding) is refused, valid token or not
    assert http_status(url, token, host="evil.example") in (403, 421)
    # the conversation's agent ends: its token is revoked
    c.close()
    assert wait_for(lambda: not path.exists(), 20)
    assert http_status(url, token) == 401
    import httpx
    assert httpx.get(url.replace("/mcp", "/.well-known/oauth-protected-resource"),
                     timeout=5).status_code == 404



def test_an_mcp_session_stays_with_the_conversation_whose_token_opened_it(setup, chat):
    """Each call is judged by its own request's token, and a session opened with one
    conversation's token cannot be used with another's."""
    server, _ = setup
    first = chat("http", [[mcp("list_buffers"), {"text": "ok"}]])
    first.wait("agent.turn", turn=first.send("one"), state="done")
    second = Chat(server, setup[1], {"turns": [[mcp("list_buffers"), {"text": "ok"}]]}, "http")
    try:
        second.wait("agent.turn", turn=second.send("two"), state="done")
        token_a, token_b = token_of(server, first.cid)[1], token_of(server, second.cid)[1]
        assert token_a and token_b and token_a != token_b
        url = server.call("mcp.address")["url"]
        session = open_session(url, token_a)
        # the session's own conversation: judged by the turn (none runs now)
        assert "agent.outside_turn" in call_on(url, session, token_a)
        # another conversation's valid token on it: refused (the SDK binds a session to the
        # token's principal, "Session not found"; Rio's own check would say auth.bad_token)
        other = call_on(url, session, token_b)
        assert "Session not found" in other or "auth.bad_token" in other, other
        assert "outside_turn" not in other
    finally:
        second.close()


def open_session(url: str, bearer: str) -> str:
    """An MCP session opened with ``bearer`` (initialize, initialized): its id."""
    import httpx
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "Authorization": f"Bearer {bearer}"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    with httpx.Client(timeout=10) as client:
        reply = client.post(url, json=body, headers=headers)
        session = reply.headers["mcp-session-id"]
        client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                    headers={**headers, "mcp-session-id": session,
                             "mcp-protocol-version": "2025-06-18"})
    return session


def call_on(url: str, session: str, bearer: str) -> str:
    """tools/call list_buffers on ``session`` with ``bearer``: the answer's text."""
    import httpx
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "Authorization": f"Bearer {bearer}",
               "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "list_buffers", "arguments": {}}}
    with httpx.Client(timeout=30) as client:
        reply = client.post(url, json=body, headers=headers)
    return reply.text


def test_a_call_waiting_for_the_user_sends_progress_so_the_agent_keeps_waiting(setup, chat,
                                                                               tmp_path):
    """An agent that cuts a call after a minute (opencode) gets notifications/progress while
    the proposal waits for the user, then the result once approved."""
    import httpx
    server, _ = setup
    marker = tmp_path / "go-on"
    c = chat("http", [[{"wait_for": str(marker)}, {"text": "done"}]])
    turn = c.send("wait")
    assert wait_for(lambda: token_of(server, c.cid)[1] is not None, 30)
    token = token_of(server, c.cid)[1]
    url = server.call("mcp.address")["url"]
    session = open_session(url, token)
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "Authorization": f"Bearer {token}",
               "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "propose_create", "arguments": {"path": "slow.txt", "text": "hi\n"},
        "_meta": {"progressToken": "p5"}}}
    seen: list[dict] = []
    with httpx.stream("POST", url, json=body, headers=headers, timeout=60) as response:
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            seen.append(message)
            if message.get("method") == "notifications/progress" and \
                    message["params"]["progress"] == 2:
                proposed = c.wait("agent.propose", turn=turn)
                assert c.conn.call("agent.approve", {
                    "turn": turn, "proposal": proposed["proposal"], "decision": "approve"},
                    timeout=30) == {"applied": True}
            if message.get("id") == 5:
                break
    progress = [m for m in seen if m.get("method") == "notifications/progress"]
    assert len(progress) >= 2 and progress[0]["params"]["progressToken"] == "p5"
    assert seen[-1]["result"]["structuredContent"]["applied"] is True
    marker.write_text("")
    c.wait("agent.turn", turn=turn, state="done")
    for buf in server.call("buffer.list"):
        if buf.get("path") == "slow.txt":
            server.call("buffer.close", {"buffer": buf["buffer"], "discard": True})


def test_the_endpoint_killed_mid_turn_comes_back_on_the_same_address(setup, chat, tmp_path):
    server, _ = setup
    marker = tmp_path / "go-on"
    c = chat("http", [[mcp("read_buffer", path="notes.txt"), {"wait_for": str(marker)},
                       mcp("read_buffer", path="notes.txt"), {"text": "done"}]])
    turn = c.send("read twice")
    assert wait_for(lambda: len(c.said(turn)) == 1, 60)
    before = server.call("mcp.address")
    pid = server.pids()["mcp"]
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: server.pids().get("mcp") not in (None, pid), 30)
    assert wait_for(lambda: _address(server) == before, 30)   # the same port
    marker.write_text("")
    c.wait("agent.turn", turn=turn, state="done")
    first, second = c.said(turn)
    assert json.loads(first)["text"] == json.loads(second.removesuffix("done"))["text"] == \
        "alpha\nbeta\n"


def token_of(server: RioServer, conversation: str) -> tuple[Path, str | None]:
    """The conversation's token file in the instance's state folder, and its token (the
    test process's own RIO_STATE_DIR is left as it was)."""
    before = os.environ.get("RIO_STATE_DIR")
    os.environ["RIO_STATE_DIR"] = server.env["RIO_STATE_DIR"]
    try:
        path = token_path(server.root, conversation)
        return path, read_token(path)
    finally:
        if before is None:
            del os.environ["RIO_STATE_DIR"]
        else:
            os.environ["RIO_STATE_DIR"] = before


def http_status(url: str, bearer: str | None, host: str | None = None) -> int:
    """The status of an MCP initialize POST with this bearer token (and Host header)."""
    import httpx
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    if host:
        headers["Host"] = host
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    with httpx.stream("POST", url, json=body, headers=headers, timeout=10) as response:
        return response.status_code


def _messages(exc: BaseException) -> list[str]:
    """Every message in an exception (group), nested ones included."""
    inner = getattr(exc, "exceptions", None)
    if inner:
        return [m for e in inner for m in _messages(e)]
    return [f"{type(exc).__name__}: {exc}"]


def _address(server: RioServer) -> Any:
    try:
        return server.call("mcp.address", timeout=3)
    except RioError:
        return None


def test_the_stdio_fallback_refuses_a_wrong_token_and_a_missing_token(setup, tmp_path):
    """`rio mcp` started by hand with a token that is not the conversation's: every call is
    refused with auth.bad_token (the endpoint's 401); with no token at all it ends saying
    why. It needs no bus and no instance file: only the endpoint's address (ADR-0038)."""
    import subprocess
    server, _ = setup
    server.call("system.spawn", {"kind": "mcp", "key": "mcp"}, timeout=30)
    url = server.call("mcp.address", timeout=10)["url"]
    argv = [sys.executable, "-P", "-m", "rio.cli", "mcp", "--conversation", "abcdef123456",
            "--url", url]
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "list_buffers", "arguments": {}}}]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**env, "RIO_MCP_TOKEN": "x" * 43})
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines))
        proc.stdin.flush()
        answers: dict[Any, dict] = {}
        while 2 not in answers:      # stdin stays open until the call is answered
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            message = json.loads(line)
            answers[message.get("id")] = message
        proc.stdin.close()
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    refused = answers[2]["result"]
    assert refused["isError"] is True and "auth.bad_token" in refused["content"][0]["text"]
    missing = subprocess.run(argv, input="", capture_output=True, text=True, timeout=30,
                             env=env)
    assert missing.returncode != 0 and "RIO_MCP_TOKEN is not set" in missing.stderr


def test_an_idle_instance_has_no_endpoint_process_until_an_agent_needs_it(tmp_path):
    """The endpoint's SDK costs memory and a second to start: an instance with no ACP
    conversation never starts it (the idle desktop stays small)."""
    root = tmp_path / "proj"
    root.mkdir()
    srv = RioServer(root, tmp_path, env=rio_env(tmp_path)).start()
    try:
        names = {p["name"]: p for p in srv.call("system.status")["processes"]}
        assert names.get("mcp") is None or names["mcp"]["state"] not in ("running",
                                                                          "starting")
        with pytest.raises(RioError) as err:
            srv.call("mcp.address", timeout=5)
        assert err.value.kind == "bus.no_route"
    finally:
        srv.stop()
