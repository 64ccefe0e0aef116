"""The agent session: one process per conversation (``agent:<conversation>``), serving
``session.*`` for the core's conversations actor.

Threads: the host's :class:`~actors.bus.service.BusThread` owns the zmq sockets; this module
runs an asyncio loop in a thread of its own, where turns run (providers are asyncio/httpx).
Requests arrive on the bus thread and are handed to the loop with ``call_soon_threadsafe``;
bus calls from the loop run ``BusThread.call`` in a small thread pool (each pool thread gets
its own DEALER to the hub, so no socket is shared), and events go out through
``BusThread.publish``. No zmq socket is touched by two threads.

The session keeps no conversation state: the core sends the history with every
``session.turn`` and records what comes back, so ``kill -9`` of this process loses only the
turn in flight (ADR-0016).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pykka

from actors.actor_registry import ActorHost, Ping, actor_factory, answer_ping
from actors.agents.acp_session import AcpOwner, make_acp_client_factory
from actors.agents.stop_watch import watch_stop
from actors.bus.async_client import AsyncLink
from actors.bus.service import ANSWERED, BusThread, OpTable, RequestContext, serve_async
from rio.agent.acp_turn import AcpBrain, AcpTurn
from rio.agent.system_prompt import build_system_prompt
from rio.agent.tools import TOOL_SPECS, Tools
from rio.agent.turn import Turn, TurnResult, TurnSpec, merge_interrupted
from rio.protocol.errors import AgentError, InternalError, ProtocolError, RioError
from rio.protocol.frames import Event
from rio.protocol.routing import turn_answer_conversation
from rio.providers.base import Message, Provider

log = logging.getLogger("rio.agent.session")

#: run.* events of runs this session has not heard of yet (output may beat run.start's reply).
_EARLY_RUNS_KEPT = 64


@dataclass
class _RunWatch:
    output: list[str] = field(default_factory=list)
    chars: int = 0
    exit: asyncio.Future[Mapping[str, Any]] | None = None
    #: output kept per run, for the model (the tools cut it again, head and tail)
    limit: int = 1 << 20


class BusPortOverThread:
    """:class:`rio.agent.tools.BusPort` and the gate calls, over the host's BusThread."""

    def __init__(self, bus: BusThread, loop: asyncio.AbstractEventLoop) -> None:
        self.bus = bus
        self.loop = loop
        self.pool = concurrent.futures.ThreadPoolExecutor(8, thread_name_prefix="rio-agent-call")
        self.runs: dict[str, _RunWatch] = {}
        self.early: OrderedDict[str, list[Event]] = OrderedDict()

        self._link: AsyncLink | None = None

    def link(self) -> AsyncLink:
        """The loop thread's own link to the hub (created there, used only there)."""
        if self._link is None:
            self._link = AsyncLink(self.bus)
        return self._link

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any:
        return await self.link().call(op, args, timeout=timeout)

    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        self.link().publish(topic, data)

    # --- run.* events (delivered on the bus thread, handled on the loop) ----------------------
    def on_run_event(self, event: Event) -> None:
        self.loop.call_soon_threadsafe(self._run_event, event)

    def _run_event(self, event: Event) -> None:
        run_id = str(event.data.get("run", ""))
        watch = self.runs.get(run_id)
        if watch is None:
            self.early.setdefault(run_id, []).append(event)
            while len(self.early) > _EARLY_RUNS_KEPT:
                self.early.popitem(last=False)
            return
        if event.topic == "run.output":
            text = str(event.data.get("text", ""))
            if watch.chars < watch.limit:
                watch.output.append(text[:watch.limit - watch.chars])
            watch.chars += len(text)
        elif event.topic == "run.exit" and watch.exit is not None and not watch.exit.done():
            watch.exit.set_result(dict(event.data))

    async def run(self, args: Mapping[str, Any], timeout: float) -> Mapping[str, Any]:
        record = await self.call("run.start", args)
        run_id = str(record["run"])
        watch = _RunWatch(exit=self.loop.create_future())
        self.runs[run_id] = watch
        for event in self.early.pop(run_id, []):
            self._run_event(event)
        try:
            try:
                final = await asyncio.wait_for(asyncio.shield(watch.exit), timeout)
            except asyncio.TimeoutError:  # the exit event was lost: ask the runner itself
                final = await self.call("run.stop", {"run": run_id}, timeout=30)
        except asyncio.CancelledError:
            # Stop: end the command's whole group; nobody waits for the answer.
            self.loop.run_in_executor(self.pool, functools.partial(
                _quiet_call, self.bus, "run.stop", {"run": run_id}))
            raise
        finally:
            self.runs.pop(run_id, None)
        dropped = int(final.get("dropped_chars") or 0) + max(0, watch.chars - watch.limit)
        return {**final, "output": "".join(watch.output), "dropped_chars": dropped}


