"""The ACP brain's turn (rio/acp/turn.py) without processes: a scripted client, stub
tools and gate; what the session process relies on."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rio.acp.client import PromptOutcome
from rio.acp.port import PermissionOption, PermissionQuestion
from rio.acp.turn import AcpBrain, AcpTurn, AcpTurnSpec
from rio.agent.tools import Proposal, ToolOutcome
from tests.support import wait_for_async


class Port:
    def __init__(self, decision: str = "ask") -> None:
        self.events: list[tuple[str, dict]] = []
        self.gate: list[str] = []
        self.decision = decision

    def publish(self, topic: str, data: Any) -> None:
        self.events.append((topic, dict(data)))

    async def gate_turn(self, event: str) -> None:
        self.gate.append(event)

    async def gate_check(self, tool: str, args: Any) -> dict:
        return {"decision": self.decision}

    async def remember(self, tool: str) -> None:
        pass


class FakeTools:
    def __init__(self) -> None:
        self.changed: dict[str, int] = {}
        self.applied: list[Proposal] = []
        self.text = "old\n"

    async def _current_text(self, path: str) -> tuple[str, str]:
        return self.text, "buffer"

    async def prepare(self, name: str, args: Any) -> Proposal:
        return Proposal("edit", args["path"], "-old\n+new\n", dict(args))

    async def apply(self, proposal: Proposal) -> ToolOutcome:
        self.applied.append(proposal)
        self.changed.setdefault("b1", 3)
        return ToolOutcome("applied", True, f"{proposal.path}: edited")


class Client:
    """Plays AcpClient: ``script(turn)`` runs as the prompt."""

    def __init__(self, script) -> None:
        self.script = script
        self.alive = True
        self.session_id = "s1"
        self.port: Any = None
        self.can_load = False
        self.cancelled = False

        class Updates:
            text: list[str] = []
        self.updates = Updates()

    async def prompt(self, text: str) -> PromptOutcome:
        said = await self.script(self.port)
        return PromptOutcome("done", "end_turn", said)

    async def cancel(self) -> None:
        self.cancelled = True

    async def close(self) -> None:
        self.alive = False


def _turn(script, port: Port, tools: FakeTools, **kw: Any) -> AcpTurn:
    client = Client(script)
    brain = AcpBrain("fake", lambda p: client, client=client, session_id="s1")
    return AcpTurn(AcpTurnSpec("c1", "c1.1", "fake", "hi"), brain, tools, port, Path("/tmp"),
                   snapshot=lambda root: None, diff=lambda snap: {"files": [], "more": 0}, **kw)


QUESTION = PermissionQuestion("q1", "call1", "ls", "execute", {"command": "ls"},
                              (PermissionOption("ok", "Allow", "allow_once"),))


def test_an_unanswered_permission_question_is_declined_after_the_timeout():
    port, tools = Port(), FakeTools()

    async def script(turn: AcpTurn) -> str:
        kind = await turn.ask_permission(QUESTION)
        return f"kind={kind}"
    result = asyncio.run(_turn(script, port, tools, permission_timeout_s=0.05).run())
    assert result.messages[0].text == "kind=None"
    closed = [d for t, d in port.events if t == "agent.permission_closed"]
    assert closed == [{"conversation": "c1", "turn": "c1.1", "request": "q1", "kind": None,
                       "how": "timed_out"}]
    assert port.gate == ["begin", "end"]


def test_a_write_waits_for_approval_then_lands_through_the_tools():
    port, tools = Port("ask"), FakeTools()

    async def main() -> tuple[Any, Any]:
        outcome: list[Any] = []

        async def script(turn: AcpTurn) -> str:
            outcome.append(await turn.propose_write("a.txt", "new\n"))
            return "done"
        turn = _turn(script, port, tools)
        task = asyncio.ensure_future(turn.run())
        await wait_for_async(turn.pending_ids, what="a pending proposal")
        [pid] = turn.pending_ids()
        answered = await turn.answer(pid, "approve")
        return await task, (answered, outcome[0])
    result, (answered, outcome) = asyncio.run(main())
    assert answered.ok and outcome.applied
    assert [p.input["new_text"] for p in tools.applied] == ["new\n"]
    assert result.buffers == (("b1", 3),)
    assert [t for t, _ in port.events].count("agent.propose") == 1
    assert result.to_wire()["acp_session"] == "s1"


def test_a_new_message_while_a_question_waits_interrupts_the_turn():
    port, tools = Port(), FakeTools()

    async def main() -> Any:
        turn_box: list[AcpTurn] = []

        async def script(turn: AcpTurn) -> str:
            return f"kind={await turn.ask_permission(QUESTION)}"
        turn = _turn(script, port, tools)
        turn_box.append(turn)
        task = asyncio.ensure_future(turn.run())
        await wait_for_async(lambda: turn.questions, what="the agent's question")
        assert turn.interrupt() and turn.interrupted
        result = await task
        return result, turn.brain.client.cancelled
    result, cancelled = asyncio.run(main())
    assert result.status == "stopped" and result.error.kind == "agent.interrupted"
    assert cancelled


def test_nothing_waiting_is_not_interrupted():
    port, tools = Port(), FakeTools()

    async def script(turn: AcpTurn) -> str:
        return "quick"
    turn = _turn(script, port, tools)
    assert turn.interrupt() is False and not turn.interrupted


def test_session_pending_gives_what_the_running_agent_offers_even_between_turns():
    """session.pending: with no turn running, a running agent still gives its modes, config
    options and commands as it last published them (a late window's pickers); an agent that
    is not running gives nothing."""
    from types import SimpleNamespace

    from actors.agent.session import AgentSession
    from rio.acp.updates import UpdateTranslator
    updates = UpdateTranslator.__new__(UpdateTranslator)
    updates.modes = {"current": "ask", "available": [{"id": "ask", "name": "Ask"}]}
    updates.config = [{"id": "model", "type": "select", "currentValue": "m1"}]
    updates.commands = []
    client = SimpleNamespace(alive=True, session_id="s1", updates=updates)
    brain = AcpBrain("fake", lambda port: client)
    brain.client = client
    me = SimpleNamespace(running=None, conversation="c1", brain=brain)
    me._offered = lambda: AgentSession._offered(me)
    got = asyncio.run(AgentSession.pending_op(me, None))
    assert got == {"turn": None, "events": [
        {"topic": "agent.modes", "data": {**updates.modes, "conversation": "c1"}},
        {"topic": "agent.config", "data": {"options": updates.config, "conversation": "c1"}}]}
    client.alive = False
    assert asyncio.run(AgentSession.pending_op(me, None)) == {"turn": None, "events": []}


def test_a_crash_the_agent_cannot_be_resumed_from_is_one_error_and_no_retry():
    """An agent that offers session/load dies mid-turn, and starting it again fails: the
    crash's agent.error is published once (the client left it to the turn, which would have
    resumed), the prompt is not sent again and the turn ends with the crash."""
    from rio.protocol.errors import AgentError
    port, tools = Port(), FakeTools()
    crash = AgentError("agent_exited", "The agent 'fake' stopped (exit code 3).", "Send again.")
    prompts: list[dict] = []

    class Crashing(Client):
        async def prompt(self, text: str, **kw: Any) -> PromptOutcome:
            prompts.append(kw)
            self.alive = False
            return PromptOutcome("error", "", "halfway", crash, True)

    def restart(port: Any) -> Any:
        raise AgentError("agent_failed", "It would not start.", "Check it.")
    client = Crashing(None)
    client.can_load = True
    brain = AcpBrain("fake", restart, client=client, session_id="s1")
    turn = AcpTurn(AcpTurnSpec("c1", "c1.1", "fake", "hi"), brain, tools, port, Path("/tmp"),
                   snapshot=lambda root: None, diff=lambda snap: {"files": [], "more": 0})
    result = asyncio.run(turn.run())
    assert prompts == [{"resumable": True}]
    assert result.status == "error" and result.error.kind == "agent.agent_exited"
    errors = [d for t, d in port.events if t == "agent.error"]
    assert [e["kind"] for e in errors] == ["agent.agent_exited"] and errors[0]["partial"]
    assert [t for t, _ in port.events if t == "agent.restarted"] == []
    assert port.gate == ["begin", "end"]


def test_a_turn_the_agent_ends_without_a_word_says_so():
    """claude-agent-acp 0.23.1 answers the prompt after a Stop at once with an empty end_turn:
    Rio says the agent ended the turn without a reply, instead of showing nothing."""
    from rio.acp.turn import EMPTY_REPLY
    port, tools = Port(), FakeTools()

    async def silent(turn: AcpTurn) -> str:
        return ""
    result = asyncio.run(_turn(silent, port, tools).run())
    assert result.status == "done" and result.messages == ()
    assert [d["text"] for t, d in port.events if t == "agent.note"] == [EMPTY_REPLY]

    port = Port()

    async def spoke(turn: AcpTurn) -> str:
        turn.publish("agent.delta", {"text": "hello"})
        return "hello"
    asyncio.run(_turn(spoke, port, FakeTools()).run())
    assert not [d for t, d in port.events if t == "agent.note"]
