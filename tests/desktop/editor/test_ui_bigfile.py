"""The big-file window: rows for document lines, long lines split, offsets both ways."""

from hypothesis import given, settings
from hypothesis import strategies as st

from rio.text.text import ChunkedText
from ui.tk.editor.bigfile import LineWindow, needs_window, split_line


def test_needs_window_for_size_or_a_long_line():
    assert not needs_window(1000, 80)
    assert needs_window(9 * 1024 * 1024, 80)
    assert needs_window(30_000, 25_000)


def test_split_line():
    assert split_line("", 4) == [""]
    assert split_line("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def _window(text, rows=10, split=4):
    w = LineWindow(ChunkedText(text), rows=rows, split=split)
    return w


def test_render_splits_long_lines_and_caps_rows():
    w = _window("ab\nabcdefghij\nxy\n" + "z\n" * 20)
    shown = w.render(0)
    assert shown.split("\n")[:5] == ["ab", "abcd", "efgh", "ij", "xy"]
    assert len(w.rows) == 10
    assert [r.first for r in w.rows[:5]] == [True, True, False, False, True]
    assert (w.first_line, w.last_line) == (0, 7)


def test_render_from_a_later_line():
    w = _window("".join(f"{i}\n" for i in range(100)))
    assert w.render(50).split("\n")[0] == "50"
    assert w.first_line == 50 and w.contains_line(55) and not w.contains_line(49)


def test_offsets_round_trip_through_rows():
    text = "ab\nabcdefghij\nxy"
    w = _window(text)
    w.render(0)
    assert w.offset_at(0, 1) == 1
    assert w.offset_at(2, 2) == 3 + 4 + 2      # row 2 is "efgh", from offset 7
    for offset in range(len(text) + 1):
        pos = w.position_of(offset)
        assert pos is not None
        assert w.offset_at(*pos) == offset


def test_position_outside_the_window_is_none():
    w = _window("".join(f"{i}\n" for i in range(100)), rows=5)
    w.render(10)
    assert w.position_of(0) is None
    assert w.position_of(10_000) is None


def test_edit_in_row_updates_the_map_or_asks_for_a_render():
    buf = ChunkedText("ab\ncd\nef")
    w = LineWindow(buf, rows=10, split=4)
    w.render(0)
    buf.replace(4, 4, "X")                   # "cXd"
    assert w.edit_in_row(4, 4, "X") == 1
    assert w.offset_at(2, 0) == 7            # "ef" moved right by one
    buf.replace(1, 1, "\n")
    assert w.edit_in_row(1, 1, "\n") is None  # a new line: re-render
    buf2 = ChunkedText("abc")
    w2 = LineWindow(buf2, rows=10, split=4)
    w2.render(0)
    buf2.replace(3, 3, "de")
    assert w2.edit_in_row(3, 3, "de") == 0     # rows may grow to twice the split width...
    buf2.replace(5, 5, "fghi")
    assert w2.edit_in_row(5, 5, "fghi") is None  # ...and no further


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab", max_size=12), min_size=1, max_size=12),
       st.integers(0, 11))
def test_rows_cover_the_window_text_exactly(lines, first):
    text = "\n".join(lines)
    w = LineWindow(ChunkedText(text), rows=50, split=5)
    shown = w.render(first)
    first = min(first, len(lines) - 1)
    expected_rows = [piece for line in lines[first:] for piece in split_line(line, 5)][:50]
    assert shown.split("\n") == expected_rows
    for i, r in enumerate(w.rows):
        assert text[r.start:r.start + r.length] == expected_rows[i]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.sampled_from(["", "x", "yz"]),
                          st.integers(0, 2)), max_size=25))
def test_map_stays_exact_under_typing_and_deleting(ops):
    """Whatever mix of in-row edits, every row still maps to the document's text."""
    buf = ChunkedText("".join(f"line {i}\n" for i in range(40)) + "q" * 30)
    w = LineWindow(buf, rows=200, split=8)
    w.render(0)
    for at, text, cut in ops:
        at = min(at, len(buf))
        end = min(at + cut, len(buf))
        buf.replace(at, end, text)
        if w.edit_in_row(at, end, text) is None:
            w.render(0)
        rows = list(w.rows)
        # The incremental map tiles the document: rows follow each other, with exactly one
        # newline between lines and none inside a row.
        for a, b in zip(rows, rows[1:]):
            gap = 0 if b.line == a.line else 1
            assert b.start == a.start + a.length + gap
            assert "\n" not in buf.slice(a.start, a.start + a.length)
            if gap:
                assert buf.slice(a.start + a.length, b.start) == "\n"
        assert rows[0].start == 0
