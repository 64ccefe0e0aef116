"""The one place a bus socket is made: options, CURVE keys, routing identity, connect.

Every socket that talks to the hub — a process's :class:`~actors.bus.client.BusConnection` (DEALER +
SUB), the per-thread DEALER links of :class:`~actors.bus.service.BusThread`, the agent
session's ``zmq.asyncio`` link (:mod:`actors.bus.async_client`), the remote bridge's DEALER per remote
client (:mod:`actors.bus.remote`) — and the hub's own ROUTER/XPUB get their options from
:func:`configure` here, so a limit or a high-water mark is changed once (ADR-0009, ADR-0021):

* ``LINGER 0`` — a closing socket never blocks the process on undelivered frames;
* ``SNDHWM``/``RCVHWM`` = :data:`HWM` — explicit and large: PUB and ROUTER drop silently at
  libzmq's default of 1000;
* ``MAXMSGSIZE`` = ``MAX_SOCKET_MESSAGE_BYTES`` — a bigger message is refused from its length
  header (nothing allocated) and its sender disconnected.

Client sockets over tcp are CURVE clients (ADR-0014): the server's public key comes with the
:class:`Endpoints`, and the client's own authorised keypair when it has one; without one a
throwaway pair is used, which the server's ZAP handler refuses with a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, TypeVar

import zmq

from rio.protocol.frames import MAX_SOCKET_MESSAGE_BYTES

HWM = 100_000            # explicit, large: PUB and ROUTER drop silently at the default 1000
WELCOME = b"__welcome__"  # XPUB_WELCOME_MSG: a subscriber knows it is live once this arrives

#: The socket a context makes: a plain one, or a ``zmq.asyncio`` one (the agent session's link,
#: actors/bus/async_client.py) — the same options either way.
SocketT = TypeVar("SocketT", bound="zmq.Socket[Any]")


@dataclass(frozen=True)
class Endpoints:
    requests: str
    events: str
    server_key: bytes | None = None   # CURVE: the server's public key (tcp only)
    client_public: bytes | None = None  # CURVE: this client's authorised keypair (Z85);
    client_secret: bytes | None = None  # without one a throwaway pair is used (ZAP refuses it)


def configure(sock: zmq.Socket[Any]) -> None:
    """The options every Rio socket carries (this module's docstring says why)."""
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDHWM, HWM)
    sock.setsockopt(zmq.RCVHWM, HWM)
    # Without it a 1 GB frame cost the hub ~2.1 GB before decode refused it (ADR-0021).
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_SOCKET_MESSAGE_BYTES)


def _curve_client(sock: zmq.Socket[Any], endpoints: Endpoints) -> None:
    if endpoints.server_key is None:
        return
    if endpoints.client_public is not None and endpoints.client_secret is not None:
        public, secret = endpoints.client_public, endpoints.client_secret
    else:
        public, secret = zmq.curve_keypair()
    sock.curve_serverkey = endpoints.server_key
    sock.curve_publickey = public
    sock.curve_secretkey = secret


def make_dealer(ctx: zmq.Context[SocketT], endpoints: Endpoints | None, identity: bytes, *,
                connect_to: str | None = None, reconnect_ms: int | None = None) -> SocketT:
    """A configured DEALER named ``identity`` (the hub routes replies by it), connected to the
    hub's request endpoint — ``connect_to`` instead when given (the remote bridge's plain
    upstream; ``endpoints`` is then None: no CURVE on a local ipc socket). ``reconnect_ms``
    shortens libzmq's retry interval (100 ms) for a client that connects before the hub has
    bound (``rio chat`` starting an instance)."""
    sock = ctx.socket(zmq.DEALER)
    configure(sock)
    if reconnect_ms is not None:
        sock.setsockopt(zmq.RECONNECT_IVL, reconnect_ms)
    sock.setsockopt(zmq.ROUTING_ID, identity)
    if endpoints is not None:
        _curve_client(sock, endpoints)
    target = connect_to if connect_to is not None else endpoints.requests if endpoints else None
    if target is None:
        raise ValueError("make_dealer needs endpoints or connect_to")
    sock.connect(target)
    return sock


def make_sub(ctx: zmq.Context[SocketT], endpoints: Endpoints, prefixes: Iterable[str] = (), *,
             reconnect_ms: int | None = None) -> SocketT:
    """A configured SUB on the hub's event endpoint, subscribed to the hub's welcome (so the
    client can tell when the stream is live) and to ``prefixes``."""
    sock = ctx.socket(zmq.SUB)
    configure(sock)
    if reconnect_ms is not None:
        sock.setsockopt(zmq.RECONNECT_IVL, reconnect_ms)
    _curve_client(sock, endpoints)
    sock.setsockopt(zmq.SUBSCRIBE, WELCOME)
    for prefix in prefixes:
        sock.setsockopt(zmq.SUBSCRIBE, prefix.encode())
    sock.connect(endpoints.events)
    return sock