def _quiet_call(bus: BusThread, op: str, args: Mapping[str, Any]) -> None:
    try:
        bus.call(op, args, timeout=10)
    except RioError as err:
        log.info("%s failed: %s", op, err)


class _TurnPort:
    """:class:`rio.agent.turn.TurnPort` for one turn: events and the core's gate."""

    def __init__(self, port: BusPortOverThread, conversation: str, turn: str,
                 provider: str) -> None:
        self.port = port
        self.ids = {"conversation": conversation, "turn": turn}
        self.provider = provider

    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        self.port.publish(topic, data)

    async def gate_turn(self, event: str) -> None:
        await self.port.call("gate.turn", {**self.ids, "event": event})

    async def gate_check(self, tool: str, args: Mapping[str, Any]) -> Mapping[str, Any]:
        return await self.port.call("gate.check", {**self.ids, "provider": self.provider,
                                                   "tool": tool, "args": dict(args)})

    async def remember(self, tool: str) -> None:
        await self.port.call("gate.remember", {"provider": self.provider, "tool": tool})


@dataclass
class _Running:
    turn: Turn | AcpTurn
    task: asyncio.Task[TurnResult]
    done: asyncio.Event = field(default_factory=asyncio.Event)


ProviderBuilder = Callable[[Mapping[str, Any]], Provider]

#: Providers shipped with Rio take the ``transport`` port; plug-ins get settings and secrets.
_BUILT_IN = ("anthropic", "openai")


class _SharedTransport:
    """One httpx transport for every request of this process, lent to each request's client.

    The providers open an ``AsyncClient`` per request and close it after; with a transport of
    their own that costs an SSL context per request (≈ 50 ms here, certifi loaded each time,
    measured) and a fresh TCP/TLS connection. Lending this transport keeps both: the client's
    close does not close it. A response that is not read to the end (Stop) still closes its
    connection, so nothing half-read goes back to the pool.
    """

    def __init__(self) -> None:
        import httpx
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: Any) -> Any:
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        pass  # lent, not given: see the class docstring

    async def __aenter__(self) -> _SharedTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        pass


@functools.lru_cache(maxsize=1)
def _provider_factories() -> Mapping[str, Any]:
    # Entry points are scanned once per process (≈ 45 ms the first time); installing a plug-in
    # takes effect with the next session process.
    from rio.providers.base import discover_providers
    return discover_providers()


@functools.lru_cache(maxsize=1)
def _secret_store() -> Any:
    # One store per process (the keyring backend probe costs ≈ 100 ms); it reads the key at
    # every request, so a key set while the session runs is still used.
    from rio.agent.secrets import SecretStore
    return SecretStore()


def warm_up() -> None:
    """Pay the one-off costs (imports, entry points, keyring probe) before the first turn."""
    try:
        import httpx  # noqa: F401 -- the import is the point

        import rio.providers.anthropic  # noqa: F401
        _provider_factories()
        _secret_store()
    except Exception:  # noqa: BLE001 -- warming is an optimisation; the turn reports errors
        log.debug("warm-up failed", exc_info=True)


