"""Calls of Rio's MCP tools served by the ACP turn they belong to (rio/agent/turn_mcp.py),
without processes: a scripted agent, stub tools and gate. What an agent does through Rio's
MCP tools is the turn's: its proposals are the turn's to answer, its edits are in the turn's
result, and a cancel, a new message or the turn's end closes what waits (ADR-0034)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rio.acp.turn import AcpTurn
from rio.protocol.errors import AgentError
from tests.acp.test_acp_turn import FakeTools, Port, _turn
from tests.support import wait_for_async


class McpPort(Port):
    """The turn's port with the core's reads and the gate's table for Rio's tools."""

    def __init__(self, decision: str = "ask", agent_decision: str = "ask") -> None:
        super().__init__(decision)
        self.agent_decision = agent_decision
        self.checked: list[tuple[str, dict]] = []

    async def agent_check(self, tool: str, args: Any) -> dict:
        self.checked.append((tool, dict(args)))
        return {"decision": self.agent_decision, "reason": "the gate said so", "turn": "c1.1"}

    async def call(self, op: str, args: Any, timeout: float = 10.0) -> Any:
        if op == "buffer.list":
            return []
        if op == "fs.read":
            return {"text": "old\n"}
        raise AssertionError(f"unexpected {op}")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("old\n")
    return tmp_path


def mcp_turn(root: Path, port: McpPort, tools: FakeTools, script: Any = None,
             **kw: Any) -> AcpTurn:
    async def hold(turn: AcpTurn) -> str:     # the agent waits for its own call's answer
        while not turn.brain.client.cancelled and not getattr(turn, "_done_for_test", False):
            await asyncio.sleep(0.001)
        return "done"
    turn = _turn(script or hold, port, tools, **kw)
    turn.root = root
    return turn


EDIT = {"path": "a.txt", "old_text": "old", "new_text": "new"}


async def _running(root: Path, port: McpPort, tools: FakeTools,
                   **kw: Any) -> tuple[AcpTurn, asyncio.Future[Any]]:
    """An ACP turn (``mcp_turn``) that has begun, and the task running it."""
    turn = mcp_turn(root, port, tools, **kw)
    task = asyncio.ensure_future(turn.run())
    await wait_for_async(lambda: turn._began, what="the turn's start")
    return turn, task


async def _proposed(turn: AcpTurn, call_id: str) -> asyncio.Future[Any]:
    """An MCP ``propose_edit`` call in flight, once its proposal waits for an answer."""
    call = asyncio.ensure_future(turn.mcp.run(call_id, "propose_edit", EDIT))
    await wait_for_async(turn.pending_ids, what="a pending proposal")
    return call


def test_an_mcp_edit_approved_is_the_turns_own_change(root):
    port, tools = McpPort(), FakeTools()

    async def main() -> Any:
        turn, task = await _running(root, port, tools)
        call = await _proposed(turn, "http-1")
        [pid] = turn.pending_ids()
        assert pid.startswith("c1.1.")       # the turn's proposal: agent.approve reaches it
        answered = await turn.answer(pid, "approve")
        got = await call
        turn._done_for_test = True
        return await task, answered, got
    result, answered, got = asyncio.run(main())
    assert answered.ok and got == {"applied": True, "message": "applied"}
    assert result.buffers == (("b1", 3),)        # in the turn's result: saved, undone with it
    assert port.checked == [("propose_edit", {"path": "a.txt"})]
    topics = [t for t, _ in port.events]
    assert topics.count("agent.propose") == 1 and topics.count("agent.tool") == 1
    tool = next(d for t, d in port.events if t == "agent.tool")
    assert tool["source"] == "mcp" and tool["name"] == "propose_edit"
    done = next(d for t, d in port.events if t == "agent.tool_result")
    assert done["call"] == tool["call"] and done["ok"] is True


def test_a_cancelled_mcp_call_closes_its_question_and_applies_nothing(root):
    port, tools = McpPort(), FakeTools()

    async def main() -> Any:
        turn, task = await _running(root, port, tools)
        call = await _proposed(turn, "http-7")
        assert turn.mcp.cancel("http-7") is True
        with pytest.raises(asyncio.CancelledError):
            await call
        assert turn.pending_ids() == [] and turn.mcp.cancel("http-7") is False
        turn._done_for_test = True
        return await task
    result = asyncio.run(main())
    assert tools.applied == [] and result.buffers == ()
    closed = [d for t, d in port.events if t == "agent.tool_result"]
    assert len(closed) == 1 and closed[0]["ok"] is False and "cancelled" in closed[0]["summary"]


def test_a_cancel_that_arrives_before_its_call_still_cancels_it(root):
    """The endpoint's cancel can overtake the call it names (two requests, two sockets): the
    call, when it comes, is refused, never asked."""
    port, tools = McpPort(), FakeTools()

    async def main() -> Any:
        turn, task = await _running(root, port, tools)
        assert turn.mcp.cancel("http-9") is False
        with pytest.raises(AgentError) as err:
            await turn.mcp.run("http-9", "propose_edit", EDIT)
        turn._done_for_test = True
        await task
        return err.value
    err = asyncio.run(main())
    assert err.kind == "agent.cancelled" and tools.applied == []
    assert not [t for t, _ in port.events if t == "agent.propose"]


def test_a_new_message_while_only_an_mcp_proposal_waits_interrupts_the_turn(root):
    port, tools = McpPort(), FakeTools()

    async def main() -> Any:
        turn, task = await _running(root, port, tools)
        call = await _proposed(turn, "http-2")
        assert turn.interrupt() is True and turn.interrupted
        got = await call
        return await asyncio.wait_for(task, 5), got
    result, got = asyncio.run(main())
    assert got["applied"] is False and "interrupted" in got["message"]
    assert result.status == "stopped" and result.error.kind == "agent.interrupted"
    assert tools.applied == []


def test_an_unanswered_mcp_proposal_is_declined_after_the_question_timeout(root):
    port, tools = McpPort(), FakeTools()

    async def main() -> Any:
        turn, task = await _running(root, port, tools, question_timeout_s=0.05)
        got = await turn.mcp.run("http-3", "propose_edit", EDIT)
        turn._done_for_test = True
        await task
        return got
    got = asyncio.run(main())
    assert got["applied"] is False and "did not answer" in got["message"]
    assert tools.applied == []


def test_calls_after_the_turn_ended_and_refusals_of_the_gate_are_errors(root):
    port, tools = McpPort(agent_decision="refuse"), FakeTools()

    async def main() -> Any:
        turn, task = await _running(root, port, tools)
        with pytest.raises(AgentError) as refused:
            await turn.mcp.run("http-4", "propose_edit", EDIT)
        with pytest.raises(AgentError) as unknown:
            await turn.mcp.run("http-5", "rm_rf", {})
        turn._done_for_test = True
        await task
        with pytest.raises(AgentError) as late:
            await turn.mcp.run("http-6", "read_buffer", {"path": "a.txt"})
        return refused.value, unknown.value, late.value
    refused, unknown, late = asyncio.run(main())
    assert refused.kind == "agent.tool_refused" and "the gate said so" in refused.message
    assert unknown.kind == "agent.tool_refused" and "rm_rf" in unknown.message
    assert late.kind == "agent.outside_turn"


def test_a_read_runs_without_asking_while_a_proposal_waits(root):
    port, tools = McpPort(agent_decision="allow"), FakeTools()
    port.agent_decision = "ask"

    async def main() -> Any:
        turn, task = await _running(root, port, tools)
        waiting = await _proposed(turn, "http-1")
        port.agent_decision = "allow"
        read = await turn.mcp.run("http-2", "read_buffer", {"path": "a.txt"})
        turn.mcp.cancel("http-1")
        with pytest.raises(asyncio.CancelledError):
            await waiting
        turn._done_for_test = True
        await task
        return read
    read = asyncio.run(main())
    assert read["text"] == "old\n" and read["source"] == "file"
