"""The agent session: one process per conversation (``agent:<conversation>``) that owns the
conversation's turns — the one owner of a turn (ADR-0034).

A message reaches it as ``session.send`` (forwarded by the core). The session decides: busy
while a turn runs and nothing in it waits for the user, else the message becomes the turn
(after the turn it interrupts, when one of that turn's proposals or questions was waiting). It
asks the core's conversation store to record the message (``conversation.begin_turn``, which
names the turn and gives the history), runs the turn — an API model's or an ACP agent's —
answers everything that belongs to it (``agent.approve``, ``agent.stop``,
``agent.permission_answer`` routed here by the hub; the agent's own writes; the calls of Rio's
MCP tools the endpoint forwards, ``session.mcp_call``), merges the buffers the turn changed
into one undo step, and has the store record the end (``conversation.end_turn``). The core
holds no turn state: it records, forwards and publishes what it recorded.

Threads: the host's :class:`~actors.bus.service.BusThread` owns the zmq sockets; this module
runs an asyncio loop in a thread of its own, where turns run (providers are asyncio/httpx).
Requests arrive on the bus thread and are handed to the loop with ``call_soon_threadsafe``;
the loop reaches the hub through a link of its own (:class:`~actors.bus.async_client.AsyncLink`),
and blocking calls run in a small thread pool (each pool thread gets its own DEALER to the
hub, so no socket is shared). No zmq socket is touched by two threads.

The session keeps no conversation state across turns: the store gives the history with every
turn and records what comes back, so ``kill -9`` of this process loses only the turn in flight
(the core ends it as ``agent.session_died``, keeping the text streamed so far; ADR-0016).
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

from actors.agent.acp_session import AcpOwner, make_acp_client_factory
from actors.agent.stop_watch import watch_stop
from actors.bus.async_client import AsyncLink
from actors.bus.service import ANSWERED, BusThread, OpTable, RequestContext, serve_async
from actors.runtime.actor_registry import ActorHost, Ping, actor_factory, answer_ping
from rio.acp.turn import AcpBrain, AcpTurn
from rio.agent.conversations import undo_label
from rio.agent.system_prompt import build_system_prompt
from rio.agent.tools import TOOL_SPECS, Tools
from rio.agent.turn import Turn, TurnResult, TurnSpec
from rio.protocol.errors import AgentError, InternalError, ProtocolError, RioError
from rio.protocol.frames import Event
from rio.protocol.routing import turn_answer_conversation
from rio.providers.base import Message, Provider, ProviderFactory

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
        exited: asyncio.Future[Mapping[str, Any]] = self.loop.create_future()
        watch = _RunWatch(exit=exited)
        self.runs[run_id] = watch
        for event in self.early.pop(run_id, []):
            self._run_event(event)
        try:
            try:
                final = await asyncio.wait_for(asyncio.shield(exited), timeout)
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
        verdict: Mapping[str, Any] = await self.port.call(
            "gate.check", {**self.ids, "provider": self.provider, "tool": tool,
                           "args": dict(args)})
        return verdict

    async def remember(self, tool: str) -> None:
        await self.port.call("gate.remember", {"provider": self.provider, "tool": tool})

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any:
        return await self.port.call(op, args, timeout=timeout)

    async def agent_check(self, tool: str, args: Mapping[str, Any]) -> Mapping[str, Any]:
        # "always allow" is keyed on the agent Rio started (``acp:<name>``), the name
        # remember() stores it under — never on a name the MCP client declares.
        verdict: Mapping[str, Any] = await self.port.call("gate.agent_check", {
            "conversation": self.ids["conversation"], "agent": self.provider, "tool": tool,
            "args": dict(args)})
        return verdict


@dataclass
class _Running:
    """The conversation's one turn, from its message's arrival to its end's record."""
    text: str
    #: the id the core's store gave the turn when it recorded the message
    turn_id: str | None = None
    #: the turn (an API model's or an ACP agent's), once set up
    turn: Turn | AcpTurn | None = None
    #: ``turn.run()``: what Stop cancels
    task: asyncio.Task[TurnResult] | None = None
    #: the whole life (:meth:`AgentSession._live`)
    life: asyncio.Task[None] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    stop_requested: bool = False
    #: the turn has run: only its undo merge and the record of its end remain. The store
    #: publishes the end (``agent.turn``) before this session hears back, so a client that
    #: sends its next message on that event must find it queued behind this, never busy.
    ran: bool = False
    recorded: bool = False
    #: the project paths of the buffers the turn changed (for the store's record)
    paths: list[str] = field(default_factory=list)

    def request_stop(self) -> None:
        """Stop: the turn is cancelled now, or as soon as it exists. An ACP turn's proposals
        and questions are closed first: an agent waiting on Rio's MCP tools gets their
        "stopped" answers at once, and can then answer its cancel (it waited the whole
        cancel grace for them, 5 s, with 16 proposals open)."""
        self.stop_requested = True
        if isinstance(self.turn, AcpTurn):
            self.turn.close_waits()
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def stop_came(self) -> bool:
        """Whether Stop was asked, read afresh: after an await it may have come meanwhile
        (from the task serving ``agent.stop``), whatever was read before the await."""
        return self.stop_requested


