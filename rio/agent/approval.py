"""A turn's writes put to the user: approve, always allow, reject — one place for both brains.

An API model's ``propose_edit`` / ``propose_create`` / ``run_command``, an ACP agent's
``fs/write_text_file`` and its calls of Rio's MCP ``propose_*`` tools all end here once the
gate has not refused them: :meth:`Proposals.write` prepares the proposal, applies it at once
when the gate allows it, else :meth:`Proposals.ask` publishes ``agent.propose`` and turns the
user's answer into the tool's outcome. The two turns (:mod:`rio.agent.turn`,
:mod:`rio.acp.turn`) each hold one :class:`Proposals`; written twice, the handling drifted (the
two reject messages differed), so the model and the agent are now told the same thing for the
same answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from rio.agent.tools import Proposal, ToolOutcome
from rio.providers.base import ToolCall

Decision = Literal["approve", "reject", "always", "interrupted", "stopped"]

INTERRUPTED = "interrupted: the user sent a new message instead of deciding on this call."
STOPPED = "stopped: the user pressed Stop before this call finished."
#: Told the model or agent when the user rejects its proposal. "Proposal" is the word the
#: API model's system prompt and its tools use (rio/agent/system_prompt.py, ``propose_*``),
#: and it covers a rejected command as well as a file change; "instead" says to ask rather
#: than try the same thing another way.
REJECTED = ("The user rejected this proposal. Do not repeat it unchanged; ask what they want "
            "instead.")
#: A proposal asked with a timeout (Rio's MCP tools) that nobody answered in time.
NOT_ANSWERED = ("The user did not answer in time, so the change was declined. Do not repeat "
                "it unchanged; say what you wanted to change.")


class ProposalTools(Protocol):
    """What :class:`Proposals` needs of the turn's :class:`~rio.agent.tools.Tools`."""

    async def prepare(self, name: str, args: Mapping[str, Any]) -> Proposal | ToolOutcome: ...

    async def apply(self, proposal: Proposal) -> ToolOutcome: ...


@dataclass
class PendingProposal:
    id: str
    call: ToolCall
    proposal: Proposal
    future: asyncio.Future[Decision]
    #: What the decision led to (the edit applied or refused at approval), for the approver.
    outcome: asyncio.Future[ToolOutcome]


def refusal(name: str, verdict: Mapping[str, Any]) -> ToolOutcome | None:
    """The gate's ``refuse`` as the tool's outcome; None when it did not refuse."""
    if verdict.get("decision") == "refuse":
        return ToolOutcome(f"Refused: {verdict.get('reason', '')}", False, f"{name}: refused")
    return None


def decided(name: str, answer: str | None) -> ToolOutcome | None:
    """The outcome of an answer that applies nothing (reject, not answered, interrupted,
    stopped); None for approve and always, whose outcome is the apply's."""
    if answer in ("approve", "always"):
        return None
    if answer == "reject":
        return ToolOutcome(REJECTED, False, f"{name}: rejected")
    if answer is None:
        return ToolOutcome(NOT_ANSWERED, False, f"{name}: not answered")
    return ToolOutcome(INTERRUPTED if answer == "interrupted" else STOPPED, False,
                       f"{name}: {answer}")


