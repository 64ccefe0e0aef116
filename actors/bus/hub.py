"""The hub: the one place every request and event of an instance passes through.

It binds a ROUTER for requests and an XPUB for events (ADR-0009). Services — the
processes that host actors — connect like any client and register the op prefixes they serve
(``bus.register {prefixes}``); the hub routes each request by its prefix and sends the reply back
to whoever asked. A few are routed by an argument instead (rio/protocol/routing.py): ``host.*``
by process name, ``session.*`` and the answers to a running turn (``agent.approve``,
``agent.stop``, ``agent.permission_answer``) to the conversation's ``agent:<conversation>``
process, which owns the turn (ADR-0027). The hub's own ``bus.*`` and a local handler's ops
(the supervisor's ``system.*``) are answered on the hub's thread in the one dispatch style
(actors/bus/local_ops.py: an OpTable, ``@handles`` methods); one may answer later: it returns
:data:`DEFERRED` and calls :meth:`Hub.reply_later`. Events reach
the hub from services and leave on the XPUB with a per-topic ``seq``
the hub assigns, so a subscriber sees a gap instead of drifting.

Frames on the ROUTER (after the identity the ROUTER adds):
  * ``[payload]``              — from any client: a request, or (services) an event
  * ``[client_id, payload]``   — from a service: the reply to ``client_id``'s request
  * ``[client_id, payload, event…]`` — from a service: that reply, then the events it caused,
    published in order after the reply is sent on (one message for an edit: ADR-0030)
Frames the hub sends to a service: ``[service_id, client_id, payload]`` (a request to serve).

Every request gets an answer: no route, a departed service and a malformed frame are all error
replies; when a service goes away its outstanding requests are failed with ``bus.actor_dead``.
No frame can end the hub thread: anything unexpected while handling one is logged and answered
with ``internal.unexpected`` (docs/protocol.md "Frame limits"). Every socket refuses messages
over ``MAX_SOCKET_MESSAGE_BYTES`` in libzmq itself (:func:`actors.bus.sockets.configure`).
Before routing, every request is checked against the sender's role (:mod:`rio.protocol.roles`): a
remote client's role is in the identity the CURVE bridge gave it, and ops above it are refused
with ``auth.forbidden``; local clients are owners — but not an agent's processes: the
supervisor's hub asks who each new local connection is (ZAP, actors/bus/peer_guard.py).
The hub owns its sockets from one thread (ZeroMQ sockets are not thread-safe).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import msgpack
import zmq

from actors.bus.local_ops import DEFERRED, Deferred, LocalRequest, answer  # noqa: F401
from actors.bus.memory_trim import trim_soon
from actors.bus.peer_guard import DOMAIN as PEER_DOMAIN
from actors.bus.peer_guard import PeerGuard
from actors.bus.sockets import HWM, WELCOME, configure  # noqa: F401 -- HWM, WELCOME re-exported
from rio.memory import LargeFlow
from rio.protocol import ops, roles
from rio.protocol.errors import BusError, InternalError, ProtocolError
from rio.protocol.events import CHECKING, audit, guard
from rio.protocol.frames import Event, Reply, Request, decode, encode, peek_id
from rio.protocol.op_table import OpTable
from rio.protocol.routing import (
    BY_ARGUMENT,
    session_process,
    turn_answer_conversation,
)

log = logging.getLogger("rio.hub")
#: Check events against rio/protocol/events.py (RIO_CHECK_EVENTS=1: the test suite): the
#: supervisor's are raised in its thread (:meth:`Hub.publish`); a service's that reach the hub
#: unchecked are logged and published all the same — the hub's thread never raises for one.
CHECK_EVENTS = CHECKING




@dataclass
class Service:
    identity: bytes
    name: str
    prefixes: tuple[str, ...]
    pid: int
    #: requests routed to it and not answered yet → how many copies (each gets one reply)
    pending: dict[tuple[bytes, str], int] = field(default_factory=dict)


class Hub:
    """Run with :meth:`start` (a thread) or :meth:`serve_forever`; stop with :meth:`stop`."""

    def __init__(self, requests_endpoint: str, events_endpoint: str, *,
                 context: zmq.SyncContext | None = None,
                 curve_secret: bytes | None = None,
                 local_handler: Callable[[bytes, Request], Reply | Deferred | None] | None
                 = None,
                 on_registered: Callable[[str], None] | None = None,
                 peer_guard: PeerGuard | None = None):
        """``on_registered(name)``: told (on the hub's thread; it must not block) when a
        process registers — the supervisor pings a starting one at once. ``peer_guard``:
        who may connect to the local sockets (the supervisor's: an agent's processes may
        not, actors/bus/peer_guard.py)."""
        self.requests_endpoint = requests_endpoint
        self.events_endpoint = events_endpoint
        self.ctx = context or zmq.Context.instance()
        self._curve_secret = curve_secret
        self._local_handler = local_handler
        self._on_registered = on_registered
        self._peer_guard = peer_guard
        self._services: dict[bytes, Service] = {}
        self._routes: dict[str, bytes] = {}
        self._seq: dict[str, int] = {}
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop_endpoint = f"inproc://hub-stop-{id(self)}"
        self._bind_error: BaseException | None = None
        self._injected: list[tuple[str, dict[str, Any]]] = []
        self._inject_lock = threading.Lock()
        self._inject_endpoint = f"inproc://hub-inject-{id(self)}"
        self.stats = {"requests": 0, "replies": 0, "events": 0, "errors": 0}
        self._flow = LargeFlow()     # large files passing through: then a trim (rio/memory.py)
        self._crash_next = False

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "Hub":
        self._thread = threading.Thread(target=self.serve_forever, name="rio-hub", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._bind_error is not None:
            raise self._bind_error
        return self

    def alive(self) -> bool:
        """Is the hub's thread running? (False once stopped, or if it died.)"""
        return self._thread is not None and self._thread.is_alive()

    def restart(self) -> "Hub":
        """Start the hub's thread again after it died: it binds the same endpoints anew and
        keeps its routing table, so services and clients reconnect on their own (ZeroMQ
        reconnects) and are routed as before; requests that were in flight time out."""
        if self._thread is not None:
            self._thread.join(1)
        self._ready.clear()
        self._bind_error = None
        self._crash_next = False
        return self.start()

    def crash_on_next_frame(self) -> None:
        """Fault injection (``system.fault hub_crash``): the hub's thread dies of the next
        frame it reads, as a bug outside every per-frame guard would kill it."""
        self._crash_next = True

    def stop(self) -> None:
        if self._peer_guard is not None:
            self._peer_guard.stop()
        if self._thread is None:
            return
        sock = self.ctx.socket(zmq.PAIR)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self._stop_endpoint)
        sock.send(b"stop")
        sock.close()
        self._thread.join(5)
        self._thread = None

    def publish(self, topic: str, data: dict[str, Any]) -> None:
        """Publish an event from another thread of the hub's process (the supervisor)."""
        if CHECK_EVENTS:
            guard(topic, data)
        with self._inject_lock:
            sock = self.ctx.socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 1000)
            sock.connect(self._inject_endpoint)
            sock.send(msgpack.packb([topic, data], use_bin_type=True))
            sock.close()

    def reply_later(self, client: bytes, reply: Reply) -> None:
        """Answer a request a local handler deferred (:data:`DEFERRED`), from any thread:
        the reply goes out on the hub's thread (like :meth:`publish`, through the inject
        socket; not ordered against events published from other threads)."""
        with self._inject_lock:
            sock = self.ctx.socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 1000)
            sock.connect(self._inject_endpoint)
            sock.send(msgpack.packb(["__reply__", {"client": client, "payload": encode(reply)}],
                                    use_bin_type=True))
            sock.close()

    def drop_service(self, name: str) -> None:
        """Called (via publish-like injection) when the supervisor sees a process die."""
        with self._inject_lock:
            sock = self.ctx.socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 1000)
            sock.connect(self._inject_endpoint)
            sock.send(msgpack.packb(["__drop__", {"name": name}], use_bin_type=True))
            sock.close()

    # --- the loop -------------------------------------------------------------------------------
    def serve_forever(self) -> None:
        try:
            router = self.ctx.socket(zmq.ROUTER)
            configure(router)
            router.setsockopt(zmq.ROUTER_MANDATORY, 1)
            xpub = self.ctx.socket(zmq.XPUB)
            configure(xpub)
            xpub.setsockopt(zmq.XPUB_WELCOME_MSG, WELCOME)
            if self._curve_secret is not None:
                for sock in (router, xpub):
                    sock.curve_server = True
                    sock.curve_secretkey = self._curve_secret
            elif self._peer_guard is not None:    # each new connection's peer is asked
                self._peer_guard.start(self.ctx)
                for sock in (router, xpub):
                    sock.zap_domain = PEER_DOMAIN
            router.bind(self.requests_endpoint)
            xpub.bind(self.events_endpoint)
            ctl = self.ctx.socket(zmq.PAIR)
            ctl.bind(self._stop_endpoint)
            inject = self.ctx.socket(zmq.PULL)
            inject.setsockopt(zmq.LINGER, 0)
            inject.bind(self._inject_endpoint)
        except BaseException as exc:  # noqa: BLE001 -- handed to start()'s caller
            self._bind_error = exc
            self._ready.set()
            return
        self._router, self._xpub = router, xpub
        self._ready.set()
        poller = zmq.Poller()
        for sock in (router, xpub, ctl, inject):
            poller.register(sock, zmq.POLLIN)
        try:
            while True:
                events = dict(poller.poll())
                if ctl in events:
                    break
                if xpub in events:
                    while xpub.poll(0):
                        xpub.recv()  # subscriptions: serviced so the welcome message is sent
                if inject in events:
                    while inject.poll(0):
                        self._on_injected(inject.recv())
                if router in events:
                    for _ in range(1000):  # bounded batch, then service the other sockets
                        try:
                            frames = router.recv_multipart(zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        if self._crash_next:
                            raise SystemExit("hub_crash fault injected")
                        self._on_frames_safely(frames)
        finally:
            for sock in (router, xpub, ctl, inject):
                sock.close(linger=0)

    # --- routing --------------------------------------------------------------------------------
    def _service_of(self, sender: bytes) -> Service | None:
        """The service a connection belongs to: its bus thread's, or an actor thread's own
        DEALER (identity ``<service identity>/<n>``), which sends replies and events directly."""
        service = self._services.get(sender)
        if service is None and b"/" in sender:
            service = self._services.get(sender.split(b"/", 1)[0])
        return service

    def _on_injected(self, raw: bytes) -> None:
        try:
            topic, data = msgpack.unpackb(raw, raw=False)
            if topic == "__drop__":
                self._drop_by_name(data["name"])
            elif topic == "__reply__":
                self.stats["replies"] += 1
                self._send(data["client"], data["payload"])
            else:
                self._publish(topic, data)
        except Exception:  # the hub thread never dies of one message
            log.exception("hub: an injected event could not be handled (dropped)")

    def _on_frames_safely(self, frames: list[bytes]) -> None:
        """:meth:`_on_frames`, and whatever goes wrong with one frame stays with that frame:
        logged, answered with ``internal.unexpected`` when it was a request, and the hub goes
        on (a frame that killed this thread once left the instance unstoppable)."""
        try:
            self._on_frames(frames)
            size = sum(len(f) for f in frames)
            if size >= LargeFlow.SIZEABLE and self._flow.add(size, time.monotonic()):
                trim_soon()     # a large file passed through: its buffers, given back
        except Exception as exc:  # every thread that reads the network
            self.stats["errors"] += 1
            log.exception("hub: a %d-part frame from %r failed", len(frames), frames[0][:64])
            if len(frames) == 2:
                self._reply(frames[0], Reply.failure(peek_id(frames[1]) or "?", InternalError(
                    "internal.unexpected", f"The hub could not handle this frame "
                    f"({type(exc).__name__}).")))

    def _on_frames(self, frames: list[bytes]) -> None:
        sender = frames[0]
        if len(frames) == 2:
            self._on_payload(sender, frames[1])
        elif len(frames) >= 3 and (service := self._service_of(sender)) is not None:
            client, payload = frames[1], frames[2]
            key = (client, peek_id(payload))
            copies = service.pending.pop(key, 0)
            if copies > 1:
                service.pending[key] = copies - 1
            self.stats["replies"] += 1
            self._send(client, payload)
            for event in frames[3:]:   # the events the op caused, after its reply (ADR-0030)
                self._service_event(event)
        else:
            log.warning("dropping a frame with %d parts from %r", len(frames), sender)

    def _service_event(self, payload: bytes) -> None:
        """An event that came with a service's reply: published; anything else is dropped."""
        try:
            frame = decode(payload)
        except ProtocolError:
            self.stats["errors"] += 1
            log.warning("hub: dropping an undecodable event sent with a reply")
            return
        if isinstance(frame, Event):
            self._service_publish(frame)

    def _service_publish(self, frame: Event) -> None:
        """An event a service sent (alone, or with a reply): numbered and published."""
        if CHECK_EVENTS:
            audit(frame.topic, frame.data)
        self._publish(frame.topic, dict(frame.data))

    def _on_payload(self, sender: bytes, payload: bytes) -> None:
        try:
            frame = decode(payload)
        except ProtocolError as err:
            self.stats["errors"] += 1
            self._reply(sender, Reply.failure(peek_id(payload) or "?", err))
            return
        if isinstance(frame, Event):
            if self._service_of(sender) is not None:
                self._service_publish(frame)
            return
        if isinstance(frame, Reply):
            return  # a reply without a destination: nothing to do with it
        self.stats["requests"] += 1
        denied = roles.refusal(sender, frame.op)   # a remote key's role (ADR-0019)
        if denied is not None:
            self._reply(sender, Reply.failure(frame.id, denied))
            return
        if frame.op.startswith("bus."):
            answered = answer(self.handles, self, sender, frame)
            if not isinstance(answered, Deferred):   # bus.* ops are answered at once
                self._reply(sender, answered)
            return
        if self._local_handler is not None:
            local = self._local_handler(sender, frame)
            if isinstance(local, Deferred):
                return      # answered later through reply_later
            if local is not None:
                self._reply(sender, local)
                return
        prefix = frame.op.split(".", 1)[0]
        if prefix in BY_ARGUMENT:
            try:   # routed by an argument: a wrong one is bad_args, not "nothing serves it"
                ops.validate(frame)
            except ProtocolError as err:
                self._reply(sender, Reply.failure(frame.id, err))
                return
        if prefix == "host":
            # host.* ops go to one process by name (the supervisor's liveness pings)
            target = self._named(str(frame.args.get("process")))
        elif prefix == "session":
            # session.* ops go to the conversation's own agent process, "agent:<conversation>"
            target = self._named(session_process(str(frame.args.get("conversation"))))
        else:
            target = self._turn_owner(sender, frame) or self._routes.get(prefix)
        if target is None:
            self._reply(sender, Reply.failure(frame.id, BusError(
                "no_route", f"Nothing serves {prefix}.* ops right now.",
                "Check `rio status`: the process that serves them may be restarting or "
                "not configured.", op=frame.op)))
            return
        service = self._services[target]
        try:
            self._router.send_multipart([target, sender, payload])
        except zmq.ZMQError:
            self._forget(target, "it stopped answering")
            self._reply(sender, Reply.failure(frame.id, BusError(
                "unreachable", f"The {service.name} process is not reachable.",
                "It is being restarted; try again in a moment.")))
            return
        key = (sender, frame.id)
        service.pending[key] = service.pending.get(key, 0) + 1

    def registered_pid(self, name: str) -> int | None:
        """The pid a service named ``name`` registered with, if one is registered (read on the
        hub's thread: a local handler's question)."""
        ident = self._named(name)
        return None if ident is None else self._services[ident].pid

    def _named(self, name: str) -> bytes | None:
        return next((i for i, s in self._services.items() if s.name == name), None)

    def _turn_owner(self, sender: bytes, frame: Request) -> bytes | None:
        """The session process that answers this turn answer itself (agent.approve,
        agent.stop, agent.permission_answer; rio/protocol/routing.py), if it is registered
        and did not send the request itself; else None (the prefix route: the core)."""
        conversation = turn_answer_conversation(frame.op, frame.args)
        if conversation is None:
            return None
        name = session_process(conversation)
        asking = self._service_of(sender)
        if asking is not None and asking.name == name:
            return None          # the session asks the core (its stop with no turn of its own)
        return self._named(name)

    # --- bus.* (answered here, on the hub's thread: actors/bus/local_ops.py) ------------------
    handles: OpTable[Hub] = OpTable()

    @handles("bus.register")
    def register_op(self, req: LocalRequest) -> dict[str, Any]:
        # host.* and session.* are routed by process name, never by prefix (many serve
        # them); so are the agent.* turn answers a conversation's session serves itself.
        sender, args = req.sender, req.args
        name = args["name"] or sender.decode(errors="replace")
        by_name = BY_ARGUMENT + (("agent",) if name.startswith(session_process("")) else ())
        prefixes = tuple(p for p in args["prefixes"] if p not in by_name)
        taken = [p for p in prefixes if p in self._routes and self._routes[p] != sender
                 and self._routes[p] in self._services
                 and self._services[self._routes[p]].name != name]
        if taken:
            raise BusError("prefix_taken", f"Prefix {taken[0]!r} is already served by "
                           f"{self._services[self._routes[taken[0]]].name}.",
                           "Check supervisor.toml: each actor lives in one process.")
        # A restarted service re-registers under a new identity: drop the old one.
        for ident, svc in list(self._services.items()):
            if svc.name == name and ident != sender:
                self._forget(ident, "it was restarted")
        self._services[sender] = Service(sender, name, prefixes, args["pid"])
        for p in prefixes:
            self._routes[p] = sender
        if self._on_registered is not None:
            self._on_registered(name)
        return {"registered": list(prefixes)}

    @handles("bus.unregister")
    def unregister_op(self, req: LocalRequest) -> dict[str, Any]:
        if req.sender in self._services:
            self._forget(req.sender, "it unregistered")
        return {}

    @handles("bus.services")
    def services_op(self, req: LocalRequest) -> list[dict[str, Any]]:
        return [{"name": s.name, "prefixes": list(s.prefixes), "pid": s.pid,
                 "pending": sum(s.pending.values())} for s in self._services.values()]

    @handles("bus.stats")
    def stats_op(self, req: LocalRequest) -> dict[str, Any]:
        return dict(self.stats, topics=dict(self._seq))

    def _drop_by_name(self, name: str) -> None:
        for ident, svc in list(self._services.items()):
            if svc.name == name:
                self._forget(ident, "its process ended")

    def _forget(self, ident: bytes, why: str) -> None:
        service = self._services.pop(ident, None)
        if service is None:
            return
        for prefix in service.prefixes:
            if self._routes.get(prefix) == ident:
                del self._routes[prefix]
        for (client, rid), copies in service.pending.items():
            payload = encode(Reply.failure(rid, BusError(
                "actor_dead", f"The {service.name} process ended before answering ({why}).",
                "Try again: Rio restarts it. `rio status` shows restarts.")))
            for _ in range(copies):   # every copy sent gets its answer
                self._send(client, payload)

    # --- sending --------------------------------------------------------------------------------
    def _reply(self, client: bytes, reply: Reply) -> None:
        self._send(client, encode(reply))

    def _send(self, client: bytes, payload: bytes) -> None:
        try:
            self._router.send_multipart([client, payload])
        except zmq.ZMQError:
            if client in self._services:
                self._forget(client, "it stopped answering")
            # otherwise a client left before its reply: nothing to tell anyone

    def _publish(self, topic: str, data: dict[str, Any]) -> None:
        seq = self._seq.get(topic, 0) + 1
        self._seq[topic] = seq
        self.stats["events"] += 1
        self._xpub.send_multipart([topic.encode(), encode(Event(topic, data, seq))])
