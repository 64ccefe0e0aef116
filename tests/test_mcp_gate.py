"""The gate for external agents' calls to Rio's MCP tools, the token files, the permission
predicate and the line slicing — pure logic, no processes."""

from __future__ import annotations

import asyncio
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rio.agent.gate import Gate, Limits
from rio.files.workspace import Workspace
from rio.mcp.entry import (
    check_token,
    end_conversation,
    is_rio_tool,
    issue_token,
    mcp_server_entry,
    read_token,
    token_path,
)
from rio.mcp.tools import QUESTION_TIMEOUT_S, TOOLS, McpCall, confine, slice_lines
from rio.protocol.errors import AuthError


@pytest.fixture
def state(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RIO_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / "proj"
    root.mkdir()
    return root


def test_outside_a_turn_everything_is_refused_and_no_turn_is_named():
    gate = Gate()
    decision, turn = gate.check_agent("c1", "claude", "list_buffers", {})
    assert (decision.decision, turn) == ("refuse", None)


@pytest.mark.parametrize("mode,tool,expected", [
    ("review", "read_buffer", "allow"), ("review", "search_project", "allow"),
    ("review", "open_in_editor", "allow"), ("review", "propose_edit", "ask"),
    ("review", "propose_create", "ask"), ("auto_buffer", "propose_edit", "allow"),
    ("auto_buffer", "propose_create", "ask"), ("allow_all", "propose_create", "allow"),
    ("allow_all", "run_command", "refuse"), ("review", "fs_read", "refuse"),
])
def test_the_table_per_tool_and_mode(mode, tool, expected):
    gate = Gate(mode=mode)
    gate.turn_event("c1", "c1.1", "begin")
    decision, turn = gate.check_agent("c1", "claude", tool, {"path": "a.py"})
    assert decision.decision == expected
    assert turn == "c1.1"


def test_always_allow_is_remembered_per_agent():
    gate = Gate()
    gate.turn_event("c1", "c1.1", "begin")
    gate.remember("claude", "propose_edit")
    assert gate.check_agent("c1", "claude", "propose_edit", {})[0].decision == "allow"
    assert gate.check_agent("c1", "codex", "propose_edit", {})[0].decision == "ask"
    assert gate.check_agent("c1", "claude", "propose_create", {})[0].decision == "ask"


def test_a_path_outside_is_refused_even_in_allow_all():
    gate = Gate(mode="allow_all")
    gate.turn_event("c1", "c1.1", "begin")
    assert gate.check_agent("c1", "a", "propose_edit", {"path": "../x"})[0].decision == "refuse"
    assert gate.check_agent("c1", "a", "propose_edit", {"path": "/etc/x"})[0].decision == \
        "refuse"


def test_limits_changing_then_any_and_the_agent_is_told_to_stop():
    gate = Gate(mode="allow_all", limits=Limits(max_agent_changes=2, max_agent_requests=5))
    gate.turn_event("c1", "c1.1", "begin")
    assert [gate.check_agent("c1", "a", "propose_edit", {})[0].decision
            for _ in range(3)] == ["allow", "allow", "refuse"]
    refused = gate.check_agent("c1", "a", "open_in_editor", {})[0]
    assert refused.decision == "refuse" and "Stop now" in refused.reason
    # reads still run until the overall limit (4 counted so far, the 5th is the last)
    assert gate.check_agent("c1", "a", "read_buffer", {})[0].decision == "allow"
    last = gate.check_agent("c1", "a", "read_buffer", {})[0]
    assert last.decision == "refuse" and "what is left" in last.reason
    # a new turn starts counting again
    gate.turn_event("c1", "c1.1", "end")
    gate.turn_event("c1", "c1.2", "begin")
    assert gate.check_agent("c1", "a", "propose_edit", {})[0].decision == "allow"


def test_the_default_limits_are_24_changing_and_400_in_all():
    assert (Limits().max_agent_changes, Limits().max_agent_requests) == (24, 400)


def test_token_file_is_0600_fresh_each_time_bound_and_removed(state):
    path = issue_token(state, "c1")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    first = read_token(path)
    check_token(state, "c1", first)
    issue_token(state, "c2")
    with pytest.raises(AuthError):        # one conversation's token is not another's
        check_token(state, "c2", first)
    issue_token(state, "c1")              # a new session: the old token stops working
    with pytest.raises(AuthError):
        check_token(state, "c1", first)
    end_conversation("c1", state)
    assert not path.exists()
    for bad in (None, "", read_token(token_path(state, "c2")) + "x"):
        with pytest.raises(AuthError):
            check_token(state, "c2", bad)


def test_end_conversation_takes_its_arguments_in_either_order(state):
    path = issue_token(state.resolve(), "c3")
    end_conversation(state, "c3")          # (root, conversation), as a caller might write it
    assert not path.exists()
    path = issue_token(state.resolve(), "c3")
    end_conversation("c3", str(state))
    assert not path.exists()


def test_a_conversation_id_cannot_name_a_file_elsewhere(state):
    for bad in ("../x", "a/b", ".hidden", ""):
        with pytest.raises(AuthError):
            token_path(state, bad)


def test_the_entry_holds_no_token_and_no_rio_variable(state, monkeypatch):
    monkeypatch.setenv("RIO_INSTANCE", "inst1")
    entry = mcp_server_entry("c9", state, agent="claude")
    token = read_token(token_path(state.resolve(), "c9"))
    assert entry["name"] == "rio" and entry["env"] == []
    assert token and all(token not in a for a in entry["args"])
    assert entry["args"][:4] == ["-P", "-m", "rio.cli", "mcp"]
    assert "--token-file" in entry["args"] and "--instance-file" in entry["args"]
    assert entry["args"][entry["args"].index("--agent") + 1] == "claude"


def test_the_permission_predicate_knows_rios_tools_only():
    assert is_rio_tool("mcp__rio__propose_edit")
    assert is_rio_tool("mcp__rio__read_buffer")
    assert not is_rio_tool("mcp__other__propose_edit")
    assert not is_rio_tool("Bash")
    assert not is_rio_tool("mcp__rio__rm_rf")
    assert not is_rio_tool(None)


def test_tools_carry_annotations():
    by = {t.name: t for t in TOOLS}
    assert by["read_buffer"].read_only and not by["read_buffer"].destructive
    assert not by["propose_edit"].read_only and by["propose_edit"].destructive
    assert set(by) == {"list_buffers", "read_buffer", "get_selection", "search_project",
                       "open_in_editor", "propose_edit", "propose_create"}


@given(st.lists(st.text(alphabet="ab\n", max_size=6), max_size=8),
       st.integers(1, 10), st.integers(1, 10))
def test_slice_lines_matches_a_plain_list_slice(parts, start, end):
    text = "".join(parts)
    got, first, last, total = slice_lines(text, start, end)
    lines = text.splitlines(keepends=True)
    assert total == len(lines)
    assert got == "".join(lines[start - 1:end])
    assert first == start


class FakePort:
    """The core for one McpCall: scripted answers per op, published events recorded."""

    def __init__(self, answers: dict[str, Any]):
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.events: list[tuple[str, dict[str, Any]]] = []

    async def call(self, op: str, args: Any, timeout: float = 10.0) -> Any:
        self.calls.append((op, dict(args)))
        answer = self.answers[op]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def publish(self, topic: str, data: Any) -> None:
        self.events.append((topic, dict(data)))

    async def ask(self, proposal: str, timeout: float) -> str | None:
        return None


def _call(port: FakePort, root: Path) -> McpCall:
    return McpCall(port, root, "c1", "c1.1", "mcp-1")


def test_get_selection_with_a_window_gives_path_cursor_and_selected_text(tmp_path):
    port = FakePort({"ui.state": {"tabs": [{"buffer": "b1", "path": "a.py", "name": "a.py",
                                            "active": True}],
                                  "cursor": {"line": 2, "col": 3},
                                  "selection": {"start": 4, "end": 9, "size": 5}},
                     "buffer.text": {"text": "hello", "version": 3}})
    got = asyncio.run(_call(port, tmp_path).run("get_selection", {}, "allow", "a"))
    assert got == {"window": True, "path": "a.py", "name": "a.py",
                   "cursor": {"line": 2, "col": 3},
                   "selection": {"start": 4, "end": 9, "text": "hello"}}
    assert ("buffer.text", {"buffer": "b1", "start": 4, "end": 9}) in port.calls


def test_open_in_editor_with_a_window_asks_ui_open_with_the_line(tmp_path):
    (tmp_path / "a.py").write_text("x\n")
    port = FakePort({"ui.open": {"buffer": "b1"}})
    got = asyncio.run(_call(port, tmp_path).run("open_in_editor", {"path": "a.py", "line": 3},
                                                "allow", "a"))
    assert got == {"opened": True, "path": "a.py"}
    assert port.calls == [("ui.open", {"path": "a.py", "line": 3})]


def test_an_unanswered_proposal_is_declined_and_never_applied(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    port = FakePort({"buffer.list": [], "fs.read": {"text": "x = 1\n", "length": 6}})
    got = asyncio.run(_call(port, tmp_path).run(
        "propose_edit", {"path": "a.py", "old_text": "1", "new_text": "2"}, "ask", "a"))
    assert got["applied"] is False and "did not answer" in got["message"]
    assert [t for t, _ in port.events] == ["agent.propose", "agent.tool_result"]
    assert not any(op in ("buffer.open", "buffer.replace") for op, _ in port.calls)


def test_the_end_of_a_turn_declines_its_open_question_at_once(tmp_path):
    from types import SimpleNamespace

    from actors.agents.mcp import McpService
    service = McpService(SimpleNamespace(), tmp_path, question_timeout_s=60)
    answers: list[Any] = []
    asker = threading.Thread(target=lambda: answers.append(
        service.ask("c1", "c1.1", "mcp-9", 60)))
    asker.start()
    while "mcp-9" not in service.questions:    # registered: the question is open
        time.sleep(0.01)
    t0 = time.monotonic()
    service.on_turn_event(SimpleNamespace(data={"turn": "c1.1", "state": "stopped"}))
    asker.join(5)
    assert answers == [None] and time.monotonic() - t0 < 5


def test_the_default_question_timeout_is_four_minutes(monkeypatch):
    from actors.agents.mcp import TIMEOUT_ENV, question_timeout
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert question_timeout() == QUESTION_TIMEOUT_S == 240.0
    monkeypatch.setenv(TIMEOUT_ENV, "2.5")
    assert question_timeout() == 2.5


_SEGMENTS = st.sampled_from(["..", ".", "a", "sub", "out", "a.py", "", "x"])


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_SEGMENTS, min_size=1, max_size=6), st.booleans())
def test_confine_never_names_a_file_outside_the_project(tree, segments, absolute):
    from rio.protocol.errors import RioError
    root, outside = tree
    path = "/".join(segments)
    if absolute:
        path = f"{root}/{path}"
    try:
        rel = confine(Workspace(root), path, must_exist=False)
    except RioError:
        return
    real = os.path.realpath(os.path.join(root, rel))
    assert real == str(root) or real.startswith(str(root) + os.sep)
    assert not real.startswith(str(outside))


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    base = tmp_path_factory.mktemp("confine")
    root, outside = base / "proj", base / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "a.py").write_text("x\n")
    (outside / "x").write_text("secret\n")
    os.symlink(outside, root / "out")          # a folder symlink that leads out
    os.symlink(outside / "x", root / "sub" / "x")
    return root.resolve(), outside.resolve()