class Proposals:
    """One turn's proposals: asked, waiting, answered, closed at Stop or a new message."""

    def __init__(self, turn_id: str, tools: ProposalTools,
                 publish: Callable[[str, Mapping[str, Any]], None],
                 remember: Callable[[str], Awaitable[None]]) -> None:
        self.turn_id = turn_id
        self.tools = tools
        self._publish = publish
        self._remember = remember
        self.pending: dict[str, PendingProposal] = {}
        self._count = 0

    # --- asking ------------------------------------------------------------------------------
    async def write(self, call: ToolCall, verdict: Mapping[str, Any]) -> ToolOutcome:
        """A write the gate did not refuse: prepared (a refusal before anyone is asked),
        applied at once when the gate allows it, else asked."""
        prepared = await self.tools.prepare(call.name, call.input)
        if isinstance(prepared, ToolOutcome):
            return prepared
        if verdict.get("decision") == "allow":
            return await self.tools.apply(prepared)
        return await self.ask(call, prepared, verdict)

    async def ask(self, call: ToolCall, proposal: Proposal, verdict: Mapping[str, Any],
                  timeout: float | None = None) -> ToolOutcome:
        """Publish ``agent.propose`` and wait for ``agent.approve``: approved (or always
        allowed: remembered first) it is applied, located again in the text as it is now;
        otherwise the outcome says why not. Not answered within ``timeout``: declined."""
        pending = self._put(call, proposal, verdict)
        outcome: ToolOutcome | None = None
        try:
            try:
                answer: Decision | None = await asyncio.wait_for(
                    asyncio.shield(pending.future), timeout)
            except asyncio.TimeoutError:
                answer = None
            outcome = decided(call.name, answer)
            if outcome is None:
                if answer == "always":
                    await self._remember(call.name)
                outcome = await self.tools.apply(proposal)
            return outcome
        finally:
            self.pending.pop(pending.id, None)
            if not pending.outcome.done():
                pending.outcome.set_result(outcome or ToolOutcome(STOPPED, False, "stopped"))

    def _put(self, call: ToolCall, proposal: Proposal,
             verdict: Mapping[str, Any]) -> PendingProposal:
        self._count += 1
        pid = f"{self.turn_id}.{self._count}"
        loop = asyncio.get_running_loop()
        pending = PendingProposal(pid, call, proposal, loop.create_future(), loop.create_future())
        self.pending[pid] = pending
        event = {"proposal": pid, "call": call.id, **proposal.event(),
                 "reason": verdict.get("reason", "")}
        if verdict.get("danger") and "danger" not in event:
            event["danger"] = verdict["danger"]
        self._publish("agent.propose", event)
        return pending

    # --- answering ---------------------------------------------------------------------------
    def waiting(self) -> list[PendingProposal]:
        return [p for p in self.pending.values() if not p.future.done()]

    def decide(self, proposal: str, decision: Decision) -> bool:
        pending = self.pending.get(str(proposal))
        if pending is None or pending.future.done():
            return False
        pending.future.set_result(decision)
        return True

    async def answer(self, proposal: str, decision: Decision) -> ToolOutcome | None:
        """:meth:`decide`, then wait for what it led to; None for an unknown proposal."""
        pending = self.pending.get(str(proposal))
        if pending is None or not self.decide(proposal, decision):
            return None
        return await asyncio.shield(pending.outcome)

    def close(self, why: Literal["interrupted", "stopped"]) -> bool:
        """Answer every waiting proposal with ``why`` (a new message, Stop); False when none
        waited."""
        waiting = self.waiting()
        for p in waiting:
            p.future.set_result(why)
        return bool(waiting)

    def events(self) -> list[dict[str, Any]]:
        """The proposals still waiting, as the ``agent.propose`` events that announced them
        (``session.pending``: a window that starts later draws them with Approve/Reject)."""
        return [{"topic": "agent.propose",
                 "data": {"proposal": p.id, "call": p.call.id, **p.proposal.event()}}
                for p in self.waiting()]

    def ids(self) -> list[str]:
        return [p.id for p in self.waiting()]


class AnswersProposals:
    """How the session tells a turn (an API model's or an ACP agent's) the user's decision on
    one of its proposals: the same methods on both, served by the turn's :class:`Proposals`."""

    proposals: Proposals

    def decide(self, proposal: str, decision: Decision) -> bool:
        return self.proposals.decide(proposal, decision)

    async def answer(self, proposal: str, decision: Decision) -> ToolOutcome | None:
        return await self.proposals.answer(proposal, decision)

    def pending_events(self) -> list[dict[str, Any]]:
        return self.proposals.events()

    def pending_ids(self) -> list[str]:
        return self.proposals.ids()


__all__ = ["INTERRUPTED", "NOT_ANSWERED", "REJECTED", "STOPPED", "AnswersProposals",
           "Decision", "PendingProposal", "ProposalTools", "Proposals", "decided", "refusal"]
