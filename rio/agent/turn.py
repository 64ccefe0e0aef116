"""One turn of the agent: model request → deltas and tool calls → tools → next request …

…until the model ends its turn, the user stops it, a limit is reached or a provider fails.
Pure asyncio logic around three ports — the :class:`~rio.providers.base.Provider`, the
:class:`~rio.agent.tools.Tools` (bus calls to the core) and a :class:`TurnPort` (events and
the gate) — so the whole loop is tested with a fake provider and no processes.

Failure policy:

* Safe retries belong to the provider (``stream_with_retries``); the loop sees one outcome.
* A provider failure ends the turn with status "error"; the partial text stays in the
  conversation and the error says so.
* Stop cancels the task running :meth:`Turn.run`; the HTTP stream is closed by the
  cancellation, pending proposals are declined, a running command's group is stopped, and
  :meth:`Turn.result` describes what was done so far (status "stopped"). No tool call is left
  without a result: an unanswered one gets a "stopped"/"interrupted" result, so the history
  is always a valid conversation for the next request.
* A new message while a proposal waits (:meth:`Turn.interrupt`): the proposal's tool call is
  closed with an "interrupted" result and the turn ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from rio.agent.approval import INTERRUPTED, STOPPED, AnswersProposals, Proposals, refusal
from rio.agent.output_limits import StreamBudget, output_limit
from rio.agent.tools import READ_TOOLS, TOOL_NAMES, ToolOutcome, Tools, missing_args
from rio.protocol.errors import AgentError, RioError
from rio.providers.base import (
    Delta,
    Done,
    Event,
    Message,
    Provider,
    ProviderFailure,
    ProviderRequest,
    ToolCall,
    ToolResultBlock,
    ToolSpec,
)

log = logging.getLogger("rio.agent.turn")

TurnStatus = Literal["done", "stopped", "error"]
NOT_RUN = "not run: the turn ended (a limit or an error) before this call ran."


class TurnPort(Protocol):
    """Events and the gate, as the loop needs them."""

    def publish(self, topic: str, data: Mapping[str, Any]) -> None: ...

    async def gate_turn(self, event: str) -> None:
        """begin/end/model_request/tool_call; raises ``agent.limit_reached``."""
        ...

    async def gate_check(self, tool: str, args: Mapping[str, Any]) -> Mapping[str, Any]: ...

    async def remember(self, tool: str) -> None: ...


@dataclass(frozen=True)
class TurnSpec:
    conversation: str
    turn: str
    provider: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]


@dataclass(frozen=True)
class TurnResult:
    status: TurnStatus
    messages: tuple[Message, ...]
    buffers: tuple[tuple[str, int], ...] = ()
    error: RioError | None = None
    partial: bool = False
    #: What a brain adds for the core (an ACP agent: its session id, files changed on disk).
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            **self.extra,
            "status": self.status, "messages": [m.to_dict() for m in self.messages],
            "buffers": [{"buffer": b, "since_version": v} for b, v in self.buffers]}
        if self.error is not None:
            out["error"] = {**self.error.to_wire(), "partial": self.partial}
        return out


def close_dangling(messages: Sequence[Message], reason: str = INTERRUPTED) -> list[Message]:
    """A valid conversation for the model: every tool_use answered by a tool_result in the
    next message, and roles alternating (consecutive messages of one role are merged)."""
    out: list[Message] = []
    for i, msg in enumerate(messages):
        out = _append(out, msg)
        uses = msg.tool_uses if msg.role == "assistant" else ()
        if not uses:
            continue
        following = messages[i + 1] if i + 1 < len(messages) else None
        answered = {b.tool_use_id for b in following.content
                    if isinstance(b, ToolResultBlock)} if following is not None \
            and following.role == "user" else set()
        missing = tuple(ToolResultBlock(u.id, reason, True) for u in uses if u.id not in answered)
        if missing:
            out = _append(out, Message("user", missing))
    return out


def _append(out: list[Message], msg: Message) -> list[Message]:
    if out and out[-1].role == msg.role:
        prev = out[-1]
        # tool_results must come first in a user message (Anthropic's rule)
        blocks = list(prev.content) + list(msg.content)
        if msg.role == "user":
            blocks = ([b for b in blocks if isinstance(b, ToolResultBlock)]
                      + [b for b in blocks if not isinstance(b, ToolResultBlock)])
        return out[:-1] + [Message(msg.role, tuple(blocks))]
    return out + [msg]


class _Collector:
    """The provider's post callback: coalesces deltas into one event per loop pass (the
    network hands over many small SSE events per read; one bus event each would cost more
    than the text), keeps the text and the tool calls, and the outcome."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.text: list[str] = []
        self.calls: list[ToolCall] = []
        self.done: Done | None = None
        self.failure: ProviderFailure | None = None
        self._pending: list[str] = []
        self._scheduled = False
        self._marked = False

    def post(self, event: Event) -> None:
        if isinstance(event, Delta):
            if not event.text:
                return
            budget = self.turn.budget
            if not budget.take(len(event.text)):
                # past the turn's bound (rio/agent/output_limits.py): the stream is ended
                # (stream_with_retries posts this as a partial failure), the text kept
                self.flush()
                raise output_limit()
            text = budget.keep(event.text)
            if not text:
                return
            self.text.append(text)
            self._pending.append(text)
            if not self._scheduled:
                self._scheduled = True
                asyncio.get_running_loop().call_soon(self.flush)
        elif isinstance(event, ToolCall):
            self.flush()
            self.calls.append(event)
        elif isinstance(event, Done):
            self.done = event
        elif isinstance(event, ProviderFailure):
            self.failure = event

    def flush(self) -> None:
        self._scheduled = False
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self.turn.publish("agent.delta", {"text": text})
            if not self.turn._published_delta:
                self.turn._published_delta = True
                log.debug("turn %s: first delta published", self.turn.spec.turn)

    def message(self, with_calls: bool) -> Message | None:
        text = "".join(self.text)
        if text and self.turn.budget.dropped and not self._marked:
            self._marked = True       # the cut is said once, in the message it happened in
            text += self.turn.budget.mark()
        uses = tuple(c.to_block() for c in self.calls) if with_calls else ()
        if not text and not uses:
            return None
        return Message.assistant(text, uses)


