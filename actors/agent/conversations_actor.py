"""``agent.*``: conversations with the agent, served by the core — the conversation store.

:class:`ConversationsActor` owns the :class:`~rio.agent.conversations.ConversationStore` and is
the public face of the agent (the ``agent.*`` ops of docs/protocol.md). It holds no turn state
and no busy rule (ADR-0034): the conversation's session process owns every turn, from the
message to its end. The core

* forwards a message to the conversation's session process (``session.send``), starting that
  process first when it has not answered one yet (``system.spawn``, answered when ready); the
  session decides whether it is busy, interrupts or starts the turn;
* records what the session tells it, in the order it tells it: ``conversation.begin_turn``
  (the user's message; the store names the turn, and the answer gives the history and the
  conversation's provider or agent) and ``conversation.end_turn`` (the turn's messages, how it
  ended, what it changed) — and publishes what it recorded (``agent.turn``, ``agent.message``);
* keeps, for a window that opens late, what a running turn has streamed, so a session that
  dies mid-turn (kill -9, crash: the supervisor's ``system.process``) still leaves its text in
  the history, marked, and the turn ends as ``agent.session_died``;
* keeps what each running turn shows (its ``agent.*`` events, compacted and bounded:
  rio/agent/shown.py) and, once the turn's end comes back on the event stream — after every
  event its session published before asking for the end, since the hub publishes in the order
  it receives — records it with the turn (``shown``), so a conversation reloaded from history
  shows what it showed (ADR-0024 "What history keeps");
* answers a Stop when no session process is there to (the session's hung loop hands its Stop
  here after 1.5 s, actors/agent/stop_watch.py): the running turn is ended ``stopped``;
* forwards the gate's settings (``agent.mode``, ``agent.limits``) and an ACP agent's own
  (``agent.set_mode``, ``agent.set_config``, ``agent.authenticate``) to their owners.

``agent.approve`` and ``agent.permission_answer`` reach this actor only when the conversation
has no session process registered (the hub sends them to that process: rio/protocol/routing.py);
then nothing is waiting, and it says so.

Threading: forwards (``session.send`` may wait for a process to start) run on a small pool of
long-lived daemon workers — every thread that talks to the bus gets a socket of its own
(actors/bus/service.py), so a thread per request would leak sockets — and the store is only
ever touched from the actor's thread.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import pykka

from actors.agent.turn_workers import IdleTimers, WorkerPool
from actors.bus.service import ANSWERED, BusThread, OpTable, RequestContext
from actors.runtime.actor_registry import ActorHost, actor_factory
from actors.runtime.liveness import Stamp, process_failed
from rio.agent.conversations import (
    ConversationStore,
    check_conversation_id,
    conversation_of_turn,
    conversations_dir,
)
from rio.agent.output_limits import MESSAGE_CHARS, bounded_history, cut_mark, cut_text
from rio.agent.shown import KEPT, ShownRecorder
from rio.config.instance import project_state_dir
from rio.protocol.errors import AgentError, BusError, ProtocolError, RioError
from rio.protocol.frames import thaw
from rio.providers.base import Message

log = logging.getLogger("rio.agent.conversations")

#: How long system.spawn may take to answer (the supervisor answers within 20 s: ready,
#: failed or timed out — actors/runtime/spawn_waits.py).
SPAWN_WAIT_S = 25.0
#: session.send: the session answers once the message is recorded — after the turn it
#: interrupts has ended, which an ACP agent's cancel can take seconds for.
SEND_TIMEOUT_S = 30.0
#: Quick forwards (mode, limits): a healthy owner answers in milliseconds.
FORWARD_TIMEOUT_S = 5.0
#: An agent's own settings (set_mode, set_config) wait for the agent.
AGENT_SETTING_TIMEOUT_S = 30.0
#: An agent's own sign-in may wait for the user in a browser: the session gives up after
#: 300 s (actors/agent/acp_session.py SIGN_IN_TIMEOUT_S) and says so; this is its margin.
AUTHENTICATE_TIMEOUT_S = 330.0

#: Running turns whose shown events are kept at once, at most (one per conversation with a
#: turn running, in practice).
MAX_TURNS_SHOWING = 64
#: Ends the streamed text of a turn whose session process died before it ended.
INTERRUPTED_MARK = "[interrupted: the agent process stopped here]"

SESSION_DIED = ("The agent process stopped unexpectedly; it was restarted — send your "
                "message again.")
#: A process event that means the conversation's session process is gone.
_GONE = ("exited", "stopped", "gave_up")
#: How long after the supervisor says a session process went the core ends its running turn:
#: the hub may still hold that process's last ``agent.delta`` frames in its queue when it
#: publishes the supervisor's event (two sockets, no order between them; seen as the last
#: delta missing from the kept text about one run in six), and the hub drains in milliseconds.
GONE_GRACE_S = 0.3


def classify_bus_failure(err: RioError) -> RioError:
    """What the user is told when a message could not reach its session process."""
    if err.kind in ("bus.actor_dead", "bus.closed", "bus.unreachable"):
        return AgentError("session_died", SESSION_DIED,
                          "Send your message again; `rio status` shows the restarts.")
    if err.kind == "bus.timeout":
        return AgentError("session_timeout", "The agent process did not take the message in "
                          "time.", "Check `rio status`; then send the message again.")
    if err.kind in ("bus.no_route", "bus.spawn_failed"):
        return AgentError("session_unavailable", f"The agent process did not start: "
                          f"{err.message}", "Check `rio status` and the agent's log; then "
                          "send the message again.")
    return err


class AgentEvent(NamedTuple):
    """An ``agent.*`` event: what a running turn shows (its ``agent.delta`` text is also kept
    for a turn whose session dies)."""
    topic: str
    data: Mapping[str, Any]


class ProcessEvent(NamedTuple):
    """A ``system.process`` event: a conversation's session process may have gone."""
    data: Mapping[str, Any]


