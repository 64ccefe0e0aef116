"""Opt-in: a real ACP agent (claude-agent-acp) driven through `rio serve` — the core's agent.*
ops, the conversation's session process and its ACP brain — against a loopback Anthropic
server. Skips, with the reason, when the agent is not installed (tests/acp/test_acp_real_agents.py
says how); the instance gets a fresh empty HOME and a fake key: nobody's account is used."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from rio.protocol.errors import RioError
from rio.protocol.frames import thaw
from tests.acp.test_acp_real_agents import CLAUDE, NODE, need, real_agent_sandbox
from tests.fakes.model_servers import FakeModelServer, anthropic_text, anthropic_tool_use
from tests.support import RioServer, rio_env, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def serve_claude(tmp_path: Path, model: FakeModelServer) -> RioServer:
    """A started ``rio serve`` whose ``[agents.claude]`` is claude-agent-acp against ``model``,
    with a fresh empty HOME and a fake key (nobody's account), boxed as the real-agent tests
    box it; the caller stops it."""
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "home").mkdir()
    env = rio_env(tmp_path)
    # This test machine sets IS_SANDBOX=1, with which claude-agent-acp 0.23.1 fails session/new
    # ("Query closed before response received"); a user's shell does not have it.
    env.pop("IS_SANDBOX", None)
    env.update({"HOME": str(tmp_path / "home"), "ANTHROPIC_BASE_URL": model.url,
                "ANTHROPIC_API_KEY": "test", "RIO_AGENT_SANDBOX": real_agent_sandbox(),
                "RIO_CACHE_DIR": str(tmp_path / "cache")})
    config = Path(env["RIO_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(
        f'[agents.claude]\ncommand = "{NODE}"\nargs = [{json.dumps(str(CLAUDE))}]\n')
    return RioServer(root, tmp_path, env=env).start()


@pytest.fixture
def claude_rio(tmp_path):
    need(CLAUDE, node=True)
    model = FakeModelServer()
    model.start()
    server = serve_claude(tmp_path, model)
    yield server, model
    server.stop()
    model.close()


def _drive(server: RioServer, text: str, on_event: Any = None) -> tuple[str, list]:
    conn = server.connect("real-acp", subscribe=("agent.",))
    events: list[tuple[str, dict]] = []
    conn.subscribe("agent.", lambda e: events.append((e.topic, thaw(e.data))))
    try:
        cid = conn.call("agent.new", {"agent": "claude"})["conversation"]
        turn = conn.call("agent.send", {"conversation": cid, "text": text})["turn"]
        deadline = time.monotonic() + 200
        seen = 0
        while time.monotonic() < deadline:
            conn.wait(0.05)
            for topic, data in events[seen:]:
                if on_event is not None and data.get("turn") == turn:
                    on_event(conn, topic, data)
            seen = len(events)
            if any(t == "agent.turn" and d.get("turn") == turn and d.get("state") != "started"
                   for t, d in events):
                break
        try:
            server.call("system.restart", {"process": f"agent:{cid}", "again": False},
                        timeout=15)
        except RioError:
            pass
        return turn, events
    finally:
        conn.close()


def test_claude_text_turn_through_rio(claude_rio):
    server, model = claude_rio
    for _ in range(20):
        model.push(anthropic_text("Hello ", "from the fake model"))
    turn, events = _drive(server, "Say hello")
    ended = next(d for t, d in events if t == "agent.turn" and d["state"] != "started")
    assert ended["state"] == "done", ended
    text = "".join(d["text"] for t, d in events if t == "agent.delta" and d["turn"] == turn)
    assert text == "Hello from the fake model"


def test_claude_permission_answered_through_rio(claude_rio):
    server, model = claude_rio
    model.push(anthropic_tool_use("toolu_1", "Bash", {"command": "echo hi > made.txt",
                                                      "description": "make a file"}))
    for _ in range(20):
        model.push(anthropic_text("I did not run it."))
    asked: list[dict] = []

    def answer(conn: Any, topic: str, data: dict) -> None:
        if topic == "agent.permission":
            asked.append(data)
            conn.call("agent.permission_answer", {
                "conversation": data["conversation"], "turn": data["turn"],
                "request": data["request"], "kind": "reject_once"})
    turn, events = _drive(server, "Make a file", answer)
    assert asked, "claude asked no permission"
    assert {"allow_once", "reject_once"} <= {o["kind"] for o in asked[0]["options"]}
    ended = next(d for t, d in events if t == "agent.turn" and d["state"] != "started")
    assert ended["state"] == "done", ended
    assert not (server.root / "made.txt").exists()


def test_claude_uses_rios_mcp_tool_through_the_gate(claude_rio):
    """claude-agent-acp reaches Rio's MCP endpoint (HTTP, the conversation's bearer token) from
    session/new's mcpServers, calls propose_edit; its own permission question about Rio's
    tool is auto-allowed; the gate asks; approved, the edit lands in the buffer and is the
    turn's (listed with its end)."""
    server, model = claude_rio
    (server.root / "notes.txt").write_text("alpha\nbeta\n")
    model.push(anthropic_tool_use("toolu_1", "mcp__rio__propose_edit", {
        "path": "notes.txt", "old_text": "beta", "new_text": "gamma"}))
    for _ in range(20):
        model.push(anthropic_text("Changed it."))
    proposals: list[dict] = []

    def approve(conn: Any, topic: str, data: dict) -> None:
        if topic == "agent.propose":
            proposals.append(data)
            conn.call("agent.approve", {"turn": data["turn"], "proposal": data["proposal"],
                                        "decision": "approve"}, timeout=30)
    turn, events = _drive(server, "Change beta to gamma in notes.txt", approve)
    ended = next(d for t, d in events if t == "agent.turn" and d["state"] != "started")
    assert proposals, [t for t, _ in events]
    assert ended["state"] == "done", ended
    # claude-agent-acp 0.23 asks before an MCP tool: Rio answered it, the user was not asked
    assert not [d for t, d in events if t == "agent.permission"]
    assert [d["tool"] for t, d in events if t == "agent.note"
            and d.get("note") == "auto_allowed"] == ["propose_edit"]
    info = server.call("buffer.open", {"path": "notes.txt"})
    assert server.call("buffer.text", {"buffer": info["buffer"]})["text"] == "alpha\ngamma\n"
    assert ended["buffers"] == [info["buffer"]]