class Turn(AnswersProposals):
    def __init__(self, spec: TurnSpec, provider: Provider, tools: Tools, port: TurnPort, *,
                 begun: bool = False, first_request: Awaitable[Any] | None = None) -> None:
        self.spec = spec
        self.provider = provider
        self.tools = tools
        self.port = port
        self.new: list[Message] = []
        #: the writes put to the user (rio/agent/approval.py, shared with the ACP turn)
        self.proposals = Proposals(spec.turn, tools, self.publish, port.remember)
        self._collector: _Collector | None = None
        self._results: list[ToolResultBlock] = []   # of the tool round in progress
        self._round: tuple[ToolCall, ...] = ()
        self._interrupted = False
        self._published_delta = False
        #: what the turn streamed; its reply text kept at most MESSAGE_CHARS in all
        self.budget = StreamBudget()
        #: True when the caller already told the gate "begin" (to overlap it with its own set-up)
        self._began = begun
        #: The gate's answer to the first "model_request", when the caller sent it already
        #: (pipelined right behind "begin" on the same link, so their order holds).
        self._first_request = first_request
        self._outcome: TurnResult | None = None

    # --- events ---------------------------------------------------------------------------
    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        self.port.publish(topic, {"conversation": self.spec.conversation,
                                  "turn": self.spec.turn, **data})

    # --- the loop ---------------------------------------------------------------------------
    async def run(self) -> TurnResult:
        try:
            self._outcome = await self._loop()
        except asyncio.CancelledError:
            self._close_for("stopped")
            raise
        except RioError as err:  # a limit, or the gate/core unreachable: contained
            self._close_round(NOT_RUN)
            self._outcome = self._result("error", err)
        finally:
            await self._end_gate()
        if self._outcome.status == "error" and self._outcome.error is not None:
            # The session reports its own failures; the core reports only the ones it saw
            # itself (the session died, the bus failed).
            error = self._outcome.error
            self.publish("agent.error", {"kind": error.kind, "message": error.message,
                                         "next": error.next, "partial": self._outcome.partial})
        return self._outcome

    async def _loop(self) -> TurnResult:
        if not self._began:
            await self.port.gate_turn("begin")
            self._began = True
        while True:
            first, self._first_request = self._first_request, None
            await (first if first is not None else self.port.gate_turn("model_request"))
            log.debug("turn %s: model request %d", self.spec.turn, len(self.new))
            history = close_dangling(list(self.spec.messages) + self.new)
            request = ProviderRequest(self.spec.system, tuple(history), self.spec.tools)
            collector = self._collector = _Collector(self)
            await self.provider.stream(request, collector.post)
            collector.flush()
            self._collector = None
            if collector.failure is not None:
                message = collector.message(with_calls=False)
                if message is not None:
                    self.new.append(message)
                return self._result("error", collector.failure.error, collector.failure.partial)
            message = collector.message(with_calls=True)
            if message is not None:
                self.new.append(message)
            if not collector.calls:
                return self._result("done")
            self._round, self._results = tuple(collector.calls), []
            for call in collector.calls:
                if self._interrupted:
                    self._results.append(ToolResultBlock(call.id, INTERRUPTED, True))
                    continue
                self._results.append(await self._run_tool(call))
            self.new.append(Message.tool_results(tuple(self._results)))
            self._round, self._results = (), []
            if self._interrupted:
                return self._result("stopped", AgentError(
                    "interrupted", "The turn was interrupted by a new message.",
                    "Carry on with the new message."))

    def _result(self, status: TurnStatus, error: RioError | None = None,
                partial: bool = False) -> TurnResult:
        return TurnResult(status, tuple(self.new), tuple(self.tools.changed.items()), error,
                          partial)

    def result(self, status: TurnStatus = "stopped") -> TurnResult:
        """The outcome after :meth:`run` ended (or was cancelled, for ``stopped``)."""
        if self._outcome is not None:
            return self._outcome
        return self._result(status, AgentError("stopped", "You stopped the turn.",
                                               "Send a message to carry on."))

    async def _end_gate(self) -> None:
        if not self._began:
            return
        try:
            await asyncio.wait_for(self.port.gate_turn("end"), 2.0)
        except (RioError, asyncio.TimeoutError, asyncio.CancelledError):
            log.warning("gate did not take the end of turn %s", self.spec.turn)

    def _close_for(self, why: Literal["stopped"]) -> None:
        """Cancelled (Stop): keep the partial text, answer every open tool call."""
        self.proposals.close("stopped")
        collector, self._collector = self._collector, None
        if collector is not None:
            collector.flush()
            message = collector.message(with_calls=False)
            if message is not None:
                self.new.append(message)
        self._close_round(STOPPED)

    def _close_round(self, reason: str) -> None:
        if not self._round:
            return
        answered = {r.tool_use_id for r in self._results}
        results = list(self._results) + [ToolResultBlock(c.id, reason, True)
                                          for c in self._round if c.id not in answered]
        self.new.append(Message.tool_results(tuple(results)))
        self._round, self._results = (), []

    @property
    def interrupted(self) -> bool:
        """A new message has interrupted this turn (it is ending)."""
        return self._interrupted

    def interrupt(self) -> bool:
        """A new message arrived: close pending proposals as interrupted. False when there
        was none (then the new message must wait: agent.busy)."""
        if not self.proposals.waiting():
            return False
        self._interrupted = True
        return self.proposals.close("interrupted")

    # --- one tool call ----------------------------------------------------------------------
    async def _run_tool(self, call: ToolCall) -> ToolResultBlock:
        self.publish("agent.tool", {"call": call.id, "name": call.name,
                                    "input": shown_input(call.input)})
        await self.port.gate_turn("tool_call")
        outcome = await self._tool_outcome(call)
        result = {"call": call.id, "name": call.name, "ok": outcome.ok,
                  "summary": outcome.summary, "truncated": outcome.truncated}
        if outcome.output:
            result["output"] = outcome.output
        self.publish("agent.tool_result", result)
        return ToolResultBlock(call.id, outcome.content, not outcome.ok)

    async def _tool_outcome(self, call: ToolCall) -> ToolOutcome:
        if call.name not in TOOL_NAMES:
            return ToolOutcome(f"Error: there is no tool named {call.name!r}.", False,
                               f"{call.name}: unknown tool")
        missing = missing_args(call.name, call.input)
        if missing:
            return ToolOutcome(f"Error: {call.name} needs {', '.join(missing)}.", False,
                               f"{call.name}: missing {', '.join(missing)}")
        verdict = await self.port.gate_check(call.name, call.input)
        refused = refusal(call.name, verdict)
        if refused is not None:
            return refused
        if call.name in READ_TOOLS:
            return await self.tools.read(call.name, call.input)
        return await self.proposals.write(call, verdict)