def test_a_session_end_removes_only_a_token_written_before_it(state):
    from rio.mcp.entry import end_if_older
    path = issue_token(state, "c5")
    assert end_if_older("c5", state, time.time() - 3600) is False   # newer: kept
    assert path.exists()
    assert end_if_older("c5", state, time.time() + 1) is True
    assert not path.exists()
    assert end_if_older("c5", state, time.time()) is False          # nothing left


def test_an_interrupted_proposal_is_never_applied_and_the_agent_is_told(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    port = FakePort({"buffer.list": [], "fs.read": {"text": "x = 1\n", "length": 6}})

    async def interrupted(proposal: str, timeout: float) -> str:
        return "interrupted"
    port.ask = interrupted  # type: ignore[method-assign]
    got = asyncio.run(_call(port, tmp_path).run(
        "propose_edit", {"path": "a.py", "old_text": "1", "new_text": "2"}, "ask", "a"))
    assert got["applied"] is False and got["message"].startswith("Interrupted:")
    results = [d for t, d in port.events if t == "agent.tool_result"]
    assert results[0]["summary"] == "a.py: interrupted" and results[0]["ok"] is False
    assert not any(op in ("buffer.open", "buffer.replace") for op, _ in port.calls)


def test_mcp_interrupt_closes_only_that_turns_waiting_proposal(tmp_path):
    from types import SimpleNamespace

    from actors.agents.mcp import McpService, _Port
    published: list[tuple[str, Any]] = []
    service = McpService(SimpleNamespace(publish=lambda t, d: published.append((t, d))),
                         tmp_path, question_timeout_s=60)
    # agent.propose registers the question before the event leaves: a message sent on
    # seeing the event always finds it.
    _Port(service, "c1", "c1.1").publish("agent.propose", {"proposal": "mcp-1"})
    assert "mcp-1" in service.questions and published[0][0] == "agent.propose"
    other = service.register("c2", "c2.1", "mcp-2")
    answers: list[Any] = []
    asker = threading.Thread(target=lambda: answers.append(
        service.ask("c1", "c1.1", "mcp-1", 60)))
    asker.start()
    assert service.interrupt({"conversation": "c1", "turn": "c1.0"}) == {
        "interrupted": False, "proposals": []}
    assert service.interrupt({"conversation": "c1", "turn": "c1.1"}) == {
        "interrupted": True, "proposals": ["mcp-1"]}
    asker.join(5)
    assert answers == ["interrupted"] and not other.answered.is_set()
    assert service.interrupt({"conversation": "c1", "turn": "c1.1"})["interrupted"] is False


def test_rio_mcp_answers_the_mcp_methods_of_a_tools_only_server():
    """rio/mcp/server.py speaks MCP itself (the SDK's import took 5.4 s of a 5.5 s start):
    the version negotiation, ping, tools/list with the annotations, tools/call through the
    bus, notifications unanswered, anything else "method not found"."""
    from rio.mcp.server import PROTOCOL_VERSIONS, McpStdioServer
    from rio.protocol.errors import AuthError

    class Link:
        calls: list[tuple[str, dict]] = []

        async def call(self, op: str, args: dict, timeout: float) -> Any:
            self.calls.append((op, args))
            if args["tool"] == "nope":
                raise AuthError("bad_token", "No valid token.", "Start a new turn.")
            return {"turn": "t1", "result": {"buffers": []}}

    server = McpStdioServer(Link(), "c1", "tok", "claude")  # type: ignore[arg-type]

    def ask(method: str, params: dict | None = None, ident: Any = 1) -> Any:
        message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params or {}}
        return asyncio.run(server.handle(message))
    init = ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})["result"]
    assert init["protocolVersion"] == "2025-06-18" and init["capabilities"] == {
        "tools": {"listChanged": False}} and init["serverInfo"]["name"] == "rio"
    newer = ask("initialize", {"protocolVersion": "2099-01-01"})["result"]
    assert newer["protocolVersion"] == PROTOCOL_VERSIONS[-1]
    assert ask("ping", ident="p") == {"jsonrpc": "2.0", "id": "p", "result": {}}
    tools = {t["name"]: t for t in ask("tools/list")["result"]["tools"]}
    assert tools["read_buffer"]["annotations"]["readOnlyHint"] is True
    assert tools["propose_edit"]["annotations"]["readOnlyHint"] is False
    assert tools["read_buffer"]["inputSchema"]["required"] == ["path"]
    ok = ask("tools/call", {"name": "list_buffers", "arguments": {}})["result"]
    assert ok["isError"] is False and ok["structuredContent"] == {"buffers": []}
    assert Link.calls[0] == ("mcp.call", {"conversation": "c1", "token": "tok",
                                          "tool": "list_buffers", "args": {},
                                          "agent": "claude"})
    refused = ask("tools/call", {"name": "nope"})["result"]
    assert refused["isError"] is True and "auth.bad_token" in refused["content"][0]["text"]
    assert ask("resources/list")["error"]["code"] == -32601
    assert ask("tools/call", {})["error"]["code"] == -32602
    assert asyncio.run(server.handle({"jsonrpc": "2.0",
                                      "method": "notifications/initialized"})) is None
    assert asyncio.run(server.handle([1, 2]))["error"]["code"] == -32600


