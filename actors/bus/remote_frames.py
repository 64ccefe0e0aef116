"""What the remote bridge reads of a client's frame, and the answers it makes without the hub.

The bridge (actors/bus/remote.py) passes payloads through untouched. It decodes only what it
must: enough to refuse what a remote peer may not send (``bus.register``, ``host.*``, events,
replies; ADR-0014), and a request's id for the answers it gives in the hub's place
(``bus.backpressure``, ``bus.unreachable``; ADR-0021) — read from the head of a big frame, so
a 64 MiB request is never decoded whole for its id. These are functions of a payload and the
limits alone; the socket loop that calls them stays in actors/bus/remote.py.
"""

from __future__ import annotations

import hashlib

import msgpack
import zmq

from rio.config.remote_settings import RemoteLimits
from rio.protocol import roles
from rio.protocol.errors import BusError, ProtocolError
from rio.protocol.frames import Event, Reply, Request, decode, peek_id, request_id_of

# Service plumbing a remote peer has no business with: registering would let a key take over an
# op prefix; host.* pings and stops one process by name (the supervisor's liveness checks).
_NOT_REMOTE = ("bus.register", "bus.unregister")
_NOT_REMOTE_PREFIXES = ("host.",)
_MAX_ROUTING_ID = 255       # libzmq's limit for ZMQ_ROUTING_ID
_HEAD = 64 * 1024           # how much of a big frame is read for its id

#: A reply or request as the bridge holds it: bytes it encoded, or a frame from a socket
#: (received with ``copy=False``: a big reply is never copied on its way through).
Payload = bytes | zmq.Frame

DROP = Reply("", False)  # marker: refuse without answering


def refusal_for(payload: bytes) -> Reply | None:
    """What the bridge answers in the hub's place for a frame a remote peer may not send:
    :data:`DROP` (an event or a reply: nothing is said), a ``bus.remote_not_allowed`` reply
    (service plumbing), or None (on to the hub, malformed ones too: it names the error)."""
    try:
        frame = decode(payload)
    except ProtocolError:
        return None  # the hub answers malformed frames with the right error
    if isinstance(frame, Event):
        return DROP  # remote peers do not publish
    if isinstance(frame, Request) and (frame.op in _NOT_REMOTE
                                       or frame.op.startswith(_NOT_REMOTE_PREFIXES)):
        return Reply.failure(frame.id, BusError(
            "remote_not_allowed", f"{frame.op} is not allowed over a remote connection.",
            "Remote clients can call ops and watch events; services run on the server."))
    if isinstance(frame, Reply):
        return DROP
    return None


def hub_identity(ident: bytes, role: str) -> bytes:
    """The identity the hub sees for a remote client, ``remote:<role>:<ident>``: it carries the
    role (rio/protocol/roles.py reads it back), is readable, and stays within libzmq's limit (a client may
    pick a 255-byte identity; the prefix must not make it invalid)."""
    whole = roles.identity_for(role, ident)
    if len(whole) <= _MAX_ROUTING_ID:
        return whole
    return roles.identity_for(role, b"sha256:" + hashlib.sha256(ident).hexdigest().encode())


def id_or_unknown(payload: bytes) -> str:
    """The request id for an answer the bridge makes itself; ``?`` when it has none."""
    return peek_id(payload) or "?"


def over_budget(limits: RemoteLimits, held: int) -> BusError:
    """``bus.backpressure`` for a key holding ``held`` bytes of unread replies."""
    budget = limits.reply_budget_bytes
    return BusError(
        "backpressure", f"This key has {_mib(held)} of replies it has not read yet (its budget "
        f"is {_mib(budget)}); this request is refused.",
        "Read the replies already sent (a client that stopped reading, or a stopped "
        "process, holds them); new requests are taken again once under half the budget. The "
        "server's owner sets it: [remote] reply_budget_mb in config.toml.",
        limit="reply_budget_mb", value=round(budget / (1024 * 1024), 1), held=held)


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def frame_id(payload: Payload) -> str:
    """A frame's id without decoding the rest (it may be 64 MiB): Rio encodes ``id`` among
    the first keys (rio/protocol/frames.py), so a big frame's first 64 KiB are read key by key;
    a small one is read whole (:func:`peek_id`)."""
    data = payload.buffer if isinstance(payload, zmq.Frame) else payload
    if len(data) <= _HEAD:
        return peek_id(bytes(data)) or "?"
    head = bytes(memoryview(data)[:_HEAD])
    try:
        unpacker = msgpack.Unpacker(raw=False, max_buffer_size=len(head) + 1)
        unpacker.feed(head)
        for _ in range(unpacker.read_map_header()):
            if unpacker.unpack() == "id":
                return request_id_of({"id": unpacker.unpack()}) or "?"
            unpacker.skip()
    except Exception:  # noqa: BLE001 -- not a map, or the id lies past the head
        pass
    return "?"


def source_fd(frame: zmq.Frame) -> int | None:
    """The tcp socket a message came in on (ZMQ_SRCFD), or None when libzmq does not say."""
    try:
        fd = frame.get(zmq.SRCFD)
    except (zmq.ZMQError, AttributeError, ValueError):
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


def too_many_clients(payload: bytes, limit: int) -> Reply:
    """The answer when the listener holds ``limit`` clients, none idle enough to close."""
    return Reply.failure(id_or_unknown(payload), BusError(
        "unreachable", f"The server already has {limit} remote clients waiting for replies.",
        "Try again in a moment."))
