"""File references in run/build output."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rio.runs.output import FileRef, find_file_refs, may_hold_file_refs


def refs(line: str) -> list[tuple[str, int, int | None]]:
    return [(r.path, r.line, r.col) for r in find_file_refs(line)]


@pytest.mark.parametrize("line, expected", [
    # gcc / clang
    ("src/main.c:12:5: error: expected ';'", [("src/main.c", 12, 5)]),
    # python traceback
    ('  File "/home/u/app/x.py", line 42, in run', [("/home/u/app/x.py", 42, None)]),
    # pytest short summary and assertion location
    ("tests/test_a.py:12: AssertionError", [("tests/test_a.py", 12, None)]),
    # rustc long form
    ("  --> src/lib.rs:7:13", [("src/lib.rs", 7, 13)]),
    # go
    ("./cmd/main.go:3:2: undefined: foo", [("./cmd/main.go", 3, 2)]),
    # tsc
    ("src/app.ts(14,7): error TS2322: Type 'x'", [("src/app.ts", 14, 7)]),
    # MSVC-like without column
    (r"C:\proj\a.cpp(9): warning C4996", [(r"C:\proj\a.cpp", 9, None)]),
    # Windows path in colon form
    (r"C:\proj\a.py:3:1: E302", [(r"C:\proj\a.py", 3, 1)]),
    # node stack frame
    ("    at run (/srv/app/index.js:10:15)", [("/srv/app/index.js", 10, 15)]),
    # make
    ("Makefile:4: *** missing separator.  Stop.", [("Makefile", 4, None)]),
    # two on one line
    ("a.py:1 and b/c.h:2:3", [("a.py", 1, None), ("b/c.h", 2, 3)]),
])
def test_recognised_forms(line, expected):
    assert refs(line) == expected


@pytest.mark.parametrize("line", [
    "Server at http://localhost:8080/index.html:12 started",
    "see https://example.org/a.py:10:2 for details",
    "time 12:30:45 elapsed",
    "error:3 things failed",
    "print(3)",
    "version 1.2.3:4",
    "tests/test_a.py::test_one PASSED",
    "",
])
def test_not_references(line):
    assert find_file_refs(line) == []


def test_span_covers_the_whole_reference():
    line = 'Traceback:\n  File "m.py", line 3\nsrc/x.rs:1:2: bad'
    found = find_file_refs(line)
    assert [line[r.start:r.end] for r in found] == ['File "m.py", line 3', "src/x.rs:1:2"]
    assert found[0] == FileRef(13, 32, "m.py", 3, None)


def test_colour_escapes_do_not_leak_into_paths_and_offsets_stay_original():
    line = "\x1b[01m\x1b[Ksrc/main.c:12:5:\x1b[m \x1b[01;31merror:\x1b[m boom"
    (ref,) = find_file_refs(line)
    assert (ref.path, ref.line, ref.col) == ("src/main.c", 12, 5)
    assert line[ref.start:ref.end] == "src/main.c:12:5"


def test_pseudo_files_in_tracebacks_are_not_links():
    assert find_file_refs('  File "<stdin>", line 1, in <module>') == []


def test_line_zero_is_not_a_reference():
    assert find_file_refs("a.py:0: something") == []


@given(st.lists(st.sampled_from(list("ab./\\:()0123456789 \n\"'Fileln,") +
                                ["File \"", ", line ", "http://", ".py", "\x1b[1m"]),
                max_size=40).map("".join))
def test_refs_are_ordered_disjoint_spans_inside_the_text(text):
    found = find_file_refs(text)
    for ref in found:
        assert 0 <= ref.start < ref.end <= len(text)
        assert ref.line >= 1 and (ref.col is None or ref.col >= 0)
        assert ref.path and ref.path in text[ref.start:ref.end]
    for a, b in zip(found, found[1:]):
        assert a.end <= b.start


@given(st.text(max_size=80))
def test_the_cheap_precheck_never_hides_a_reference(line):
    if find_file_refs(line):
        assert may_hold_file_refs(line)


def test_a_traceback_line_passes_the_precheck():
    line = '  File "x.py", line 3'
    assert may_hold_file_refs(line)
    assert find_file_refs(line) == [FileRef(2, len(line), "x.py", 3, None)]
