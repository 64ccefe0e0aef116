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

The listener owns its own ZeroMQ context (the ZAP handler is per context) and one thread.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import zmq
from zmq.auth.thread import ThreadAuthenticator

from actors.bus import curve_keys
from actors.bus.sockets import WELCOME, configure, make_dealer
from rio.protocol import roles
from rio.protocol.errors import AuthError, BusError, InternalError, ProtocolError
from rio.protocol.frames import Event, Reply, Request, decode, encode, peek_id

log = logging.getLogger("rio.remote")

ZAP_DOMAIN = "rio"
CLIENT_PREFIX = roles.REMOTE_PREFIX   # + role + ":" + client id (rio/protocol/roles.py)
IDLE_CLOSE_S = 600.0        # a remote client silent this long loses its hub-side DEALER
MAX_CLIENTS = 256           # bounds the sockets one listener can hold
RELOAD_EVERY_S = 1.0        # how often authorized_clients/ is checked for changes
# Service plumbing a remote peer has no business with: registering would let a key take over an
# op prefix; host.* pings and stops one process by name (the supervisor's liveness checks).
_NOT_REMOTE = ("bus.register", "bus.unregister")
_NOT_REMOTE_PREFIXES = ("host.",)
_MAX_ROUTING_ID = 255       # libzmq's limit for ZMQ_ROUTING_ID


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
    dealer: zmq.Socket
    last_used: float
    outstanding: int = 0
    role: str = "observer"


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
    stats: dict[str, int] = field(default_factory=lambda: {"requests": 0, "replies": 0,
                                                            "refused": 0, "events": 0})

    def __post_init__(self) -> None:
        self.requests_endpoint, self.events_endpoint = parse_listen(self.listen)
        self._ctx = zmq.Context()
        self._auth: ThreadAuthenticator | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop_endpoint = f"inproc://remote-stop-{id(self)}"
        self._clients: dict[bytes, _Client] = {}
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

    # --- the loop -------------------------------------------------------------------------------
    def _serve(self) -> None:
        front = self._curve_socket(zmq.ROUTER)
        front.setsockopt(zmq.ROUTER_MANDATORY, 1)
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
            for sock in (front, events, upstream, ctl):
                sock.close(linger=0)
            self._ready.set()
            return
        self._ready.set()
        poller = zmq.Poller()
        for sock in (front, events, upstream, ctl):
            poller.register(sock, zmq.POLLIN)
        by_dealer: dict[zmq.Socket, bytes] = {}
        next_chores = time.monotonic() + RELOAD_EVERY_S
        try:
            while True:
                ready = dict(poller.poll(int(RELOAD_EVERY_S * 1000)))
                if ctl in ready:
                    break
                try:
                    if events in ready:
                        self._forward_subscriptions(events, upstream)
                    if upstream in ready:
                        self._forward_events(upstream, events)
                    if front in ready:
                        self._from_clients(front, poller, by_dealer)
                    for dealer in [s for s in ready if s in by_dealer]:
                        self._from_hub(dealer, by_dealer[dealer], front)
                    if time.monotonic() >= next_chores:
                        next_chores = time.monotonic() + RELOAD_EVERY_S
                        self._reload_authorized()
                        self._close_idle(poller, by_dealer)
                except Exception:  # noqa: BLE001 -- one bad frame must not end remote access
                    log.exception("remote bridge: an error handling a message (continuing)")
        finally:
            for client in self._clients.values():
                client.dealer.close(linger=0)
            self._clients.clear()
            for sock in (front, events, upstream, ctl):
                sock.close(linger=0)

    def _curve_socket(self, kind: int) -> zmq.Socket:
        sock = self._ctx.socket(kind)
        configure(sock)
        sock.zap_domain = ZAP_DOMAIN.encode()
        sock.curve_server = True
        sock.curve_secretkey = self.keys.secret
        return sock

    # --- requests -------------------------------------------------------------------------------
    def _from_clients(self, front: zmq.Socket, poller: zmq.Poller,
                      by_dealer: dict[zmq.Socket, bytes]) -> None:
        for _ in range(1000):  # bounded batch, then service the other sockets
            try:
                parts = front.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            if len(parts) != 2:
                self.stats["refused"] += 1
                continue  # only [identity, payload]: remote peers are clients, never services
            ident, payload = parts[0].bytes, parts[1].bytes
            role = self._role_of(parts[1])
            try:
                refusal = _refusal(payload)
            except Exception as exc:  # noqa: BLE001 -- one frame never ends remote access
                log.exception("remote bridge: a frame from %r failed", ident[:64])
                refusal = Reply.failure(_peek(payload), InternalError(
                    "internal.unexpected",
                    f"The bridge could not handle this frame ({type(exc).__name__})."))
            if refusal is None and role is None:
                refusal = Reply.failure(_peek(payload), AuthError(
                    "forbidden", "This client's key is no longer authorised on the server.",
                    "Ask the server's owner to authorise it again (rio keys --authorize)."))
            if refusal is not None:
                self.stats["refused"] += 1
                if refusal is not _DROP:
                    _send_quietly(front, ident, encode(refusal))
                continue
            client = self._clients.get(ident)
            if client is not None and client.role != role:
                self._close_client(ident, poller, by_dealer)   # re-roled: a new hub identity
                client = None
            client = client or self._open_client(ident, role, poller, by_dealer)
            if client is None:
                _send_quietly(front, ident, encode(_too_many(payload, self.max_clients)))
                continue
            client.last_used = time.monotonic()
            client.outstanding += 1
            self.stats["requests"] += 1
            try:
                client.dealer.send(payload, zmq.NOBLOCK)
            except zmq.Again:
                client.outstanding -= 1
                _send_quietly(front, ident, encode(Reply.failure(_peek(payload), BusError(
                    "unreachable", "The Rio instance is not accepting requests (queue full).",
                    "Check it with `rio status` on the server."))))

    def _role_of(self, frame: zmq.Frame) -> str | None:
        """The role of the key this message was authenticated with; None when that key is
        not (or no longer) authorised."""
        try:
            user = frame.get("User-Id")
        except (zmq.ZMQError, AttributeError):
            return None
        found = self._roles.get(user) if isinstance(user, str) else None
        return found[1] if found is not None else None

    def _open_client(self, ident: bytes, role: str, poller: zmq.Poller,
                     by_dealer: dict[zmq.Socket, bytes]) -> _Client | None:
        if len(self._clients) >= self.max_clients:
            self._close_idle(poller, by_dealer, force=True)
            if len(self._clients) >= self.max_clients:
                return None
        dealer = make_dealer(self._ctx, None, hub_identity(ident, role),
                             connect_to=self.hub_requests)
        client = _Client(dealer, time.monotonic(), role=role)
        self._clients[ident] = client
        by_dealer[dealer] = ident
        poller.register(dealer, zmq.POLLIN)
        log.info("remote client %r connected", ident)
        return client

    def _from_hub(self, dealer: zmq.Socket, ident: bytes, front: zmq.Socket) -> None:
        client = self._clients.get(ident)
        while True:
            try:
                frames = dealer.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) != 1:
                continue  # a routed request: impossible, remote peers cannot register
            if client is not None:
                client.outstanding = max(0, client.outstanding - 1)
                client.last_used = time.monotonic()
            self.stats["replies"] += 1
            _send_quietly(front, ident, frames[0])

    def _close_idle(self, poller: zmq.Poller, by_dealer: dict[zmq.Socket, bytes],
                    force: bool = False) -> None:
        now = time.monotonic()
        for ident, client in list(self._clients.items()):
            idle = now - client.last_used
            # Waiting for a reply keeps a client open (up to 6× the idle limit, for a hub that
            # never answered); a forced sweep at the client cap closes the quiet ones first.
            if (client.outstanding == 0 and (force or idle > self.idle_close_s)) \
                    or idle > 6 * self.idle_close_s:
                self._close_client(ident, poller, by_dealer)

    def _close_client(self, ident: bytes, poller: zmq.Poller,
                      by_dealer: dict[zmq.Socket, bytes]) -> None:
        client = self._clients.pop(ident)
        poller.unregister(client.dealer)
        by_dealer.pop(client.dealer, None)
        client.dealer.close(linger=0)

    # --- events ---------------------------------------------------------------------------------
    def _forward_subscriptions(self, events: zmq.Socket, upstream: zmq.Socket) -> None:
        while True:
            try:
                msg = events.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            # The tcp XPUB sends its own welcome; the hub's is for this bridge, not for clients.
            if msg[1:] != WELCOME:
                upstream.send(msg)

    def _forward_events(self, upstream: zmq.Socket, events: zmq.Socket) -> None:
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


