"""The bus thread of a process that hosts actors, and the service side of requests.

One thread owns the process's :class:`~actors.bus.client.BusConnection`. Actors (pykka threads) never
touch it: each actor thread answers, publishes and calls through a DEALER of its own to the hub
(created on first use by :func:`actors.bus.sockets.make_dealer`, named under the bus thread's
identity so the hub takes it for this service, ADR-0009), so a reply costs no hop through the bus
thread and no socket is shared between threads.
An inproc PUSH to the bus thread carries only the stop signal.

Requests routed to this process are validated here (:func:`rio.protocol.ops.validate`), so actors only ever
see checked arguments, and de-duplicated by ``(client, id)``: a duplicated frame is never run twice;
if its reply was already sent, the same reply is sent again, and copies that arrive while the
first is still running each get the reply when it comes (ADR-0009, ADR-0020).

How an actor serves a request (one style everywhere): the actor's class holds an
:class:`OpTable`; each op is a method marked ``@handles("gate.check")`` that takes the
:class:`RequestContext` and returns the result, or :data:`ANSWERED` when it answers the request
itself (now, or later from elsewhere: a run's end, a worker). :func:`serve` runs the method and
answers the request exactly once: the result as the reply; a :class:`RioError` as it is; any other
exception logged with its traceback and sent as ``internal.unexpected``; an op without a method as
:func:`rio.protocol.ops.unknown_op`. Messages an actor sends itself are typed (NamedTuples matched
with ``match``), never bare strings or tuples.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, Sequence, TypeVar

import msgpack
import zmq

from actors.bus.client import (
    BusConnection,
    Endpoints,
    EventHandler,
    as_error,
    encode_reply,
    result_of,
)
from actors.bus.sockets import make_dealer
from rio.protocol import op_table, ops
from rio.protocol.errors import BusError, ProtocolError, RioError
from rio.protocol.events import CHECKING, guard
from rio.protocol.frames import Event, Reply, Request, decode, encode_checked, peek_id

log = logging.getLogger("rio.bus")

_DEDUP_KEEP = 4096
#: How long a thread's link to the hub may still deliver what was sent on it once closed.
LINK_LINGER_MS = 5000
#: Replies bigger than this (reads: a 4 MiB ``buffer.text`` slice) are kept for duplicates only
#: while all such kept replies add up to at most _BIG_KEEP_BYTES; the oldest go first. Kept
#: whole, the 25 slices of a 100 MB document held 100 MB in the core for good (issue 13).
_BIG_REPLY_BYTES = 64 * 1024
_BIG_KEEP_BYTES = 8 * 1024 * 1024
#: Check every event published here against rio/protocol/events.py (RIO_CHECK_EVENTS=1: the
#: test suite); a failure is raised in the publishing thread. Off, one dict lookup per publish.
CHECK_EVENTS = CHECKING


@dataclass(frozen=True)
class RequestContext:
    """One request being served: answer it exactly once with :meth:`reply` or :meth:`fail`.
    A second answer is never sent (it is logged: a bug in the code that served the request)."""
    bus: "BusThread"
    client: bytes
    request: Request
    #: the request's arguments as :func:`rio.protocol.ops.validate` returned them: checked,
    #: and a dict of this request's own (the logic's handlers take them as they are)
    args: dict[str, Any]
    #: holds one token until the request is answered; ``list.pop`` is atomic, so two threads
    #: racing to answer cannot both win
    _unanswered: list[bool] = field(default_factory=lambda: [True], compare=False, repr=False)

    @property
    def op(self) -> str:
        return self.request.op

    @property
    def answered(self) -> bool:
        return not self._unanswered

    def reply(self, result: Any = None, *,
              events: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> None:
        """Answer with ``result``; ``events`` are the events the op caused, published after the
        reply — from an actor's thread in the same message to the hub (one send, one hop less
        for the hub: the edit path, issue 13)."""
        if self._claim():
            self.bus.send_reply(self.client, Reply.success(self.request.id, result), events)

    def fail(self, error: BaseException) -> None:
        if self._claim():
            self.bus.send_reply(self.client, Reply.failure(self.request.id, as_error(error)))

    def _claim(self) -> bool:
        try:
            self._unanswered.pop()
        except IndexError:
            log.error("%s %s was answered twice; the second answer is dropped",
                      self.op, self.request.id, stack_info=True)
            return False
        return True


Handler = Callable[[RequestContext], None]


class _Answered:
    def __repr__(self) -> str:
        return "ANSWERED"


#: What an op method returns when it answers its request itself — now, or later from elsewhere
#: (a run's end, a worker thread, the session's loop) — instead of returning the result.
ANSWERED: Any = _Answered()


def failed(ctx: RequestContext, exc: BaseException) -> None:
    """Answer ``ctx`` with ``exc``: a :class:`RioError` as it is (the user's next action is in
    it); anything else is a bug: logged with its traceback, sent as ``internal.unexpected``."""
    if not isinstance(exc, RioError):
        log.error("%s failed", ctx.op, exc_info=exc)
    ctx.fail(exc)


def serve(ctx: RequestContext, method: Callable[[RequestContext], Any] | None) -> None:
    """Run an op's method and answer ``ctx`` exactly once (the module docstring): its result,
    or its error; ``None`` for the method means nobody serves the op (``protocol.unknown_op``)."""
    try:
        if method is None:
            raise ops.unknown_op(ctx.op)
        result = method(ctx)
    except Exception as exc:  # noqa: BLE001 -- the one place a request's failure becomes its answer
        failed(ctx, exc)
        return
    if result is not ANSWERED:
        ctx.reply(result)


async def serve_async(ctx: RequestContext,
                      method: Callable[[RequestContext], Awaitable[Any]] | None) -> None:
    """:func:`serve` for an op whose method is a coroutine (the agent session's loop)."""
    try:
        if method is None:
            raise ops.unknown_op(ctx.op)
        result = await method(ctx)
    except Exception as exc:  # noqa: BLE001 -- the one place a request's failure becomes its answer
        failed(ctx, exc)
        return
    if result is not ANSWERED:
        ctx.reply(result)


Owner = TypeVar("Owner")


class OpTable(op_table.OpTable[Owner]):
    """An actor's ops → its methods, each taking the :class:`RequestContext`
    (:mod:`rio.protocol.op_table`). In the class body::

        handles: OpTable[GateActor] = OpTable()

        @handles("gate.check")
        def check(self, ctx: RequestContext) -> dict: ...

    and in ``on_receive``: ``self.handles.serve(self, ctx)``."""

    def serve(self, owner: Owner, ctx: RequestContext) -> None:
        serve(ctx, self.method(owner, ctx.op))

    async def serve_async(self, owner: Owner, ctx: RequestContext) -> None:
        await serve_async(ctx, self.method(owner, ctx.op))


class _SharedLink:
    """One DEALER several threads send through, one send at a time (a ZeroMQ socket may be
    used by several threads when a lock orders them: the lock is the memory barrier)."""

    def __init__(self, sock: zmq.SyncSocket) -> None:
        self.sock = sock
        self.lock = threading.Lock()

    def send(self, data: bytes) -> None:
        with self.lock:
            self.sock.send(data)

    def send_multipart(self, parts: Sequence[bytes]) -> None:
        with self.lock:
            self.sock.send_multipart(parts)


class BusThread:
    def __init__(self, endpoints: Endpoints, *, name: str,
                 handlers: Mapping[str, Handler] | None = None,
                 context: zmq.SyncContext | None = None,
                 fault_filter: Callable[[bytes], list[bytes]] | None = None):
        self.endpoints = endpoints
        self.name = name
        self.ctx = context or zmq.Context.instance()
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self._out_endpoint = f"inproc://bus-out-{uuid.uuid4().hex}"
        self._local = threading.local()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping = False
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._links = 0
        self._shared: _SharedLink | None = None
        self._early: list[tuple[str, dict[str, Any]]] = []
        self._registered = False
        #: requests being served → how many more copies of each arrived meanwhile
        self._inflight: dict[tuple[bytes, str], int] = {}
        self._done: collections.OrderedDict[tuple[bytes, str], bytes] = collections.OrderedDict()
        #: the kept replies over _BIG_REPLY_BYTES → their size, oldest first
        self._big: collections.OrderedDict[tuple[bytes, str], int] = collections.OrderedDict()
        self._big_bytes = 0
        self._subscriptions: list[tuple[str, EventHandler]] = []
        #: Fault injection at the client layer: maps an outgoing payload to the payloads
        #: actually sent (drop = [], duplicate = [p, p]). None in normal runs.
        self.fault_filter = fault_filter
        self.conn: BusConnection | None = None

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self, timeout: float = 10.0) -> "BusThread":
        self._thread = threading.Thread(target=self._run, name=f"rio-bus-{self.name}", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise BusError("unreachable", f"{self.name}: the bus did not come up in {timeout:g} s.",
                           "Check that the hub is running (`rio status`).")
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stopping = True
        try:
            self._post(["stop"])
        except zmq.ZMQError:
            pass
        self._thread.join(5)
        self._thread = None

    def subscribe(self, prefix: str, handler: EventHandler) -> None:
        """Event handler run on the bus thread; register before :meth:`start`."""
        self._subscriptions.append((prefix, handler))

    # --- any thread -----------------------------------------------------------------------------
    def send_reply(self, client: bytes, reply: Reply,
                   events: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> None:
        """Send ``reply`` to ``client``, then publish ``events``. From an actor's thread, a
        reply that answers one copy of its request travels with its events in one message
        ``[client, reply, event…]``: the hub sends the reply on, then publishes the events,
        in that order (ADR-0030)."""
        if CHECK_EVENTS and events:
            self._check_events(client, reply, events)
        payload = encode_reply(reply)   # a result too big to travel becomes that error
        copies = self._remember(client, payload)
        on_bus_thread = threading.current_thread() is self._thread
        if events and copies == 1 and self.fault_filter is None and not on_bus_thread \
                and self._registered:
            try:
                encoded = [encode_checked(Event(topic, dict(data))) for topic, data in events]
            except ProtocolError:   # an event too big: the reply alone, publish() refuses it
                encoded = []
            if encoded:
                self._link().send_multipart([client, payload, *encoded])
                return
        for _ in range(copies):   # every copy of the request gets the reply
            for p in self._faulted(payload):
                if on_bus_thread:
                    self._thread_conn().send_routed(client, p)
                else:
                    self._link().send_multipart([client, p])
        for topic, data in events:
            self.publish(topic, data)

    def _check_events(self, client: bytes, reply: Reply,
                      events: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """A reply's events, checked (tests): a bad one is raised after the reply went alone,
        so the client is still answered and the failure is the publisher's."""
        try:
            for topic, data in events:
                guard(topic, data)
        except ProtocolError:
            self.send_reply(client, reply)
            raise

    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        if CHECK_EVENTS:
            guard(topic, data)   # in the caller's thread, before an early one is kept
        with self._lock:
            if not self._registered:   # before start (an actor's on_start): sent once registered
                self._early.append((topic, dict(data)))
                return
        if threading.current_thread() is self._thread:
            self._thread_conn().publish(topic, data)
        else:
            self._link().send(encode_checked(Event(topic, dict(data))))

    def call(self, op: str, args: Mapping[str, Any] | None = None, *,
             timeout: float = 10.0) -> Any:
        """Blocking request from any thread (an actor's own link waits for its reply)."""
        if threading.current_thread() is self._thread:
            assert self.conn is not None
            return self.conn.call(op, args, timeout=timeout)
        sock = self._own_link()
        rid = f"{self.name}-{uuid.uuid4().hex[:12]}"
        sock.send(encode_checked(Request(rid, op, dict(args or {}))))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sock.poll(int(remaining * 1000) + 1):
                raise BusError("timeout", f"No reply to {op} after {timeout:g} s.",
                               "Check `rio status` and try again.", op=op)
            frames = sock.recv_multipart()
            try:
                frame = decode(frames[-1])
            except RioError:
                continue
            if isinstance(frame, Reply) and frame.id == rid:
                return result_of(frame)

    def join_shared_link(self) -> None:
        """From now on the calling thread sends its replies and events through one DEALER it
        shares with every other thread that joined (under a lock), instead of a DEALER of its
        own. What those threads send then reaches the hub in the order they sent it — a
        thread's own link guarantees that only for its own sends. The core's buffer workers
        join (actors/runtime/strands.py): two messages of one buffer may run on two workers, and its
        ``buffer.changed`` events must stay in version order. ``call`` still uses a link of
        the thread's own (a reply must come back to the thread that waits for it)."""
        self._local.shared = True

    def _link(self) -> _SharedLink | zmq.SyncSocket:
        """Where this thread sends: the shared link if it joined it, else its own DEALER."""
        if getattr(self._local, "shared", False):
            shared = self._shared
            if shared is None:
                sock = self._new_link()   # takes the lock itself
                with self._lock:
                    if self._shared is None:
                        self._shared = _SharedLink(sock)
                    shared = self._shared
                if shared.sock is not sock:     # another thread made it first
                    sock.close(linger=0)
            return shared
        return self._own_link()

    def _thread_conn(self) -> BusConnection:
        """The bus thread's own connection, for use on that thread (where it is set)."""
        if self.conn is None:
            raise RuntimeError(f"{self.name}: the bus thread has no connection yet")
        return self.conn

    def _new_link(self) -> zmq.SyncSocket:
        assert self.conn is not None, "the bus thread is not running"
        with self._lock:
            self._links += 1
            identity = self.conn.identity + b"/%d" % self._links
        sock = make_dealer(self.ctx, self.endpoints, identity)
        # A thread's link closes when the thread ends (an actor stopped after its last
        # reply, e.g. buffer.close; a worker thread): with LINGER 0 the reply still queued
        # in it was dropped, and that request went unanswered. The process's context is
        # never terminated, so this linger blocks nothing.
        sock.setsockopt(zmq.LINGER, LINK_LINGER_MS)
        return sock

    def _own_link(self) -> zmq.SyncSocket:
        """This thread's own DEALER to the hub, named under the bus thread's identity so the
        hub accepts its replies and events as this service's (ADR-0009): an actor answers
        without a hop through the bus thread."""
        sock = getattr(self._local, "link", None)
        if sock is None:
            sock = self._new_link()
            self._local.link = sock
        return sock

    # --- the bus thread -------------------------------------------------------------------------
    def _post(self, item: list[str]) -> None:
        sock = getattr(self._local, "push", None)
        if sock is None:
            sock = self.ctx.socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 1000)
            sock.setsockopt(zmq.SNDHWM, 100_000)
            sock.connect(self._out_endpoint)
            self._local.push = sock
        sock.send(msgpack.packb(item, use_bin_type=True))

    def _run(self) -> None:
        try:
            pull = self.ctx.socket(zmq.PULL)
            pull.setsockopt(zmq.LINGER, 0)
            pull.setsockopt(zmq.RCVHWM, 100_000)
            pull.bind(self._out_endpoint)
            conn = BusConnection(self.endpoints, name=self.name, context=self.ctx)
            conn.on_request = self._on_request
            for prefix, handler in self._subscriptions:
                conn.subscribe(prefix, handler)
            if not conn.wait_live(10):
                raise BusError("unreachable", f"{self.name}: no answer from the hub.",
                               "Check that the hub is running (`rio status`).")
            # The connection is usable (replies, links) before registration: conn.call drains,
            # and a request routed to us meanwhile (a ping) is answered through self.conn.
            self.conn = conn
            prefixes = sorted(self.handlers)
            if prefixes:
                conn.call("bus.register", {"prefixes": prefixes, "name": self.name,
                                           "pid": os.getpid()})
            # Events are accepted from registered services only: flush the early ones now.
            with self._lock:
                self._registered = True
                early, self._early = self._early, []
            for topic, data in early:
                conn.publish(topic, data)
        except BaseException as exc:  # noqa: BLE001 -- handed to start()'s caller
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        poller = zmq.Poller()
        conn.register(poller)
        poller.register(pull, zmq.POLLIN)
        try:
            while True:
                events = dict(poller.poll(200))
                if pull in events and self._drain_outbox(pull):
                    break
                try:
                    conn.drain()
                except Exception:  # the bus thread never dies of one frame
                    log.exception("%s: bus thread: handling a frame failed (continuing)",
                                  self.name)
        finally:
            try:
                if self.handlers:
                    conn.request("bus.unregister", {})
            except RioError:
                pass
            pull.close(linger=0)
            conn.close()

    def _drain_outbox(self, pull: zmq.SyncSocket) -> bool:
        """The control channel: only ``stop`` travels here."""
        while True:
            try:
                item = msgpack.unpackb(pull.recv(zmq.NOBLOCK), raw=False)
            except zmq.Again:
                return False
            if item[0] == "stop":
                return True

    def _faulted(self, payload: bytes) -> list[bytes]:
        return [payload] if self.fault_filter is None else self.fault_filter(payload)

    def _remember(self, client: bytes, payload: bytes) -> int:
        """Keep the reply for later copies; returns how many copies it answers now."""
        key = (client, peek_id(payload))
        with self._lock:
            extra = self._inflight.pop(key, 0)
            self._done[key] = payload
            self._big_bytes -= self._big.pop(key, 0)   # answered again after it was dropped
            if len(payload) > _BIG_REPLY_BYTES:
                self._big[key] = len(payload)
                self._big_bytes += len(payload)
                while self._big_bytes > _BIG_KEEP_BYTES:   # a later copy of these runs again
                    old, size = self._big.popitem(last=False)
                    self._big_bytes -= size
                    self._done.pop(old, None)
            while len(self._done) > _DEDUP_KEEP:
                old, _ = self._done.popitem(last=False)
                self._big_bytes -= self._big.pop(old, 0)
        return 1 + extra

    def _on_request(self, client: bytes, request: Request) -> None:
        assert self.conn is not None
        key = (client, request.id)
        with self._lock:
            running = key in self._inflight
            if running:   # a copy of a request still running: answered when it is
                self._inflight[key] += 1
            done = self._done.get(key)
        if running:
            return
        if done is not None:
            self.conn.send_routed(client, done)
            return
        try:
            args = ops.validate(request)
            handler = self.handlers.get(request.op.split(".", 1)[0])
            if handler is None:
                raise BusError("no_route", f"{self.name} does not serve {request.op}.",
                               "Check `rio status`.")
        except Exception as err:  # a RioError, or a bug: answered either way
            if not isinstance(err, RioError):
                log.exception("%s: checking %s failed", self.name, request.op)
            self.conn.reply(client, Reply.failure(request.id, as_error(err)))
            return
        with self._lock:
            self._inflight[key] = 0
        ctx = RequestContext(self, client, request, args)
        try:
            handler(ctx)   # hands the request on (to an actor, a loop, a pool): no answer here
        except Exception as exc:  # the bus thread never dies of one request
            if not ctx.answered:
                failed(ctx, exc)
            else:
                log.exception("handler for %s failed after answering", request.op)
