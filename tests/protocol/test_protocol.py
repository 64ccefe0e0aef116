"""The frame codec: round trips, and every kind of bad input is a ProtocolError — never a crash."""

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rio.protocol.errors import PathError, ProtocolError
from rio.protocol.frames import (
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    Event,
    Reply,
    Request,
    decode,
    encode,
    peek_id,
    thaw,
)


def test_request_round_trip_is_immutable():
    frame = decode(encode(Request("r1", "buffer.open", {"path": "a.txt", "nested": {"x": [1]}})))
    assert isinstance(frame, Request)
    assert frame.op == "buffer.open" and frame.args["path"] == "a.txt"
    with pytest.raises(TypeError):
        frame.args["path"] = "b"  # type: ignore[index]
    assert thaw(frame.args) == {"path": "a.txt", "nested": {"x": [1]}}


def test_reply_success_and_failure_round_trip():
    ok = decode(encode(Reply.success("r1", {"version": 3})))
    assert isinstance(ok, Reply) and ok.ok and ok.result["version"] == 3
    err = decode(encode(Reply.failure("r2", PathError("outside_root", "nope", "inside"))))
    assert not err.ok and err.error["kind"] == "path.outside_root" and err.error["next"] == "inside"


def test_event_round_trip():
    ev = decode(encode(Event("buffer.changed", {"buffer": "b1"}, 7)))
    assert isinstance(ev, Event) and ev.seq == 7 and ev.data["buffer"] == "b1"


@pytest.mark.parametrize("wire, leaf", [
    ({"v": 2, "t": "req", "id": "a", "op": "x.y"}, "unsupported_version"),
    ({"t": "req", "id": "a", "op": "x.y"}, "unsupported_version"),
    ({"v": 1, "t": "req", "op": "x.y"}, "malformed_frame"),
    ({"v": 1, "t": "req", "id": "a"}, "malformed_frame"),
    ({"v": 1, "t": "req", "id": "a", "op": "x.y", "args": [1]}, "bad_args"),
    ({"v": 1, "t": "zzz", "id": "a"}, "malformed_frame"),
    ({"v": 1, "t": "rep", "id": "a", "ok": "yes"}, "malformed_frame"),
    ({"v": 1, "t": "rep", "id": "a", "ok": False}, "malformed_frame"),
    ({"v": 1, "t": "evt", "topic": "t", "seq": -1, "data": {}}, "malformed_frame"),
    ([1, 2, 3], "malformed_frame"),
    ({"v": 1, "t": "req", "id": "x" * 500, "op": "a.b"}, "malformed_frame"),
])
def test_bad_frames_are_classified(wire, leaf):
    with pytest.raises(ProtocolError) as info:
        decode(msgpack.packb(wire))
    assert info.value.kind == f"protocol.{leaf}"
    assert info.value.next


def test_not_msgpack_and_oversize():
    with pytest.raises(ProtocolError) as info:
        decode(b"\xc1\xc1\xc1")
    assert info.value.kind == "protocol.malformed_frame"
    with pytest.raises(ProtocolError) as info:
        decode(b"\x00" * 11, max_bytes=10)
    assert info.value.kind == "protocol.oversize_frame"
    assert MAX_FRAME_BYTES >= 16 * 1024 * 1024


@pytest.mark.parametrize("raw", [
    b"\xc1",                          # a reserved byte: FormatError
    b"\x82\xa1v",                      # cut short: incomplete input
    b"\x80\x80",                       # one map, then more: ExtraData
    b"\xa2\xff\xfe",                    # a str that is not UTF-8: UnicodeDecodeError
    b"\xc7\x03\xff\x00\x00\x00",         # a timestamp of the wrong length
    b"\xdd\xff\xff\xff\xff",              # an array longer than the frame can hold
    b"\x81\x90\x01",                    # a list as a map key (strict_map_key)
    b"\x91" * 5000,                   # deeper than the unpacker goes: StackError
], ids=["reserved", "short", "extra", "utf8", "timestamp", "length", "key", "deep"])
def test_each_kind_of_bad_msgpack_is_a_malformed_frame(raw):
    """decode catches msgpack's own error types by name (not a blind catch): each is covered."""
    with pytest.raises(ProtocolError) as info:
        decode(raw)
    assert info.value.kind == "protocol.malformed_frame"


def test_int_map_keys_are_refused_not_crashing():
    with pytest.raises(ProtocolError):
        decode(msgpack.packb({"v": PROTOCOL_VERSION, "t": "req", "id": "a", "op": "a.b",
                              "args": {1: 2}}))


def test_peek_id_of_broken_frames():
    assert peek_id(msgpack.packb({"id": "abc", "v": 9})) == "abc"
    assert peek_id(b"garbage\xc1") == ""
    # too deep for msgpack's unpacker, but the id comes first: the error reply still carries it
    from tests.frame_strategies import deep_request
    assert peek_id(deep_request(5000, "list", "deep-id")[1]) == "deep-id"
    assert peek_id(b"\x81\xa1a" * 5000) == ""


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=512))
def test_fuzz_random_bytes_never_crash(data):
    try:
        frame = decode(data)
    except ProtocolError as err:
        assert err.kind.startswith("protocol.")
    else:
        assert isinstance(frame, (Request, Reply, Event))