def build_provider(args: Mapping[str, Any], config: Any = None,
                   transport: Any = None) -> Provider:
    """The provider for a turn, from config.toml with the conversation's overrides; the key
    comes from the SecretStore (keyring, file, or the provider's environment variable)."""
    from rio.agent.config import apply_overrides, guard_endpoint, load_agent_config
    overrides = {k: args.get(k) for k in ("provider", "endpoint", "model")}
    configured = config if config is not None else load_agent_config()
    config = apply_overrides(configured, overrides)
    # A stored key never goes to an endpoint a client named (ADR-0019).
    guard_endpoint(configured, config, _secret_store())
    factories = _provider_factories()
    factory = factories.get(config.provider)
    if factory is None:
        raise AgentError("not_configured", f"No provider named {config.provider!r} is "
                         "installed.", f"Use one of {', '.join(sorted(factories)) or 'none'}, "
                         "or install the provider's package.")
    if transport is not None and config.provider in _BUILT_IN:
        return factory(config.provider_settings(), secrets=_secret_store(), transport=transport)
    return factory(config.provider_settings(), secrets=_secret_store())


def load_config() -> Any:
    """config.toml's agent settings, read at every turn so edits apply to the next message."""
    from rio.agent.config import load_agent_config
    return load_agent_config()


