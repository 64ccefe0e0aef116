"""``mcp.*`` in the core: the other end of ``rio mcp``, the MCP server an external agent starts.

Every ``mcp.call`` carries the conversation's token (rio/mcp/entry.py); a request without the
conversation's current token is refused (``auth.bad_token``). Then the gate decides
(``gate.agent_check``: allowed, asked or refused per tool and mode, counted against the turn's
limits, refused outside a turn) and :class:`rio.mcp.tools.McpCall` runs the tool. When a
conversation's session process ends (``system.process``), its token file is removed. An "ask"
publishes ``agent.propose`` (proposal ids start with ``mcp-``) and waits for ``agent.approve``
— the hub routes those ids straight here (``mcp.approve`` is the same op) — or declines
after the question timeout (240 s;
``RIO_AGENT_QUESTION_TIMEOUT_S`` for tests); a new message closes it as interrupted
(``mcp.interrupt``, asked by the conversation's session process, which owns the turn). Buffers changed by a turn's approved edits are
merged into one undo step ("Agent: <message>") when ``agent.turn`` says the turn ended, as
for the API agent.

Threads: requests arrive on the bus thread and run on a small pool of long-lived daemon
workers (a call may wait minutes for the user); each worker has its own bus socket
(actors/bus/service.py). Shared state is behind one lock.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from actors.actor_registry import ActorHost, actor_factory
from actors.agents.turn_workers import WorkerPool
from actors.bus.service import BusThread, OpTable, RequestContext
from rio.mcp.entry import QUESTION_TIMEOUT_S, check_token
from rio.protocol.errors import AgentError, RioError
from rio.protocol.frames import thaw

log = logging.getLogger("rio.mcp")

TIMEOUT_ENV = "RIO_AGENT_QUESTION_TIMEOUT_S"


@dataclass
class _Question:
    conversation: str
    turn: str
    answered: threading.Event = field(default_factory=threading.Event)
    answer: str | None = None
    done: threading.Event = field(default_factory=threading.Event)
    result: dict[str, Any] = field(default_factory=dict)
    #: the ``agent.propose`` data as published: ``mcp.pending`` gives it to a late window
    event: dict[str, Any] = field(default_factory=dict)


class McpService:
    """Serves ``mcp.call`` and ``mcp.approve``; see the module docstring."""

    def __init__(self, bus: BusThread, root: Path, *,
                 question_timeout_s: float = QUESTION_TIMEOUT_S) -> None:
        self.bus = bus
        self.root = root
        self.question_timeout_s = question_timeout_s
        self.pool = WorkerPool("mcp", 16)
        self.lock = threading.Lock()
        self.questions: dict[str, _Question] = {}
        self.changed: dict[str, dict[str, int]] = {}   # turn → buffer → version before
        self.texts: dict[str, str] = {}                # turn → the user's message

    handles: OpTable[McpService] = OpTable()
    #: Ops that may wait minutes (for the user): served on a worker, never on the bus thread.
    ON_WORKERS = frozenset({"mcp.call", "mcp.approve", "agent.approve"})

    # --- the bus thread ----------------------------------------------------------------------
    def handle(self, ctx: RequestContext) -> None:
        if ctx.op in self.ON_WORKERS:
            self.pool.submit(lambda: self.handles.serve(self, ctx))
        else:   # mcp.interrupt, mcp.pending: the lock only, answered on the bus thread
            self.handles.serve(self, ctx)

    @handles("mcp.call")
    def call_op(self, ctx: RequestContext) -> Any:
        return self.call(ctx.args)

    # agent.approve of an mcp-… proposal comes straight here: the hub and this process's bus
    # thread route it to the actor that holds it (rio/protocol/routing.py route_prefix)
    @handles("mcp.approve", "agent.approve")
    def approve_op(self, ctx: RequestContext) -> Any:
        return self.approve(ctx.args)

    @handles("mcp.interrupt")
    def interrupt_op(self, ctx: RequestContext) -> Any:
        return self.interrupt(ctx.args)

    @handles("mcp.pending")
    def pending_op(self, ctx: RequestContext) -> Any:
        return self.pending(ctx.args)

    def on_turn_event(self, event: Any) -> None:
        data = thaw(event.data)
        turn = data.get("turn")
        if not isinstance(turn, str):
            return
        if data.get("state") == "started":
            with self.lock:
                self.texts[turn] = str(data.get("text") or "")
                while len(self.texts) > 256:
                    del self.texts[next(iter(self.texts))]
            return
        with self.lock:    # the turn ended: decline its open questions, merge its edits
            for q in self.questions.values():
                if q.turn == turn and not q.answered.is_set():
                    q.answered.set()
            changed = self.changed.pop(turn, {})
            text = self.texts.pop(turn, "")
        if changed:
            self.pool.submit(lambda: self._merge_undo(turn, text, changed))

    def on_process_event(self, event: Any) -> None:
        """A conversation's session process ended (crashed, stopped, gave up): its agent and
        the agent's ``rio mcp`` are gone with it, so its token is removed — unless the
        restarted process has written a fresh one since."""
        from rio.mcp.entry import end_if_older
        data = thaw(event.data)
        name = str(data.get("name") or "")
        if not name.startswith("agent:") or data.get("event") not in (
                "exited", "stopped", "gave_up"):
            return
        try:
            if end_if_older(name.split(":", 1)[1], self.root, time.time()):
                log.info("%s ended: its MCP token was removed", name)
        except RioError:
            pass    # not a conversation id: no token of ours

    # --- workers -------------------------------------------------------------------------------
    def call(self, args: Mapping[str, Any]) -> dict[str, Any]:
        # Loaded on the first call, not when the core starts (its start-up stays lean).
        import asyncio

        from rio.agent.turn import shown_input
        from rio.mcp.tools import McpCall
        conversation, tool = str(args["conversation"]), str(args["tool"])
        check_token(self.root, conversation, args.get("token"))
        tool_args = dict(args.get("args") or {})
        agent = str(args.get("agent") or "acp")
        shown = {"path": self._gate_path(tool_args["path"])} \
            if isinstance(tool_args.get("path"), str) else {}
        verdict = self.bus.call("gate.agent_check", {"conversation": conversation,
                                                     "agent": agent, "tool": tool,
                                                     "args": shown}, timeout=10)
        turn = verdict.get("turn")
        if turn is None:
            raise AgentError("outside_turn", str(verdict.get("reason")),
                             "Rio's tools answer only while Rio is waiting for your reply to "
                             "the user's message.")
        if verdict.get("decision") == "refuse":
            raise AgentError("tool_refused", str(verdict.get("reason")),
                             "Do not repeat the call unchanged; tell the user what you need.")
        call_id = f"mcp-{os.urandom(6).hex()}"
        ids = {"conversation": conversation, "turn": turn}
        self.bus.publish("agent.tool", {**ids, "call": call_id, "name": tool,
                                        "input": shown_input(tool_args), "source": "mcp"})
        runner = McpCall(_Port(self, conversation, turn), self.root, conversation, turn,
                         call_id, question_timeout_s=self.question_timeout_s)
        result: dict[str, Any] = {"applied": False, "message": "failed"}
        try:
            result = asyncio.run(runner.run(tool, tool_args, str(verdict["decision"]), agent))
        except RioError as err:
            self.bus.publish("agent.tool_result", {**ids, "call": call_id, "name": tool,
                                                   "ok": False, "summary": err.message,
                                                   "truncated": False})
            result = {"applied": False, "message": err.message}
            raise
        finally:
            self._record_changes(turn, runner.changed())
            with self.lock:
                question = self.questions.pop(call_id, None)
            if question is not None:    # the answer to agent.approve: applied or why not
                question.result = {"applied": bool(result.get("applied"))}
                if not result.get("applied"):
                    question.result["reason"] = str(result.get("message", ""))
                question.done.set()
        if tool not in ("propose_edit", "propose_create"):
            self.bus.publish("agent.tool_result", {**ids, "call": call_id, "name": tool,
                                                   "ok": True, "summary": tool,
                                                   "truncated": False})
        return {"turn": turn, "result": result}

    def _gate_path(self, path: str) -> str:
        """The path as the gate judges it: an absolute path inside the root made relative
        (the tool itself confines it again, symlinks resolved)."""
        for root in {str(self.root), os.path.realpath(self.root)}:
            if path.startswith(root.rstrip("/") + "/"):
                return path[len(root.rstrip("/")) + 1:] or "."
        return path

    def approve(self, args: Mapping[str, Any]) -> dict[str, Any]:
        proposal = str(args["proposal"])
        with self.lock:
            question = self.questions.get(proposal)
        if question is None or question.answered.is_set() or question.turn != args["turn"]:
            return {"applied": False, "reason": "No such proposal is waiting."}
        question.answer = str(args["decision"])
        question.answered.set()
        question.done.wait(60)
        if question.answer == "reject":
            return {"applied": False, "reason": "rejected"}
        return question.result or {"applied": False, "reason": "not applied"}

    def interrupt(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """A new message in the conversation (asked by its session process, which owns the
        turn): the turn's waiting proposals are closed as "interrupted" — the tool tells the
        agent so and applies nothing. ``interrupted`` says whether one waited."""
        conversation, turn = str(args["conversation"]), str(args["turn"])
        closed = []
        with self.lock:
            for proposal, q in self.questions.items():
                if q.conversation == conversation and q.turn == turn \
                        and not q.answered.is_set():
                    q.answer = "interrupted"
                    q.answered.set()
                    closed.append(proposal)
        return {"interrupted": bool(closed), "proposals": closed}

    def pending(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The proposals still waiting for the user (of one conversation when given), as the
        ``agent.propose`` events they were published as: ``agent.pending`` asks for them."""
        only = args.get("conversation")
        with self.lock:
            events = [{"topic": "agent.propose", "data": dict(q.event)}
                      for q in self.questions.values() if q.event
                      and not q.answered.is_set() and (not only or q.conversation == only)]
        return {"events": events}

    def register(self, conversation: str, turn: str, proposal: str,
                 event: Mapping[str, Any] | None = None) -> _Question:
        """The question for ``proposal``, registered before its ``agent.propose`` is
        published: a new message sent on seeing the event always finds it (mcp.interrupt)."""
        with self.lock:
            question = self.questions.setdefault(proposal, _Question(conversation, turn))
            if event:
                question.event = {**event, "conversation": conversation, "turn": turn}
            return question

    def ask(self, conversation: str, turn: str, proposal: str, timeout: float) -> str | None:
        question = self.register(conversation, turn, proposal)
        question.answered.wait(timeout)
        return question.answer

    def _record_changes(self, turn: str, changed: Mapping[str, int]) -> None:
        if not changed:
            return
        with self.lock:
            mine = self.changed.setdefault(turn, {})
            for buffer, version in changed.items():
                mine[buffer] = min(version, mine.get(buffer, version))

    def _merge_undo(self, turn: str, text: str, changed: Mapping[str, int]) -> None:
        from rio.agent.conversations import undo_label
        for buffer, version in changed.items():
            try:
                self.bus.call("buffer.merge_undo", {"buffer": buffer, "since_version": version,
                                                    "label": undo_label(text)}, timeout=5)
            except RioError as err:   # closed meanwhile: nothing to merge
                log.info("turn %s: no undo merge for %s (%s)", turn, buffer, err.kind)


