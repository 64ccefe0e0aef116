"""The bus thread of a process that hosts actors, and the service side of requests.

One thread owns the process's :class:`~actors.bus.BusConnection`. Actors (pykka threads) never
touch it: they hand frames to the bus thread through their own inproc PUSH socket (one per
thread, created on first use — LIBRARIES.md §3's bridge pattern), and the bus thread sends them.

Requests routed to this process are validated here (:func:`rio.ops.validate`), so actors only ever
see checked arguments, and de-duplicated by ``(client, id)``: a duplicated frame is never run twice;
if its reply was already sent, the same reply is sent again (ADR-0009).
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import msgpack
import zmq

from actors.bus import BusConnection, Endpoints, as_error, result_of
from rio import ops
from rio.errors import BusError, RioError
from rio.protocol import Reply, Request, encode, thaw

log = logging.getLogger("rio.bus")

_DEDUP_KEEP = 4096


@dataclass(frozen=True)
class RequestContext:
    """One request being served: answer it exactly once with :meth:`reply` or :meth:`fail`."""
    bus: "BusThread"
    client: bytes
    request: Request
    args: Mapping[str, Any]

    @property
    def op(self) -> str:
        return self.request.op

    def reply(self, result: Any = None) -> None:
        self.bus.send_reply(self.client, Reply.success(self.request.id, result))

    def fail(self, error: BaseException) -> None:
        self.bus.send_reply(self.client, Reply.failure(self.request.id, as_error(error)))


Handler = Callable[[RequestContext], None]


class _Waiter:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.reply: Reply | None = None

    def __call__(self, reply: Reply) -> None:
        self.reply = reply
        self.done.set()


class BusThread:
    def __init__(self, endpoints: Endpoints, *, name: str,
                 handlers: Mapping[str, Handler] | None = None,
                 context: zmq.Context | None = None,
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
        self._inflight: set[tuple[bytes, str]] = set()
        self._done: collections.OrderedDict[tuple[bytes, str], bytes] = collections.OrderedDict()
        self._subscriptions: list[tuple[str, Callable]] = []
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

    def subscribe(self, prefix: str, handler: Callable) -> None:
        """Event handler run on the bus thread; register before :meth:`start`."""
        self._subscriptions.append((prefix, handler))

    # --- any thread -----------------------------------------------------------------------------
    def send_reply(self, client: bytes, reply: Reply) -> None:
        if threading.current_thread() is self._thread:
            self._send_reply_now(client, encode(reply))
        else:
            self._post(["reply", client, encode(reply)])

    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        if threading.current_thread() is self._thread and self.conn is not None:
            self.conn.publish(topic, data)
        else:
            self._post(["event", topic, thaw(dict(data))])

    def call(self, op: str, args: Mapping[str, Any] | None = None, *,
             timeout: float = 10.0) -> Any:
        """Blocking request from a thread that is not the bus thread."""
        if threading.current_thread() is self._thread:
            assert self.conn is not None
            return self.conn.call(op, args, timeout=timeout)
        waiter = _Waiter()
        rid = f"{self.name}-{uuid.uuid4().hex[:12]}"
        self._waiters[rid] = waiter
        self._post(["request", rid, op, thaw(dict(args or {})), timeout])
        if not waiter.done.wait(timeout + 1.0):
            self._waiters.pop(rid, None)
            raise BusError("timeout", f"No reply to {op} after {timeout:g} s.",
                           "Check `rio status` and try again.")
        assert waiter.reply is not None
        return result_of(waiter.reply)

    # --- the bus thread -------------------------------------------------------------------------
    _waiters: dict[str, _Waiter]

    def _post(self, item: list) -> None:
        sock = getattr(self._local, "push", None)
        if sock is None:
            sock = self.ctx.socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 1000)
            sock.setsockopt(zmq.SNDHWM, 100_000)
            sock.connect(self._out_endpoint)
            self._local.push = sock
        sock.send(msgpack.packb(item, use_bin_type=True))

    def _run(self) -> None:
        self._waiters = {}
        try:
            pull = self.ctx.socket(zmq.PULL)
            pull.setsockopt(zmq.LINGER, 0)
            pull.setsockopt(zmq.RCVHWM, 100_000)
            pull.bind(self._out_endpoint)
            conn = BusConnection(self.endpoints, name=self.name, context=self.ctx)
            self.conn = conn
            conn.on_request = self._on_request
            for prefix, handler in self._subscriptions:
                conn.subscribe(prefix, handler)
            if not conn.wait_live(10):
                raise BusError("unreachable", f"{self.name}: no answer from the hub.",
                               "Check that the hub is running (`rio status`).")
            prefixes = sorted(self.handlers)
            if prefixes:
                conn.call("bus.register", {"prefixes": prefixes, "name": self.name,
                                           "pid": os.getpid()})
        except BaseException as exc:  # noqa: BLE001 -- handed to start()'s caller
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        poller = zmq.Poller()
        poller.register(conn.dealer, zmq.POLLIN)
        poller.register(conn.sub, zmq.POLLIN)
        poller.register(pull, zmq.POLLIN)
        try:
            while True:
                events = dict(poller.poll(200))
                if pull in events and self._drain_outbox(pull):
                    break
                conn.drain()
        finally:
            try:
                if self.handlers:
                    conn.request("bus.unregister", {})
            except RioError:
                pass
            pull.close(linger=0)
            conn.close()

    def _drain_outbox(self, pull: zmq.Socket) -> bool:
        assert self.conn is not None
        while True:
            try:
                item = msgpack.unpackb(pull.recv(zmq.NOBLOCK), raw=False)
            except zmq.Again:
                return False
            kind = item[0]
            if kind == "stop":
                return True
            if kind == "reply":
                self._send_reply_now(item[1], item[2])
            elif kind == "event":
                self.conn.publish(item[1], item[2])
            elif kind == "request":
                rid, op, args, timeout = item[1], item[2], item[3], item[4]
                waiter = self._waiters.pop(rid, None)
                self.conn.request(op, args, waiter, timeout=timeout, request_id=rid)

    def _send_reply_now(self, client: bytes, payload: bytes) -> None:
        assert self.conn is not None
        self._remember(client, payload)
        for p in self._faulted(payload):
            self.conn.dealer.send_multipart([client, p])

    def _faulted(self, payload: bytes) -> list[bytes]:
        return [payload] if self.fault_filter is None else self.fault_filter(payload)

    def _remember(self, client: bytes, payload: bytes) -> None:
        from rio.protocol import peek_id
        key = (client, peek_id(payload))
        self._inflight.discard(key)
        self._done[key] = payload
        while len(self._done) > _DEDUP_KEEP:
            self._done.popitem(last=False)

    def _on_request(self, client: bytes, request: Request) -> None:
        assert self.conn is not None
        key = (client, request.id)
        if key in self._inflight:
            return  # a duplicated frame of a request still running: its reply is coming
        if key in self._done:
            self.conn.dealer.send_multipart([client, self._done[key]])
            return
        try:
            args = ops.validate(request)
            handler = self.handlers.get(request.op.split(".", 1)[0])
            if handler is None:
                raise BusError("no_route", f"{self.name} does not serve {request.op}.",
                               "Check `rio status`.")
        except RioError as err:
            self.conn.reply(client, Reply.failure(request.id, err))
            return
        self._inflight.add(key)
        try:
            handler(RequestContext(self, client, request, args))
        except Exception as exc:  # noqa: BLE001 -- every request gets an answer
            log.exception("handler for %s failed", request.op)
            self._inflight.discard(key)
            self.conn.reply(client, Reply.failure(request.id, as_error(exc)))
