"""ui/tk/find/model.py: offsets and lines, search starts, history, go-to parsing, scopes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rio.text.edit_commands import TextEdit, apply_edits
from ui.tk.find.model import (
    LineIndex,
    describe_replace_all,
    parse_goto,
    remember,
    search_start,
    shift_range,
)


def test_line_index_positions_and_offsets():
    idx = LineIndex("ab\ncde\n\nf")
    assert idx.line_count == 4
    assert idx.position(0) == (1, 0) and idx.position(2) == (1, 2)
    assert idx.position(3) == (2, 0) and idx.position(7) == (3, 0) and idx.position(9) == (4, 1)
    assert idx.offset(2, 1) == 4 and idx.offset(2, 99) == 6 and idx.offset(99, 0) == 8
    assert idx.tk_index(4) == "2.1"


@given(st.text(alphabet="ab\n", max_size=40), st.data())
def test_line_index_round_trips(text, data):
    idx = LineIndex(text)
    offset = data.draw(st.integers(0, len(text)))
    line, col = idx.position(offset)
    assert idx.offset(line, col) == offset
    assert line == text.count("\n", 0, offset) + 1


def test_search_start():
    assert search_start(5, None, False) == 5
    assert search_start(5, (2, 4), False) == 4
    assert search_start(5, (4, 2), True) == 2
    assert search_start(5, (3, 3), True) == 5


def test_history_is_most_recent_first_without_duplicates():
    h = remember((), "a")
    h = remember(h, "b")
    h = remember(h, "a")
    assert h == ("a", "b")
    assert remember(h, "") == h
    assert len(remember(tuple(str(i) for i in range(30)), "x", size=20)) == 20


@pytest.mark.parametrize("text, count, expected", [
    ("12", 100, (12, None)), (" 7:3 ", 100, (7, 3)), ("500", 40, (40, None)), ("4,2", 9, (4, 2)),
])
def test_parse_goto(text, count, expected):
    target = parse_goto(text, count)
    assert (target.line, target.col) == expected


@pytest.mark.parametrize("text", ["", "abc", "0", "3:0", "-1", "1:2:3"])
def test_parse_goto_rejects(text):
    with pytest.raises(ValueError):
        parse_goto(text, 10)


def test_shift_range_follows_edits_before_and_inside():
    text = "xx [aaa aaa] yy"
    scope = (3, 12)
    edits = [TextEdit(0, 2, "X"), TextEdit(4, 7, "bbbb"), TextEdit(8, 11, ""), TextEdit(13, 15, "")]
    lo, hi = shift_range(scope, edits)
    assert apply_edits(text, edits)[lo:hi] == "[bbbb ]"


def test_describe_replace_all():
    assert describe_replace_all(0, False) == "Nothing to replace."
    assert describe_replace_all(1, True) == "Replaced 1 occurrence in the selection."
    assert describe_replace_all(3, False) == "Replaced 3 occurrences."


def test_tk_indices_count_an_emoji_as_two_columns():
    idx = LineIndex("a\U0001F600b\nx")
    assert idx.tk_index(2) == "1.3" and idx.tk_index(3) == "1.4" and idx.tk_index(5) == "2.1"
    assert idx.offset_of_tk(1, 3) == 2 and idx.offset_of_tk(1, 2) == 1   # inside: before it
    assert idx.offset_of_tk(2, 1) == 5
