"""Argument validation at the edge: defaults, types, unknown ops and arguments."""

import pytest

from rio import ops
from rio.errors import ProtocolError
from rio.protocol import Request


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
