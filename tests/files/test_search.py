"""SearchEngine: find next/prev/all with options, replace one/all as edits."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rio.files.search import SearchEngine, SearchOptions, compile_pattern
from rio.protocol.errors import DocumentError, RioError
from rio.text.edit_commands import TextEdit, apply_edits

TEXT = "foo bar Foo\nfood foo_x foo\n"


def starts(matches):
    return [m.start for m in matches]


def test_plain_search_is_case_insensitive_by_default():
    eng = SearchEngine("foo")
    assert starts(eng.find_all(TEXT)) == [0, 8, 12, 17, 23]


def test_match_case():
    eng = SearchEngine("Foo", SearchOptions(match_case=True))
    assert starts(eng.find_all(TEXT)) == [8]


def test_whole_word_excludes_prefixes_and_identifiers():
    eng = SearchEngine("foo", SearchOptions(whole_word=True))
    assert starts(eng.find_all(TEXT)) == [0, 8, 23]


def test_whole_word_with_punctuation_edges():
    # \b-based whole word would never match "(x" after a space; lookarounds do.
    eng = SearchEngine("(x", SearchOptions(whole_word=True))
    assert starts(eng.find_all("f (x) (xy")) == [2]


def test_plain_mode_escapes_regex_characters():
    eng = SearchEngine("a.b")
    assert starts(eng.find_all("axb a.b")) == [4]


def test_regex_groups_and_multiline_anchors():
    eng = SearchEngine(r"^(\w+)", SearchOptions(regex=True))
    assert [m.text for m in eng.find_all(TEXT)] == ["foo", "food"]


def test_find_next_from_offset_and_wrap():
    eng = SearchEngine("foo", SearchOptions(whole_word=True))
    m = eng.find_next(TEXT, 1)
    assert (m.start, m.wrapped) == (8, False)
    m = eng.find_next(TEXT, 24)
    assert (m.start, m.end, m.wrapped) == (0, 3, True)


def test_find_next_without_wrap_stops():
    eng = SearchEngine("foo", SearchOptions(whole_word=True, wrap=False))
    assert eng.find_next(TEXT, 24) is None


def test_find_prev_and_wrap():
    eng = SearchEngine("foo", SearchOptions(whole_word=True))
    assert eng.find_prev(TEXT, 23).start == 8
    m = eng.find_prev(TEXT, 0)
    assert (m.start, m.wrapped) == (23, True)
    assert SearchEngine("foo", SearchOptions(wrap=False)).find_prev(TEXT, 0) is None


def test_find_next_skips_empty_match_at_offset_so_repeat_moves():
    eng = SearchEngine("^", SearchOptions(regex=True))
    text = "a\nb\nc"
    assert eng.find_next(text, 0).start == 2
    assert eng.find_next(text, 2).start == 4
    assert eng.find_next(text, 4).start == 0  # wrapped


def test_in_selection_range():
    eng = SearchEngine("foo")
    sel = (4, 16)
    assert starts(eng.find_all(TEXT, selection=sel)) == [8, 12]
    # A match crossing the selection end is not in the selection.
    assert starts(eng.find_all(TEXT, selection=(0, 10))) == [0]
    m = eng.find_next(TEXT, 13, selection=sel)
    assert (m.start, m.wrapped) == (8, True)


def test_selection_edge_keeps_whole_word_honest():
    # "foo" at 12 is the start of "food"; cutting the text at 15 must not make it a word.
    eng = SearchEngine("foo", SearchOptions(whole_word=True))
    assert eng.find_all(TEXT, selection=(12, 15)) == []


def test_empty_pattern_finds_nothing():
    eng = SearchEngine("")
    assert eng.find_all(TEXT) == []
    assert eng.find_next(TEXT, 0) is None
    assert eng.replace_all(TEXT, "x") == []


def test_bad_regex_is_a_buffer_error_with_next_action():
    with pytest.raises(DocumentError) as info:
        SearchEngine("a(b", SearchOptions(regex=True))
    err = info.value
    assert err.kind == "buffer.bad_pattern"
    assert "missing )" in err.message and "at 1" in err.message
    assert "Regular expression" in err.next
    assert isinstance(err, RioError)


def test_same_characters_are_fine_in_plain_mode():
    assert starts(SearchEngine("a(b").find_all("xa(b")) == [1]


def test_replace_all_is_one_ascending_list_in_original_offsets():
    eng = SearchEngine("foo", SearchOptions(whole_word=True))
    edits = eng.replace_all(TEXT, "quux")
    assert edits == [TextEdit(0, 3, "quux"), TextEdit(8, 11, "quux"), TextEdit(23, 26, "quux")]
    assert apply_edits(TEXT, edits) == "quux bar quux\nfood foo_x quux\n"


def test_replace_all_regex_expands_groups():
    eng = SearchEngine(r"(\w+)=(\d+)", SearchOptions(regex=True))
    text = "a=1, bb=22"
    assert apply_edits(text, eng.replace_all(text, r"\2=\g<1>")) == "1=a, 22=bb"


def test_replace_in_plain_mode_is_literal():
    eng = SearchEngine("x")
    assert apply_edits("x-x", eng.replace_all("x-x", r"\1")) == r"\1-\1"


def test_bad_replacement_template():
    eng = SearchEngine("(a)", SearchOptions(regex=True))
    with pytest.raises(DocumentError) as info:
        eng.replace_all("a", r"\2")
    assert info.value.kind == "buffer.bad_replacement"


def test_replace_one_replaces_match_at_selection_start_then_wraps():
    eng = SearchEngine("foo", SearchOptions(whole_word=True))
    edit, match = eng.replace_one(TEXT, 8, "X")
    assert edit == TextEdit(8, 11, "X") and not match.wrapped
    edit, match = eng.replace_one(TEXT, 24, "X")
    assert edit == TextEdit(0, 3, "X") and match.wrapped
    assert SearchEngine("zzz").replace_one(TEXT, 0, "X") is None


def test_replace_one_without_wrap():
    eng = SearchEngine("foo", SearchOptions(whole_word=True, wrap=False))
    assert eng.replace_one(TEXT, 24, "X") is None


@given(st.text(alphabet="ab \n.", max_size=40), st.text(alphabet="ab.", min_size=1, max_size=3),
       st.booleans(), st.booleans())
def test_find_all_agrees_with_re_and_replace_all_with_sub(text, pattern, case, word):
    opts = SearchOptions(match_case=case, whole_word=word)
    eng = SearchEngine(pattern, opts)
    rx = compile_pattern(pattern, opts)
    assert [(m.start, m.end) for m in eng.find_all(text)] == \
        [m.span() for m in rx.finditer(text)]
    assert apply_edits(text, eng.replace_all(text, "<>")) == rx.sub("<>", text)


@given(st.text(alphabet="ab \n", max_size=30), st.integers(0, 30))
def test_find_next_is_first_match_at_or_after_offset(text, offset):
    eng = SearchEngine("ab", SearchOptions(wrap=False))
    expected = [m.start() for m in re.finditer("ab", text, re.I) if m.start() >= offset]
    got = eng.find_next(text, offset)
    assert (got.start if got else None) == (expected[0] if expected else None)


def test_a_pattern_that_backtracks_is_stopped_with_a_bad_pattern_error():
    """Find runs the user's regex in the window's process: re froze it for minutes on
    ``(a|aa)+$`` over a run of "a"; the engine now gives up after MATCH_TIMEOUT_S."""
    import time

    from rio.files.search import MATCH_TIMEOUT_S
    engine = SearchEngine(r"(a|aa)+$", SearchOptions(regex=True))
    started = time.monotonic()
    with pytest.raises(DocumentError) as info:
        engine.find_next("a" * 60 + "b\n", 0)
    assert time.monotonic() - started < MATCH_TIMEOUT_S + 3
    assert info.value.kind == "buffer.bad_pattern" and "backtracks" in info.value.message
    # the usual case answers as before
    assert SearchEngine(r"(\w+\s?)+$", SearchOptions(regex=True)).find_next(
        "word " * 12 + "!\n", 0) is None
