"""Rio's MCP tools through the whole path: `rio serve`, a conversation with the fake ACP agent
(``[agents.fake]`` in config.toml), its session process passing Rio's ``mcpServers`` entry
(here the stdio fallback: the fake does not advertise MCP over HTTP unless its script says so),
the agent starting ``rio mcp`` and calling the tools; a proposal answered with agent.approve
is the turn's — listed with its end, one undo step of the message; the token is gone when the
conversation's agent ends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rio.mcp.entry import token_path
from rio.protocol.errors import RioError
from tests.agent_events import AgentEvents
from tests.agent_processes import serve_fake_agent
from tests.support import RioServer, wait_for

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("mcp-session")
    root = base / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    script = base / "script.json"
    srv = serve_fake_agent(root, base, script)
    yield srv, script
    srv.stop()


class Conversation(AgentEvents):
    def __init__(self, server: RioServer, script_file: Path, script: dict[str, Any]):
        script_file.write_text(json.dumps(script))
        super().__init__(server, "mcp-e2e")
        self.cid = self.call("agent.new", {"title": "mcp", "agent": "fake"})["conversation"]

    def wait(self, topic: str, timeout: float = 90.0, **match: Any) -> dict:
        return super().wait(topic, timeout, **match)


def end_conversation(server, chat) -> None:
    """Stop the conversation's agent process (it may be gone already) and close the client."""
    chat.end_session(chat.cid)
    chat.close()


def test_an_acp_agent_uses_rios_tools_through_its_session(setup, monkeypatch):
    server, script = setup
    monkeypatch.setenv("RIO_STATE_DIR", server.env["RIO_STATE_DIR"])   # for token_path
    chat = Conversation(server, script, {"turns": [[
        {"mcp": {"tool": "read_buffer", "args": {"path": "notes.txt"}}},
        {"mcp": {"tool": "propose_edit", "args": {"path": "notes.txt", "old_text": "beta",
                                                  "new_text": "gamma"}}},
        {"mcp": {"tool": "read_buffer", "args": {"path": "../outside.txt"}}},
        {"text": "done"}]]})
    try:
        turn = chat.conn.call("agent.send", {"conversation": chat.cid,
                                             "text": "beta to gamma"}, timeout=15)["turn"]
        proposed = chat.wait("agent.propose", turn=turn)
        # the turn's own proposal (ADR-0034): answered by the session that owns the turn
        assert proposed["proposal"].startswith(f"{turn}.") and "+gamma" in proposed["diff"]
        token = token_path(server.root, chat.cid)
        assert token.exists()            # written for the agent's session/new
        answer = chat.conn.call("agent.approve", {"turn": turn, "proposal":
                                                  proposed["proposal"],
                                                  "decision": "approve"}, timeout=60)
        assert answer == {"applied": True}
        ended = chat.wait("agent.turn", turn=turn, state="done")
        said = chat.said(turn)
        assert 'mcp: {"end_line": 2' in said and '"text": "alpha\\nbeta\\n"' in said
        assert '"applied": true' in said
        assert "mcp: error: Refused (path.outside_root)" in said
        assert ended["state"] == "done"
        info = server.call("buffer.open", {"path": "notes.txt"})
        # what the agent changed through Rio's tools is the turn's: listed with its end
        assert ended["buffers"] == [info["buffer"]]
        assert server.call("buffer.text", {"buffer": info["buffer"]})["text"] == \
            "alpha\ngamma\n"
        wait_for(lambda: server.call("buffer.info", {"buffer": info["buffer"]}).get(
            "undo_label") == "Agent: beta to gamma", 10, 0.05)
        server.call("buffer.undo", {"buffer": info["buffer"]})
        assert server.call("buffer.text", {"buffer": info["buffer"]})["text"] == \
            "alpha\nbeta\n"
        # the conversation's agent ends: its token is removed
        try:
            server.call("system.restart", {"process": f"agent:{chat.cid}", "again": False},
                        timeout=20)
        except RioError:
            pass
        assert wait_for(lambda: not token.exists(), 20, 0.05), "the token was not removed"
    finally:
        chat.close()


