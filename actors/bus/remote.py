"""Remote access: a CURVE-encrypted tcp front for an instance's hub.

``rio serve --listen tcp://HOST:PORT`` binds a ROUTER on PORT (requests) and an XPUB on PORT+1
(events), both CURVE servers, and bridges them to the hub's plain ipc sockets. ZAP
(``zmq.auth`` ThreadAuthenticator) admits only the client keys in ``authorized_clients/``; an
unknown key or a plaintext peer never completes the handshake, so it never reaches the hub.

Why a bridge and not more sockets in the hub (ADR-0014): the hub stays one ROUTER + one XPUB with
no security options, and the remote side cannot weaken it. Each remote client gets its own DEALER
to the hub whose identity is ``remote:`` + the client's identity, so the hub routes, answers and
fails requests of remote clients exactly as it does for local ones, and a reply always goes back
out of the tcp socket it came in on. Remote peers are clients only: ``bus.register`` and events
from them are refused, so a remote key can never take over an op prefix.

Roles (ADR-0019, rio/protocol/roles.py): every authorised key has one (observer, editor, owner). The
bridge looks up the key each message was authenticated with (ZAP's ``User-Id`` property, the
key's Z85 text) and sends it on a DEALER whose identity is ``remote:<role>:<client id>``; the hub
refuses ops above that role with ``auth.forbidden``. The role is never read from the payload, so
a client cannot claim another; a key revoked or re-roled takes effect on its next message.

Limits per key (ADR-0021 "Replies a client does not read", rio/config/remote_settings.py): a reply goes
out on the tcp ROUTER only while that client's pipe is empty (``SNDHWM`` 1: libzmq holds at
most the reply being written and one more); the rest wait in the bridge, per client, counted in
bytes. A key whose waiting replies would pass its byte budget gets ``bus.backpressure`` in place
of the reply, and its new requests are refused with the same error (nothing reaches the hub)
until it has read back down to half the budget; a key has so many requests at the hub at once
(more wait here, in order) and so many connections open (the next connection is refused with
``bus.connection_limit``). A socket monitor tells the bridge when a connection closes, so its
replies and its slot go at once.

The listener owns its own ZeroMQ context (the ZAP handler is per context) and one thread. What
it reads of a frame, and the answers it makes without the hub, are actors/bus/remote_frames.py.
"""

from __future__ import annotations

import collections
import errno
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

import zmq
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils.monitor import parse_monitor_message

from actors.bus import curve_keys
from actors.bus.remote_frames import (
    DROP,
    Payload,
    frame_id,
    hub_identity,
    id_or_unknown,
    over_budget,
    refusal_for,
    source_fd,
    too_many_clients,
)
from actors.bus.sockets import WELCOME, configure, make_dealer
from rio.config.remote_settings import RemoteLimits, remote_limits
from rio.memory import map_large_allocations
from rio.protocol import roles
from rio.protocol.errors import AuthError, BusError, InternalError
from rio.protocol.frames import Reply, encode

if TYPE_CHECKING:   # for the annotation only: the client imports this module for parse_listen
    from rio.config.instance import InstancePaths

log = logging.getLogger("rio.remote")

ZAP_DOMAIN = "rio"
CLIENT_PREFIX = roles.REMOTE_PREFIX   # + role + ":" + client id (rio/protocol/roles.py)
IDLE_CLOSE_S = 600.0        # a remote client silent this long loses its hub-side DEALER
MAX_CLIENTS = 256           # bounds the sockets one listener can hold
RELOAD_EVERY_S = 1.0        # how often authorized_clients/ is checked for changes
#: Errors the bridge itself queues for one client that is not reading (each a few hundred
#: bytes); past this they are dropped: a client that reads nothing cannot be told anything.
MAX_QUEUED_ERRORS = 1000
#: While a reply waits for a client, how soon the bridge tries again, first and at most (a
#: ROUTER cannot say when one peer's pipe has room: it is tried; doubling while it stays full).
RETRY_FIRST_S = 0.0002
RETRY_MAX_S = 0.1
#: Requests of one key waiting for room in flight (``max_requests_in_flight``), by count and
#: bytes (one of any size always may); past either the request is ``bus.backpressure``.
MAX_WAITING_REQUESTS = 1000
MAX_WAITING_BYTES = 16 * 1024 * 1024


