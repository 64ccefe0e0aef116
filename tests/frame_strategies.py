"""Hypothesis strategies for hostile frames, shared by the decoder fuzz and the socket fuzz.

The wrong-typed requests are generated from the op catalogue (``rio.protocol.ops.REGISTRY``), so an op
added there is fuzzed without touching the tests. Every request these strategies build is
invalid by construction (one argument of the wrong type, an unknown argument, nesting too deep,
a non-string key ...), so sending one to a live instance never runs an op: it must come back as
an error reply.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgpack
from hypothesis import strategies as st

from rio.protocol import ops
from rio.protocol.frames import MAX_DEPTH, PROTOCOL_VERSION

_ids = itertools.count(1)


class Raw(bytes):
    """Frame bytes whose repr stays short in hypothesis' reports (a deep frame is kilobytes)."""

    def __repr__(self) -> str:
        text = bytes.__repr__(self)
        return text if len(text) <= 120 else f"{text[:100]}...<{len(self)} bytes>"

scalars = (st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1)
           | st.floats(allow_nan=True) | st.text(max_size=12) | st.binary(max_size=12))
#: map keys of every type msgpack's decoder lets through (strict_map_key: str and bytes) and
#: one it refuses (int), to check the refusal is a ProtocolError too
mixed_keys = st.text(max_size=6) | st.binary(max_size=6) | st.integers(-5, 5)
any_value = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(mixed_keys, inner, max_size=4),
    max_leaves=12)


def plausible(arg: ops.Arg) -> Any:
    """A value that passes ``arg``'s type and check (so validation reaches the next field)."""
    kinds = arg.kind if isinstance(arg.kind, tuple) else (arg.kind,)
    kind = kinds[0]
    return {str: "x", int: 0, float: 0.0, bool: False, list: [], dict: {}}.get(kind, "x")


def wrong_for(arg: ops.Arg) -> st.SearchStrategy[Any]:
    """Values of a type ``arg`` does not accept (None only when the argument is required)."""
    def wrong(value: Any) -> bool:
        if value is None:
            return arg.required and not ops._is_kind(None, arg.kind)
        return not ops._is_kind(value, arg.kind)
    return any_value.filter(wrong)


@st.composite
def wrong_typed_args(draw) -> tuple[str, str | None, dict]:
    """(op, field, args): every earlier required argument plausible, ``field`` wrong-typed; ops
    without arguments get an unknown one (field None)."""
    spec = draw(st.sampled_from(sorted(ops.REGISTRY.values(), key=lambda s: s.name)))
    if not spec.args:
        return spec.name, None, {"zz_unknown": draw(any_value)}
    index = draw(st.integers(0, len(spec.args) - 1))
    args = {a.name: plausible(a) for a in spec.args[:index] if a.required}
    field = spec.args[index]
    args[field.name] = draw(wrong_for(field))
    return spec.name, field.name, args


def request_bytes(op: str, args: Any, rid: str | None = None) -> tuple[str, bytes]:
    rid = rid or f"fz-{next(_ids)}"
    return rid, Raw(msgpack.packb({"v": PROTOCOL_VERSION, "t": "req", "id": rid, "op": op,
                                   "args": args}, use_bin_type=True))


def deep_request(depth: int, kind: str, rid: str | None = None,
                 op: str = "buffer.list") -> tuple[str, bytes]:
    """A request whose args nest ``depth`` levels deep, written byte by byte (msgpack's packer
    refuses to build it past 511 levels)."""
    rid = rid or f"fz-{next(_ids)}"
    head = msgpack.packb({"v": PROTOCOL_VERSION, "t": "req", "id": rid, "op": op},
                         use_bin_type=True)
    head = bytes([head[0] + 1]) + head[1:] + msgpack.packb("args")   # fixmap: one more key
    if kind == "map":
        body = b"\x81\xa1a" * depth + b"\x01"
    else:
        body = b"\x81\xa1a" + b"\x91" * (depth - 1) + b"\x01"
    return rid, Raw(head + body)


def nest(depth: int, key: Any = "a") -> Any:
    """``depth`` maps, one inside the other."""
    value: Any = 1
    for _ in range(depth):
        value = {key: value}
    return value


#: (request id or None, payload): one hostile frame of any of the kinds above
@st.composite
def hostile_frame(draw) -> tuple[str | None, bytes, str]:
    kind = draw(st.sampled_from(["wrong_type", "deep", "mixed_keys", "random"]))
    if kind == "wrong_type":
        op, _, args = draw(wrong_typed_args())
        rid, raw = request_bytes(op, args)
    elif kind == "deep":
        rid, raw = deep_request(draw(st.integers(MAX_DEPTH + 1, 3000)),
                                draw(st.sampled_from(["map", "list"])))
    elif kind == "mixed_keys":
        op = draw(st.sampled_from(sorted(ops.REGISTRY)))
        inner = {"a": 1, b"b": draw(scalars)}
        rid, raw = request_bytes(op, draw(st.sampled_from([inner, {"x": [inner]},
                                                            {"y": {"z": inner}}])))
    else:
        rid, raw = None, Raw(draw(st.binary(min_size=0, max_size=64)))
    return rid, raw, kind