class AgentSession(AcpOwner):
    """The session of one conversation. :meth:`handle` and :meth:`stop` are called on the bus
    thread; the ops (``handles``) run on the loop."""

    handles: OpTable[AgentSession] = AcpOwner.handles.copy()   # + the ACP agent's ops

    def __init__(self, bus: BusThread, root: Path, conversation: str, *,
                 provider_builder: Callable[..., Provider] = build_provider,
                 acp_client_factory: Callable[..., Any] | None = None) -> None:
        self.bus = bus
        self.root = root
        self.conversation = conversation
        self.provider_builder = provider_builder
        self.loop = asyncio.new_event_loop()
        self.port = BusPortOverThread(bus, self.loop)
        self.running: _Running | None = None
        #: the conversation's ACP agent, when it drives one (kept across turns)
        self.brain: AcpBrain | None = None
        #: the messages of a turn a new message interrupted, until that message's turn comes
        self._earlier: tuple[Message, ...] = ()
        self.acp_client_factory = acp_client_factory or make_acp_client_factory
        self.transport: Any = None
        self._starting = False  # a session.turn is setting up (no Turn object yet)
        self._stop_early = False  # session.stop arrived during that set-up
        #: a turn stopped before its session.turn arrived (the core's stop overtook it)
        self._stopped_ahead: str | None = None
        #: resolved at the end of a set-up with its _Running (None when set-up failed)
        self._setup: asyncio.Future[_Running | None] | None = None
        self.thread = threading.Thread(target=self._run_loop, name="rio-agent-loop", daemon=True)

    def start(self) -> AgentSession:
        self.thread.start()
        return self

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_in_executor(self.port.pool, self._warm_up)
        self.loop.run_forever()

    def _warm_up(self) -> None:
        warm_up()
        try:
            if self.transport is None:  # a race with the first turn costs one spare transport
                self.transport = _SharedTransport()
        except Exception:  # noqa: BLE001 -- the first turn makes one and reports failures
            log.debug("transport warm-up failed", exc_info=True)

    def stop(self) -> None:
        async def shutdown() -> None:
            running = self.running
            if running is not None:
                running.task.cancel()
                try:
                    await asyncio.wait_for(running.done.wait(), 0.5)
                except asyncio.TimeoutError:
                    pass
            if self.brain is not None:   # quitting ends the agent with the stop sequence
                try:
                    await asyncio.wait_for(self._end_agent(), 3.5)
                except asyncio.TimeoutError:
                    log.warning("the ACP agent did not stop in time")
            self.loop.stop()
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(lambda: self.loop.create_task(shutdown()))
            self.thread.join(5)

    # --- the bus thread ----------------------------------------------------------------------
    def handle(self, ctx: RequestContext) -> None:
        if ctx.op == "agent.stop":   # answered even when the loop hangs: the core takes it
            watch_stop(ctx, self.bus.call, self.conversation)
        self.loop.call_soon_threadsafe(self._dispatch, ctx)

    # --- the loop ------------------------------------------------------------------------------
    def _dispatch(self, ctx: RequestContext) -> None:
        self.loop.create_task(serve_async(ctx, self._serve))

    async def _serve(self, ctx: RequestContext) -> Any:
        """Every request, on the loop: checked to be this conversation's, then its method."""
        # agent.approve/stop/permission_answer come straight from the client: the hub
        # routes a running turn's answers to its owner (rio/protocol/routing.py).
        conversation = ctx.args.get("conversation") if ctx.op.startswith("session.") \
            else turn_answer_conversation(ctx.op, ctx.args)
        if conversation != self.conversation:
            raise ProtocolError("bad_args", f"This session serves conversation "
                                f"{self.conversation!r}, not {conversation!r}.")
        return await self.handles.call(self, ctx.op, ctx)

    @handles("session.turn")
    async def turn_op(self, ctx: RequestContext) -> Any:
        await self._turn(ctx)
        return ANSWERED

    @handles("session.approve", "agent.approve")
    async def approve_op(self, ctx: RequestContext) -> Any:
        await self._approve(ctx)
        return ANSWERED

    @handles("session.stop", "agent.stop")
    async def stop_op(self, ctx: RequestContext) -> Any:
        await self._stop(ctx)
        return ANSWERED

    @handles("session.interrupt")
    async def interrupt_op(self, ctx: RequestContext) -> Any:
        # The core asks before it sends a new message's turn: this process owns the turn's
        # pending proposals and questions, so it decides (no event race).
        running = self.running
        if running is None or running.turn.spec.turn != ctx.args["turn"]:
            return {"interrupted": False, "running": running is not None}
        return {"interrupted": await self._interrupts(running), "running": True}

    @handles("session.permission_answer", "agent.permission_answer")
    async def permission_answer_op(self, ctx: RequestContext) -> Any:
        running = self.running
        answered = running is not None and running.turn.spec.turn == ctx.args["turn"] \
            and isinstance(running.turn, AcpTurn) and running.turn.answer_permission(
                str(ctx.args["request"]), ctx.args.get("kind"))
        return {"answered": bool(answered)}

    @handles("session.pending")
    async def pending_op(self, ctx: RequestContext) -> Any:
        # What waits for the user in the running turn, for a window started since — then
        # what the running agent offers (its modes, config options and slash commands, as it
        # last published them), so a late window shows its pickers at once (ADR-0031).
        running = self.running
        events = list(running.turn.pending_events()) if running else []
        return {"turn": running.turn.spec.turn if running else None,
                "events": events + self._offered()}

    def _offered(self) -> list[dict[str, Any]]:
        brain = self.brain
        if brain is None or not brain.alive:
            return []
        updates = brain.client.updates
        offered = [("agent.modes", dict(updates.modes) if updates.modes else None),
                   ("agent.config", {"options": list(updates.config)}
                    if updates.config else None),
                   ("agent.commands", {"commands": list(updates.commands)}
                    if updates.commands else None)]
        return [{"topic": t, "data": {**d, "conversation": self.conversation}}
                for t, d in offered if d]

    @handles("session.status")
    async def status_op(self, ctx: RequestContext) -> Any:
        running = self.running
        return {"conversation": self.conversation,
                "turn": running.turn.spec.turn if running else None,
                "pending": running.turn.pending_ids() if running else []}

    async def _interrupts(self, running: _Running) -> bool:
        """Does a new message interrupt ``running``? Yes when one of its proposals or
        questions waits — or, for an ACP turn, a proposal of Rio's MCP tools that the core's
        ``mcp`` actor holds for it (closed there as interrupted)."""
        turn = running.turn
        if turn.interrupted or turn.interrupt():
            return True
        return isinstance(turn, AcpTurn) and await turn.interrupt_mcp(self.port.call)

    async def _turn(self, ctx: RequestContext) -> None:
        args = ctx.args
        t0 = time.perf_counter()
        earlier: tuple[Message, ...] = ()
        running = self.running
        if self._starting:
            ctx.fail(AgentError("busy", "A turn is already starting in this conversation.",
                                "Wait, or Stop the turn."))
            return
        if running is not None:
            if not await self._interrupts(running):
                ctx.fail(AgentError("busy", "A turn is already running in this conversation.",
                                    "Wait, or Stop the turn."))
                return
            await running.done.wait()
            earlier = running.turn.result().messages
        elif self._earlier:
            # Interrupted by session.interrupt and already ended: its messages go before the
            # new one (the core records them only after this turn's).
            earlier = self._earlier
        self._earlier = ()
        if args["turn"] == self._stopped_ahead:
            self._stopped_ahead = None
            ctx.reply(TurnResult("stopped", ()).to_wire())
            return
        try:
            messages = tuple(Message.from_dict(m) for m in args["messages"])
        except (KeyError, TypeError, ValueError) as exc:
            ctx.fail(ProtocolError("bad_args", f"session.turn: malformed messages ({exc})."))
            return
        if self.running is not None or self._starting:  # another message won the race
            ctx.fail(AgentError("busy", "A turn is already running in this conversation.",
                                "Wait, or Stop the turn."))
            return
        if args.get("agent"):
            await self._acp_turn(ctx)
            return
        self._starting = True
        self._setup = self.loop.create_future()
        turn_id = args["turn"]
        # Set-up overlaps the gate: "begin" (whose answer carries the mode) and the first
        # "model_request" are sent back to back on the loop's one link — in order, so the
        # gate sees them in order — while the config is read and the provider built.
        ids = {"conversation": self.conversation, "turn": turn_id}
        began = self.loop.create_task(self.port.call("gate.turn", {**ids, "event": "begin"}))
        counted = self.loop.create_task(self.port.call("gate.turn", {
            **ids, "event": "model_request"}))
        try:
            config = load_config()  # a stat, a small read and a TOML parse: cheaper in-loop
            if self.transport is None:
                self.transport = _SharedTransport()
            provider = self.provider_builder(args, config, self.transport)
            mode = str((await began).get("mode") or "review")
        except Exception as exc:  # noqa: BLE001 -- the request is answered whatever failed
            err = exc if isinstance(exc, RioError) else InternalError(
                "unexpected", f"The agent could not start the turn: {exc}.",
                "Check config.toml's [agent] section, then send the message again.")
            self._starting = self._stop_early = False
            self._setup.set_result(None)
            ctx.reply(TurnResult("error", (), error=err).to_wire())
            await self._end_gate_quietly(turn_id, began, counted)
            return
        log.debug("turn %s: set-up took %.1f ms", turn_id, (time.perf_counter() - t0) * 1e3)
        port = _TurnPort(self.port, self.conversation, turn_id, provider.name)
        system = build_system_prompt(self.root, TOOL_SPECS, mode=mode,
                                     addition=config.system_prompt_addition)
        spec = TurnSpec(self.conversation, turn_id, provider.name, system,
                        merge_interrupted(messages, earlier), TOOL_SPECS)
        turn = Turn(spec, provider, Tools(self.port, self.conversation, self.root), port,
                    begun=True, first_request=counted)
        self._starting = False
        await self._own(ctx, turn)

    async def _own(self, ctx: RequestContext, turn: Turn | AcpTurn) -> None:
        """Run ``turn`` as this session's one running turn (whichever brain answers it) and
        answer ``session.turn`` with its result."""
        running = _Running(turn, self.loop.create_task(turn.run()))
        self.running = running
        if self._setup is not None and not self._setup.done():
            self._setup.set_result(running)
        if self._stop_early:  # Stop arrived while the turn was being set up
            self._stop_early = False
            running.task.cancel()
        try:
            result = await running.task
        except asyncio.CancelledError:
            result = turn.result("stopped")
        except Exception as exc:  # noqa: BLE001 -- a bug still ends the turn with an answer
            log.exception("turn %s crashed", turn.spec.turn)
            err = InternalError("unexpected", f"The agent loop failed: {exc}.",
                             "Send your message again; if it keeps failing, report it with "
                             "the agent log.")
            result = TurnResult("error", tuple(turn.new), error=err)
            turn.publish("agent.error", {"kind": err.kind, "message": err.message,
                                         "next": err.next, "partial": False})
        finally:
            self.running = None
            running.done.set()
        if turn.interrupted:
            self._earlier = tuple(result.messages)
        ctx.reply(result.to_wire())

    def _turn_port(self, turn_id: str, provider: str) -> _TurnPort:
        return _TurnPort(self.port, self.conversation, turn_id, provider)

    async def _end_gate_quietly(self, turn_id: str, *sent: asyncio.Task[Any]) -> None:
        await asyncio.gather(*sent, return_exceptions=True)
        try:
            await self.port.call("gate.turn", {"conversation": self.conversation,
                                               "turn": turn_id, "event": "end"}, timeout=2)
        except RioError:
            pass

    async def _approve(self, ctx: RequestContext) -> None:
        running = self.running
        if running is None or running.turn.spec.turn != ctx.args["turn"]:
            if ctx.op == "agent.approve":    # from the client: the core's answer, word for word
                raise AgentError("unknown_turn", f"Turn {ctx.args['turn']!r} is not running "
                                 "any more.", "Only a running turn's proposals can be answered.")
            ctx.reply({"applied": False, "reason": "That turn is not running any more."})
            return
        outcome = await running.turn.answer(str(ctx.args["proposal"]), ctx.args["decision"])
        if outcome is None:
            ctx.reply({"applied": False, "reason": "No such proposal is waiting."})
        elif ctx.args["decision"] == "reject":
            ctx.reply({"applied": False, "reason": "rejected"})
        elif outcome.ok:
            ctx.reply({"applied": True})
        else:
            ctx.reply({"applied": False, "reason": outcome.content})

    async def _stop(self, ctx: RequestContext) -> None:
        running = self.running
        wanted = ctx.args.get("turn")
        if running is None and self._starting and self._setup is not None:
            self._stop_early = True  # cancelled as soon as it exists
            running = await asyncio.shield(self._setup)
        if ctx.answered:
            # Not answered by this loop in time (hung, or a slow set-up): the core answered
            # it (stop_watch.py). Stop what runs, without a second answer.
            if running is not None:
                running.task.cancel()
            return
        if running is None and ctx.op == "agent.stop":
            # No turn here (yet): the core may hold one that has not reached this process
            # (sent a moment ago). It answers, as it did before stops came here (the hub
            # routes this process's own agent.stop to the core).
            got = await self.port.call("agent.stop", {"conversation": self.conversation},
                                       timeout=10)
            if not ctx.answered:   # the deadline's own ask of the core may have answered
                ctx.reply(got)
            return
        if running is None or (wanted and running.turn.spec.turn != wanted):
            if wanted:
                self._stopped_ahead = wanted   # its session.turn may still be on its way
            ctx.reply({"stopped": False})
            return
        running.task.cancel()
        if ctx.op == "agent.stop":
            # The client's Stop is answered at once, as the core answered it: the turn ends
            # ("stopped", agent.turn) once its brain has let go — an ACP agent's stop sequence
            # can take seconds, which a client's Stop must not wait for.
            ctx.reply({"stopped": True, "turn": running.turn.spec.turn})
            return
        await running.done.wait()
        ctx.reply({"stopped": True})


