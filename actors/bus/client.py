"""A process's connection to the hub: one DEALER for requests, one SUB for events.

:class:`BusConnection` belongs to exactly one thread (ZeroMQ sockets are not thread-safe:
libzmq's docs forbid sharing one between threads). The desktop uses it straight from Tk's main
thread — register :meth:`fds` with ``createfilehandler`` and call :meth:`drain` — and processes
that host actors wrap it in a :class:`~actors.bus.service.BusThread`. Everyone else waits with
:meth:`~BusConnection.wait`, :meth:`~BusConnection.wait_for` or the
:meth:`~BusConnection.events` iterator: nobody outside the bus layer touches its sockets (a test
holds every module to that). The sockets themselves are made by :mod:`actors.bus.sockets`, shared
with every other client of the hub.

Requests carry ids; replies are matched to callbacks; each request has a deadline after which its
callback gets ``bus.timeout``. Events carry a per-topic ``seq``; a jump is reported to the gap
handler, whose job is to fetch a snapshot (the Clone pattern of the ZeroMQ guide).
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

import zmq

from actors.bus.sockets import WELCOME, Endpoints, make_dealer, make_sub
from rio.protocol.errors import BusError, ProtocolError, RioError, error_from_wire
from rio.protocol.events import CHECKING, guard
from rio.protocol.frames import Event, Reply, Request, decode, encode_checked, peek_id, thaw

log = logging.getLogger("rio.bus")

ReplyCallback = Callable[[Reply], None]
EventHandler = Callable[[Event], None]
RequestHandler = Callable[[bytes, Request], None]
GapHandler = Callable[[str, int, int], None]

DEFAULT_TIMEOUT = 10.0
#: Check every published event against rio/protocol/events.py (RIO_CHECK_EVENTS=1: the test
#: suite). A module global: off, a publish pays one dict lookup for it.
CHECK_EVENTS = CHECKING


@dataclass
class _Pending:
    callback: ReplyCallback | None
    deadline: float
    op: str


__all__ = ["BusConnection", "Endpoints", "connect", "result_of", "encode_reply", "as_error"]


class BusConnection:
    def __init__(self, endpoints: Endpoints, *, name: str = "client",
                 context: zmq.SyncContext | None = None, subscribe: tuple[str, ...] = (),
                 reconnect_ms: int | None = None):
        self.name = name
        self.endpoints = endpoints
        self.ctx = context or zmq.Context.instance()
        self.identity = f"{name}:{os.getpid()}:{uuid.uuid4().hex[:8]}".encode()
        self._ids = itertools.count(1)
        self._id_prefix = uuid.uuid4().hex[:6]
        self._pending: dict[str, _Pending] = {}
        self._refused: list[tuple[ReplyCallback | None, Reply]] = []   # never sent (too big)
        self._handlers: list[tuple[str, EventHandler]] = []
        self._last_seq: dict[str, int] = {}
        self.on_gap: GapHandler | None = None
        self.on_request: RequestHandler | None = None
        self.live = False
        self.closed = False

        self._dealer = make_dealer(self.ctx, endpoints, self.identity,
                                   reconnect_ms=reconnect_ms)
        self._sub = make_sub(self.ctx, endpoints, subscribe, reconnect_ms=reconnect_ms)
        self._poller = zmq.Poller()
        self._poller.register(self._dealer, zmq.POLLIN)
        self._poller.register(self._sub, zmq.POLLIN)
        self._extra_pollers: dict[int, zmq.Poller] = {}

    # --- the thread that owns the connection calls these ------------------------------------
    def fds(self) -> tuple[int, int]:
        """The two file descriptors to watch from an event loop that is not ZeroMQ's (Tk's
        ``createfilehandler``, :mod:`ui.tk.app.bus_pump`). They are edge-triggered: when one turns
        readable, call :meth:`drain`, which reads everything there is."""
        return self._dealer.fileno(), self._sub.fileno()   # ZMQ_FD of each

    def register(self, poller: zmq.Poller) -> None:
        """Add the two sockets to a poller of the bus layer's own (the bus thread polls them
        with its control socket); then :meth:`drain` when it reports either readable."""
        poller.register(self._dealer, zmq.POLLIN)
        poller.register(self._sub, zmq.POLLIN)

    def subscribe(self, prefix: str, handler: EventHandler) -> None:
        """Handle events whose topic starts with ``prefix`` (during :meth:`drain`)."""
        if not any(p == prefix for p, _ in self._handlers):
            self._sub.setsockopt(zmq.SUBSCRIBE, prefix.encode())
        self._handlers.append((prefix, handler))

    def unsubscribe(self, prefix: str, handler: EventHandler) -> None:
        """Undo one :meth:`subscribe`; the hub stops sending the prefix once no handler (and no
        ``subscribe=`` of the constructor) wants it."""
        try:
            self._handlers.remove((prefix, handler))
        except ValueError:
            return
        if not any(p == prefix for p, _ in self._handlers) and not self.closed:
            self._sub.setsockopt(zmq.UNSUBSCRIBE, prefix.encode())

    def wait_live(self, timeout: float = 5.0) -> bool:
        """Block until the event stream is connected (the hub's welcome arrived). Connecting
        before the hub has bound is fine: libzmq retries, and this returns once it is up."""
        deadline = time.monotonic() + timeout
        while not self.live and time.monotonic() < deadline:
            if self._sub.poll(int(max(0.0, deadline - time.monotonic()) * 1000) or 1):
                self._drain_sub()
        return self.live

    def wait(self, timeout: float, *, wake_fd: int | None = None) -> bool:
        """Block until something arrives — a reply, an event, a request routed to this
        client, or a reply due now (a refused request, a request past its deadline) — and
        handle it as :meth:`drain` does; or until ``timeout`` seconds pass. Returns whether
        anything was handled. The waiting is done on the sockets, never by sleeping: it wakes
        the moment a frame arrives, and at the nearest request deadline. ``wake_fd``: also
        return (True) once that descriptor is readable — the caller's own wake-up, which it
        drains (the supervisor's monitor loop)."""
        poller = self._poller if wake_fd is None else self._poller_with(wake_fd)
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            if self.drain():
                return True
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                return False
            if self._pending:   # wake for the nearest deadline so its callback fires on time
                nearest = min(p.deadline for p in self._pending.values()) - now
                remaining = min(remaining, max(nearest, 0.0) + 0.001)
            ready = dict(poller.poll(int(remaining * 1000) + 1))
            if wake_fd is not None and wake_fd in ready:
                self.drain()
                return True

    def _poller_with(self, fd: int) -> zmq.Poller:
        poller = self._extra_pollers.get(fd)
        if poller is None:
            poller = self._extra_pollers[fd] = zmq.Poller()
            poller.register(self._dealer, zmq.POLLIN)
            poller.register(self._sub, zmq.POLLIN)
            poller.register(fd, zmq.POLLIN)
        return poller

    def wait_for(self, condition: Callable[[], Any], timeout: float) -> bool:
        """:meth:`wait` until ``condition()`` is true (checked before each wait) or ``timeout``
        seconds pass; returns the condition's last value as a bool."""
        deadline = time.monotonic() + timeout
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return bool(condition())
            self.wait(remaining)
        return True

    def events(self, prefixes: Iterable[str] | str = ("",), *,
               timeout: float | None = None) -> Iterator[Event]:
        """Yield the events whose topic starts with one of ``prefixes``, in order, as they
        arrive — until ``timeout`` seconds have passed in all (None: until the caller stops
        iterating). Replies, routed requests and other handlers keep being served meanwhile.
        Subscribes on the first ``next()`` and unsubscribes when the iterator is closed or
        ends (``break`` out of a ``for`` closes it)."""
        if isinstance(prefixes, str):
            prefixes = (prefixes,)
        given = set(prefixes)
        # a prefix under another one adds nothing (and would deliver its events twice)
        wanted = tuple(sorted(p for p in given
                              if not any(q != p and p.startswith(q) for q in given)))
        arrived: deque[Event] = deque()
        for prefix in wanted:
            self.subscribe(prefix, arrived.append)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                while arrived:
                    yield arrived.popleft()
                if deadline is None:
                    self.wait(3600.0)
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self.wait(remaining)
        finally:
            for prefix in wanted:
                self.unsubscribe(prefix, arrived.append)

    def next_id(self) -> str:
        return f"{self._id_prefix}-{next(self._ids)}"

    def request(self, op: str, args: Mapping[str, Any] | None = None,
                callback: ReplyCallback | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                request_id: str | None = None) -> str:
        """Send a request. One no peer would accept (``protocol.oversize_frame``, nested too
        deep) is not sent — the hub's socket would cut the connection — and its callback gets
        that error on the next :meth:`drain`, as if the hub had answered it."""
        rid = request_id or self.next_id()
        try:
            payload = encode_checked(Request(rid, op, dict(args or {})))
        except ProtocolError as err:
            self._refused.append((callback, Reply.failure(rid, err)))
            return rid
        self._pending[rid] = _Pending(callback, time.monotonic() + timeout, op)
        self.send_raw(payload)
        return rid

    def send_raw(self, payload: bytes) -> None:
        try:
            self._dealer.send(payload, zmq.NOBLOCK)
        except zmq.Again:
            # The HWM is 100k frames: reaching it means the hub is gone or stuck.
            raise BusError("unreachable", "The bus is not accepting requests (queue full).",
                           "Check that Rio is running with `rio status`.") from None

    def call(self, op: str, args: Mapping[str, Any] | None = None, *,
             timeout: float = DEFAULT_TIMEOUT) -> Any:
        """Blocking request: returns the result or raises the error the reply carries."""
        box: list[Reply] = []
        rid = self.request(op, args, box.append, timeout=timeout)
        if self._refused:
            self.drain()   # refused before sending: answered now, not after a poll
        deadline = time.monotonic() + timeout
        while not box:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._pending.pop(rid, None)
                raise _timeout(op, timeout)
            self._poller.poll(int(min(remaining, 0.05) * 1000))
            self.drain()
        return result_of(box[0])

    def reply(self, client: bytes, reply: Reply) -> None:
        """A service answers a request the hub routed to it (a result too big or too deep to
        send becomes that error, so the client still gets an answer)."""
        self._dealer.send_multipart([client, encode_reply(reply)])

    def send_routed(self, client: bytes, payload: bytes) -> None:
        """Send an already encoded reply to ``client`` (a service re-answering a duplicate)."""
        self._dealer.send_multipart([client, payload])

    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        """A service publishes an event; the hub numbers it and fans it out."""
        if CHECK_EVENTS:
            guard(topic, data)
        self._dealer.send(encode_checked(Event(topic, dict(data))))

    def drain(self, limit: int = 10_000) -> int:
        """Handle everything readable now (the FDs are edge-triggered: drain fully)."""
        handled = 0
        while self._refused:
            callback, reply = self._refused.pop(0)
            handled += 1
            if callback is not None:
                try:
                    callback(reply)
                except Exception:  # like any reply callback
                    log.exception("%s: reply callback for %s failed", self.name, reply.id)
        while handled < limit:
            progressed = self._drain_dealer() + self._drain_sub()
            if not progressed:
                break
            handled += progressed
        return handled + self._expire()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for callback, reply in self._refused:
            if callback is not None:
                callback(reply)
        self._refused.clear()
        for rid, pending in list(self._pending.items()):
            self._pending.pop(rid, None)
            if pending.callback is not None:
                pending.callback(Reply.failure(rid, BusError(
                    "closed", "The connection closed before the reply arrived.",
                    "Reconnect and try again.")))
        self._dealer.close(linger=0)
        self._sub.close(linger=0)

    # --- internals ------------------------------------------------------------------------------
    def _drain_dealer(self) -> int:
        n = 0
        while True:
            try:
                frames = self._dealer.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return n
            n += 1
            try:
                if len(frames) == 2:
                    self._on_routed_request(frames[0], frames[1])
                elif len(frames) == 1:
                    self._on_reply(frames[0])
            except Exception as exc:  # one frame never ends the reading thread
                log.exception("%s: a frame from the hub failed", self.name)
                if len(frames) == 2:
                    self.reply(frames[0], Reply.failure(peek_id(frames[1]) or "?", as_error(exc)))

    def _on_reply(self, payload: bytes) -> None:
        try:
            frame = decode(payload)
        except ProtocolError as err:
            log.warning("malformed frame from hub: %s", err)
            return
        if not isinstance(frame, Reply):
            return
        pending = self._pending.pop(frame.id, None)
        if pending is not None and pending.callback is not None:
            pending.callback(frame)

    def _on_routed_request(self, client: bytes, payload: bytes) -> None:
        try:
            frame = decode(payload)
        except ProtocolError as err:
            self.reply(client, Reply.failure(peek_id(payload) or "?", err))
            return
        if not isinstance(frame, Request):
            return
        if self.on_request is None:
            self.reply(client, Reply.failure(frame.id, BusError(
                "no_route", f"{self.name} serves no ops.", "Check `rio status`.")))
            return
        self.on_request(client, frame)

    def _drain_sub(self) -> int:
        n = 0
        while True:
            try:
                frames = self._sub.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return n
            n += 1
            if frames[0] == WELCOME or len(frames) != 2:
                self.live = self.live or frames[0] == WELCOME
                continue
            payload = frames[1]
            try:
                event = decode(payload)
            except ProtocolError as err:
                log.warning("malformed event: %s", err)
                continue
            if not isinstance(event, Event):
                continue
            self._check_seq(event)
            for prefix, handler in self._handlers:
                if event.topic.startswith(prefix):
                    try:
                        handler(event)
                    except Exception:  # one event never ends the reading thread
                        log.exception("%s: handler for %s failed", self.name, event.topic)

    def _check_seq(self, event: Event) -> None:
        last = self._last_seq.get(event.topic)
        self._last_seq[event.topic] = event.seq
        if last is not None and event.seq != last + 1 and self.on_gap is not None:
            self.on_gap(event.topic, last + 1, event.seq)

    def _expire(self) -> int:
        """Answer the requests past their deadline with ``bus.timeout``; returns how many."""
        if not self._pending:
            return 0
        now = time.monotonic()
        expired = 0
        for rid, pending in list(self._pending.items()):
            if pending.deadline <= now:
                del self._pending[rid]
                expired += 1
                if pending.callback is not None:
                    pending.callback(Reply(rid, False, error=_timeout(pending.op, None).to_wire()))
        return expired


def _timeout(op: str, seconds: float | None) -> BusError:
    after = f" after {seconds:g} s" if seconds else ""
    return BusError("timeout", f"No reply to {op}{after}.",
                    "The process serving it may be busy or restarting; check `rio status` "
                    "and try again.", op=op)


def result_of(reply: Reply) -> Any:
    if reply.ok:
        return thaw(reply.result)
    raise error_from_wire(thaw(reply.error))


def connect(info_or_endpoints: Any, *, name: str = "client", timeout: float = 5.0,
            subscribe: tuple[str, ...] = ()) -> BusConnection:
    """A live connection to an instance (``InstanceInfo``) or explicit :class:`Endpoints`."""
    if isinstance(info_or_endpoints, Endpoints):
        endpoints = info_or_endpoints
    else:
        key = info_or_endpoints.server_key
        endpoints = Endpoints(info_or_endpoints.requests, info_or_endpoints.events,
                              key.encode() if key else None)
    conn = BusConnection(endpoints, name=name, subscribe=subscribe)
    if not conn.wait_live(timeout):
        conn.close()
        raise BusError("unreachable", f"The Rio instance at {endpoints.requests} did not answer "
                       f"within {timeout:g} s.",
                       "Check it with `rio status`; a stale instance is cleaned up by "
                       "starting `rio serve` again.")
    return conn


def connect_remote(address: str, server_key: str | None, *, name: str = "client",
                   timeout: float = 5.0, subscribe: tuple[str, ...] = ()) -> BusConnection:
    """A connection to a remote instance (``rio serve --listen tcp://HOST:PORT``) over CURVE:
    events on PORT+1, the server checked against ``server_key`` (else ``RIO_SERVER_KEY``), this
    client's own key from ``RIO_CLIENT_KEY_DIR`` or ``~/.config/rio/curve/clients/``. Here, with
    the client, so ``rio --connect`` and the desktop (which may import nothing else of the
    actors) connect the same way."""
    key = server_key or os.environ.get("RIO_SERVER_KEY")
    if not key:
        raise BusError("no_server_key", "A tcp:// connection needs the server's public key.",
                       "Pass --server-key KEY or set RIO_SERVER_KEY (the key is printed by "
                       "`rio keys` on the server).")
    from actors.bus.curve_keys import check_public_key, load_client_keys
    from actors.bus.remote import parse_listen
    requests, events = parse_listen(address)
    mine = load_client_keys()
    return connect(Endpoints(requests, events, check_public_key(key), mine.public, mine.secret),
                   name=name, timeout=timeout, subscribe=subscribe)


def encode_reply(reply: Reply) -> bytes:
    """The reply's bytes; when its result cannot travel (over the frame limit, nested too deep,
    not encodable) the error that says so, under the same id."""
    try:
        return encode_checked(reply)
    except ProtocolError as err:
        log.warning("reply %s could not be sent as it is: %s", reply.id, err)
        return encode_checked(Reply.failure(reply.id, err))


def as_error(exc: BaseException) -> RioError:
    if isinstance(exc, RioError):
        return exc
    from rio.protocol.errors import InternalError
    return InternalError("internal.unexpected", f"{type(exc).__name__}: {exc}")


def end_with_supervisor() -> bool:
    """For a bus client the supervisor started (the desktop window): end with the supervisor,
    however it died — a client that outlives its instance could only lose the user's work.
    Returns whether this process was started by a supervisor. Lives here so that the UI reaches
    the actors only through the bus client; the watch is the bus layer's (the window spawns
    nothing through process control, so it has no children to stop first)."""
    from actors.bus import parent_watch
    if not os.environ.get(parent_watch.PARENT_ENV):
        return False
    parent_watch.exit_with_parent()
    return True