json_like = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.text(max_size=20) | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(["v", "t", "id", "op", "args", "ok", "result", "error",
                                        "topic", "seq", "data"]), json_like))
@pytest.mark.slow
def test_fuzz_structured_maps_never_crash(wire):
    try:
        decode(msgpack.packb(wire, use_bin_type=True))
    except ProtocolError as err:
        assert err.message


# --- frame limits: depth, map keys, size (issue 8) ----------------------------------------------

from rio.protocol.frames import MAX_DEPTH, MAX_SOCKET_MESSAGE_BYTES, encode_checked  # noqa: E402
from tests.frame_strategies import deep_request, nest  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.integers(10, 3000), st.sampled_from(["map", "list"]))
def test_deep_nesting_is_a_protocol_error_never_a_recursion_error(depth, kind):
    """A 639-byte request nested 600 deep used to raise RecursionError out of decode (and so out
    of the hub thread)."""
    _, raw = deep_request(depth, kind)
    if depth <= MAX_DEPTH:
        assert isinstance(decode(raw), Request)
        return
    with pytest.raises(ProtocolError) as info:
        decode(raw)
    assert info.value.kind in ("protocol.bad_args", "protocol.malformed_frame")
    assert str(MAX_DEPTH) in info.value.message and info.value.next


def test_depth_limit_is_exact_and_applies_to_replies_and_events():
    assert isinstance(decode(deep_request(MAX_DEPTH, "map")[1]), Request)
    with pytest.raises(ProtocolError) as info:
        decode(deep_request(MAX_DEPTH + 1, "list")[1])
    assert info.value.kind == "protocol.bad_args"
    for wire in ({"v": 1, "t": "rep", "id": "a", "ok": True, "result": nest(MAX_DEPTH + 1)},
                 {"v": 1, "t": "evt", "topic": "x", "seq": 1, "data": nest(MAX_DEPTH + 1)}):
        with pytest.raises(ProtocolError) as info:
            decode(msgpack.packb(wire))
        assert info.value.kind == "protocol.malformed_frame"


@pytest.mark.parametrize("args", [
    {"a": 1, b"b": 2},                 # crashed the core's argument validation (TypeError)
    {b"only": 1},
    {"a": {b"x": 1}},
    {"a": [{"b": {"c": {b"d": 1}}}]},
])
def test_non_string_keys_anywhere_in_args_are_bad_args(args):
    with pytest.raises(ProtocolError) as info:
        decode(msgpack.packb({"v": 1, "t": "req", "id": "k", "op": "buffer.info",
                              "args": args}, use_bin_type=True))
    assert info.value.kind == "protocol.bad_args" and "key" in info.value.message


def test_thaw_and_encode_refuse_data_too_deep_to_send():
    deep = nest(MAX_DEPTH + 1)
    with pytest.raises(ProtocolError):
        thaw(deep)
    with pytest.raises(ProtocolError) as info:
        encode_checked(Request("d", "buffer.list", {"x": deep}))
    assert info.value.kind == "protocol.malformed_frame"
    assert thaw(nest(MAX_DEPTH)) == nest(MAX_DEPTH)


def test_encode_checked_refuses_oversize_frames_before_they_are_sent():
    small = encode_checked(Reply.success("s", {"text": "x"}))
    assert decode(small).result["text"] == "x"
    with pytest.raises(ProtocolError) as info:
        encode_checked(Reply.success("big", {"text": "x" * (MAX_FRAME_BYTES + 1)}))
    assert info.value.kind == "protocol.oversize_frame" and "start/end" in info.value.next
    # the socket limit leaves room for CURVE's 33-byte overhead on a maximal frame
    assert MAX_FRAME_BYTES < MAX_SOCKET_MESSAGE_BYTES <= MAX_FRAME_BYTES + 1024 * 1024


mixed_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text(max_size=10)
    | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(max_size=6) | st.binary(max_size=6) | st.integers(-3, 3), inner, max_size=4),
    max_leaves=30)


@settings(max_examples=250, deadline=None)
@given(st.sampled_from(["req", "rep", "evt"]), mixed_json)
@pytest.mark.slow
def test_fuzz_mixed_key_payloads_decode_or_are_protocol_errors(kind, payload):
    wire = {"v": 1, "t": kind, "id": "m", "op": "buffer.info", "args": payload, "ok": True,
            "result": payload, "topic": "t", "seq": 1, "data": payload}
    try:
        frame = decode(msgpack.packb(wire, use_bin_type=True))
    except ProtocolError as err:
        assert err.kind.startswith("protocol.")
        return
    thaw(frame.args if kind == "req" else frame.result if kind == "rep" else frame.data)
