"""Incremental highlighter: lexer choice, runs, edits, re-convergence, provisional lexing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from rio.text import highlight
from rio.text.highlight import (
    TAGS,
    Highlighter,
    choose_lexer,
    lexer_by_name,
    retag_plan,
    style_class,
    tk_ranges,
)

PY = 'import os\n\n@decorator\ndef f(x):\n    """Doc."""\n    return x + 1  # note\n'


def tags_of(h: Highlighter, line: int) -> list[tuple[str, str]]:
    """(tag, text) pairs of a line, readable in assertions."""
    start = h.line_start(line)
    return [(tag[len("syn."):], h.text[start + c0:start + c1]) for tag, c0, c1 in h.runs(line)]


# --- lexer choice ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, text, expected", [
    ("a.py", "", "Python"),
    ("lib/x.rs", "", "Rust"),
    ("Makefile", "all:\n", "Makefile"),
    ("run", "#!/usr/bin/env python3\nprint(1)\n", "Python"),
    ("build", "#!/bin/bash\necho hi\n", "Bash"),
    ("conf", "# -*- mode: ruby -*-\nputs 1\n", "Ruby"),
    ("data", "<?xml version='1.0'?>\n<a/>\n", "XML"),
    ("notes", "just some prose\n", "Text only"),
    ("", "", "Text only"),
])
def test_choose_lexer(name, text, expected):
    assert choose_lexer(name, text).name == expected


def test_lexer_keeps_offsets_equal_to_text():
    lexer = choose_lexer("a.py", "")
    assert lexer.stripnl is False and lexer.ensurenl is False


def test_style_classes_are_the_small_set():
    from pygments.token import Comment, Keyword, Name, String, Text
    assert style_class(Keyword.Namespace) == "keyword"
    assert style_class(String.Doc) == "string"
    assert style_class(Comment.Single) == "comment"
    assert style_class(Name.Builtin.Pseudo) == "builtin"
    assert style_class(Name.Function.Magic) == "name.function"
    assert style_class(Text) is None
    assert all(t.startswith("syn.") for t in TAGS) and len(TAGS) == 10


# --- runs --------------------------------------------------------------------------------------

def test_visible_runs_have_line_columns_and_classes():
    h = Highlighter("a.py", PY)
    out = dict(h.visible(0, 5))
    assert set(out) == {0, 1, 2, 3, 4, 5}
    assert tags_of(h, 0) == [("keyword", "import")]
    assert tags_of(h, 2) == [("decorator", "@decorator")]
    assert ("keyword", "def") in tags_of(h, 3) and ("name.function", "f") in tags_of(h, 3)
    assert tags_of(h, 4) == [("string", '"""Doc."""')]
    assert ("comment", "# note") in tags_of(h, 5) and ("number", "1") in tags_of(h, 5)


def test_tk_ranges_groups_by_tag_with_one_based_lines():
    h = Highlighter("a.py", "import os\nx = 1\n")
    ranges = tk_ranges(h.visible(0, 1))
    assert ranges["syn.keyword"] == ["1.0", "1.6"]
    assert ranges["syn.number"] == ["2.4", "2.5"]


def test_retag_plan_splits_blocks_of_consecutive_lines():
    runs = [(4, (("syn.string", 0, 3),)), (0, (("syn.keyword", 0, 6),)), (1, ())]
    plan = retag_plan(runs)
    assert plan == [("1.0", "2.end", {"syn.keyword": ["1.0", "1.6"]}),
                    ("5.0", "5.end", {"syn.string": ["5.0", "5.3"]})]
    assert retag_plan([]) == []


def test_plain_text_has_no_runs():
    h = Highlighter("notes.txt", "def f():\n  'x'\n")
    assert h.all_runs() == [(0, ()), (1, ()), (2, ())]


# --- edits and convergence ---------------------------------------------------------------------

def fresh_runs(name: str, text: str):
    return Highlighter(name, text).all_runs()


def test_opening_a_triple_quote_restyles_everything_below_in_the_background():
    body = "".join(f"x{i} = {i}\n" for i in range(200))
    h = Highlighter("a.py", "s = 1\n" + body)
    h.all_runs()
    h.edit(4, 5, '"""')  # s = """  … now every later line is inside a string
    shown = dict(h.visible(0, 10))
    assert tags_of(h, 5) == [("string", "x4 = 4")]
    assert 3 in shown
    changed_total = []
    done = False
    while not done:
        changed, done = h.step(budget_lines=50)
        changed_total += [line for line, _ in changed]
    assert set(range(11, 201)) <= set(changed_total)  # the view re-tags exactly those
    assert h.all_runs() == fresh_runs("a.py", h.text)