#: What conversation.end_turn takes of a TurnResult's wire form.
_END_KEYS = ("status", "messages", "error", "buffers", "acp_session", "changed_files")

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
def shared_transport() -> _SharedTransport:
    """The process's one transport. Built once per process — or once in the session zygote
    for every session forked from it (actors/runtime/zygote.py): its SSL context (certifi's ~150
    certificates parsed, ~2.5 MB) is then shared, not built again by each session."""
    return _SharedTransport()


@functools.lru_cache(maxsize=1)
def _provider_factories() -> Mapping[str, ProviderFactory]:
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
    """Pay the one-off costs (imports, entry points, keyring probe) before the first turn:
    in the session's own pool thread, or once in the session zygote for all its forks
    (actors/runtime/zygote.py ``LATER_CALLS``; then a forked session finds it done)."""
    try:
        import httpx  # noqa: F401 -- the import is the point

        import rio.providers.anthropic  # noqa: F401
        _provider_factories()
        _secret_store()
    except Exception:  # warming is an optimisation; the turn reports errors
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
    """The session of one conversation: it owns the conversation's turns (see the module
    docstring). :meth:`handle` and :meth:`stop` are called on the bus thread; the ops
    (``handles``) run on the loop."""

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
        #: the conversation's one turn, from its message's arrival to its end's record
        self.running: _Running | None = None
        #: the conversation's ACP agent, when it drives one (kept across turns)
        self.brain: AcpBrain | None = None
        self.acp_client_factory = acp_client_factory or make_acp_client_factory
        self.transport: Any = None
        self.endpoint: asyncio.Task[Mapping[str, Any] | None] | None = None
        self.watched: Any = None
        self.agent_ended: str | None = None
        self.last_turn: str | None = None
        self.signing: asyncio.Event | None = None
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
            if self.transport is None:
                self.transport = shared_transport()
        except Exception:  # the first turn makes one and reports failures
            log.debug("transport warm-up failed", exc_info=True)

    def stop(self) -> None:
        async def shutdown() -> None:
            running = self.running
            if running is not None:    # its end is recorded as stopped, if the core is there
                running.request_stop()
                try:
                    await asyncio.wait_for(running.done.wait(), 1.5)
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
        if ctx.op == "agent.stop":   # answered even when the loop hangs (stop_watch.py)
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

    # --- a message arrives: the turn's whole life ---------------------------------------------
    @handles("session.send")
    async def send_op(self, ctx: RequestContext) -> Any:
        """A user's message (forwarded by the core): refused as busy while a turn runs and
        nothing in it waits for the user; else it becomes this conversation's turn — after
        the turn it interrupts, when a proposal or question of that one was waiting."""
        previous = self.running
        if previous is not None and not previous.ran and not await self._interrupts(previous):
            raise AgentError("busy", "The agent is still working on the last message.",
                             "Wait, or Stop the turn.", turn=previous.turn_id)
        if self.running is not previous:   # another message won the race meanwhile
            raise AgentError("busy", "The agent is still working on the last message.",
                             "Wait, or Stop the turn.")
        running = _Running(str(ctx.args["text"]))
        self.running = running
        running.life = self.loop.create_task(self._live(ctx, running, previous))
        return ANSWERED     # once the core has recorded the message (_live)

    async def _live(self, ctx: RequestContext, running: _Running,
                    previous: _Running | None) -> None:
        """One turn: the interrupted turn's end first, then the message recorded (which
        names the turn), the turn set up and run, its edits merged into one undo step, and
        its end recorded — in this order, so the store has what the model saw."""
        try:
            if previous is not None:
                await previous.done.wait()
            try:
                began = await self.port.call("conversation.begin_turn", {
                    "conversation": self.conversation, "text": running.text}, timeout=20)
            except RioError as err:
                ctx.fail(err)
                return
            running.turn_id = str(began["turn"])
            ctx.reply({"turn": running.turn_id, "conversation": self.conversation})
            result = await self._run_turn(running, began)
            running.ran = True
            await self._merge_undo(running, result)
            await self._record_end(running, result)
        except Exception:  # the loop's one owner must not die of a bug
            log.exception("the turn of %r failed", running.text[:40])
            if not ctx.answered:
                ctx.fail(InternalError("unexpected", "The agent session failed to start the "
                                       "turn.", "Send your message again; if it keeps "
                                       "failing, report it with the agent log."))
            elif running.turn_id is not None and not running.recorded:
                await self._record_end(running, TurnResult("error", (), error=InternalError(
                    "unexpected", "The agent session failed.", "Send your message again.")))
        finally:
            if self.running is running:
                self.running = None
            if running.turn_id is not None:
                self.last_turn = running.turn_id
            running.done.set()
            self._watch_agent()     # between turns, an agent that exits is reaped and said

    async def _run_turn(self, running: _Running, began: Mapping[str, Any]) -> TurnResult:
        """Build the turn for the conversation's brain and run it; Stop cancels it."""
        stopped = TurnResult("stopped", (), error=AgentError(
            "stopped", "You stopped the turn.", "Send a message to carry on."))
        if running.stop_requested:
            return stopped
        if began.get("agent"):
            turn: Turn | AcpTurn | TurnResult = await self._acp_turn(running, began)
        else:
            turn = await self._api_turn(running, began)
        if isinstance(turn, TurnResult):
            return turn
        running.turn = turn
        running.task = self.loop.create_task(turn.run())
        if running.stop_came():     # while the turn was being set up
            running.task.cancel()
        try:
            return await running.task
        except asyncio.CancelledError:
            if not running.stop_came():
                raise        # the loop itself is being cancelled
            return turn.result("stopped")
        except Exception as exc:  # a bug still ends the turn with an answer
            log.exception("turn %s crashed", running.turn_id)
            err = InternalError("unexpected", f"The agent loop failed: {exc}.",
                                "Send your message again; if it keeps failing, report it "
                                "with the agent log.")
            turn.publish("agent.error", {"kind": err.kind, "message": err.message,
                                         "next": err.next, "partial": False})
            return TurnResult("error", tuple(turn.new), error=err)

    async def _api_turn(self, running: _Running, began: Mapping[str, Any]
                        ) -> Turn | TurnResult:
        """The API model's turn. Set-up overlaps the gate: "begin" (whose answer carries the
        mode) and the first "model_request" go back to back on the loop's one link — in
        order, so the gate sees them in order — while the config is read and the provider
        built."""
        t0 = time.perf_counter()
        turn_id = str(running.turn_id)
        ids = {"conversation": self.conversation, "turn": turn_id}
        began_gate = self.loop.create_task(self.port.call("gate.turn", {**ids,
                                                                        "event": "begin"}))
        counted = self.loop.create_task(self.port.call("gate.turn", {
            **ids, "event": "model_request"}))
        try:
            messages = tuple(Message.from_dict(m) for m in began.get("messages") or ())
            config = load_config()  # a stat, a small read and a TOML parse: cheaper in-loop
            if self.transport is None:
                self.transport = shared_transport()
            provider = self.provider_builder(dict(began), config, self.transport)
            mode = str((await began_gate).get("mode") or "review")
        except Exception as exc:  # noqa: BLE001 -- the turn ends with an answer whatever failed
            err = exc if isinstance(exc, RioError) else InternalError(
                "unexpected", f"The agent could not start the turn: {exc}.",
                "Check config.toml's [agent] section, then send the message again.")
            self.port.publish("agent.error", {**ids, "kind": err.kind, "message": err.message,
                                              "next": err.next, "partial": False})
            await self._end_gate_quietly(turn_id, began_gate, counted)
            return TurnResult("error", (), error=err)
        log.debug("turn %s: set-up took %.1f ms", turn_id, (time.perf_counter() - t0) * 1e3)
        port = _TurnPort(self.port, self.conversation, turn_id, provider.name)
        system = build_system_prompt(self.root, TOOL_SPECS, mode=mode,
                                     addition=config.system_prompt_addition)
        spec = TurnSpec(self.conversation, turn_id, provider.name, system, messages, TOOL_SPECS)
        return Turn(spec, provider, Tools(self.port, self.conversation, self.root), port,
                    begun=True, first_request=counted)

    def _turn_port(self, turn_id: str, provider: str) -> _TurnPort:
        return _TurnPort(self.port, self.conversation, turn_id, provider)

    async def _end_gate_quietly(self, turn_id: str, *sent: asyncio.Task[Any]) -> None:
        await asyncio.gather(*sent, return_exceptions=True)
        try:
            await self.port.call("gate.turn", {"conversation": self.conversation,
                                               "turn": turn_id, "event": "end"}, timeout=2)
        except RioError:
            pass

    async def _merge_undo(self, running: _Running, result: TurnResult) -> None:
        """The buffers the turn changed — by any path: API tools, the agent's own writes,
        Rio's MCP tools — each get ONE undo step, "Agent: <message>"."""
        label = undo_label(running.text)
        for buffer, since in result.buffers:
            try:
                merged = await self.port.call("buffer.merge_undo", {
                    "buffer": buffer, "since_version": since, "label": label}, timeout=5)
                if isinstance(merged, Mapping) and merged.get("path"):
                    running.paths.append(str(merged["path"]))
            except RioError as err:
                # A buffer closed during the turn has no undo to merge: nothing is lost.
                log.info("turn %s: no undo merge for %s (%s)", running.turn_id, buffer,
                         err.kind)

    async def _record_end(self, running: _Running, result: TurnResult) -> None:
        """The turn's end, recorded by the core's conversation store (which publishes
        ``agent.message`` and ``agent.turn``). Retried briefly: the core may be restarting."""
        wire = result.to_wire()
        args = {"conversation": self.conversation, "turn": running.turn_id,
                **{k: wire[k] for k in _END_KEYS if wire.get(k) is not None}}
        if running.paths:
            args["paths"] = list(running.paths)
        for attempt in range(3):
            try:
                await self.port.call("conversation.end_turn", args, timeout=10)
                running.recorded = True
                return
            except RioError as err:
                log.warning("turn %s: its end was not recorded (%s)%s", running.turn_id,
                            err.kind, "; trying again" if attempt < 2 else "")
                if err.kind not in ("bus.timeout", "bus.no_route", "bus.unreachable",
                                    "bus.actor_dead"):
                    return
                await asyncio.sleep(0.5 * (attempt + 1))

    async def _interrupts(self, running: _Running) -> bool:
        """Does a new message interrupt ``running``? Yes when one of its proposals or
        questions waits (Rio's MCP tools' proposals are the turn's too)."""
        turn = running.turn
        if turn is None:
            return False       # still starting: nothing of it waits for the user yet
        return turn.interrupted or turn.interrupt()

    # --- answers to the running turn -----------------------------------------------------------
    @handles("agent.approve")
    async def approve_op(self, ctx: RequestContext) -> Any:
        running = self.running
        turn = running.turn if running is not None else None
        if turn is None or turn.spec.turn != ctx.args["turn"]:
            raise AgentError("unknown_turn", f"Turn {ctx.args['turn']!r} is not running "
                             "any more.", "Only a running turn's proposals can be answered.")
        outcome = await turn.answer(str(ctx.args["proposal"]), ctx.args["decision"])
        if outcome is None:
            return {"applied": False, "reason": "No such proposal is waiting."}
        if ctx.args["decision"] == "reject":
            return {"applied": False, "reason": "rejected"}
        if outcome.ok:
            return {"applied": True}
        return {"applied": False, "reason": outcome.content}

    @handles("agent.stop")
    async def stop_op(self, ctx: RequestContext) -> Any:
        """Stop: the running turn is cancelled and its end recorded as stopped. Answered at
        once: an ACP agent's stop sequence can take seconds, which a Stop must not wait
        for. A Stop the stop watch answered already (a hung loop) stops it without a
        second answer."""
        running = self.running
        if running is not None:
            running.request_stop()
        # A sign-in the agent does itself (a browser login) is cancelled too: it is the
        # card's Cancel, and the Stop of a user who gave up waiting for it.
        cancelled_sign_in = self.cancel_sign_in()
        if ctx.answered:
            return ANSWERED
        if running is None:
            return {"stopped": cancelled_sign_in, **({"sign_in": "cancelled"}
                                                     if cancelled_sign_in else {})}
        return {"stopped": True, "turn": running.turn_id}

    @handles("agent.permission_answer")
    async def permission_answer_op(self, ctx: RequestContext) -> Any:
        running = self.running
        turn = running.turn if running is not None else None
        answered = isinstance(turn, AcpTurn) and turn.spec.turn == ctx.args["turn"] \
            and turn.answer_permission(str(ctx.args["request"]), ctx.args.get("kind"))
        return {"answered": bool(answered)}

    # --- Rio's MCP tools, forwarded by the endpoint --------------------------------------------
    @handles("session.mcp_call")
    async def mcp_call_op(self, ctx: RequestContext) -> Any:
        """A call of Rio's MCP tools by this conversation's agent (the endpoint checked its
        token): served by the running turn, or refused outside one."""
        running = self.running
        turn = running.turn if running is not None else None
        if not isinstance(turn, AcpTurn) or running is None or running.task is None \
                or running.task.done():
            raise AgentError("outside_turn", "Rio's tools work only while the user's message "
                             "is being answered (no turn is running in this conversation).",
                             "Rio's tools answer only while Rio is waiting for your reply to "
                             "the user's message.")
        result = await turn.mcp.run(ctx.args.get("call"), str(ctx.args["tool"]),
                                    dict(ctx.args.get("args") or {}))
        return {"turn": turn.spec.turn, "result": result}

    @handles("session.mcp_cancel")
    async def mcp_cancel_op(self, ctx: RequestContext) -> Any:
        running = self.running
        turn = running.turn if running is not None else None
        cancelled = isinstance(turn, AcpTurn) and turn.mcp.cancel(str(ctx.args["call"]))
        return {"cancelled": bool(cancelled)}

    # --- what a late window asks -----------------------------------------------------------------
    @handles("session.pending")
    async def pending_op(self, ctx: RequestContext) -> Any:
        # What waits for the user in the running turn, for a window started since — then
        # what the running agent offers (its modes, config options and slash commands, as it
        # last published them), so a late window shows its pickers at once (ADR-0031).
        running = self.running
        turn = running.turn if running is not None else None
        events = list(turn.pending_events()) if turn is not None else []
        return {"turn": running.turn_id if running else None,
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
        turn = running.turn if running is not None else None
        return {"conversation": self.conversation,
                "turn": running.turn_id if running else None,
                "pending": turn.pending_ids() if turn is not None else [],
                # an ACP conversation's agent: running or not, and how it ended (rio status)
                "agent": self._agent_state()}


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
