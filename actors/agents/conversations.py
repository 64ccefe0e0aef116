"""``agent.*``: conversations with the agent, served by the core.

:class:`ConversationsActor` owns the :class:`~rio.agent.conversations.ConversationStore` and is the
public face of the agent (the ``agent.*`` ops of docs/protocol.md): it records the user's message,
makes sure the conversation's session process runs (``system.spawn kind=agent``), hands the
turn to it as ``session.turn`` and, when that returns, records the turn's messages, merges the
buffers the turn changed into ONE undo step each ("Agent: <message>"), and publishes
``agent.message`` / ``agent.error`` / ``agent.turn``. ``agent.approve``/``agent.stop`` are
forwarded to the session, ``agent.mode`` to the gate.

Threading, and why: ``session.turn`` is a request that lasts as long as the turn (minutes), and
the actor's mailbox must keep serving ``agent.stop`` and ``agent.approve`` meanwhile. So each
turn's request runs on a worker thread, and the worker hands the outcome back to the actor as a
message; the store is only ever touched from the actor's thread. Workers come from a small pool
of long-lived *daemon* threads: every thread that talks to the bus gets a socket of its own
(actors/bus/service.py), so a thread per turn would leak one socket per turn, and a
non-daemon pool (concurrent.futures) would hold the process open at exit for a turn's length.

A new message while a turn runs: the session owns the turn's pending proposals and questions
(ADR-0027), so the core asks it (``session.interrupt``). When one waits, the session closes it
as "interrupted" and the new message goes to it at once as the next turn, which the core
records only after the old turn's messages (the store keeps the order the model saw); else the
message is ``agent.busy``.

Before a turn goes to a session process that has not answered one yet, the core asks for it
with ``system.spawn``, which the supervisor answers once the process is ready — registered on
the bus — or with why not (actors/spawn_waits.py); nothing here waits on events, polls
``system.status`` or retries ``session.turn``.

``agent.approve``, ``agent.stop`` and ``agent.permission_answer`` reach this actor only when the
conversation has no session process registered (the hub sends them to that process, which
owns the turn: rio/protocol/routing.py), or when the session has no turn and asks the core
(its ``agent.stop``). An MCP proposal's approval (``mcp-…``) never does: it goes straight to the
``mcp`` actor that holds it (``route_prefix``).

A session that dies mid-turn (kill -9, crash) fails ``session.turn`` with ``bus.actor_dead``: the
turn ends as a classified error, the conversation stays as recorded, and the next message finds
the restarted process (or spawns it again).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple

import pykka

from actors.actor_registry import ActorHost, actor_factory
from actors.agents.turn_workers import IdleTimers, WorkerPool
from actors.bus.service import ANSWERED, BusThread, OpTable, RequestContext, serve
from rio.agent.conversations import (
    Conversation,
    ConversationStore,
    check_conversation_id,
    conversation_of_turn,
    conversations_dir,
    turn_id,
    undo_label,
)
from rio.config.instance import project_state_dir
from rio.protocol.errors import AgentError, BusError, ProtocolError, RioError
from rio.protocol.frames import thaw
from rio.providers.base import Message

log = logging.getLogger("rio.agent.conversations")

#: The longest a turn may run before the core gives up on it (the session's own limits —
#: model requests and tool calls per turn — normally end it long before).
TURN_TIMEOUT_S = 30 * 60.0
#: How long system.spawn may take to answer (the supervisor answers within 20 s: ready,
#: failed or timed out — actors/spawn_waits.py).
SPAWN_WAIT_S = 25.0
#: Quick forwards (stop, mode): a healthy session answers in milliseconds.
FORWARD_TIMEOUT_S = 5.0
#: An approval applies the edit (buffer.open, buffer.replace) before it answers.
APPROVE_TIMEOUT_S = 30.0

#: An agent's own sign-in may wait for the user in a browser (the client allows 600 s).
AUTHENTICATE_TIMEOUT_S = 620.0

#: Ends the streamed text of a turn whose session process died before answering.
INTERRUPTED_MARK = "[interrupted: the agent process stopped here]"

SESSION_DIED = ("The agent process stopped unexpectedly; it was restarted — send your "
                "message again.")


@dataclass
class RunningTurn:
    conversation: str
    turn: str
    text: str
    stop_requested: threading.Event = field(default_factory=threading.Event)
    #: Why the core ended (or will end) the turn itself; None while the session owns the end.
    end_reason: str | None = None
    #: The turn of a message that interrupted this one: already sent to the session (which
    #: closes the waiting proposal as "interrupted"), recorded once this one has ended.
    successor: "RunningTurn | None" = None
    successor_outcome: "TurnOutcome | None" = None
    #: The text streamed so far (agent.delta): kept if the session dies before it answers.
    partial: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TurnOutcome:
    """What a worker learned about a turn: the session's answer, or the core's verdict."""
    status: str                          # done | stopped | error
    messages: tuple[Mapping[str, Any], ...] = ()
    error: Mapping[str, Any] | None = None
    from_core: bool = False              # the core classified it: publish agent.error itself
    buffers: tuple[str, ...] = ()        # buffers the turn changed (unsaved: the user saves)
    #: an ACP agent's session id (stored to resume it) and the files it changed on disk
    acp_session: str | None = None
    changed_files: tuple[Mapping[str, Any], ...] = ()


def _busy(turn: str) -> AgentError:
    return AgentError("busy", "The agent is still working on the last message.",
                      "Wait, or Stop the turn.", turn=turn)


def classify_bus_failure(err: RioError) -> dict[str, Any]:
    """The agent.error for a session.turn that failed on the bus instead of answering."""
    if err.kind in ("bus.actor_dead", "bus.closed", "bus.unreachable"):
        return AgentError("session_died", SESSION_DIED,
                          "Send your message again; `rio status` shows the restarts.").to_wire()
    if err.kind == "bus.timeout":
        return AgentError("session_timeout", "The agent did not finish the turn in time; it "
                          "was ended.", "Send your message again, or ask for a smaller step."
                          ).to_wire()
    if err.kind == "bus.no_route":
        return AgentError("session_unavailable", "The agent process did not start.",
                          "Check `rio status` and the agent's log; then send the message "
                          "again.").to_wire()
    wire = err.to_wire()
    wire.pop("details", None)
    return wire


class EventBarrier:
    """Waits until every event the hub published before now has reached this process.

    The hub publishes events in the order it reads them, so an event this process publishes
    and hears back comes after every earlier one (``agent.delta`` included), whose callbacks
    the bus thread has then run. Used on the rare path where a reply and events race: a
    session that died mid-stream. Bounded by ``timeout_s``: it never holds a turn up."""

    TOPIC = "conversations.barrier"

    def __init__(self, bus: BusThread, timeout_s: float = 1.0):
        self.bus = bus
        self.timeout_s = timeout_s
        self._waiting: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def on_event(self, event: Any) -> None:
        with self._lock:
            done = self._waiting.pop(str(thaw(event.data).get("id")), None)
        if done is not None:
            done.set()

    def wait(self) -> bool:
        token, done = os.urandom(8).hex(), threading.Event()
        with self._lock:
            self._waiting[token] = done
        self.bus.publish(self.TOPIC, {"id": token})
        heard = done.wait(self.timeout_s)
        with self._lock:
            self._waiting.pop(token, None)
        return heard


class AgentEvent(NamedTuple):
    """An ``agent.delta`` event (the streamed text, kept for a turn whose session dies)."""
    topic: str
    data: Mapping[str, Any]


class TurnFinished(NamedTuple):
    """From a turn worker (or a stop nobody answered): the turn ended with ``outcome``."""
    turn: str
    outcome: TurnOutcome


class InterruptAnswered(NamedTuple):
    """From a worker: the session said whether a new message interrupted the running turn;
    ``ctx`` is that message's ``agent.send``, answered now."""
    ctx: RequestContext
    turn: str
    text: str
    ok: bool