def parse_listen(listen: str) -> tuple[str, str]:
    """``tcp://HOST:PORT`` → (requests endpoint, events endpoint on PORT+1)."""
    parts = urlsplit(listen)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "tcp" or not parts.hostname or port is None or not 0 < port < 65535 \
            or parts.path or parts.query:
        raise BusError("bad_listen_address", f"{listen!r} is not a tcp://HOST:PORT address.",
                       "Use tcp://HOST:PORT, e.g. tcp://0.0.0.0:7311 (events then use PORT+1).")
    host = parts.netloc.rsplit(":", 1)[0]
    return f"tcp://{host}:{port}", f"tcp://{host}:{port + 1}"


@dataclass
class _Client:
    """One remote connection (a ROUTER peer: one routing identity) and its DEALER to the hub."""

    dealer: zmq.SyncSocket
    last_used: float
    outstanding: int = 0
    role: str = "observer"
    key: str = ""                  #: the Z85 key it authenticated with (its limits are per key)
    fd: int | None = None          #: its tcp socket (ZMQ_SRCFD), to see it close (the monitor)
    #: replies waiting for the client (its pipe in libzmq was full), oldest first
    queue: collections.deque[tuple[Payload, int, bool]] = field(default_factory=collections.deque)
    queued_bytes: int = 0
    queued_errors: int = 0
    waiting: int = 0               #: its requests waiting in the bridge for room in flight
    #: sizes of the last two replies handed to libzmq: what it may still hold for this client
    handed: collections.deque[int] = field(default_factory=lambda: collections.deque(maxlen=2))
    retry_at: float = 0.0
    retry_wait: float = RETRY_FIRST_S

    def held(self) -> int:
        """Bytes of replies this client has not taken yet, as far as the bridge can tell:
        those waiting here and, while any wait, the ones libzmq may still hold."""
        return self.queued_bytes + (sum(self.handed) if self.queue else 0)