def test_a_new_message_while_only_an_mcp_proposal_waits_interrupts_the_turn(setup,
                                                                           monkeypatch):
    """The proposal is the turn's: the session closes it as interrupted (nothing applied) and
    cancels the agent's prompt; the new message is the next turn — not agent.busy."""
    server, script = setup
    chat = Conversation(server, script, {"turns": [[
        {"mcp": {"tool": "propose_edit", "args": {"path": "notes.txt", "old_text": "alpha",
                                                  "new_text": "omega"}}},
        {"hang": True}]], "default_turn": [{"echo": True}]})
    try:
        first = chat.conn.call("agent.send", {"conversation": chat.cid, "text": "one"},
                               timeout=15)["turn"]
        proposed = chat.wait("agent.propose", turn=first)
        assert proposed["proposal"].startswith(f"{first}.")
        second = chat.conn.call("agent.send", {"conversation": chat.cid, "text": "two"},
                                timeout=30)["turn"]
        stopped = chat.wait("agent.turn", turn=first, state="stopped")
        assert stopped["error"]["kind"] == "agent.interrupted"
        closed = chat.wait("agent.tool_result", turn=first, call=proposed["call"])
        assert closed["ok"] is False and closed["summary"].endswith("interrupted")
        chat.wait("agent.turn", turn=second, state="done")
        assert chat.said(second) == "echo: two"
        with pytest.raises(RioError) as late:
            chat.conn.call("agent.approve", {"turn": first, "proposal": proposed["proposal"],
                                             "decision": "approve"}, timeout=30)
        assert late.value.kind == "agent.unknown_turn"
        info = server.call("buffer.open", {"path": "notes.txt"})
        assert server.call("buffer.text", {"buffer": info["buffer"]})["text"] == \
            "alpha\nbeta\n"
    finally:
        end_conversation(server, chat)


def test_agent_pending_lists_an_mcp_proposal_and_the_agents_modes_for_a_late_window(setup):
    """A window that starts while a proposal of Rio's MCP tools waits: agent.pending lists it
    (the session holds it, like any of the turn's) with the turn's start and the agent's own
    modes (so the pickers show at once); answering it by agent.approve applies it. Between
    turns the modes are still listed, the proposal not."""
    server, script = setup
    chat = Conversation(server, script, {
        "modes": {"current": "ask", "available": ["ask", "code"]},
        "turns": [[{"mcp": {"tool": "propose_edit", "args": {
            "path": "notes.txt", "old_text": "alpha", "new_text": "delta"}}},
            {"text": "done"}]]})
    try:
        turn = chat.conn.call("agent.send", {"conversation": chat.cid, "text": "a to d"},
                              timeout=15)["turn"]
        proposed = chat.wait("agent.propose", turn=turn)
        got = chat.conn.call("agent.pending", {"conversation": chat.cid}, timeout=15)["events"]
        topics = [e["topic"] for e in got]
        assert topics[0] == "agent.turn" and "agent.modes" in topics
        mcp = [e["data"] for e in got if e["topic"] == "agent.propose"]
        assert [(d["proposal"], d["turn"], d["path"]) for d in mcp] == [
            (proposed["proposal"], turn, "notes.txt")] and "+delta" in mcp[0]["diff"]
        modes = next(e["data"] for e in got if e["topic"] == "agent.modes")
        assert modes["current"] == "ask" and modes["conversation"] == chat.cid
        answer = chat.conn.call("agent.approve", {"turn": turn, "proposal": mcp[0]["proposal"],
                                                  "decision": "approve"}, timeout=60)
        assert answer == {"applied": True}
        chat.wait("agent.turn", turn=turn, state="done")
        info = server.call("buffer.open", {"path": "notes.txt"})
        assert server.call("buffer.text", {"buffer": info["buffer"]})["text"] == \
            "delta\nbeta\n"
        assert wait_for(lambda: server.call("buffer.info", {"buffer": info["buffer"]}).get(
            "undo_label") == "Agent: a to d", 10)     # the turn's one undo step: back as it was
        server.call("buffer.undo", {"buffer": info["buffer"]})
        assert server.call("buffer.text", {"buffer": info["buffer"]})["text"] == \
            "alpha\nbeta\n"
        later = chat.conn.call("agent.pending", {"conversation": chat.cid}, timeout=15)
        assert sorted(e["topic"] for e in later["events"]) == ["agent.config", "agent.modes"]
    finally:
        end_conversation(server, chat)