class IdleDue(NamedTuple):
    """From the idle timers: the conversation's session process had no turn for a while."""
    conversation: str
    generation: int


class ConversationsActor(pykka.ThreadingActor):
    """Serves ``agent.*``; see the module docstring."""

    handles: OpTable[ConversationsActor] = OpTable()

    def __init__(self, store: ConversationStore, bus: BusThread, *,
                 turn_timeout_s: float = TURN_TIMEOUT_S, spawn_wait_s: float = SPAWN_WAIT_S,
                 default_provider: Callable[[], str | None] | None = None,
                 known_providers: Callable[[], set[str]] | None = None,
                 idle_stop_s: float | None = None,
                 barrier: EventBarrier | None = None):
        super().__init__()
        self.store = store
        self.bus = bus
        self.barrier = barrier
        self.turn_timeout_s = turn_timeout_s
        self.spawn_wait_s = spawn_wait_s
        self.default_provider = default_provider or _configured_provider
        self.known_providers = known_providers or _installed_providers
        self.running: dict[str, RunningTurn] = {}        # conversation → its running turn
        #: Conversations whose session answered its last turn: no system.spawn before the
        #: next one (a round trip to the supervisor). Touched by turn workers.
        self.healthy: set[str] = set()
        self.turns = WorkerPool("turn", 64)
        self.forwards = WorkerPool("forward", 4)
        #: A session process with no turn this long is stopped (system.restart again=false,
        #: reason idle); the next message spawns it again. 0: never (config idle_stop_s).
        self.idle_stop_s = _configured_idle_stop() if idle_stop_s is None else idle_stop_s
        self.idle = IdleTimers(self.idle_stop_s, lambda cid, generation: self._tell(
            IdleDue(cid, generation)))

    def on_stop(self) -> None:
        self.idle.close()
        self.turns.close()
        self.forwards.close()

    # --- the mailbox -----------------------------------------------------------------------
    def on_receive(self, message: Any) -> Any:
        match message:
            case RequestContext():
                self.handles.serve(self, message)
            case AgentEvent(topic, data):
                self._on_event(topic, data)
            case TurnFinished(turn, outcome):
                self._finished(turn, outcome)
            case InterruptAnswered(ctx, turn, text, ok):
                serve(ctx, lambda c: self._interrupt_answered(c, turn, text, ok))
            case IdleDue(cid, generation):
                self._idle(cid, generation)
        return None

    def _forward(self, ctx: RequestContext, call: Callable[[], Any]) -> Any:
        """Answer ``ctx`` from a worker with what ``call`` returns (a request to another
        process, which may take seconds): the mailbox keeps serving meanwhile."""
        self.forwards.submit(lambda: serve(ctx, lambda _: call()))
        return ANSWERED

    # --- ops ---------------------------------------------------------------------------------
    @handles("agent.new")
    def op_new(self, ctx: RequestContext) -> Any:
        agent = ctx.args.get("agent")
        if agent:
            # An ACP agent (discovery name): refused now if there is no such name; a known
            # agent that is not installed fails its first turn with how to install it.
            from rio.acp.discovery import load_agents_config, spec_for
            from rio.agent.config import config_dir
            spec_for(agent, load_agents_config(config_dir()))
            conv = self.store.create(title=ctx.args.get("title"), agent=agent)
            return {"conversation": conv.conversation, "title": conv.title,
                    "provider": None, "agent": agent}
        provider = ctx.args.get("provider") or self.default_provider()
        if ctx.args.get("provider"):
            installed = self.known_providers()
            if installed and provider not in installed:
                raise AgentError("not_configured", f"No provider named {provider!r} is "
                                 f"installed (installed: {', '.join(sorted(installed))}).",
                                 "Pick one of those with --provider, or install the plug-in.")
        endpoint = ctx.args.get("endpoint")
        if endpoint:
            from rio.agent.failures import unusable_endpoint
            from rio.providers.base import usable_url
            if not usable_url(endpoint):   # said now, not as a failed turn later
                raise unusable_endpoint(provider or "the provider", endpoint)
        conv = self.store.create(title=ctx.args.get("title"), provider=provider,
                                 endpoint=ctx.args.get("endpoint"), model=ctx.args.get("model"))
        return {"conversation": conv.conversation, "title": conv.title,
                "provider": conv.provider}

    @handles("agent.list")
    def op_list(self, ctx: RequestContext) -> Any:
        return [c.summary() for c in self.store.list()]

    @handles("agent.history")
    def op_history(self, ctx: RequestContext) -> Any:
        return self.store.get(ctx.args["conversation"]).history()

    @handles("agent.send")
    def op_send(self, ctx: RequestContext) -> Any:
        cid = check_conversation_id(ctx.args["conversation"])
        self.store.get(cid)  # unknown conversations fail here, before anything is recorded
        running = self.running.get(cid)
        if running is None:
            self._start_turn(ctx, cid, ctx.args["text"])
        elif running.successor is None:
            self._ask_interrupt(ctx, running, ctx.args["text"])
        else:
            raise _busy(running.turn)
        return ANSWERED     # by _launch, or once the session said whether it interrupted

    def _ask_interrupt(self, ctx: RequestContext, running: RunningTurn, text: str) -> None:
        """A message while a turn runs: the session, which owns the turn's proposals and
        questions, says whether one waits (then it is interrupted and the new turn follows)
        or the agent is busy. Asking it, instead of tracking ``agent.propose`` events here,
        leaves no race between the event and the message."""
        args = {"conversation": running.conversation, "turn": running.turn}

        def forward() -> None:
            try:
                got = self.bus.call("session.interrupt", args, timeout=FORWARD_TIMEOUT_S)
                ok = bool(got.get("interrupted"))
            except RioError as err:
                log.info("turn %s: session.interrupt failed (%s)", running.turn, err.kind)
                ok = False
            self._tell(InterruptAnswered(ctx, running.turn, text, ok))
        self.forwards.submit(forward)

    def _interrupt_answered(self, ctx: RequestContext, turn: str, text: str, ok: bool) -> Any:
        cid = conversation_of_turn(turn)
        running = self.running.get(cid)
        if running is None:
            self._start_turn(ctx, cid, text)      # the turn ended meanwhile
        elif ok and running.turn == turn and running.successor is None:
            self._interrupt(ctx, running, text)
        else:
            raise _busy(running.turn)
        return ANSWERED

    @handles("agent.approve")
    def op_approve(self, ctx: RequestContext) -> Any:
        turn = ctx.args["turn"]
        cid = conversation_of_turn(turn)
        running = self._running_turn(cid, turn)
        if running is None:
            raise AgentError("unknown_turn", f"Turn {turn!r} is not running any more.",
                             "Only a running turn's proposals can be answered.")
        proposal = ctx.args["proposal"]
        args = {"conversation": cid, "turn": turn, "proposal": proposal,
                "decision": ctx.args["decision"]}
        return self._forward(ctx, lambda: self.bus.call("session.approve", args,
                                                        timeout=APPROVE_TIMEOUT_S))

    @handles("agent.stop")
    def op_stop(self, ctx: RequestContext) -> Any:
        cid = check_conversation_id(ctx.args["conversation"])
        self.store.get(cid)
        running = self.running.get(cid)
        if running is None:
            # Nothing runs here; a session left running by a core that restarted mid-turn
            # still gets the word (best effort: it may not exist at all).
            self.forwards.submit(lambda: self._stop_orphan(cid))
            return {"stopped": False}
        running = running.successor or running   # the newest message's turn is the one shown
        running.end_reason = running.end_reason or "stopped"
        self._forward_stop(running)
        return {"stopped": True, "turn": running.turn}

    @handles("agent.permission_answer")
    def op_permission_answer(self, ctx: RequestContext) -> Any:
        """An ACP agent's permission question, answered by option kind: straight to the
        conversation's session, which owns the question."""
        cid = check_conversation_id(ctx.args["conversation"])
        args = {"conversation": cid, "turn": ctx.args["turn"],
                "request": ctx.args["request"], "kind": ctx.args.get("kind")}
        return self._forward(ctx, lambda: self.bus.call("session.permission_answer", args,
                                                        timeout=FORWARD_TIMEOUT_S))

    @handles("agent.mode")
    def op_mode(self, ctx: RequestContext) -> Any:
        args = {"mode": ctx.args["mode"]} if ctx.args.get("mode") else {}
        return self._forward(ctx, lambda: self.bus.call("gate.mode", args,
                                                        timeout=FORWARD_TIMEOUT_S))

    @handles("agent.pending")
    def op_pending(self, ctx: RequestContext) -> Any:
        """What waits in the running turns, for a window started since: each turn's
        ``agent.turn {started}``, then its session's waiting proposals and questions
        (``session.pending``: the session owns them, ADR-0027) and the proposals of Rio's MCP
        tools waiting in the ``mcp`` actor (``mcp.pending``), as ``{topic, data}``. A session
        process that runs (a turn or idle) also gives what its agent offers —
        ``agent.modes``/``agent.config``/``agent.commands`` — so the pickers show at once."""
        only = ctx.args.get("conversation")
        if only:
            self.store.get(check_conversation_id(only))
        shown = {cid: (r.successor or r) for cid, r in self.running.items()
                 if not only or cid == only}
        turns: list[tuple[str, str | None, str]] = [
            (cid, r.turn, r.text) for cid, r in shown.items()]
        turns += [(cid, None, "") for cid in sorted(self.healthy)
                  if cid not in shown and (not only or cid == only)]

        def pending() -> dict[str, Any]:
            mcp = self._mcp_pending(only) if shown else []
            events: list[dict[str, Any]] = []
            for cid, turn, text in turns:
                if turn is not None:
                    events.append({"topic": "agent.turn", "data": {
                        "conversation": cid, "turn": turn, "state": "started", "text": text}})
                try:
                    got = self.bus.call("session.pending", {"conversation": cid},
                                        timeout=FORWARD_TIMEOUT_S)
                except RioError as err:     # starting, or gone: nothing waits there
                    log.info("session.pending %s: %s", cid, err.kind)
                    got = {}
                turn_id = got.get("turn") or turn
                for e in got.get("events") or ():
                    data = {**e["data"], "conversation": cid}
                    if turn_id:
                        data["turn"] = turn_id
                    events.append({"topic": e["topic"], "data": data})
                events += [e for e in mcp if e["data"].get("conversation") == cid
                           and turn is not None]
            return {"events": events}
        return self._forward(ctx, pending)

    def _mcp_pending(self, only: str | None) -> list[dict[str, Any]]:
        """The ``agent.propose`` events of Rio's MCP tools still waiting (``mcp-…`` ids)."""
        try:
            got = self.bus.call("mcp.pending", {"conversation": only} if only else {},
                                timeout=FORWARD_TIMEOUT_S)
        except RioError as err:     # no mcp actor in this core: none of its proposals
            log.info("mcp.pending: %s", err.kind)
            return []
        return [e for e in got.get("events") or () if isinstance(e.get("data"), Mapping)]

    @handles("agent.limits")
    def op_limits(self, ctx: RequestContext) -> Any:
        """The gate's per-turn limits (AI Preferences): to the gate, as agent.mode is."""
        args = {k: v for k, v in ctx.args.items() if v is not None}
        return self._forward(ctx, lambda: self.bus.call("gate.limits", args,
                                                        timeout=FORWARD_TIMEOUT_S))

    @handles("agent.set_mode")
    def op_set_mode(self, ctx: RequestContext) -> Any:
        """An ACP agent's own mode (not the gate's): to the session, which holds the agent."""
        return self._to_agent(ctx, "session.set_mode", {"mode": ctx.args["mode"]})

    @handles("agent.set_config")
    def op_set_config(self, ctx: RequestContext) -> Any:
        return self._to_agent(ctx, "session.set_config", {"option": ctx.args["option"],
                                                          "value": ctx.args["value"]})

    @handles("agent.authenticate")
    def op_authenticate(self, ctx: RequestContext) -> Any:
        """Sign in with one of the agent's own methods: the agent may wait on a browser."""
        return self._to_agent(ctx, "session.authenticate", {"method": ctx.args["method"]},
                              timeout=AUTHENTICATE_TIMEOUT_S)

    def _to_agent(self, ctx: RequestContext, op: str, extra: dict[str, Any],
                  timeout: float = APPROVE_TIMEOUT_S) -> Any:
        cid = check_conversation_id(ctx.args["conversation"])
        if not self.store.get(cid).agent:
            raise ProtocolError("bad_args", "Only an ACP agent's conversation has the agent's "
                                "own modes and options.", "Pick the model of an API "
                                "provider's conversation with agent.new's model.")
        args = {"conversation": cid, **extra}

        def call() -> Any:
            try:
                return self.bus.call(op, args, timeout=timeout)
            except RioError as err:
                if err.kind in ("bus.no_route", "bus.actor_dead", "bus.unreachable"):
                    raise AgentError("agent_not_running", "The conversation's agent is not "
                                     "running now (it starts with the next message).",
                                     "Send a message, then pick again.") from None
                raise
        return self._forward(ctx, call)

    # --- turns -------------------------------------------------------------------------------
    def _start_turn(self, ctx: RequestContext, cid: str, text: str) -> None:
        self.idle.disarm(cid)
        conv, record = self.store.begin_turn(cid, text)
        running = RunningTurn(cid, record.turn, text)
        self.running[cid] = running
        self._launch(ctx, conv, running, [m.to_dict() for m in conv.messages])

    def _interrupt(self, ctx: RequestContext, running: RunningTurn, text: str) -> None:
        """A new message while a proposal waits. The new turn goes to the session at once: it
        closes the proposal's tool call as "interrupted", ends the old turn and puts the old
        turn's messages before the new one (session side). The core records the new message
        only after the old turn's messages, so the stored history has the same order."""
        conv = self.store.get(running.conversation)
        successor = RunningTurn(running.conversation,
                                turn_id(running.conversation, len(conv.turns) + 1), text)
        running.end_reason = "interrupted"
        running.successor = successor
        history = [m.to_dict() for m in conv.messages] + [Message.user(text).to_dict()]
        self._launch(ctx, conv, successor, history)

    def _launch(self, ctx: RequestContext, conv: Conversation, running: RunningTurn,
                messages: list[dict[str, Any]]) -> None:
        cid, text = running.conversation, running.text
        ctx.reply({"turn": running.turn, "conversation": cid})
        self.bus.publish("agent.turn", {"conversation": cid, "turn": running.turn,
                                        "state": "started", "text": text})
        args: dict[str, Any] = {"conversation": cid, "turn": running.turn, "text": text,
                                "messages": messages}
        if conv.agent:
            args["agent"] = conv.agent
            if conv.acp_session:
                args["acp_session"] = conv.acp_session
        elif conv.provider:
            args["provider"] = conv.provider
        # Only sent when set, so a session that predates these keys still takes the turn.
        for key in ("endpoint", "model"):
            if getattr(conv, key):
                args[key] = getattr(conv, key)
        self.turns.submit(lambda: self._run_turn(running, args))

    def _run_turn(self, running: RunningTurn, args: dict[str, Any]) -> None:
        """On a worker thread: the whole session.turn, then the undo merge; never the store."""
        outcome = self._call_session(running, args)
        if outcome.status == "error" and outcome.from_core and not outcome.messages \
                and self.barrier is not None:
            # The session died: its reply came on the request socket, its streamed text on
            # the event socket, in no order between them. The text is kept (_finished), so
            # let every event published before now reach this actor first.
            self.barrier.wait()
        self._tell(TurnFinished(running.turn, outcome))

    def _call_session(self, running: RunningTurn, args: dict[str, Any]) -> TurnOutcome:
        """``session.turn`` to the conversation's process. One that has not answered a turn
        yet (new, idle-stopped, or its last turn failed on the bus) is asked for first with
        ``system.spawn``, which answers once the process is READY (registered on the bus) —
        so there is no waiting here, no status polling and no retry loop; a ``no_route``
        after that means it died again, once spawned a second time for a healthy one."""
        cid = running.conversation
        spawned = False
        if cid not in self.healthy:
            failed = self._spawn_session(cid)
            if failed is not None:
                return failed
            spawned = True
        while True:
            if running.stop_requested.is_set():
                return TurnOutcome("stopped")
            try:
                result = self.bus.call("session.turn", args, timeout=self.turn_timeout_s)
                self.healthy.add(cid)
                break
            except BusError as err:
                self.healthy.discard(cid)
                if err.kind != "bus.no_route" or spawned:
                    return TurnOutcome("error", error=classify_bus_failure(err), from_core=True)
                failed = self._spawn_session(cid)    # it died since its last turn: once more
                if failed is not None:
                    return failed
                spawned = True
            except RioError as err:
                wire = err.to_wire()
                wire.pop("details", None)
                return TurnOutcome("error", error=wire, from_core=True)
        result = result if isinstance(result, Mapping) else {}
        status = result.get("status")
        messages = tuple(m for m in result.get("messages") or () if isinstance(m, Mapping))
        if status not in ("done", "stopped", "error"):
            return TurnOutcome("error", messages, AgentError(
                "unexpected_response", f"The agent session ended the turn as {status!r}.",
                "Report this as a bug with the agent log.").to_wire(), from_core=True)
        changed = result.get("buffers") or ()
        self._merge_undo(running, changed)
        error = result.get("error") if isinstance(result.get("error"), Mapping) else None
        buffers = tuple(str(b["buffer"]) for b in changed
                        if isinstance(b, Mapping) and b.get("buffer") is not None)
        acp_session = result.get("acp_session")
        on_disk = tuple(f for f in result.get("changed_files") or () if isinstance(f, Mapping))
        return TurnOutcome(status, messages, error, buffers=buffers,
                           acp_session=acp_session if isinstance(acp_session, str) else None,
                           changed_files=on_disk)

    def _spawn_session(self, cid: str) -> TurnOutcome | None:
        """Start the conversation's session process, or find it started: ``system.spawn``
        answers when it is ready (a running one at once; one being stopped is started again
        after its stop), or with why it is not (``bus.spawn_failed``: it exited first)."""
        try:
            self.bus.call("system.spawn", {"kind": "agent", "key": cid},
                          timeout=self.spawn_wait_s)
        except RioError as err:
            if err.kind in ("bus.spawn_failed", "bus.timeout"):
                return TurnOutcome("error", error=AgentError(
                    "session_unavailable", f"The agent process did not start: {err.message}",
                    "Check `rio status` and the agent's log; then send the message again."
                ).to_wire(), from_core=True)
            wire = err.to_wire()
            wire.pop("details", None)
            return TurnOutcome("error", error=wire, from_core=True)
        return None

    def _merge_undo(self, running: RunningTurn, buffers: Any) -> None:
        label = undo_label(running.text)
        for item in buffers:
            try:
                self.bus.call("buffer.merge_undo", {
                    "buffer": str(item["buffer"]), "since_version": int(item["since_version"]),
                    "label": label}, timeout=FORWARD_TIMEOUT_S)
            except (RioError, KeyError, TypeError, ValueError) as err:
                # A buffer closed during the turn has no undo to merge: nothing is lost.
                log.info("turn %s: no undo merge for %r (%s)", running.turn, item, err)

    def _finished(self, turn: str, outcome: TurnOutcome) -> None:
        cid = conversation_of_turn(turn)
        running = self.running.get(cid)
        if running is None:
            return  # the core already ended it (a stop the session never answered)
        if running.turn != turn:
            if running.successor is not None and running.successor.turn == turn:
                running.successor_outcome = outcome  # recorded after the interrupted turn
            return
        del self.running[cid]
        status, error, from_core = outcome.status, outcome.error, outcome.from_core
        messages = outcome.messages
        streamed = "".join(running.partial).strip()
        if status == "error" and from_core and not messages and streamed:
            # The session died mid-turn (kill -9): its messages died with it, but the text it
            # streamed was seen. Keep it, marked, so the history does not read as two user
            # messages in a row and the model knows where it was cut.
            messages = (Message.assistant(f"{streamed}\n\n{INTERRUPTED_MARK}").to_dict(),)
        text = ""
        try:
            conv = self.store.add_messages(turn, messages)
            count = len(messages)
            text = "\n\n".join(m.text for m in conv.messages[len(conv.messages) - count:]
                               if m.role == "assistant" and m.text) if count else ""
        except AgentError as err:
            status, error, from_core = "error", err.to_wire(), True
        if running.end_reason == "interrupted" and status != "error":
            status = "stopped"
            error = AgentError("interrupted", "A new message interrupted this turn.",
                               "The agent carries on with the new message.").to_wire()
        self.store.end_turn(turn, status, error)  # type: ignore[arg-type]
        if outcome.acp_session:
            self.store.set_acp_session(cid, outcome.acp_session)
        base = {"conversation": cid, "turn": turn}
        if text:
            self.bus.publish("agent.message", {**base, "role": "assistant", "text": text})
        if status == "error" and from_core and error is not None:
            self.bus.publish("agent.error", {**base, "kind": error.get("kind"),
                                             "message": error.get("message"),
                                             "next": error.get("next"), "partial": bool(text)})
        ended: dict[str, Any] = {**base, "state": status}
        if outcome.buffers:
            # What the turn left unsaved: `rio chat` offers /save, /undo and /diff on them.
            ended["buffers"] = list(outcome.buffers)
        if outcome.changed_files:
            # An ACP agent's writes behind Rio's back (its own shell): path, change, diff.
            ended["changed_files"] = [dict(f) for f in outcome.changed_files]
        if error is not None:
            ended["error"] = {k: error.get(k) for k in ("kind", "message", "next")}
        self.bus.publish("agent.turn", ended)
        successor = running.successor
        if successor is not None:
            _, record = self.store.begin_turn(cid, successor.text)
            if record.turn != successor.turn:  # cannot happen while one actor owns the store
                log.error("turn %s was recorded as %s", successor.turn, record.turn)
            self.running[cid] = successor
            if running.successor_outcome is not None:
                self._finished(successor.turn, running.successor_outcome)
        elif cid not in self.running:
            self.idle.arm(cid)      # no turn for idle_stop_s: the session process is stopped

    # --- idle session processes --------------------------------------------------------------
    def _idle(self, cid: str, generation: int) -> None:
        if not self.idle.due(cid, generation) or cid in self.running:
            return      # a turn started meanwhile: the timer is stale
        self.healthy.discard(cid)      # the next turn spawns it (answered when ready)
        args = {"process": f"agent:{cid}", "again": False, "reason": "idle"}

        def forward() -> None:
            try:
                self.bus.call("system.restart", args, timeout=FORWARD_TIMEOUT_S)
            except RioError as err:       # no such process (never spawned, or not ours)
                log.info("idle stop of agent:%s: %s", cid, err.kind)
        self.forwards.submit(forward)

    def _stop_orphan(self, cid: str) -> None:
        try:
            self.bus.call("session.stop", {"conversation": cid}, timeout=FORWARD_TIMEOUT_S)
        except RioError:
            pass  # no session process: nothing to stop

    def _forward_stop(self, running: RunningTurn) -> None:
        running.stop_requested.set()
        args = {"conversation": running.conversation, "turn": running.turn}

        def forward() -> None:
            try:
                self.bus.call("session.stop", args, timeout=FORWARD_TIMEOUT_S)
            except RioError as err:
                # Nobody there to stop (not started yet, died, or hung): the core ends the turn.
                log.info("turn %s: session.stop failed (%s); ending it here", running.turn,
                         err.kind)
                self._tell(TurnFinished(running.turn, TurnOutcome("stopped")))
        self.forwards.submit(forward)

    # --- events --------------------------------------------------------------------------------
    def _running_turn(self, cid: Any, turn: Any) -> RunningTurn | None:
        """The running turn ``turn`` (or the one that interrupted it), if it runs."""
        running = self.running.get(cid) if isinstance(cid, str) else None
        for candidate in (running, running.successor if running else None):
            if candidate is not None and candidate.turn == turn:
                return candidate
        return None

    def _on_event(self, topic: str, data: Mapping[str, Any]) -> None:
        running = self._running_turn(data.get("conversation"), data.get("turn"))
        if running is None:
            return
        if topic == "agent.delta":
            running.partial.append(str(data.get("text", "")))

    def _tell(self, message: AgentEvent | TurnFinished | InterruptAnswered | IdleDue) -> None:
        try:
            self.actor_ref.tell(message)
        except pykka.ActorDeadError:
            pass  # the core is stopping; the turn is closed as interrupted at the next start