@dataclass
class RemoteListener:
    """Start with :meth:`start`, end with :meth:`stop`. ``keys`` is the server keypair."""

    listen: str
    hub_requests: str
    hub_events: str
    keys: curve_keys.KeyPair
    authorized_dir: Path
    idle_close_s: float = IDLE_CLOSE_S
    max_clients: int = MAX_CLIENTS
    limits: RemoteLimits = field(default_factory=RemoteLimits)
    stats: dict[str, int] = field(default_factory=lambda: {
        "requests": 0, "replies": 0, "refused": 0, "events": 0,
        "backpressure": 0, "connection_limit": 0, "dropped": 0})

    def __post_init__(self) -> None:
        self.requests_endpoint, self.events_endpoint = parse_listen(self.listen)
        self._ctx = zmq.Context()
        self._auth: ThreadAuthenticator | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop_endpoint = f"inproc://remote-stop-{id(self)}"
        self._clients: dict[bytes, _Client] = {}
        self._by_key: dict[str, set[bytes]] = {}     # key → its connections' identities
        self._over: set[str] = set()                 # keys refused until read down (backpressure)
        #: key → requests waiting for room in flight, oldest first, and their bytes
        self._waiting: dict[str, collections.deque[tuple[bytes, bytes]]] = {}
        self._waiting_bytes: dict[str, int] = {}
        self._front: zmq.SyncSocket | None = None
        self._monitor: zmq.SyncSocket | None = None
        self._auth_stamp: int | None = None
        self._roles: dict[str, tuple[str, str]] = {}   # Z85 key → (client name, role)

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "RemoteListener":
        # The authenticator must be running before the first CURVE socket binds: without a ZAP
        # handler libzmq admits every key (ZAP is optional unless a handler is present).
        self._auth = ThreadAuthenticator(self._ctx, log=logging.getLogger("rio.remote.zap"))
        self._auth.start()
        self._reload_authorized()
        self._thread = threading.Thread(target=self._serve, name="rio-remote", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            self._thread.join(5)   # it has already returned: nothing to tell it
            self._thread = None
            self.stop()
            raise BusError("listen_failed", f"Cannot listen on {self.listen}: {self._error}",
                           "Pick another port (the events socket uses PORT+1 too) or stop "
                           "what is using it.") from None
        return self

    def stop(self) -> None:
        if self._thread is not None:
            ctl = self._ctx.socket(zmq.PAIR)
            ctl.setsockopt(zmq.LINGER, 0)
            ctl.connect(self._stop_endpoint)
            ctl.send(b"stop")
            ctl.close()
            self._thread.join(5)
            self._thread = None
        if self._auth is not None:
            self._auth.stop()
            self._auth = None
        if not self._ctx.closed:
            self._ctx.term()

    @property
    def client_count(self) -> int:
        return len(self._clients)

    def held_bytes(self) -> dict[str, int]:
        """Bytes of replies waiting for each key's clients (tests, stats); read it from the
        bridge's thread or when it is idle."""
        return {key: self._held(key) for key in list(self._by_key)}

    # --- the loop -------------------------------------------------------------------------------
    def _serve(self) -> None:
        front = self._curve_socket(zmq.ROUTER)
        front.setsockopt(zmq.ROUTER_MANDATORY, 1)
        # One message in each client's pipe: libzmq then holds at most that one and the one it
        # is writing, and every other reply waits here, where it is counted in bytes (a reply
        # the client does not read used to pile up in libzmq, up to HWM messages of any size).
        front.setsockopt(zmq.SNDHWM, 1)
        monitor = front.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        events = self._curve_socket(zmq.XPUB)
        events.setsockopt(zmq.XPUB_WELCOME_MSG, WELCOME)
        upstream = self._ctx.socket(zmq.XSUB)
        configure(upstream)
        ctl = self._ctx.socket(zmq.PAIR)
        try:
            front.bind(self.requests_endpoint)
            events.bind(self.events_endpoint)
            upstream.connect(self.hub_events)
            ctl.bind(self._stop_endpoint)
        except zmq.ZMQError as exc:
            self._error = exc
            for sock in (front, events, upstream, ctl, monitor):
                sock.close(linger=0)
            self._ready.set()
            return
        self._front, self._monitor = front, monitor
        self._ready.set()
        poller = zmq.Poller()
        for sock in (front, events, upstream, ctl, monitor):
            poller.register(sock, zmq.POLLIN)
        by_dealer: dict[zmq.SyncSocket, bytes] = {}
        self._poller, self._by_dealer = poller, by_dealer
        next_chores = time.monotonic() + RELOAD_EVERY_S
        try:
            while True:
                wait = next_chores - time.monotonic()
                retry = self._next_retry()
                if retry is not None:
                    wait = min(wait, retry - time.monotonic())
                ready = dict(poller.poll(max(0, int(wait * 1000) + 1)))
                if ctl in ready:
                    break
                try:
                    if monitor in ready:
                        self._closed_connections()
                    if events in ready:
                        self._forward_subscriptions(events, upstream)
                    if upstream in ready:
                        self._forward_events(upstream, events)
                    if front in ready:
                        self._from_clients(front, poller, by_dealer)
                    for dealer in [s for s in ready if s in by_dealer]:
                        self._from_hub(dealer, by_dealer[dealer], front)
                    if retry is not None:
                        self._flush_due()
                    if time.monotonic() >= next_chores:
                        next_chores = time.monotonic() + RELOAD_EVERY_S
                        self._reload_authorized()
                        self._close_idle(poller, by_dealer)
                except Exception:  # one bad frame must not end remote access
                    log.exception("remote bridge: an error handling a message (continuing)")
        finally:
            for client in self._clients.values():
                client.dealer.close(linger=0)
            self._clients.clear()
            self._by_key.clear()
            front.disable_monitor()
            for sock in (front, events, upstream, ctl, monitor):
                sock.close(linger=0)

    def _curve_socket(self, kind: int) -> zmq.SyncSocket:
        sock = self._ctx.socket(kind)
        configure(sock)
        sock.zap_domain = ZAP_DOMAIN.encode()
        sock.curve_server = True
        sock.curve_secretkey = self.keys.secret
        return sock

    # --- requests -------------------------------------------------------------------------------
    def _from_clients(self, front: zmq.SyncSocket, poller: zmq.Poller,
                      by_dealer: dict[zmq.SyncSocket, bytes]) -> None:
        for _ in range(1000):  # bounded batch, then service the other sockets
            try:
                parts = front.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            if len(parts) != 2:
                self.stats["refused"] += 1
                continue  # only [identity, payload]: remote peers are clients, never services
            ident, payload = parts[0].bytes, parts[1].bytes
            key, role = self._key_of(parts[1])
            try:
                refusal = refusal_for(payload)
            except Exception as exc:  # one frame never ends remote access
                log.exception("remote bridge: a frame from %r failed", ident[:64])
                refusal = Reply.failure(id_or_unknown(payload), InternalError(
                    "internal.unexpected",
                    f"The bridge could not handle this frame ({type(exc).__name__})."))
            if refusal is None and role is None:
                refusal = Reply.failure(id_or_unknown(payload), AuthError(
                    "forbidden", "This client's key is no longer authorised on the server.",
                    "Ask the server's owner to authorise it again (rio keys --authorize)."))
            client = self._clients.get(ident)
            if refusal is not None:
                self.stats["refused"] += 1
                if refusal is not DROP:
                    self._answer(ident, client, encode(refusal))
                continue
            assert role is not None and key is not None
            fd = source_fd(parts[1])
            if client is not None and (client.role != role or client.key != key):
                client = self._reopen(ident, client, role, key, poller, by_dealer)
            if client is None:
                limit = self._connection_refusal(ident, key, fd, payload)
                if limit is not None:
                    self.stats["connection_limit"] += 1
                    _send_quietly(front, ident, encode(limit))
                    continue
                client = self._open_client(ident, role, poller, by_dealer, key)
            if client is None:
                _send_quietly(front, ident, encode(too_many_clients(payload, self.max_clients)))
                continue
            if fd is not None and client.fd != fd:
                self._claim_fd(ident, client, fd)
            client.last_used = time.monotonic()
            busy = self._backpressure(client, payload)
            if busy is not None:
                self.stats["backpressure"] += 1
                self._answer(ident, client, encode(busy))
                continue
            self._submit(ident, client, payload)

    def _forward(self, ident: bytes, client: _Client, payload: bytes) -> None:
        """Send a request on to the hub."""
        client.outstanding += 1
        self.stats["requests"] += 1
        try:
            client.dealer.send(payload, zmq.NOBLOCK)
        except zmq.Again:
            client.outstanding -= 1
            self._answer(ident, client, encode(Reply.failure(id_or_unknown(payload), BusError(
                "unreachable", "The Rio instance is not accepting requests (queue full).",
                "Check it with `rio status` on the server."))))

    def _key_of(self, frame: zmq.Frame) -> tuple[str | None, str | None]:
        """The key this message was authenticated with and its role; (key, None) or (None,
        None) when that key is not (or no longer) authorised."""
        try:
            user = frame.get("User-Id")
        except (zmq.ZMQError, AttributeError):
            return None, None
        if not isinstance(user, str):
            return None, None
        found = self._roles.get(user)
        return user, (found[1] if found is not None else None)

    def _role_of(self, frame: zmq.Frame) -> str | None:
        """The role of the key this message was authenticated with; None when that key is
        not (or no longer) authorised."""
        return self._key_of(frame)[1]

    def _open_client(self, ident: bytes, role: str, poller: zmq.Poller,
                     by_dealer: dict[zmq.SyncSocket, bytes], key: str = "") -> _Client | None:
        if len(self._clients) >= self.max_clients:
            self._close_idle(poller, by_dealer, force=True)
            if len(self._clients) >= self.max_clients:
                return None
        dealer = make_dealer(self._ctx, None, hub_identity(ident, role),
                             connect_to=self.hub_requests)
        client = _Client(dealer, time.monotonic(), role=role, key=key)
        self._clients[ident] = client
        self._by_key.setdefault(key, set()).add(ident)
        by_dealer[dealer] = ident
        poller.register(dealer, zmq.POLLIN)
        log.info("remote client %r connected", ident)
        return client

    def _reopen(self, ident: bytes, client: _Client, role: str, key: str, poller: zmq.Poller,
                by_dealer: dict[zmq.SyncSocket, bytes]) -> _Client | None:
        """Re-roled (or, with a reused identity, another key): a new hub identity; what was
        waiting for the client stays queued."""
        queue, held = client.queue, (client.queued_bytes, client.queued_errors, client.fd)
        self._close_client(ident, poller, by_dealer)
        fresh = self._open_client(ident, role, poller, by_dealer, key)
        if fresh is not None:
            fresh.queue = queue
            fresh.queued_bytes, fresh.queued_errors, fresh.fd = held
        return fresh

    # --- limits per key (ADR-0021 "Replies a client does not read") ---------------------------
    def _clients_of(self, key: str) -> list[_Client]:
        found = (self._clients.get(i) for i in list(self._by_key.get(key, ())))
        return [c for c in found if c is not None]

    def _held(self, key: str) -> int:
        return sum(c.held() for c in self._clients_of(key))

    def _in_flight(self, key: str) -> int:
        return sum(c.outstanding for c in self._clients_of(key))

    def _backpressure(self, client: _Client, payload: bytes) -> Reply | None:
        """The ``bus.backpressure`` answer when the key's replies are waiting unread past its
        budget (until it reads back down to half): this request must not go on."""
        key, limits = client.key, self.limits
        if key in self._over and self._held(key) < limits.reply_budget_bytes // 2:
            self._over.discard(key)
        if key in self._over:
            return Reply.failure(frame_id(payload), over_budget(limits, self._held(key)))
        return None

    def _submit(self, ident: bytes, client: _Client, payload: bytes) -> None:
        """On to the hub while the key has fewer than ``max_requests_in_flight`` there; else
        it waits here, in arrival order (a connection's requests are never reordered), up to
        :data:`MAX_WAITING_REQUESTS` / :data:`MAX_WAITING_BYTES` — past that,
        ``bus.backpressure``."""
        key, limits = client.key, self.limits
        waiting = self._waiting.get(key)
        if not waiting and self._in_flight(key) < limits.max_requests_in_flight:
            self._forward(ident, client, payload)
            return
        if waiting is None:
            waiting = self._waiting[key] = collections.deque()
        size = len(payload)
        if waiting and (len(waiting) >= MAX_WAITING_REQUESTS
                        or self._waiting_bytes.get(key, 0) + size > MAX_WAITING_BYTES):
            self.stats["backpressure"] += 1
            self._answer(ident, client, encode(Reply.failure(frame_id(payload), BusError(
                "backpressure", f"This key has {limits.max_requests_in_flight} requests in "
                f"flight and {len(waiting)} more waiting to be sent on (the limits per key); "
                "this one is refused.",
                "Wait for answers before sending more, or ask the server's owner to raise "
                "[remote] max_requests_in_flight in config.toml.",
                limit="max_requests_in_flight", value=limits.max_requests_in_flight))))
            return
        waiting.append((ident, payload))
        self._waiting_bytes[key] = self._waiting_bytes.get(key, 0) + size
        client.waiting += 1

    def _pump(self, key: str) -> None:
        """Send on the key's waiting requests while it has room in flight; refuse them all
        once it is over its reply budget (the hub is spared reads nobody will take)."""
        waiting = self._waiting.get(key)
        limit = self.limits.max_requests_in_flight
        while waiting and (key in self._over or self._in_flight(key) < limit):
            ident, payload = waiting.popleft()
            self._waiting_bytes[key] -= len(payload)
            client = self._clients.get(ident)
            if client is None or client.key != key:
                continue                    # its connection closed meanwhile
            client.waiting -= 1
            if key in self._over:
                self.stats["backpressure"] += 1
                self._answer(ident, client, encode(Reply.failure(
                    frame_id(payload), over_budget(self.limits, self._held(key)))))
            else:
                self._forward(ident, client, payload)
        if not waiting:
            self._waiting.pop(key, None)
            self._waiting_bytes.pop(key, None)

    def _connection_refusal(self, ident: bytes, key: str, fd: int | None,
                            payload: bytes) -> Reply | None:
        """The ``bus.connection_limit`` answer for a new connection of a key that has as many
        open as it may; None when it may open one. The newest is refused, never the oldest
        dropped: a leaked key must not be able to push its owner's desktop off the server."""
        limit = self.limits.max_connections_per_key
        if len(self._by_key.get(key, ())) < limit:
            return None
        self._closed_connections(keep=ident)   # one of them may have just closed
        if fd is not None:
            self._release_fd(fd, keep=ident)     # its tcp socket was another's: that one is gone
        if len(self._by_key.get(key, ())) < limit:
            return None
        name = self._roles.get(key, ("?", ""))[0]
        return Reply.failure(frame_id(payload), BusError(
            "connection_limit", f"The key {name!r} already has {limit} connections open to "
            "this server (the limit per key); this one is refused.",
            "Close one of them (each running rio call, rio events or desktop holds one), or ask "
            "the server's owner to raise [remote] max_connections_per_key in config.toml.",
            limit="max_connections_per_key", value=limit, key=name))

    # --- replies --------------------------------------------------------------------------------
    def _from_hub(self, dealer: zmq.SyncSocket, ident: bytes, front: zmq.SyncSocket) -> None:
        client = self._clients.get(ident)
        while True:
            try:
                frames = dealer.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            if len(frames) != 1:
                continue  # a routed request: impossible, remote peers cannot register
            self.stats["replies"] += 1
            if client is None:
                _send_quietly(front, ident, frames[0])
                continue
            client.outstanding = max(0, client.outstanding - 1)
            client.last_used = time.monotonic()
            self._deliver(ident, client, frames[0])
            self._pump(client.key)
            if ident not in self._clients:
                return      # it closed while we delivered

    def _answer(self, ident: bytes, client: _Client | None, payload: bytes) -> None:
        """An answer the bridge makes itself: behind the client's waiting replies if it has
        any (a bounded count of them), else straight out."""
        if client is None:
            _send_quietly(self._front, ident, payload)
        else:
            self._deliver(ident, client, payload, error=True)

    def _deliver(self, ident: bytes, client: _Client, payload: Payload, error: bool = False) -> None:
        """Send a reply to a client now if its pipe has room; else keep it, within the key's
        budget — past it the reply is dropped and ``bus.backpressure`` sent in its place."""
        size = len(payload)
        if not client.queue:
            sent = self._try_send(ident, client, payload, size)
            if sent is not False:
                return
        if error:
            if client.queued_errors >= MAX_QUEUED_ERRORS:
                self.stats["dropped"] += 1
                return
            client.queued_errors += 1
        else:
            held = self._held(client.key) + (0 if client.queue else sum(client.handed))
            if held > 0 and held + size > self.limits.reply_budget_bytes:
                # Over the budget: this reply goes, and the key's new requests are refused
                # until it has read back down to half of it (the hub is spared the work).
                self._over.add(client.key)
                self.stats["backpressure"] += 1
                self.stats["dropped"] += 1
                self._deliver(ident, client, encode(Reply.failure(
                    frame_id(payload), over_budget(self.limits, held))), error=True)
                return
            client.queued_bytes += size
        if not client.queue:
            client.retry_at, client.retry_wait = time.monotonic() + RETRY_FIRST_S, RETRY_FIRST_S
        client.queue.append((payload, size, error))

    def _try_send(self, ident: bytes, client: _Client, payload: Payload, size: int) -> bool | None:
        """True: handed to libzmq; False: the client's pipe is full; None: the client is gone
        (its connection closed: everything it had is dropped)."""
        front = self._front
        assert front is not None
        try:
            try:
                front.send_multipart([ident, payload], zmq.NOBLOCK, copy=False)
            except zmq.Again:
                # The pipe may have room the socket has not heard of yet: libzmq tells it
                # through commands it reads at most once a millisecond on a send, but at once
                # for ZMQ_EVENTS. Read them and try once more.
                front.getsockopt(zmq.EVENTS)
                front.send_multipart([ident, payload], zmq.NOBLOCK, copy=False)
        except zmq.Again:
            return False
        except zmq.ZMQError as exc:
            if exc.errno == errno.EHOSTUNREACH:
                self._close_client(ident, self._poller, self._by_dealer)
                return None
            raise
        client.handed.append(size)
        return True

    def _flush(self, ident: bytes, client: _Client) -> None:
        """Send what waits for one client, oldest first, until its pipe is full again."""
        progress = False
        while client.queue:
            payload, size, error = client.queue[0]
            sent = self._try_send(ident, client, payload, size)
            if sent is None:
                return
            if sent is False:   # full: soon again while it drains, backing off while it does not
                client.retry_wait = RETRY_FIRST_S if progress else \
                    min(RETRY_MAX_S, client.retry_wait * 2)
                client.retry_at = time.monotonic() + client.retry_wait
                return
            progress = True
            client.queue.popleft()
            if error:
                client.queued_errors -= 1
            else:
                client.queued_bytes -= size
            client.retry_wait = RETRY_FIRST_S
        if client.key in self._over and self._held(client.key) < \
                self.limits.reply_budget_bytes // 2:
            self._over.discard(client.key)
            self._pump(client.key)

    def _next_retry(self) -> float | None:
        due = [c.retry_at for c in self._clients.values() if c.queue]
        return min(due) if due else None

    def _flush_due(self) -> None:
        now = time.monotonic()
        for ident, client in list(self._clients.items()):
            if client.queue and client.retry_at <= now and ident in self._clients:
                self._flush(ident, client)

    # --- connections ----------------------------------------------------------------------------
    def _closed_connections(self, keep: bytes | None = None) -> None:
        """Connections the front socket's monitor saw close: their clients go (replies waiting
        for them, their hub socket, their slot in the key's connection limit) — all but
        ``keep``, the client whose message is being handled (it reconnected)."""
        if self._monitor is None:
            return
        while True:
            try:
                message = parse_monitor_message(self._monitor.recv_multipart(zmq.NOBLOCK))
            except zmq.Again:
                return
            if message["event"] == zmq.EVENT_DISCONNECTED:
                self._release_fd(int(message["value"]), keep=keep)

    def _release_fd(self, fd: int, keep: bytes | None = None) -> None:
        for ident, client in list(self._clients.items()):
            if client.fd == fd and ident != keep:
                self._close_client(ident, self._poller, self._by_dealer)

    def _claim_fd(self, ident: bytes, client: _Client, fd: int) -> None:
        """``client`` now speaks through tcp socket ``fd`` (it is new, or reconnected). The
        monitor is read first: the closing of whatever had this fd before was reported before
        the fd could be reused, so it is read now and cannot end this client later. Then any
        client still recorded on the fd goes (one socket is one connection)."""
        self._closed_connections(keep=ident)
        self._release_fd(fd, keep=ident)
        client.fd = fd

    def _close_idle(self, poller: zmq.Poller, by_dealer: dict[zmq.SyncSocket, bytes],
                    force: bool = False) -> None:
        now = time.monotonic()
        for ident, client in list(self._clients.items()):
            idle = now - client.last_used
            # Waiting for a reply keeps a client open (up to 6× the idle limit, for a hub that
            # never answered); a forced sweep at the client cap closes the quiet ones first.
            if (client.outstanding == 0 and not client.queue and not client.waiting
                    and (force or idle > self.idle_close_s)) or idle > 6 * self.idle_close_s:
                self._close_client(ident, poller, by_dealer)

    def _close_client(self, ident: bytes, poller: zmq.Poller,
                      by_dealer: dict[zmq.SyncSocket, bytes]) -> None:
        client = self._clients.pop(ident)
        poller.unregister(client.dealer)
        by_dealer.pop(client.dealer, None)
        client.dealer.close(linger=0)
        client.queue.clear()
        idents = self._by_key.get(client.key)
        if idents is not None:
            idents.discard(ident)
            if not idents:
                del self._by_key[client.key]
                self._over.discard(client.key)
        if client.waiting or client.outstanding:
            self._pump(client.key)      # its waiting requests go; others may take its room

    # --- events ---------------------------------------------------------------------------------
    def _forward_subscriptions(self, events: zmq.SyncSocket, upstream: zmq.SyncSocket) -> None:
        while True:
            try:
                msg = events.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            # The tcp XPUB sends its own welcome; the hub's is for this bridge, not for clients.
            if msg[1:] != WELCOME:
                upstream.send(msg)

    def _forward_events(self, upstream: zmq.SyncSocket, events: zmq.SyncSocket) -> None:
        for _ in range(1000):
            try:
                frames = upstream.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if frames[0] == WELCOME:
                continue
            self.stats["events"] += 1
            events.send_multipart(frames)  # payload untouched: the hub's seq reaches clients

    # --- keys -----------------------------------------------------------------------------------
    def _reload_authorized(self) -> None:
        """Pick up `rio keys --client/--authorize/--revoke` without a restart."""
        try:
            folder = self.authorized_dir
            stamp = folder.stat().st_mtime_ns + sum(p.stat().st_mtime_ns
                                                    for p in folder.glob("*.key"))
        except OSError:
            return
        if stamp == self._auth_stamp or self._auth is None:
            return
        self._auth_stamp = stamp
        self._roles = curve_keys.authorized_roles(folder=self.authorized_dir)
        # configure_curve replaces the key set in one assignment; the ZAP thread reads it per
        # handshake, so no lock is needed.
        self._auth.configure_curve(domain=ZAP_DOMAIN, location=str(self.authorized_dir))


def _send_quietly(front: zmq.SyncSocket | None, ident: bytes, payload: Payload) -> None:
    if front is None:
        return
    try:
        front.send_multipart([ident, payload], zmq.NOBLOCK)
    except (zmq.Again, zmq.ZMQError):
        pass  # the client left before its reply: nothing to tell anyone


class _Serving(Protocol):
    """What the bridge needs of the supervisor: where its hub listens."""

    @property
    def paths(self) -> InstancePaths: ...


def start_curve_proxy(sup: _Serving, listen: str) -> RemoteListener:
    """Called by the supervisor for ``rio serve --listen``: refuses to start without keys."""
    keys = curve_keys.load_server_keys()
    # Replies pass through this process in one piece (up to 64 MiB): each is mapped and given
    # back when freed, so what a client never read is all that stays (ADR-0021).
    map_large_allocations()
    if not curve_keys.authorized():
        log.warning("no remote client is authorised yet: run `rio keys --client NAME`")
    return RemoteListener(listen, sup.paths.requests_endpoint, sup.paths.events_endpoint, keys,
                          curve_keys.authorized_dir(), limits=remote_limits()).start()


def check_listen(listen: str) -> curve_keys.KeyPair:
    """Validate ``--listen``, the server keys and config.toml's ``[remote]`` limits before
    anything starts."""
    parse_listen(listen)
    remote_limits()
    return curve_keys.load_server_keys()