#: Longest string of a tool's input shown in agent.tool (a whole new file can be an input; the
#: agent.propose diff shows it, capped, and the model's own copy is never cut).
MAX_SHOWN_INPUT_CHARS = 4_000


def shown_input(value: Any) -> Any:
    """The tool input for the agent.tool event: long strings cut with a marker."""
    if isinstance(value, str) and len(value) > MAX_SHOWN_INPUT_CHARS:
        return value[:MAX_SHOWN_INPUT_CHARS] + f"[… {len(value) - MAX_SHOWN_INPUT_CHARS} more " \
            "characters …]"
    if isinstance(value, Mapping):
        return {str(k): shown_input(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [shown_input(v) for v in value[:200]]
    return value


def merge_interrupted(request_messages: Iterable[Message],
                      earlier: Sequence[Message]) -> tuple[Message, ...]:
    """The new turn's history when an interrupted turn's messages have not reached the core
    yet: ``earlier`` goes before the new user message (the last one)."""
    msgs = list(request_messages)
    if not earlier or not msgs:
        return tuple(msgs)
    if any(m == earlier[0] for m in msgs):
        return tuple(msgs)
    return tuple(msgs[:-1] + list(earlier) + msgs[-1:])


__all__ = ["INTERRUPTED", "NOT_RUN", "STOPPED", "Turn", "TurnPort", "TurnResult", "TurnSpec",
           "close_dangling", "merge_interrupted"]