def test_rio_mcp_imports_neither_the_mcp_sdk_nor_the_other_commands():
    """Its start is waited for by the agent: no `mcp` SDK, no other command module, none of
    the core-side tool code (ADR-0025: 5.5 s → 0.5 s to its first answer)."""
    import subprocess
    import sys
    code = ("import sys\nimport rio.cli.main as m\nm.build_parser('mcp')\nimport rio.mcp.server\n"
            "heavy = ('mcp', 'mcp.', 'mcp_types', 'rio.cli.agents', 'rio.cli.agent', "
            "'rio.cli.keys', 'rio.cli.faults', 'rio.agent.tools', 'rio.files.fs_ops')\n"
            "print(sorted(k for k in sys.modules if k in heavy or k.startswith(heavy[1:3])))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_mcp_pending_lists_the_waiting_proposals_as_published(tmp_path):
    """agent.pending asks the mcp actor for its proposals (mcp-…): the ones still waiting, of
    the conversation asked for, as the agent.propose they were published as."""
    from types import SimpleNamespace

    from actors.agents.mcp import McpService, _Port
    service = McpService(SimpleNamespace(publish=lambda t, d: None), tmp_path,
                         question_timeout_s=60)
    _Port(service, "c1", "c1.1").publish("agent.propose", {"proposal": "mcp-1", "path": "a.py",
                                                           "diff": "-1\n+2\n"})
    _Port(service, "c2", "c2.1").publish("agent.propose", {"proposal": "mcp-2", "path": "b.py"})
    assert service.pending({"conversation": "c1"}) == {"events": [{
        "topic": "agent.propose", "data": {"proposal": "mcp-1", "path": "a.py",
                                           "diff": "-1\n+2\n", "conversation": "c1",
                                           "turn": "c1.1"}}]}
    assert [e["data"]["proposal"] for e in service.pending({})["events"]] == ["mcp-1", "mcp-2"]
    service.interrupt({"conversation": "c1", "turn": "c1.1"})     # answered: not waiting
    assert [e["data"]["proposal"] for e in service.pending({})["events"]] == ["mcp-2"]
