"""The wire protocol every Rio process speaks: typed frames, encoded with msgpack, checked at the edge.

A frame is one msgpack map with a version ``v`` and a type ``t``:

* request ``{v, t: "req", id, op, args}``
* reply   ``{v, t: "rep", id, ok: true, result}`` or ``{v, t: "rep", id, ok: false, error}``
* event   ``{v, t: "evt", topic, seq, data}``

Decoding never raises anything but :class:`~rio.protocol.errors.ProtocolError`, so the bus can turn any
bad frame into an error reply (ADR-0009). Argument validation lives in :mod:`rio.protocol.ops`.

Limits a frame must keep (docs/protocol.md "Frame limits"): at most :data:`MAX_FRAME_BYTES`
bytes, containers nested at most :data:`MAX_DEPTH` deep inside ``args`` / ``result`` / ``error``
/ ``data``, and string map keys only. msgpack's unpacker has no depth option (its C stack stops
at 1024 levels, and ``_frozen``/``thaw`` recurse), so :func:`_check_tree` walks the decoded value
level by level, without recursion, before anything recursive touches it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import msgpack

from rio.protocol.errors import ProtocolError, RioError

PROTOCOL_VERSION = 1
#: The largest frame the bus accepts (a whole 100 MB document travels in ``buffer.text`` slices).
MAX_FRAME_BYTES = 64 * 1024 * 1024
#: What every socket that reads frames accepts (ZMQ_MAXMSGSIZE, set in
#: ``actors.bus.sockets.configure``):
#: libzmq drops a bigger message from its length header, before allocating it, and disconnects
#: the peer. The slack covers CURVE's per-message overhead (the limit counts the wire frame) and
#: the few bytes the hub adds when it numbers an event.
MAX_SOCKET_MESSAGE_BYTES = MAX_FRAME_BYTES + 64 * 1024
#: How deep maps and lists may nest inside a frame's args, result, error or data (the map itself
#: is level 1). Real payloads use under 10; the limit keeps every recursive walk far from
#: Python's recursion limit and inside msgpack's packer limit (511).
MAX_DEPTH = 100
MAX_ID_CHARS = 128
MAX_OP_CHARS = 64
_SCALARS = (str, int, float, bool, bytes, type(None))
_CONTAINERS = (dict, list)


def _check_tree(value: Any, leaf: str, what: str) -> None:
    """Raise ``protocol.<leaf>`` unless ``value`` nests at most :data:`MAX_DEPTH` deep and every
    map key in it is a string. Iterative, one nesting level at a time: a hostile frame cannot
    exhaust the stack here, and a wide one costs a pointer per container, no more."""
    if type(value) not in _CONTAINERS:
        return
    level, depth = [value], 1
    while level:
        if depth > MAX_DEPTH:
            raise ProtocolError(leaf, f"{what} nests deeper than {MAX_DEPTH} levels.",
                                f"Send flatter data (at most {MAX_DEPTH} nested maps/lists).")
        below: list[Any] = []
        for node in level:
            if type(node) is dict:
                for key in node:
                    if type(key) is not str:
                        raise ProtocolError(
                            leaf, f"{what} has a map key that is not a string "
                            f"({type(key).__name__} {key!r:.40}).",
                            "Use string keys in every map, as docs/protocol.md describes.")
                items = node.values()
            else:
                items = node
            below += [item for item in items if type(item) is list or type(item) is dict]
        level, depth = below, depth + 1


def _checked(value: Any, leaf: str, what: str) -> Any:
    """:func:`_frozen` of a decoded value after :func:`_check_tree` (flat maps skip the walk)."""
    if type(value) is dict:
        for key, item in value.items():   # a plain loop: the keystroke path (0.2 µs)
            if type(key) is not str or type(item) not in _SCALARS:
                break
        else:
            return MappingProxyType(value)   # the common case: a keystroke's args
    _check_tree(value, leaf, what)
    return _frozen(value)


def _frozen(value: Any) -> Any:
    """Deep read-only view of decoded msgpack data, so records stay immutable. Recursive: only
    for values :func:`_check_tree` has bounded."""
    if isinstance(value, dict):
        if all(type(v) in _SCALARS for v in value.values()):   # flat args: no copy needed
            return MappingProxyType(value)
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def thaw(value: Any, _depth: int = 1) -> Any:
    """Plain dicts and lists again (for printing as JSON or re-encoding). Data nested deeper
    than :data:`MAX_DEPTH` is a ``protocol.malformed_frame`` (no peer would accept it), never a
    RecursionError."""
    if type(value) in _SCALARS:   # the common case, without the slow ABC check below
        return value
    if _depth > MAX_DEPTH:
        raise ProtocolError("malformed_frame", f"Data nests deeper than {MAX_DEPTH} levels.",
                            f"Send flatter data (at most {MAX_DEPTH} nested maps/lists).")
    if type(value) is dict and all(type(v) in _SCALARS for v in value.values()):
        return value              # already plain (events built by actors)
    if isinstance(value, Mapping):
        return {k: thaw(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v, _depth + 1) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class Request:
    id: str
    op: str
    args: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def to_wire(self) -> dict[str, Any]:
        return {"v": PROTOCOL_VERSION, "t": "req", "id": self.id, "op": self.op,
                "args": thaw(self.args)}


@dataclass(frozen=True, slots=True)
class Reply:
    id: str
    ok: bool
    result: Any = None
    error: Mapping[str, Any] | None = None

    @classmethod
    def success(cls, request_id: str, result: Any = None) -> "Reply":
        return cls(request_id, True, result=result)

    @classmethod
    def failure(cls, request_id: str, error: RioError) -> "Reply":
        return cls(request_id, False, error=error.to_wire())

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"v": PROTOCOL_VERSION, "t": "rep", "id": self.id, "ok": self.ok}
        if self.ok:
            wire["result"] = thaw(self.result)
        else:
            wire["error"] = thaw(self.error)
        return wire


@dataclass(frozen=True, slots=True)
class Event:
    topic: str
    data: Mapping[str, Any]
    seq: int = 0

    def to_wire(self) -> dict[str, Any]:
        return {"v": PROTOCOL_VERSION, "t": "evt", "topic": self.topic, "seq": self.seq,
                "data": thaw(self.data)}


Frame = Request | Reply | Event


def encode(frame: Frame) -> bytes:
    packed: bytes = msgpack.packb(frame.to_wire(), use_bin_type=True)   # msgpack is untyped
    return packed


def encode_checked(frame: Frame) -> bytes:
    """:func:`encode`, refusing what no peer would accept: over :data:`MAX_FRAME_BYTES`, nested
    too deep, or not msgpack-encodable. Senders use it so a frame that would be dropped (or get
    the connection cut, ZMQ_MAXMSGSIZE) becomes an error they can report instead."""
    try:
        payload = encode(frame)
    except ProtocolError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError("malformed_frame", f"Cannot encode the frame: {exc}",
                            "Send plain maps, lists, strings, numbers and bytes.") from None
    if len(payload) > MAX_FRAME_BYTES:
        raise ProtocolError("oversize_frame",
                            f"Frame of {len(payload)} bytes is over the {MAX_FRAME_BYTES}-byte "
                            "limit.", "Send the data in smaller pieces (e.g. buffer.text with "
                            "start/end).")
    return payload


def decode(raw: bytes, *, max_bytes: int = MAX_FRAME_BYTES) -> Frame:
    """Decode and check one frame. Anything wrong is a :class:`ProtocolError`."""
    if len(raw) > max_bytes:
        raise ProtocolError("oversize_frame",
                            f"Frame of {len(raw)} bytes is over the {max_bytes}-byte limit.",
                            "Send the data in smaller pieces (e.g. buffer.text with start/end).")
    try:
        wire = msgpack.unpackb(raw, raw=False, strict_map_key=True, use_list=True)
    except msgpack.StackError:
        raise ProtocolError("malformed_frame", f"Frame nests deeper than {MAX_DEPTH} levels.",
                            f"Send flatter data (at most {MAX_DEPTH} nested maps/lists).") from None
    except (ValueError, msgpack.UnpackException) as exc:
        # msgpack's errors for bad input: ValueError (ExtraData, FormatError, bad UTF-8, a key
        # strict_map_key refuses, a length over the limits) and UnpackException (OutOfData)
        raise ProtocolError("malformed_frame", f"Frame is not valid msgpack: {exc}",
                            "Encode frames with msgpack as docs/protocol.md describes.") from None
    return from_wire(wire)


def _text(wire: Mapping[str, Any], key: str, limit: int) -> str:
    value = wire.get(key)
    if not isinstance(value, str) or not value or len(value) > limit:
        raise ProtocolError("malformed_frame",
                            f"Frame field {key!r} must be a non-empty string of at most {limit} "
                            f"characters, got {value!r:.80}.")
    return value


def request_id_of(wire: Any) -> str:
    """Best-effort id of a broken request, so its error reply can still be correlated."""
    if isinstance(wire, Mapping):
        rid = wire.get("id")
        if isinstance(rid, str) and 0 < len(rid) <= MAX_ID_CHARS:
            return rid
    return ""


def peek_id(raw: bytes) -> str:
    try:
        return request_id_of(msgpack.unpackb(raw, raw=False))
    except Exception:  # noqa: BLE001 -- any decode failure just means "no id" ...
        return _streamed_id(raw)


def _streamed_id(raw: bytes) -> str:
    """... unless the id comes before what broke the frame (a request nested too deep for
    msgpack's unpacker): read the top-level map key by key and stop at ``id``."""
    try:
        unpacker = msgpack.Unpacker(raw=False, max_buffer_size=max(len(raw), 1))
        unpacker.feed(raw)
        for _ in range(unpacker.read_map_header()):
            if unpacker.unpack() == "id":
                return request_id_of({"id": unpacker.unpack()})
            unpacker.skip()
    except Exception:  # noqa: BLE001 -- no id to be had
        return ""
    return ""


def from_wire(wire: Any) -> Frame:
    if not isinstance(wire, dict):
        raise ProtocolError("malformed_frame",
                            f"Frame must be a map, got {type(wire).__name__}.")
    version = wire.get("v")
    if version != PROTOCOL_VERSION:
        raise ProtocolError("unsupported_version",
                            f"Protocol version {version!r} is not supported; this Rio speaks "
                            f"version {PROTOCOL_VERSION}.",
                            "Use a client from the same Rio release as the server.")
    kind = wire.get("t")
    if kind == "req":
        args = wire.get("args", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ProtocolError("bad_args", f"Request args must be a map, got {type(args).__name__}.")
        return Request(_text(wire, "id", MAX_ID_CHARS), _text(wire, "op", MAX_OP_CHARS),
                       _checked(args, "bad_args", "Request args"))
    if kind == "rep":
        ok = wire.get("ok")
        if not isinstance(ok, bool):
            raise ProtocolError("malformed_frame", "Reply field 'ok' must be true or false.")
        error = wire.get("error")
        if not ok and not isinstance(error, dict):
            raise ProtocolError("malformed_frame", "A failed reply must carry an error map.")
        return Reply(_text(wire, "id", MAX_ID_CHARS), ok,
                     _checked(wire.get("result"), "malformed_frame", "Reply result"),
                     _checked(error, "malformed_frame", "Reply error")
                     if error is not None else None)
    if kind == "evt":
        seq = wire.get("seq", 0)
        data = wire.get("data", {})
        if not isinstance(seq, int) or seq < 0:
            raise ProtocolError("malformed_frame", "Event field 'seq' must be a whole number ≥ 0.")
        if not isinstance(data, dict):
            raise ProtocolError("malformed_frame", "Event data must be a map.")
        return Event(_text(wire, "topic", 256), _checked(data, "malformed_frame", "Event data"),
                     seq)
    raise ProtocolError("malformed_frame", f"Unknown frame type {kind!r}; expected req, rep or evt.")