_DROP = Reply("", False)  # marker: refuse without answering


def _refusal(payload: bytes) -> Reply | None:
    try:
        frame = decode(payload)
    except ProtocolError:
        return None  # the hub answers malformed frames with the right error
    if isinstance(frame, Event):
        return _DROP  # remote peers do not publish
    if isinstance(frame, Request) and (frame.op in _NOT_REMOTE
                                       or frame.op.startswith(_NOT_REMOTE_PREFIXES)):
        return Reply.failure(frame.id, BusError(
            "remote_not_allowed", f"{frame.op} is not allowed over a remote connection.",
            "Remote clients can call ops and watch events; services run on the server."))
    if isinstance(frame, Reply):
        return _DROP
    return None


def hub_identity(ident: bytes, role: str) -> bytes:
    """The identity the hub sees for a remote client, ``remote:<role>:<ident>``: it carries the
    role (rio/protocol/roles.py reads it back), is readable, and stays within libzmq's limit (a client may
    pick a 255-byte identity; the prefix must not make it invalid)."""
    whole = roles.identity_for(role, ident)
    if len(whole) <= _MAX_ROUTING_ID:
        return whole
    return roles.identity_for(role, b"sha256:" + hashlib.sha256(ident).hexdigest().encode())


def _peek(payload: bytes) -> str:
    return peek_id(payload) or "?"


def _too_many(payload: bytes, limit: int) -> Reply:
    return Reply.failure(_peek(payload), BusError(
        "unreachable", f"The server already has {limit} remote clients waiting for replies.",
        "Try again in a moment."))


def _send_quietly(front: zmq.Socket, ident: bytes, payload: bytes) -> None:
    try:
        front.send_multipart([ident, payload], zmq.NOBLOCK)
    except (zmq.Again, zmq.ZMQError):
        pass  # the client left before its reply: nothing to tell anyone


def start_curve_proxy(sup: Any, listen: str) -> RemoteListener:
    """Called by the supervisor for ``rio serve --listen``: refuses to start without keys."""
    keys = curve_keys.load_server_keys()
    if not curve_keys.authorized():
        log.warning("no remote client is authorised yet: run `rio keys --client NAME`")
    return RemoteListener(listen, sup.paths.requests_endpoint, sup.paths.events_endpoint, keys,
                          curve_keys.authorized_dir()).start()


def check_listen(listen: str) -> curve_keys.KeyPair:
    """Validate ``--listen`` and the server keys before anything starts."""
    parse_listen(listen)
    return curve_keys.load_server_keys()