def test_claude_after_a_stop_the_next_turn_is_never_silent_and_the_conversation_goes_on(
        tmp_path):
    """claude-agent-acp 0.23.1 answers the prompt after a Stop at once with an empty
    end_turn (its own bug), and a model error after a Stop went unseen the same way: Rio says
    what happened for that turn — the error, or that the agent ended it without a reply — and
    the next message is answered as usual."""
    from tests.fakes.model_servers import anthropic_error

    def script(request: Any) -> Any:
        body = json.dumps(request.json) if request.body else ""
        if "go slowly" in body and "after the stop" not in body:
            return anthropic_text("Thinking", " slowly").slow(hold_open=True)
        if "after the stop" in body and "third" not in body:
            return anthropic_error(400, "invalid_request_error", "prompt is too long")
        return anthropic_text("fine")
    need(CLAUDE, node=True)
    model = FakeModelServer([script] * 100).start()
    server = serve_claude(tmp_path, model)
    conn = server.connect("real-stop", subscribe=("agent.",))
    events: list[tuple[str, dict]] = []
    conn.subscribe("agent.", lambda e: events.append((e.topic, thaw(e.data))))

    def wait(topic: str, timeout: float = 120, **match: Any) -> dict:
        def matching() -> dict | None:
            return next((d for t, d in events
                         if t == topic and all(d.get(k) == v for k, v in match.items())), None)
        return wait_for(matching, timeout, 0.05, pause=conn.wait, what=f"{topic} {match}",
                        seen=lambda: [t for t, _ in events])

    def _end_of(turn: str) -> dict:
        def end() -> dict | None:
            return next((d for t, d in events if t == "agent.turn" and d.get("turn") == turn
                         and d["state"] != "started"), None)
        return wait_for(end, 120, 0.05, pause=conn.wait, what=f"the end of turn {turn}",
                        seen=lambda: [t for t, _ in events])
    try:
        cid = conn.call("agent.new", {"agent": "claude"})["conversation"]
        first = conn.call("agent.send", {"conversation": cid, "text": "go slowly"},
                          timeout=60)["turn"]
        wait("agent.delta", turn=first)
        conn.call("agent.stop", {"conversation": cid})
        assert _end_of(first)["state"] == "stopped"
        second = conn.call("agent.send", {"conversation": cid, "text": "after the stop"},
                           timeout=60)["turn"]
        _end_of(second)
        said = [(t, d) for t, d in events if d.get("turn") == second and (
            t == "agent.error" or (t == "agent.note" and d.get("note") == "empty_reply")
            or (t == "agent.delta" and d.get("text")))]
        assert said, f"the turn after the Stop showed nothing: {events}"
        third = conn.call("agent.send", {"conversation": cid, "text": "third"},
                          timeout=60)["turn"]
        assert _end_of(third)["state"] == "done"
        assert "fine" in "".join(d.get("text", "") for t, d in events
                                 if t == "agent.delta" and d.get("turn") == third)
    finally:
        conn.close()
        server.stop()
        model.close()
