"""The wire protocol every Rio process speaks: typed frames, encoded with msgpack, checked at the edge.

A frame is one msgpack map with a version ``v`` and a type ``t``:

* request ``{v, t: "req", id, op, args}``
* reply   ``{v, t: "rep", id, ok: true, result}`` or ``{v, t: "rep", id, ok: false, error}``
* event   ``{v, t: "evt", topic, seq, data}``

Decoding never raises anything but :class:`~rio.errors.ProtocolError`, so the bus can turn any
bad frame into an error reply (ADR-0009). Argument validation lives in :mod:`rio.ops`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import msgpack

from rio.errors import ProtocolError, RioError

PROTOCOL_VERSION = 1
#: The largest frame the bus accepts (a whole 100 MB document travels in ``buffer.text`` slices).
MAX_FRAME_BYTES = 64 * 1024 * 1024
MAX_ID_CHARS = 128
MAX_OP_CHARS = 64
_SCALARS = (str, int, float, bool, bytes, type(None))


def _frozen(value: Any) -> Any:
    """Deep read-only view of decoded msgpack data, so records stay immutable."""
    if isinstance(value, dict):
        if all(type(v) in _SCALARS for v in value.values()):   # flat args: no copy needed
            return MappingProxyType(value)
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain dicts and lists again (for printing as JSON or re-encoding)."""
    if type(value) in _SCALARS:   # the common case, without the slow ABC check below
        return value
    if type(value) is dict and all(type(v) in _SCALARS for v in value.values()):
        return value              # already plain (events built by actors)
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
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
    return msgpack.packb(frame.to_wire(), use_bin_type=True)


def encode_wire(wire: Mapping[str, Any]) -> bytes:
    return msgpack.packb(wire, use_bin_type=True)


def decode(raw: bytes, *, max_bytes: int = MAX_FRAME_BYTES) -> Frame:
    """Decode and check one frame. Anything wrong is a :class:`ProtocolError`."""
    if len(raw) > max_bytes:
        raise ProtocolError("oversize_frame",
                            f"Frame of {len(raw)} bytes is over the {max_bytes}-byte limit.",
                            "Send the data in smaller pieces (e.g. buffer.text with start/end).")
    try:
        wire = msgpack.unpackb(raw, raw=False, strict_map_key=True, use_list=True)
    except Exception as exc:  # msgpack raises several unrelated types for bad input
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
    except Exception:  # noqa: BLE001 -- any decode failure just means "no id"
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
                       _frozen(args))
    if kind == "rep":
        ok = wire.get("ok")
        if not isinstance(ok, bool):
            raise ProtocolError("malformed_frame", "Reply field 'ok' must be true or false.")
        error = wire.get("error")
        if not ok and not isinstance(error, dict):
            raise ProtocolError("malformed_frame", "A failed reply must carry an error map.")
        return Reply(_text(wire, "id", MAX_ID_CHARS), ok, _frozen(wire.get("result")),
                     _frozen(error) if error is not None else None)
    if kind == "evt":
        seq = wire.get("seq", 0)
        data = wire.get("data", {})
        if not isinstance(seq, int) or seq < 0:
            raise ProtocolError("malformed_frame", "Event field 'seq' must be a whole number ≥ 0.")
        if not isinstance(data, dict):
            raise ProtocolError("malformed_frame", "Event data must be a map.")
        return Event(_text(wire, "topic", 256), _frozen(data), seq)
    raise ProtocolError("malformed_frame", f"Unknown frame type {kind!r}; expected req, rep or evt.")