@pytest.mark.slow
def test_local_edit_reconverges_after_a_few_lines():
    text = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(3000))
    h = Highlighter("a.py", text)
    h.all_runs()
    at = h.line_start(3000) + 4
    h.edit(at, at + 6, "yield")  # "return" -> "yield" on one line
    h.visible(2990, 3010)
    changed, done = h.step(budget_lines=50)
    assert done  # converged: the remaining ~3000 lines were not re-lexed
    assert h.all_runs() == fresh_runs("a.py", h.text)


def test_edit_while_background_pass_runs():
    text = "".join(f"v{i} = '{i}'\n" for i in range(2000))
    h = Highlighter("a.py", text)
    h.step(budget_lines=300)
    h.edit(0, 0, "# head\n")
    h.edit(len(h.text) - 3, len(h.text) - 3, '"""')  # unterminated string at the very end
    assert h.all_runs() == fresh_runs("a.py", h.text)


def test_far_visible_region_is_lexed_provisionally_then_verified():
    text = 's = """\n' + "".join(f"x{i} = {i}\n" for i in range(2000)) + '"""\ny = 2\n'
    h = Highlighter("a.py", text)
    shown = dict(h.visible(1995, 2002))
    # Provisional: lexed from a nearby column-0 line, without knowing about the string
    # opened 2000 lines above, so these lines look like code for now.
    assert shown[1995] and shown[1995][0][0] != "syn.string"
    changed = []
    done = False
    while not done:
        step_changed, done = h.step(500)
        changed += [line for line, _ in step_changed]
    assert 1995 in changed  # the correction reaches the view
    assert tags_of(h, 1995) == [("string", "x1994 = 1994")]
    assert h.all_runs() == fresh_runs("a.py", h.text)


def test_a_pass_cut_short_leaves_a_seam_that_a_later_convergence_must_not_skip():
    # Deleting an unterminated """ turns every line below from string into code. The screen
    # is re-lexed, the background pass has not run yet: lines 0..60 are lexed for the new text,
    # lines 61.. still hold their string runs from before. A keystroke on line 0 then
    # re-converges on line 1, which vouches for lines 1..60 only, not for the old lines below.
    body = "".join(f"x{i} = {i}\n" for i in range(2000))
    h = Highlighter("a.py", 'x = 1\n"""\n' + body)
    h.all_runs()
    h.edit(6, 9, "")
    h.visible(0, 60)
    h.edit(5, 5, "2")  # x = 12
    h.visible(0, 60)
    assert not h.done  # the rest still needs the background pass
    changed = []
    done = False
    while not done:
        step_changed, done = h.step(500)
        changed += [line for line, _ in step_changed]
    assert 100 in changed  # the correction reaches the view
    assert tags_of(h, 100) == [("operator", "="), ("number", "98")]
    assert h.all_runs() == fresh_runs("a.py", h.text)


def test_seam_after_a_step_cut_by_its_line_budget():
    # The falsifying example pinned on the property below, as a plain sequence: the step
    # re-lexes lines 0-1 (budget 2) and stops before line 2, whose runs predate the edit; an
    # edit on line 0 then re-converges on the empty line 1.
    h = Highlighter("a.py", '"""\n"""""""""#', lexer=lexer_by_name("python"))
    h.visible(0, 3)
    h.edit(3, 3, '"""\n')  # line 0 closes its own string: line 2 now opens one
    h.step(budget_lines=2)
    h.edit(0, 0, "")
    runs = h.all_runs()
    assert runs[2] == (2, (("syn.string", 0, 10),))  # was string 0-9, comment 9-10
    assert runs == fresh_runs("a.py", h.text)


def test_closing_a_comment_below_restyles_lines_above_it():
    # The C/JS lexers decide "/*" is a comment only when they see "*/" ahead (look-ahead):
    # an edit on line 2 changes line 0.
    h = Highlighter("a.js", "/*\n\n")
    assert h.visible(0, 2)[0] == (0, (("syn.error", 0, 2),))
    h.edit(4, 4, "*/")
    shown = dict(h.visible(0, 2))
    assert shown[0] == (("syn.comment", 0, 2),)


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="known hole: look-ahead reaching above the restart line")
def test_closing_a_comment_below_restyles_lines_above_a_strict_sync_line():
    # As above, but the line after "/*" is code at column 0, a strict sync line: the re-lex after
    # typing "*/" restarts there and never sees line 1 again (the JS lexer; C passes).
    text = "let a = 1\n/*\nlet b = 2\n"
    h = Highlighter("a.js", text)
    h.all_runs()
    h.edit(len(text), len(text), "*/")
    assert h.all_runs() == fresh_runs("a.js", h.text)


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="known hole: lexer state spanning a newline outside strings")
def test_an_f_string_replacement_field_spanning_lines():
    # Pygments lexes f'{ ... } across newlines as Python expression tokens (the newline is
    # whitespace, "#" an error), so the next line looks like a sync line; it is not.
    h = Highlighter("a.py", "'\n\n#\n")
    h.visible(0, 3)
    h.edit(0, 1, "f'{")
    assert h.all_runs() == fresh_runs("a.py", h.text)