class _Port:
    """:class:`rio.mcp.tools.McpPort` for one call, on its worker thread (blocking calls are
    fine: the call's event loop runs nothing else)."""

    def __init__(self, service: McpService, conversation: str, turn: str) -> None:
        self.service = service
        self.conversation = conversation
        self.turn = turn

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any:
        return self.service.bus.call(op, dict(args), timeout=timeout)

    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        if topic == "agent.propose":
            self.service.register(self.conversation, self.turn, str(data["proposal"]), data)
        self.service.bus.publish(topic, dict(data))

    async def ask(self, proposal: str, timeout: float) -> str | None:
        return self.service.ask(self.conversation, self.turn, proposal, timeout)

    async def run(self, args: Mapping[str, Any], timeout: float) -> Mapping[str, Any]:
        raise AgentError("tool_refused", "Rio's MCP tools run no commands.",
                         "Use your own terminal tool; Rio shows what it changes.")


def question_timeout() -> float:
    try:
        value = float(os.environ.get(TIMEOUT_ENV, ""))
    except ValueError:
        return QUESTION_TIMEOUT_S
    return value if value > 0 else QUESTION_TIMEOUT_S


@actor_factory("mcp")
def start_mcp(host: ActorHost) -> dict[str, Callable[[RequestContext], None]]:
    service = McpService(host.bus, host.root, question_timeout_s=question_timeout())
    host.bus.subscribe("agent.turn", service.on_turn_event)
    host.bus.subscribe("system.process", service.on_process_event)
    return {"mcp": service.handle}
