"""The frame codec: round trips, and every kind of bad input is a ProtocolError — never a crash."""

import msgpack
import pytest
from hypothesis import given, settings, strategies as st

from rio.errors import ProtocolError
from rio.protocol import (MAX_FRAME_BYTES, PROTOCOL_VERSION, Event, Reply, Request, decode,
                          encode, peek_id, thaw)
from rio.errors import PathError


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


def test_int_map_keys_are_refused_not_crashing():
    with pytest.raises(ProtocolError):
        decode(msgpack.packb({"v": PROTOCOL_VERSION, "t": "req", "id": "a", "op": "a.b",
                              "args": {1: 2}}))


def test_peek_id_of_broken_frames():
    assert peek_id(msgpack.packb({"id": "abc", "v": 9})) == "abc"
    assert peek_id(b"garbage\xc1") == ""


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
def test_fuzz_structured_maps_never_crash(wire):
    try:
        decode(msgpack.packb(wire, use_bin_type=True))
    except ProtocolError as err:
        assert err.message