def _configured_provider() -> str | None:
    from rio.agent.config import load_agent_config
    try:
        return load_agent_config().provider
    except RioError:
        return None  # the session reports the broken config with the turn


def _configured_idle_stop() -> float:
    from rio.agent.config import AgentConfig, load_agent_config
    try:
        return load_agent_config().idle_stop_s
    except RioError:
        return AgentConfig().idle_stop_s


def _installed_providers() -> set[str]:
    try:
        from rio.providers import discover_providers
        return set(discover_providers())
    except Exception:  # noqa: BLE001 -- a broken plug-in must not stop conversations
        return set()


@actor_factory("conversations")
def start_conversations(host: ActorHost) -> dict[str, Callable[[RequestContext], None]]:
    store = ConversationStore(conversations_dir(project_state_dir(host.root)))
    barrier = EventBarrier(host.bus)
    host.bus.subscribe(EventBarrier.TOPIC, barrier.on_event)
    ref = ConversationsActor.start(store, host.bus, barrier=barrier)
    host.refs.append(ref)

    def on_event(event: Any) -> None:
        ref.tell(AgentEvent(event.topic, thaw(event.data)))
    # The streamed text, kept for a turn whose session dies before it answers.
    host.bus.subscribe("agent.delta", on_event)
    return {"agent": ref.tell}

