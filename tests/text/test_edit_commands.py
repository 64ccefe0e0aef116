"""Pure editor text operations: auto-indent, block indent, comments, brackets, words."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rio.text.edit_commands import (
    IndentStyle,
    TextEdit,
    apply_edits,
    comment_token_for,
    dedent_for_closer,
    dedent_lines,
    indent_lines,
    match_bracket,
    newline_with_indent,
    next_word_boundary,
    prev_word_boundary,
    toggle_comment,
    touched_line_starts,
    word_at,
)


def enter(text: str, cursor: int, **kw) -> tuple[str, int]:
    edit, new_cursor = newline_with_indent(text, cursor, **kw)
    return apply_edits(text, [edit]), new_cursor


def test_apply_edits_in_any_order():
    assert apply_edits("abcdef", [TextEdit(0, 1, "X"), TextEdit(4, 6, "")]) == "Xbcd"
    assert apply_edits("abcdef", [TextEdit(4, 6, ""), TextEdit(0, 1, "X")]) == "Xbcd"


# --- auto-indent -------------------------------------------------------------------------------

def test_newline_copies_indentation():
    text = "    x = 1"
    assert enter(text, len(text)) == ("    x = 1\n    ", 14)


def test_newline_adds_a_level_after_colon_and_openers():
    for line in ("def f():", "if x:  ", "call(", "xs = [", "int main() {"):
        out, _ = enter(line, len(line))
        assert out.endswith("\n    "), line


def test_newline_between_brackets_puts_closer_on_its_own_line():
    text = "  f({})"
    out, cur = enter(text, 5)
    assert out == "  f({\n      \n  })"
    assert out[:cur].endswith("\n      ")


def test_newline_with_tabs_style():
    out, _ = enter("\tif x:", 6, style=IndentStyle(use_tabs=True))
    assert out == "\tif x:\n\t\t"


def test_newline_replaces_selection_and_eats_trailing_spaces():
    edit, cur = newline_with_indent("ab   cd", 2, 3)
    assert apply_edits("ab   cd", [edit]) == "ab\ncd"
    assert cur == 3


def test_newline_inside_indentation_keeps_only_left_part():
    out, _ = enter("        x", 4)
    assert out == "    \n    x"  # the spaces right of the cursor are eaten, not doubled


def test_python_dedent_after_return():
    text = "def f():\n    return 1"
    out, _ = enter(text, len(text), language="python")
    assert out.endswith("return 1\n")
    out, _ = enter(text, len(text))
    assert out.endswith("return 1\n    ")  # only Python knows about return


def test_trailing_comment_does_not_hide_the_colon():
    text = "if x:  # why: because"
    out, _ = enter(text, len(text), comment_token="#")
    assert out.endswith("\n    ")
    text = "s = '#' + 'a'"  # a '#' inside quotes is not a comment; no colon either
    out, _ = enter(text, len(text), comment_token="#")
    assert out.endswith("'a'\n")
    text = "f = {  // map"
    out, _ = enter(text, len(text), comment_token="//")
    assert out.endswith("\n    ")


def test_closer_goes_back_to_the_opener_indentation():
    text = "  if (x) {\n      a;\n      "
    edit = dedent_for_closer(text, len(text), "}")
    assert apply_edits(text, [edit]) + "}" == "  if (x) {\n      a;\n  }"
    # Not on a line with code before the cursor, and not for non-closers.
    assert dedent_for_closer("  a", 3, "}") is None
    assert dedent_for_closer("    ", 4, "x") is None


def test_closer_without_opener_dedents_once():
    edit = dedent_for_closer("        ", 8, ")")
    assert edit == TextEdit(0, 8, "    ")


# --- block indent ------------------------------------------------------------------------------

def test_touched_lines_exclude_line_where_selection_ends_at_column_0():
    text = "a\nb\nc\n"
    assert touched_line_starts(text, 0, 4) == [0, 2]
    assert touched_line_starts(text, 1, 5) == [0, 2, 4]
    assert touched_line_starts(text, 3, 3) == [2]


def test_indent_skips_blank_lines():
    text = "a\n\n  b\nc"
    assert apply_edits(text, indent_lines(text, 0, 6)) == "    a\n\n      b\nc"


def test_dedent_removes_at_most_one_level():
    text = "      a\n\tb\n  c\nd"
    edits = dedent_lines(text, 0, len(text))
    assert apply_edits(text, edits) == "  a\nb\nc\nd"


@given(st.lists(st.text(alphabet="ab ", max_size=6).filter(lambda s: s == "" or s.strip()),
                min_size=1, max_size=6))
def test_dedent_undoes_indent(lines):
    # Whitespace-only lines are left alone by indent, so they are not part of the property.
    text = "\n".join(lines)
    style = IndentStyle(width=2)
    indented = apply_edits(text, indent_lines(text, 0, len(text), style))
    back = apply_edits(indented, dedent_lines(indented, 0, len(indented), style))
    assert back == text


# --- comments ----------------------------------------------------------------------------------

def test_comment_token_by_language():
    assert comment_token_for("a/b.py") == "#"
    assert comment_token_for("x.RS") == "//"
    assert comment_token_for("q.sql") == "--"
    assert comment_token_for("init.el") == ";"
    assert comment_token_for("Makefile") == "#"
    assert comment_token_for("notes.txt") is None


def test_toggle_comment_at_block_indentation_and_back():
    text = "if x:\n    a\n\n    b\n"
    commented = apply_edits(text, toggle_comment(text, 6, 19, "#"))
    assert commented == "if x:\n    # a\n\n    # b\n"
    assert apply_edits(commented, toggle_comment(commented, 6, 22, "#")) == text


def test_toggle_comment_mixed_block_comments_all():
    text = "// a\nb\n"
    assert apply_edits(text, toggle_comment(text, 0, 6, "//")) == "// // a\n// b\n"


def test_uncomment_without_space():
    assert apply_edits("--x", toggle_comment("--x", 0, 0, "--")) == "x"


@given(st.lists(st.text(alphabet="ab #\t", max_size=6), min_size=1, max_size=5))
def test_toggle_twice_is_identity_unless_already_commented(lines):
    text = "\n".join(lines)
    once = apply_edits(text, toggle_comment(text, 0, len(text), "#"))
    twice = apply_edits(once, toggle_comment(once, 0, len(once), "#"))
    if toggle_comment(text, 0, len(text), "#") and \
            all(e.start == e.end for e in toggle_comment(text, 0, len(text), "#")):
        assert twice == text


# --- brackets ----------------------------------------------------------------------------------

def test_match_bracket_forward_backward_nested():
    text = "f(a[1], (b))"
    assert match_bracket(text, 1) == (1, 11)
    assert match_bracket(text, 12) == (11, 1)  # caret just after the closer
    assert match_bracket(text, 3) == (3, 5)
    assert match_bracket(text, 6) == (5, 3)  # ',' is no bracket: the ']' before the caret is
    assert match_bracket(text, 2) == (1, 11)


def test_match_bracket_prefers_bracket_at_offset_then_before():
    assert match_bracket("()", 1) == (1, 0)
    assert match_bracket("a", 0) is None


def test_match_bracket_unbalanced():
    assert match_bracket("((a)", 0) is None


def test_match_bracket_skips_brackets_in_strings():
    text = 'f(")", x)'
    assert match_bracket(text, 1) == (1, 8)
    # A bracket inside a string matches plainly inside the string.
    assert match_bracket('"(x)"', 1) == (1, 3)


def test_match_bracket_across_lines():
    text = "{\n  [\n  ]\n}"
    assert match_bracket(text, 0) == (0, len(text) - 1)


# --- words -------------------------------------------------------------------------------------

def test_word_at():
    text = "foo_bar(x, y)  z\nnext"
    assert word_at(text, 2) == (0, 7)
    assert word_at(text, 7) == (7, 8)
    assert word_at(text, 14) == (13, 15)
    assert word_at(text, 16) == (15, 16)  # end of line: the last word
    assert word_at("", 0) == (0, 0)


def test_word_motion():
    text = "a.bc  de\nf"
    assert next_word_boundary(text, 0) == 1
    assert next_word_boundary(text, 1) == 2
    assert next_word_boundary(text, 4) == 8
    assert next_word_boundary(text, 8) == 9
    assert prev_word_boundary(text, 8) == 6
    assert prev_word_boundary(text, 6) == 2
    assert prev_word_boundary(text, 9) == 8
    assert prev_word_boundary(text, 0) == 0
