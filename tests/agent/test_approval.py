"""Approve / always allow / reject, one piece for both brains (rio/agent/approval.py).

The API turn (rio/agent/turn.py) and the ACP turn (rio/acp/turn.py) once each had their own
copy of this handling, and the copies drifted: the reject message differed. Here both turns
are driven to the same write with the same tools and gate, and every answer the user can give
must lead to the same outcome — what the model or agent is told, whether it counts as done,
the line the UI shows, what is applied and what is remembered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from rio.acp.client import PromptOutcome
from rio.acp.turn import AcpBrain, AcpTurn, AcpTurnSpec
from rio.agent.approval import NOT_ANSWERED, REJECTED, Proposals, decided
from rio.agent.tools import TOOL_SPECS, Proposal, ToolOutcome
from rio.agent.turn import INTERRUPTED, STOPPED, Turn, TurnSpec
from rio.providers.base import Delta, Done, Message, ProviderRequest, ToolCall

EDIT = {"path": "a.txt", "old_text": "old\n", "new_text": "new\n"}
ANSWERS = ("approve", "always", "reject", "interrupted", "stopped")


class Port:
    """Events, a gate that asks about every write, and what "always" remembered."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.remembered: list[str] = []

    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        self.events.append((topic, dict(data)))

    async def gate_turn(self, event: str) -> None:
        pass

    async def gate_check(self, tool: str, args: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"decision": "ask", "reason": "review mode"}

    async def remember(self, tool: str) -> None:
        self.remembered.append(tool)

    def of(self, topic: str) -> list[dict[str, Any]]:
        return [d for t, d in self.events if t == topic]


class FakeTools:
    def __init__(self) -> None:
        self.changed: dict[str, int] = {}
        self.applied: list[Proposal] = []

    async def _current_text(self, path: str) -> tuple[str, str]:
        return "old\n", "buffer"

    async def prepare(self, name: str, args: Mapping[str, Any]) -> Proposal:
        return Proposal("edit", str(args["path"]), "-old\n+new\n", dict(args))

    async def apply(self, proposal: Proposal) -> ToolOutcome:
        self.applied.append(proposal)
        self.changed.setdefault("b1", 3)
        return ToolOutcome(f"Applied the edit to {proposal.path}.", True,
                           f"{proposal.path}: edited")


class Provider:
    """Asks for one propose_edit, then ends its turn."""

    name = "fake"

    def __init__(self) -> None:
        self.scripts = [[ToolCall("call1", "propose_edit", EDIT), Done("tool_use")],
                        [Delta("ok"), Done("end_turn")]]

    async def stream(self, request: ProviderRequest, post: Any) -> None:
        for event in self.scripts.pop(0):
            post(event)


class Client:
    """Plays the ACP client: its prompt writes a.txt through the turn (fs/write_text_file)."""

    def __init__(self) -> None:
        self.alive = True
        self.session_id = "s1"
        self.can_load = False
        self.port: Any = None

    async def prompt(self, text: str) -> PromptOutcome:
        await self.port.propose_write("a.txt", "new\n")
        return PromptOutcome("done", "end_turn", "ok")

    async def cancel(self) -> None:
        pass

    async def close(self) -> None:
        self.alive = False


def _api_turn(port: Port, tools: FakeTools) -> Turn:
    spec = TurnSpec("c1", "c1.1", "fake", "system", (Message.user("hi"),), TOOL_SPECS)
    return Turn(spec, Provider(), tools, port)  # type: ignore[arg-type]


def _acp_turn(port: Port, tools: FakeTools) -> AcpTurn:
    client = Client()
    brain = AcpBrain("fake", lambda p: client, client=client, session_id="s1")
    return AcpTurn(AcpTurnSpec("c1", "c1.1", "fake", "hi"), brain, tools,  # type: ignore[arg-type]
                   port, Path("/nonexistent"),  # type: ignore[arg-type]
                   snapshot=lambda root: None, diff=lambda snap: {"files": [], "more": 0})


