"""ChunkedText against a plain ``str`` model, plus the edges a model test may not reach."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from rio.protocol.errors import DocumentError
from rio.text import text as text_module
from rio.text.text import ChunkedText

# Few distinct characters, many newlines, and wide ones: BMP accents, CJK and astral emoji.
ALPHABET = st.sampled_from(["a", "b", " ", "\n", "\n", "é", "中", "😀", "\U0001F9EA"])
TEXT = st.text(ALPHABET, max_size=200)


@pytest.fixture
def small_chunks(monkeypatch):
    """Tiny chunk sizes so a short text already has many chunks, splits and merges."""
    monkeypatch.setattr(text_module, "CHUNK_CHARS", 8)
    monkeypatch.setattr(text_module, "MAX_CHUNK_CHARS", 16)
    monkeypatch.setattr(text_module, "MIN_CHUNK_CHARS", 4)
    monkeypatch.setattr(text_module, "_LINEAR_SCAN_CHARS", 2)


def model_line_starts(s: str) -> list[int]:
    return [0] + [i + 1 for i, c in enumerate(s) if c == "\n"]


def check_against_model(t: ChunkedText, s: str) -> None:
    assert len(t) == len(s)
    assert t.text() == s
    lines = s.split("\n")
    assert t.line_count == len(lines)
    starts = model_line_starts(s)
    for n, line in enumerate(lines):
        assert t.line_start(n) == starts[n]
        assert t.line_end(n) == starts[n] + len(line)
        assert t.line_text(n) == line
    assert t.lines(0, len(lines)) == lines
    for offset in range(len(s) + 1):
        line = s.count("\n", 0, offset)
        assert t.offset_to_position(offset) == (line, offset - starts[line])
    assert "".join(t.iter_chunks()) == s


class TextMachine(RuleBasedStateMachine):
    """Random inserts, deletes and replaces; every step checked against ``str``."""

    @initialize(initial=TEXT)
    def start(self, initial):
        self.t = ChunkedText(initial)
        self.s = initial

    @rule(data=st.data(), piece=TEXT)
    def insert(self, data, piece):
        at = data.draw(st.integers(0, len(self.s)))
        self.t.insert(at, piece)
        self.s = self.s[:at] + piece + self.s[at:]

    @precondition(lambda self: len(self.s) > 0)
    @rule(data=st.data())
    def delete(self, data):
        a = data.draw(st.integers(0, len(self.s)))
        b = data.draw(st.integers(a, len(self.s)))
        assert self.t.delete(a, b) == self.s[a:b]
        self.s = self.s[:a] + self.s[b:]

    @rule(data=st.data(), piece=TEXT)
    def replace(self, data, piece):
        a = data.draw(st.integers(0, len(self.s)))
        b = data.draw(st.integers(a, len(self.s)))
        assert self.t.replace(a, b, piece) == self.s[a:b]
        self.s = self.s[:a] + piece + self.s[b:]

    @rule(data=st.data())
    def lookups(self, data):
        a = data.draw(st.integers(0, len(self.s)))
        b = data.draw(st.integers(a, len(self.s)))
        assert self.t.slice(a, b) == self.s[a:b]
        assert "".join(self.t.iter_chunks(a, b)) == self.s[a:b]
        if a < len(self.s):
            assert self.t.char_at(a) == self.s[a]
        lines = self.s.split("\n")
        first = data.draw(st.integers(0, len(lines)))
        last = data.draw(st.integers(first, len(lines) + 2))
        assert self.t.lines(first, last) == lines[first:last]
        line = data.draw(st.integers(0, len(lines) - 1))
        col = data.draw(st.integers(0, 50))
        start = model_line_starts(self.s)[line]
        assert self.t.position_to_offset(line, col) == start + min(col, len(lines[line]))

    @invariant()
    def same_as_model(self):
        assert self.t.text() == self.s
        assert len(self.t) == len(self.s)
        assert self.t.line_count == self.s.count("\n") + 1


TextMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.slow
class TestSmallChunks(TextMachine.TestCase):
    """The same machine with 8-character chunks: exercises splits, merges and cross-chunk reads."""


@pytest.mark.slow
class TestDefaultChunks(TextMachine.TestCase):
    """The same machine with the real sizes (mostly one chunk)."""


@pytest.mark.usefixtures("small_chunks")
@given(TEXT)
@settings(max_examples=200, deadline=None)
def test_every_lookup_matches_the_model(s):
    check_against_model(ChunkedText(s), s)


def test_empty_text_has_one_line():
    t = ChunkedText()
    assert len(t) == 0 and t.line_count == 1
    assert t.line_text(0) == "" and t.line_start(0) == 0 and t.line_end(0) == 0
    assert t.offset_to_position(0) == (0, 0)
    assert t.lines(0, 1) == [""]
    assert list(t.iter_chunks()) == []


def test_trailing_newline_makes_an_empty_last_line():
    t = ChunkedText("a\n")
    assert t.line_count == 2
    assert t.line_text(1) == "" and t.line_start(1) == 2 and t.line_end(0) == 1


def test_astral_characters_count_as_one_code_point():
    t = ChunkedText("😀x")
    assert len(t) == 2 and t.char_at(1) == "x"
    t.insert(1, "\U0001F9EA")
    assert t.text() == "😀\U0001F9EAx" and t.offset_to_position(2) == (0, 2)


@pytest.mark.parametrize("call", [
    lambda t: t.insert(4, "x"), lambda t: t.insert(-1, "x"), lambda t: t.delete(2, 1),
    lambda t: t.delete(0, 9), lambda t: t.slice(0, 4), lambda t: t.char_at(3),
    lambda t: t.line_start(2), lambda t: t.line_end(-1), lambda t: t.offset_to_position(4),
    lambda t: t.position_to_offset(0, -1), lambda t: t.lines(2, 1), lambda t: t.insert("1", "x"),
])
def test_bad_offsets_raise_bad_range(call):
    t = ChunkedText("a\nb")
    with pytest.raises(DocumentError) as caught:
        call(t)
    assert caught.value.kind == "buffer.bad_range"
    assert caught.value.next
    assert t.text() == "a\nb"


def test_column_is_clamped_to_the_line():
    t = ChunkedText("ab\ncd")
    assert t.position_to_offset(0, 99) == 2
    assert t.position_to_offset(1, 99) == 5


def test_big_text_stays_in_bounded_chunks_through_edits():
    base = ("x" * 39 + "\n") * 20_000  # 800 KB, 20k lines
    t = ChunkedText(base)
    for i in range(2_000):
        t.insert((i * 7919) % len(t), "ab\n")
    for i in range(1_000):
        a = (i * 104729) % (len(t) - 10)
        t.delete(a, a + 5)
    t.delete(1000, len(t) - 1000)  # one delete across many chunks
    chunk_sizes = [len(c) for c in t._chunks]  # the structure is what is tested
    assert max(chunk_sizes) <= text_module.MAX_CHUNK_CHARS
    assert len(t) == 2000 and t.line_count == t.text().count("\n") + 1


def test_a_large_paste_is_cut_into_chunks():
    t = ChunkedText("start end")
    t.insert(6, "y" * 100_000)
    assert len(t) == 100_009
    assert max(len(c) for c in t._chunks) <= text_module.MAX_CHUNK_CHARS
    assert t.slice(0, 7) == "start y" and t.slice(100_004, 100_009) == "yyend"
    assert t.text() == "start " + "y" * 100_000 + "end"