def test_step_stops_at_its_time_budget():
    now = [0.0]

    def clock() -> float:
        now[0] += 0.001  # every look at the clock costs a simulated millisecond
        return now[0]

    text = "".join(f"x{i} = {i}\n" for i in range(1000))
    h = Highlighter("a.py", text, clock=clock)
    changed, done = h.step(budget_lines=1000, budget_ms=3.0)
    assert not done
    assert 16 <= len(changed) <= 64  # the clock is read every 16 lines
    changed, done = h.step(budget_lines=1000, budget_ms=None)
    assert done


def test_visible_clamps_and_step_is_done_when_nothing_left():
    h = Highlighter("a.py", "x = 1")
    assert [line for line, _ in h.visible(-5, 99)] == [0]
    assert h.step() == ([], True)


def test_edit_outside_text_is_rejected():
    h = Highlighter("a.py", "abc")
    with pytest.raises(ValueError):
        h.edit(2, 9, "")


def test_huge_documents_are_not_highlighted(monkeypatch):
    monkeypatch.setattr(highlight, "MAX_HIGHLIGHT_CHARS", 10)
    h = Highlighter("a.py", "import os\nimport sys\n")
    assert h.visible(0, 1) == [(0, ()), (1, ())]
    assert h.step() == ([], True)


FRAGMENTS = ['"""', "'", '"', "#", "\n", "x = 1", "def f():", "(", ")", " ", "    ",
             "\\", "/*", "*/", "//", "{", "}", "class A:", "return 2", "\n\n", "f'{", "}'",
             "`", "${"]


def _sound(name: str, lexer, text: str) -> bool:
    """The sync heuristic holds for this text: lexing from any sync line gives the full lex.
    Where it does not (ADR-0012's known limits: a lexer state carried across a newline with no
    string or comment token, a look-ahead above the restart line — the xfail tests below), the
    incremental result may differ from a fresh lex by design, so the property skips the case."""
    h = Highlighter(name, text, lexer=lexer)
    full = h.all_runs()
    syncs = bytes(h._sync)
    for i in range(len(full)):
        if syncs[i]:
            got = list(highlight._lex_lines(lexer, text, h.line_start(i), i,
                                            highlight._TokenInfo()))
            if [(g.line, g.runs) for g in got] != full[i:] or \
                    [g.sync for g in got[1:]] != list(syncs[i + 1:]):
                return False
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@example(name="a.py", base=['"""', "\n", '"""', '"""', '"""', "#"],  # a seam at the frontier
         edits=[(0.0, 0, [], "visible"), (0.25, 0, ['"""', "\n"], "step"), (0.0, 0, [], "none")])
@given(name=st.sampled_from(["a.py", "a.c", "a.js"]),
       base=st.lists(st.sampled_from(FRAGMENTS), max_size=40),
       edits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 6),
                                st.lists(st.sampled_from(FRAGMENTS), max_size=3),
                                st.sampled_from(["none", "visible", "step"])), max_size=12))
def test_incremental_equals_a_fresh_lex(name, base, edits):
    text = "".join(base)
    lexer = lexer_by_name({"a.py": "python", "a.c": "c", "a.js": "javascript"}[name])
    later, sound = text, _sound(name, lexer, text)
    for where, length, pieces, _ in edits:
        start = int(where * len(later))
        later = later[:start] + "".join(pieces) + later[min(len(later), start + length):]
        sound = sound and _sound(name, lexer, later)
    assume(sound)
    h = Highlighter(name, text, lexer=lexer_by_name({"a.py": "python", "a.c": "c",
                                                      "a.js": "javascript"}[name]))
    for where, length, pieces, then in edits:
        start = int(where * len(text))
        end = min(len(text), start + length)
        new = "".join(pieces)
        h.edit(start, end, new)
        text = text[:start] + new + text[end:]
        if then == "visible":
            line = h.line_of(start)
            h.visible(max(0, line - 3), line + 3)
        elif then == "step":
            h.step(budget_lines=2)
    assert h.text == text
    assert h.all_runs() == Highlighter(name, text, lexer=h.lexer).all_runs()