async def _answered(make: Any, answer: str) -> dict[str, Any]:
    """Run a turn of ``make``'s kind up to its proposal, give ``answer``, and say what came
    of it."""
    port, tools = Port(), FakeTools()
    turn = make(port, tools)
    task = asyncio.ensure_future(turn.run())
    while not turn.pending_ids():
        await asyncio.sleep(0)
    [pid] = turn.pending_ids()
    outcome = await turn.answer(pid, answer)
    await task
    [proposed] = port.of("agent.propose")
    [shown] = [d for d in port.of("agent.tool_result") if d["name"] == "propose_edit"]
    return {"outcome": (outcome.content, outcome.ok, outcome.summary),
            "shown": (shown["ok"], shown["summary"]),
            "proposed": {k: v for k, v in proposed.items() if k not in ("call", "proposal")},
            "applied": [p.input for p in tools.applied], "remembered": port.remembered,
            "shared": isinstance(turn.proposals, Proposals)}


@pytest.mark.parametrize("answer", ANSWERS)
def test_both_turns_give_the_same_outcome_for_the_same_answer(answer: str) -> None:
    api = asyncio.run(asyncio.wait_for(_answered(_api_turn, answer), 10))
    acp = asyncio.run(asyncio.wait_for(_answered(_acp_turn, answer), 10))
    assert api == acp
    assert api["shared"], "each turn answers through rio.agent.approval.Proposals"
    content, ok, summary = api["outcome"]
    applies = answer in ("approve", "always")
    assert ok is applies and api["shown"] == (ok, summary)
    assert api["applied"] == ([EDIT] if applies else [])
    assert api["remembered"] == (["propose_edit"] if answer == "always" else [])
    said = decided("propose_edit", answer)
    if said is not None:        # what the model or agent is told when nothing is applied
        assert (content, summary) == (said.content, said.summary)
    else:
        assert (content, summary) == ("Applied the edit to a.txt.", "a.txt: edited")


def test_the_reject_message_is_the_one_that_fits_every_proposal() -> None:
    """Of the two messages the copies had, the API turn's is kept: "proposal" is the word the
    API model's system prompt and its ``propose_*`` tools use, it fits a rejected command as
    well as a file change (the ACP copy's "change" did not), and "instead" tells the model to
    ask rather than try the same thing another way."""
    rejected = decided("run_command", "reject")
    assert rejected is not None and rejected.content == REJECTED
    assert "proposal" in REJECTED and "instead" in REJECTED and "this change" not in REJECTED
    assert rejected.summary == "run_command: rejected" and not rejected.ok


def test_each_answer_that_applies_nothing_says_why() -> None:
    assert decided("propose_edit", "approve") is None
    assert decided("propose_edit", "always") is None
    said = {answer: decided("propose_edit", answer)
            for answer in ("reject", None, "interrupted", "stopped")}
    assert {a: (o.content, o.summary) for a, o in said.items() if o is not None} == {
        "reject": (REJECTED, "propose_edit: rejected"),
        None: (NOT_ANSWERED, "propose_edit: not answered"),
        "interrupted": (INTERRUPTED, "propose_edit: interrupted"),
        "stopped": (STOPPED, "propose_edit: stopped")}


def test_a_question_asked_with_a_timeout_is_declined_when_nobody_answers() -> None:
    port, tools = Port(), FakeTools()

    async def main() -> ToolOutcome:
        proposals = Proposals("t1", tools, port.publish, port.remember)
        call = ToolCall("m1", "propose_edit", EDIT)
        outcome = await proposals.ask(call, await tools.prepare("propose_edit", EDIT),
                                      {"decision": "ask"}, timeout=0.01)
        assert proposals.ids() == [] and proposals.events() == []
        return outcome
    outcome = asyncio.run(asyncio.wait_for(main(), 10))
    assert (outcome.content, outcome.ok, outcome.summary) == (
        NOT_ANSWERED, False, "propose_edit: not answered")
    assert tools.applied == [] and len(port.of("agent.propose")) == 1