class SessionGone(NamedTuple):
    """The grace after a session process went is over: end its running turn now."""
    conversation: str


class Healthy(NamedTuple):
    """From a forward: the session process took a message (or is gone: ``ok`` false)."""
    conversation: str
    ok: bool


class IdleDue(NamedTuple):
    """From the idle timers: the conversation's session process had no turn for a while."""
    conversation: str
    generation: int


class ConversationsActor(pykka.ThreadingActor):
    """Serves ``agent.*`` and records turns (``conversation.*``); see the module docstring."""

    handles: OpTable[ConversationsActor] = OpTable()

    def __init__(self, store: ConversationStore, bus: BusThread, *,
                 spawn_wait_s: float = SPAWN_WAIT_S,
                 default_provider: Callable[[], str | None] | None = None,
                 known_providers: Callable[[], set[str]] | None = None,
                 idle_stop_s: float | None = None, stamp: Stamp | None = None):
        super().__init__()
        self.store = store
        self.bus = bus
        self.spawn_wait_s = spawn_wait_s
        self.default_provider = default_provider or _configured_provider
        self.known_providers = known_providers or _installed_providers
        #: Conversations whose session process took a message and has not gone since: no
        #: system.spawn before the next one. Read by forwards; written on the actor's thread.
        self.healthy: frozenset[str] = frozenset()
        #: conversation → the text its running turn streamed (for a session that dies), and
        #: how many characters it streamed (what is kept stops at MESSAGE_CHARS)
        self.streamed: dict[str, list[str]] = {}
        self.streamed_chars: dict[str, int] = {}
        #: turn → what it has shown so far, until its end is recorded (oldest first)
        self.shown: OrderedDict[str, ShownRecorder] = OrderedDict()
        #: turns the core ended itself (their session died or hung): a late end from the
        #: session, if it comes, is recorded over the core's
        self.closed_by_core: set[str] = set()
        #: conversations whose session process went, until their grace is over
        self.gone: dict[str, threading.Timer] = {}
        self.forwards = WorkerPool("forward", 16)
        #: A session process with no turn this long is stopped (system.restart again=false,
        #: reason idle); the next message spawns it again. 0: never (config idle_stop_s).
        self.idle_stop_s = _configured_idle_stop() if idle_stop_s is None else idle_stop_s
        self.idle = IdleTimers(self.idle_stop_s, lambda cid, generation: self._tell(
            IdleDue(cid, generation)))
        #: what the liveness check watches of this actor (actors/runtime/liveness.py)
        self.stamp = stamp or Stamp("conversations")

    def on_stop(self) -> None:
        for timer in self.gone.values():
            timer.cancel()
        self.idle.close()
        self.forwards.close()

    # --- the mailbox -----------------------------------------------------------------------
    def on_receive(self, message: Any) -> Any:
        with self.stamp.busy():
            if isinstance(message, RequestContext):
                self.handles.serve(self, message)     # answers every outcome itself
                return None
            try:
                self._receive(message)
            except Exception:  # one event must never end the store (issue 22)
                log.exception("handling %r failed; the conversations go on",
                              type(message).__name__)
        return None

    def _receive(self, message: Any) -> None:
        match message:
            case AgentEvent(topic, data):
                if topic == "agent.delta":
                    self._on_delta(data)
                self._on_shown(topic, data)
            case ProcessEvent(data):
                self._on_process(data)
            case SessionGone(cid):
                self._session_gone(cid)
            case Healthy(cid, ok):
                self.healthy = self.healthy | {cid} if ok else self.healthy - {cid}
            case IdleDue(cid, generation):
                self._idle(cid, generation)

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        # Nothing above lets an exception out; should one come anyway, the core ends and
        # the supervisor restarts it, rather than answering pings with no store behind them.
        process_failed(f"the conversations actor died: {exception_value!r}")

    def _publish(self, topic: str, data: dict[str, Any]) -> None:
        """Publish, never raising: an event that cannot travel (over the frame limit) is
        logged and a short one says so, instead of ending the actor (issue 22)."""
        try:
            self.bus.publish(topic, data)
        except RioError as err:
            log.error("%s could not be published (%s): %s", topic, err.kind, err.message)
            if "text" in data:
                try:
                    self.bus.publish(topic, {**data, "text": cut_text(str(data["text"]),
                                                                      4096)})
                except RioError:
                    log.error("%s could not be published even cut short", topic)

    def _forward(self, ctx: RequestContext, call: Callable[[], Any]) -> Any:
        """Answer ``ctx`` from a worker with what ``call`` returns (a request to another
        process, which may take seconds): the mailbox keeps serving meanwhile."""
        from actors.bus.service import serve
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

    @handles("agent.discard")
    def op_discard(self, ctx: RequestContext) -> Any:
        """Forget a conversation that never had an answer (``rio chat`` with no API key): the
        store removes it, and its session process, if one runs, is ended as an idle one is."""
        cid = check_conversation_id(ctx.args["conversation"])
        self.store.discard(cid)
        self.idle.disarm(cid)
        self.healthy = self.healthy - {cid}
        self.streamed.pop(cid, None)
        self.streamed_chars.pop(cid, None)
        args = {"process": f"agent:{cid}", "again": False, "reason": "idle"}

        def end_session() -> None:
            try:
                self.bus.call("system.restart", args, timeout=FORWARD_TIMEOUT_S)
            except RioError as err:       # never spawned, or gone already
                log.info("discarded agent:%s: %s", cid, err.kind)
        self.forwards.submit(end_session)
        return {"discarded": True, "conversation": cid}

    @handles("agent.send")
    def op_send(self, ctx: RequestContext) -> Any:
        cid = check_conversation_id(ctx.args["conversation"])
        self.store.get(cid)  # unknown conversations fail here, before anything is sent
        self.idle.disarm(cid)
        text = ctx.args["text"]
        healthy = cid in self.healthy
        return self._forward(ctx, lambda: self._deliver(cid, text, healthy))

    def _deliver(self, cid: str, text: str, healthy: bool) -> Any:
        """On a worker: the message to the conversation's session process, which answers
        ``{turn}`` once the store has recorded it (or ``agent.busy``). One that has not taken
        a message yet (new, idle-stopped, gone) is asked for first with ``system.spawn``,
        answered when it is ready — no polling, no retry loop; a ``no_route`` after that
        means it died again, and it is spawned once more."""
        spawned = False
        if not healthy:
            self._spawn_session(cid)
            spawned = True
        while True:
            try:
                got = self.bus.call("session.send", {"conversation": cid, "text": text},
                                    timeout=SEND_TIMEOUT_S)
            except BusError as err:
                self._tell(Healthy(cid, False))
                if err.kind != "bus.no_route" or spawned:
                    raise classify_bus_failure(err) from None
                self._spawn_session(cid)
                spawned = True
                continue
            self._tell(Healthy(cid, True))
            return got

    def _spawn_session(self, cid: str) -> None:
        """Start the conversation's session process, or find it started: ``system.spawn``
        answers when it is ready (a running one at once; one being stopped is started again
        after its stop), or with why it is not (``bus.spawn_failed``: it exited first)."""
        try:
            self.bus.call("system.spawn", {"kind": "agent", "key": cid},
                          timeout=self.spawn_wait_s)
        except RioError as err:
            raise classify_bus_failure(err) from None

    # --- what the session records -------------------------------------------------------------
    @handles("conversation.begin_turn")
    def op_begin_turn(self, ctx: RequestContext) -> Any:
        """The session took a message: record it (the store names the turn) and announce the
        turn. The answer gives the session what the turn needs: the history (ending with
        this message) and the conversation's provider or agent."""
        cid = check_conversation_id(ctx.args["conversation"])
        text = ctx.args["text"]
        self.idle.disarm(cid)
        if cid in self.gone:        # its restarted process already took a message
            self._session_gone(cid)
        conv, record = self.store.begin_turn(cid, text)
        self.streamed[cid] = []
        self.streamed_chars[cid] = 0
        self.shown[record.turn] = ShownRecorder()
        while len(self.shown) > MAX_TURNS_SHOWING:
            self.shown.popitem(last=False)      # an end that never came back: not kept
        self._publish("agent.turn", {"conversation": cid, "turn": record.turn,
                                     "state": "started", "text": text})
        answer: dict[str, Any] = {"turn": record.turn, "messages": [
            m.to_dict() for m in bounded_history(conv.messages)]}
        for key in ("provider", "endpoint", "model", "agent", "acp_session"):
            if getattr(conv, key):
                answer[key] = getattr(conv, key)
        return answer

    @handles("conversation.end_turn")
    def op_end_turn(self, ctx: RequestContext) -> Any:
        """The session ended its turn: its messages, how it ended and what it changed are
        recorded, then announced (``agent.message``, ``agent.turn``)."""
        args = ctx.args
        turn = args["turn"]
        cid = conversation_of_turn(turn)
        if cid != args["conversation"]:
            raise ProtocolError("bad_args", f"Turn {turn!r} is not of conversation "
                                f"{args['conversation']!r}.")
        conv = self.store.get(cid)
        record = next((t for t in reversed(conv.turns) if t.turn == turn), None)
        if record is None:
            raise AgentError("unknown_turn", f"There is no turn {turn!r}.",
                             "Only a turn the store began can end.")
        late = record.status != "running"
        if late and not (conv.turns[-1].turn == turn and (
                turn in self.closed_by_core or (record.error or {}).get("kind")
                == "agent.interrupted")):
            log.info("turn %s ended twice; the second end is not recorded", turn)
            return {"recorded": False}
        self.closed_by_core.discard(turn)
        messages = [m for m in args.get("messages") or () if isinstance(m, Mapping)]
        error = args.get("error") if isinstance(args.get("error"), Mapping) else None
        buffers = [str(b["buffer"]) for b in args.get("buffers") or ()
                   if isinstance(b, Mapping) and b.get("buffer") is not None]
        changed_files = [dict(f) for f in args.get("changed_files") or ()
                         if isinstance(f, Mapping)]
        self._record_end(cid, turn, args["status"], messages, error, buffers=buffers,
                         changed_files=changed_files, acp_session=args.get("acp_session"),
                         paths=[str(p) for p in args.get("paths") or ()], replace=late)
        return {"recorded": True}

    def _record_end(self, cid: str, turn: str, status: str, messages: list[Mapping[str, Any]],
                    error: Mapping[str, Any] | None, *, buffers: Sequence[str] = (),
                    changed_files: Sequence[Mapping[str, Any]] = (),
                    acp_session: Any = None, paths: Sequence[str] = (),
                    replace: bool = False, from_core: bool = False) -> None:
        """Record the turn's messages and end, and publish them. ``from_core``: the core ended
        it itself (its session died or hung), so it publishes the ``agent.error`` too."""
        self.streamed.pop(cid, None)
        self.streamed_chars.pop(cid, None)
        text = ""
        try:
            conv = self.store.add_messages(turn, messages)
            count = len(messages)
            text = "\n\n".join(m.text for m in conv.messages[len(conv.messages) - count:]
                               if m.role == "assistant" and m.text) if count else ""
        except AgentError as err:
            status, error, from_core = "error", err.to_wire(), True
        error_wire = {k: error[k] for k in ("kind", "message", "next", "details")
                      if error.get(k) is not None} if error is not None else None
        changes: dict[str, Any] = {}
        if paths:
            changes["paths"] = sorted(set(paths))
        if changed_files:
            changes["files"] = [{"path": f.get("path"), "change": f.get("change")}
                                for f in changed_files]
        self.store.end_turn(turn, status, error_wire, changes)  # type: ignore[arg-type]
        if isinstance(acp_session, str) and acp_session:
            self.store.set_acp_session(cid, acp_session)
        base = {"conversation": cid, "turn": turn}
        if text:
            self._publish("agent.message", {**base, "role": "assistant",
                                            "text": cut_text(text)})
        if from_core and error_wire is not None:
            self._publish("agent.error", {**base, **error_wire, "partial": bool(text)})
        ended: dict[str, Any] = {**base, "state": status}
        if buffers:
            # What the turn left unsaved — by any path: `rio chat` offers /save, /undo, /diff.
            ended["buffers"] = list(buffers)
        if changed_files:
            # An ACP agent's writes behind Rio's back (its own shell): path, change, diff.
            ended["changed_files"] = [dict(f) for f in changed_files]
        if error_wire is not None:
            ended["error"] = {k: error_wire[k] for k in ("kind", "message", "next")
                              if k in error_wire}
        if replace:
            ended["again"] = True     # a late end: the core had ended it (session hung or died)
        self._publish("agent.turn", ended)
        self.idle.arm(cid)      # no turn for idle_stop_s: the session process is stopped

    def _end_by_core(self, cid: str, status: str, error: Mapping[str, Any] | None) -> str | None:
        """End the conversation's running turn here (its session died or hung), keeping the
        text it streamed, marked where it was cut. The turn's id, or None if none runs."""
        conv = self.store.get(cid)
        record = conv.running_turn
        if record is None:
            return None
        streamed = "".join(self.streamed.get(cid, ())).strip()
        over = self.streamed_chars.get(cid, 0) - MESSAGE_CHARS
        if streamed and over > 0:
            streamed += cut_mark(over)
        messages: list[Mapping[str, Any]] = []
        if streamed:
            mark = INTERRUPTED_MARK if status == "error" else "[stopped]"
            messages.append(Message.assistant(f"{streamed}\n\n{mark}").to_dict())
        self.closed_by_core.add(record.turn)
        while len(self.closed_by_core) > 256:
            self.closed_by_core.pop()
        self._record_end(cid, record.turn, status, messages, error, from_core=True)
        return record.turn

    # --- answers when no session process is there ------------------------------------------------
    @handles("agent.approve")
    def op_approve(self, ctx: RequestContext) -> Any:
        # Only reached when the conversation has no session process: nothing waits.
        conversation_of_turn(ctx.args["turn"])
        raise AgentError("unknown_turn", f"Turn {ctx.args['turn']!r} is not running any more.",
                         "Only a running turn's proposals can be answered.")

    @handles("agent.stop")
    def op_stop(self, ctx: RequestContext) -> Any:
        """A Stop the session could not answer: no session process (it died, or has not
        started), or its loop hung (the stop watch hands the Stop here). The store's running
        turn, if any, ends ``stopped`` now, with the text it streamed."""
        cid = check_conversation_id(ctx.args["conversation"])
        turn = self._end_by_core(cid, "stopped", AgentError(
            "stopped", "You stopped the turn.", "Send a message to carry on.").to_wire())
        if turn is None:
            return {"stopped": False}
        return {"stopped": True, "turn": turn}

    @handles("agent.permission_answer")
    def op_permission_answer(self, ctx: RequestContext) -> Any:
        # Only reached when the conversation has no session process: no question waits.
        check_conversation_id(ctx.args["conversation"])
        return {"answered": False}

    @handles("agent.mode")
    def op_mode(self, ctx: RequestContext) -> Any:
        args = {"mode": ctx.args["mode"]} if ctx.args.get("mode") else {}
        return self._forward(ctx, lambda: self.bus.call("gate.mode", args,
                                                        timeout=FORWARD_TIMEOUT_S))

    @handles("agent.pending")
    def op_pending(self, ctx: RequestContext) -> Any:
        """What waits in the running turns, for a window started since: each running turn's
        ``agent.turn {started}`` (from the store), then what its session holds — the
        proposals and questions waiting and what a running agent offers
        (``agent.modes``/``agent.config``/``agent.commands``), as ``{topic, data}``."""
        only = ctx.args.get("conversation")
        if only:
            self.store.get(check_conversation_id(only))
        convs = [self.store.get(only)] if only else self.store.list()
        turns: list[tuple[str, str | None, str]] = []
        for conv in convs:
            record = conv.running_turn
            if record is not None:
                turns.append((conv.conversation, record.turn, record.text))
            elif conv.conversation in self.healthy:
                turns.append((conv.conversation, None, ""))

        def pending() -> dict[str, Any]:
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
            return {"events": events}
        return self._forward(ctx, pending)

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
                  timeout: float = AGENT_SETTING_TIMEOUT_S) -> Any:
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

    # --- events --------------------------------------------------------------------------------
    def _on_delta(self, data: Mapping[str, Any]) -> None:
        """Keep a running turn's text (for a session that dies): at most MESSAGE_CHARS of it,
        as the session keeps (rio/agent/output_limits.py)."""
        cid = str(data.get("conversation"))
        streamed = self.streamed.get(cid)
        if streamed is None:
            return
        text = str(data.get("text", ""))
        kept = self.streamed_chars.get(cid, 0)
        room = MESSAGE_CHARS - kept
        if room > 0:
            streamed.append(text[:room])
        self.streamed_chars[cid] = kept + len(text)

    def _on_shown(self, topic: str, data: Mapping[str, Any]) -> None:
        """Keep an event of a running turn; the turn's own end (the ``agent.turn`` this actor
        published, back from the hub after the session's events) records what it showed."""
        turn = str(data.get("turn") or "")
        recorder = self.shown.get(turn)
        if recorder is None:
            return
        recorder.add(topic, data)
        if topic != "agent.turn" or data.get("state") not in ("done", "stopped", "error"):
            return
        del self.shown[turn]
        try:
            self.store.record_shown(turn, recorder.events, recorder.cut)
        except RioError as err:     # the disk: the turn keeps its messages, as before
            log.warning("what turn %s showed was not recorded: %s", turn, err.message)

    def _on_process(self, data: Mapping[str, Any]) -> None:
        """A conversation's session process is gone (crashed, killed, gave up, stopped): a
        turn it was running ends as ``agent.session_died``, keeping what it streamed."""
        name = str(data.get("name") or "")
        if not name.startswith("agent:") or data.get("event") not in _GONE:
            return
        cid = name.split(":", 1)[1]
        self.healthy = self.healthy - {cid}
        if cid in self.gone:
            return
        timer = threading.Timer(GONE_GRACE_S, lambda: self._tell(SessionGone(cid)))
        timer.daemon = True
        self.gone[cid] = timer
        timer.start()

    def _session_gone(self, cid: str) -> None:
        timer = self.gone.pop(cid, None)
        if timer is None:
            return
        timer.cancel()
        try:
            check_conversation_id(cid)
            self._end_by_core(cid, "error", AgentError(
                "session_died", SESSION_DIED,
                "Send your message again; `rio status` shows the restarts.").to_wire())
        except RioError as err:     # not a conversation of this store
            log.info("agent:%s ended: %s", cid, err.kind)

    # --- idle session processes --------------------------------------------------------------
    def _idle(self, cid: str, generation: int) -> None:
        if not self.idle.due(cid, generation):
            return      # a turn started meanwhile: the timer is stale
        try:
            if self.store.get(cid).running_turn is not None:
                return
        except RioError:
            return
        self._tell(Healthy(cid, False))      # the next message spawns it (answered when ready)
        args = {"process": f"agent:{cid}", "again": False, "reason": "idle"}

        def forward() -> None:
            try:
                self.bus.call("system.restart", args, timeout=FORWARD_TIMEOUT_S)
            except RioError as err:       # no such process (never spawned, or not ours)
                log.info("idle stop of agent:%s: %s", cid, err.kind)
        self.forwards.submit(forward)

    def _tell(self, message: Any) -> None:
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
    ref = ConversationsActor.start(store, host.bus,
                                   stamp=host.liveness.stamp("conversations"))
    host.refs.append(ref)
    host.liveness.watch_actor("conversations", ref)

    def on_agent(event: Any) -> None:
        if event.topic in KEPT:
            ref.tell(AgentEvent(event.topic, thaw(event.data)))

    def on_process(event: Any) -> None:
        ref.tell(ProcessEvent(thaw(event.data)))
    # What a running turn shows, kept with it (and its text, for a turn whose session dies
    # before it ends).
    host.bus.subscribe("agent.", on_agent)
    host.bus.subscribe("system.process", on_process)
    # "conversation": what a session process records (begin and end of its turns).
    return {"agent": ref.tell, "conversation": ref.tell}
