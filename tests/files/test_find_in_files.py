"""Find in Files over an in-memory project (read_text is a plain function)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rio.files.find_in_files import (
    MAX_LINE_TEXT,
    ProjectSearch,
    filter_paths,
    find_in_files,
    format_match,
)
from rio.files.search import SearchOptions
from rio.protocol.errors import DocumentError

FILES = {
    "a.py": "import os\nx = os.path\n\ndef Path():\n    return os\n",
    "pkg/b.txt": "no hits here\n",
    "bin.dat": None,  # read_text says: binary or undecodable
    "nul.txt": "os\x00os",  # decodes, but has NUL bytes: binary
    "c.md": "os os\r\nos",
}


def read(path: str) -> str | None:
    return FILES[path]


def test_matches_carry_line_col_text_and_offsets():
    hits = list(find_in_files(FILES, read, "os", SearchOptions(whole_word=True)))
    got = [(h.path, h.line, h.col, h.start, h.end) for h in hits]
    assert got == [("a.py", 1, 8, 7, 9), ("a.py", 2, 5, 14, 16), ("a.py", 5, 12, 46, 48),
                   ("c.md", 1, 1, 0, 2), ("c.md", 1, 4, 3, 5), ("c.md", 2, 1, 7, 9)]
    assert hits[1].line_text == "x = os.path"
    assert hits[3].line_text == "os os"  # the \r of a CRLF line is not shown
    text = FILES["a.py"]
    assert all(text[h.start:h.end] == "os" for h in hits if h.path == "a.py")


def test_format_match_is_grep_like():
    hit = next(iter(find_in_files(["a.py"], read, "def")))
    assert format_match(hit) == "a.py:4:1: def Path():"


def test_binary_files_are_skipped_and_counted():
    search = ProjectSearch("os")
    list(search.run(FILES, read))
    assert search.files_skipped == 2
    assert search.files_searched == 3
    assert search.files_matched == 2
    assert not search.truncated


def test_result_cap_stops_and_says_truncated():
    search = ProjectSearch("os", max_results=2)
    assert len(list(search.run(FILES, read))) == 2
    assert search.truncated and search.results == 2


def test_file_cap():
    search = ProjectSearch("o", max_files=1)
    hits = list(search.run(["pkg/b.txt", "a.py"], read))
    assert {h.path for h in hits} == {"pkg/b.txt"}
    assert search.truncated


def test_lazy_reading_lets_the_caller_cancel():
    seen = []

    def spy(path):
        seen.append(path)
        return FILES[path]

    it = find_in_files(FILES, spy, "import")
    next(it)
    assert seen == ["a.py"]


def test_regex_and_case_options():
    hits = list(find_in_files(FILES, read, r"^def \w+", SearchOptions(regex=True)))
    assert [(h.path, h.line) for h in hits] == [("a.py", 4)]
    assert list(find_in_files(FILES, read, "PATH", SearchOptions(match_case=True))) == []
    assert len(list(find_in_files(FILES, read, "PATH"))) == 2


def test_bad_pattern_fails_before_any_file_is_read():
    with pytest.raises(DocumentError) as info:
        find_in_files(FILES, read, "(", SearchOptions(regex=True))
    assert info.value.kind == "buffer.bad_pattern"


def test_empty_pattern_and_empty_matches_yield_nothing():
    assert list(find_in_files(FILES, read, "")) == []
    assert list(find_in_files(FILES, read, "^", SearchOptions(regex=True))) == []


def test_very_long_lines_are_clipped_around_the_match():
    line = "x" * 5000 + "needle" + "y" * 5000
    hit = next(iter(find_in_files(["m.js"], lambda p: line, "needle")))
    assert len(hit.line_text) == MAX_LINE_TEXT
    assert "needle" in hit.line_text
    assert hit.col == 5001


def test_filter_paths_include_and_exclude_globs():
    paths = ["a.py", "pkg/b.py", "pkg/c.txt", "build/d.py", "README.md"]
    assert list(filter_paths(paths, "*.py")) == ["a.py", "pkg/b.py", "build/d.py"]
    assert list(filter_paths(paths, "*.py, *.md", "build/*")) == ["a.py", "pkg/b.py",
                                                                  "README.md"]
    assert list(filter_paths(paths, "", "*.txt *.md")) == ["a.py", "pkg/b.py", "build/d.py"]
    assert list(filter_paths(paths)) == paths


PATTERNS = [r"a+", r"\bab?\w*", r"^b", r"c$", r"(a|b)c", r"[^a\n]+", r"é+", r"(?:AB)+", r"a.*?c",
            r"(?<=a)b", r"\d{2,}", r"(a)(b)?\2?", r"\s+$", r"(?P<x>b)(?P=x)"]


@settings(max_examples=200)
@given(st.sampled_from(PATTERNS), st.booleans(), st.booleans(),
       st.text(alphabet=st.sampled_from(list("abcAB é12\n")), max_size=40))
def test_a_regex_finds_what_re_finds(pattern, match_case, whole_word, text):
    """Find in Files matches regexes with the regex package (time-limited, GIL released):
    the hits are those re gives, as Find in a buffer finds them."""
    from rio.files.search import compile_pattern
    options = SearchOptions(regex=True, match_case=match_case, whole_word=whole_word)
    want = [(m.start(), m.end()) for m in compile_pattern(pattern, options).finditer(text)
            if m.start() != m.end()]
    got = [(m.start, m.end) for m in ProjectSearch(pattern, options).run(["f"], lambda _p: text)]
    assert got == want
