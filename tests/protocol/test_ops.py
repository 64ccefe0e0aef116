"""Argument validation at the edge: defaults, types, unknown ops and arguments."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rio.protocol import ops
from rio.protocol.errors import ProtocolError
from rio.protocol.frames import Request
from tests.frame_strategies import any_value, wrong_typed_args


def req(op, **args):
    return Request("r", op, args)


def test_defaults_are_filled():
    args = ops.validate(req("buffer.replace", buffer="b1", start=0, end=0, text="x"))
    assert args == {"buffer": "b1", "start": 0, "end": 0, "text": "x", "base_version": None,
                    "origin": "client", "label": None}


def test_unknown_op_names_the_family():
    with pytest.raises(ProtocolError) as info:
        ops.validate(req("buffer.explode"))
    assert info.value.kind == "protocol.unknown_op"
    assert "buffer.open" in info.value.message
    assert "system.ops" in info.value.next


@pytest.mark.parametrize("args, fragment", [
    ({"buffer": "b1", "start": 0, "end": 0}, "missing argument 'text'"),
    ({"buffer": "b1", "start": "0", "end": 0, "text": ""}, "'start' must be integer"),
    ({"buffer": "b1", "start": True, "end": 0, "text": ""}, "'start' must be integer"),
    ({"buffer": "b1", "start": -1, "end": 0, "text": ""}, "must be ≥ 0"),
    ({"buffer": "b1", "start": 0, "end": 0, "text": "", "colour": 1}, "unknown argument"),
    ({"buffer": "", "start": 0, "end": 0, "text": ""}, "must not be empty"),
])
def test_bad_args(args, fragment):
    with pytest.raises(ProtocolError) as info:
        ops.validate(req("buffer.replace", **args))
    assert info.value.kind == "protocol.bad_args"
    assert fragment in info.value.message


def test_edit_lists_are_checked():
    ops.validate(req("buffer.apply", buffer="b", edits=[[0, 1, "x"], [3, 4, ""]]))
    with pytest.raises(ProtocolError):
        ops.validate(req("buffer.apply", buffer="b", edits=[[0, "1", "x"]]))


def test_describe_lists_every_op_with_docs():
    described = {d["op"]: d for d in ops.describe()}
    assert "buffer.replace" in described and "fs.read" in described
    assert all(d["doc"] for d in described.values())


# --- every op's arguments are typed, bus.* too (issue 8) ----------------------------------------



@settings(max_examples=400, deadline=None)
@given(wrong_typed_args())
@pytest.mark.slow
def test_every_field_of_every_op_refuses_a_wrong_type(case):
    """Generated from the catalogue: a new op is covered without touching this test."""
    op, field, args = case
    with pytest.raises(ProtocolError) as info:
        ops.validate(req(op, **args))
    assert info.value.kind == "protocol.bad_args"
    assert (field or "zz_unknown") in info.value.message


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(ops.REGISTRY)),
       st.dictionaries(st.text(max_size=8), any_value, max_size=5))
@pytest.mark.slow
def test_any_args_are_validated_or_refused_never_crash(op, args):
    try:
        out = ops.validate(Request("r", op, args))
    except ProtocolError as err:
        assert err.kind == "protocol.bad_args"
    else:
        assert set(out) == {a.name for a in ops.REGISTRY[op].args}


def test_non_string_keys_of_a_locally_built_request_are_bad_args_not_type_errors():
    with pytest.raises(ProtocolError) as info:
        ops.validate(Request("r", "buffer.list", {"a": 1, b"b": 2}))
    assert info.value.kind == "protocol.bad_args"


@pytest.mark.parametrize("args, fragment", [
    ({"prefixes": 5}, "'prefixes' must be list"),          # killed the hub thread (TypeError)
    ({"prefixes": ["fs"], "pid": "12"}, "'pid' must be integer"),   # ValueError in the hub
    ({"prefixes": ["fs.read"]}, "op prefixes"),
    ({"prefixes": [7]}, "op prefixes"),
    ({"prefixes": ["fs"], "name": ""}, "must not be empty"),
])
def test_bus_register_is_validated_like_every_op(args, fragment):
    with pytest.raises(ProtocolError) as info:
        ops.validate(req("bus.register", **args))
    assert fragment in info.value.message
    assert ops.validate(req("bus.register", prefixes=["fs"])) == {
        "prefixes": ["fs"], "name": None, "pid": 0}