class SessionKeeper(pykka.ThreadingActor):
    """The session's face to the host: the supervisor's liveness ping is answered *by the
    loop* (a hung loop misses it and the supervisor restarts the process), and stopping the
    host stops the loop's turn cleanly (commands ended, the gate told)."""

    def __init__(self, session: AgentSession, process: str):
        super().__init__()
        self.session = session
        self.process = process

    def on_receive(self, message: Any) -> Any:
        match message:
            case Ping():
                self.session.loop.call_soon_threadsafe(answer_ping, message, self.process)
        return None

    def on_stop(self) -> None:
        self.session.stop()


@actor_factory("agent_session")
def start_agent_session(host: ActorHost) -> dict[str, Callable[[RequestContext], None]]:
    conversation = host.name.split(":", 1)[1] if ":" in host.name else host.name
    session = AgentSession(host.bus, host.root, conversation).start()
    host.bus.subscribe("run.", session.port.on_run_event)
    keeper = SessionKeeper.start(session, host.name)
    host.refs.append(keeper)
    host.ping_targets.append(keeper)
    # An ACP turn's first step (the project's fingerprint) needs the workspace walk: loaded
    # once the session is ready, before a turn usually comes, not on the start path.
    host.after_ready.append(lambda: importlib.import_module("rio.agent.disk_changes"))
    # "agent": the turn answers (agent.approve, agent.stop, agent.permission_answer) the hub
    # routes here by conversation; the hub never registers this process for the prefix.
    return {"session": session.handle, "agent": session.handle}
