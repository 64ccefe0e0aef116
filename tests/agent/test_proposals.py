"""Edit proposals: diffs, and locating old_text again at approval (typed-over, vanished,
ambiguous)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rio.agent.proposals import (
    MAX_DIFF_CHARS,
    Located,
    Refusal,
    apply_located,
    edit_diff,
    locate,
    unified_diff,
)

TEXT = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


def test_unique_target_is_located_and_applied() -> None:
    where = locate(TEXT, "return 2")
    assert isinstance(where, Located)
    assert apply_located(TEXT, where, "return 3").endswith("return 3\n")


def test_target_found_again_after_the_user_typed_above_it() -> None:
    typed = "# a comment the user added during review\n" + TEXT
    where = locate(typed, "    return 1\n")
    assert isinstance(where, Located)
    assert typed[where.start:where.end] == "    return 1\n"
    assert "return 10" in apply_located(typed, where, "    return 10\n")


def test_target_typed_over_has_vanished() -> None:
    typed_over = TEXT.replace("return 2", "return 42")
    result = locate(typed_over, "    return 2\n")
    assert isinstance(result, Refusal) and result.reason == "vanished"
    assert "read the file again" in result.message


def test_target_occurring_twice_is_ambiguous() -> None:
    result = locate(TEXT, "    return ")
    assert isinstance(result, Refusal) and result.reason == "ambiguous"
    assert "2 times" in result.message


def test_empty_target_is_refused() -> None:
    result = locate(TEXT, "")
    assert isinstance(result, Refusal) and result.reason == "empty_target"


def test_edit_diff_is_a_unified_diff_of_the_change() -> None:
    diff, refusal = edit_diff("src/m.py", TEXT, "return 2", "return 3")
    assert refusal is None
    assert diff.startswith("--- a/src/m.py\n+++ b/src/m.py\n@@")
    assert "-    return 2\n" in diff and "+    return 3\n" in diff


def test_edit_diff_refuses_no_change_and_reports_vanished() -> None:
    same = edit_diff("m.py", TEXT, "return 2", "return 2")[1]
    gone = edit_diff("m.py", TEXT, "nope", "x")[1]
    assert same is not None and same.reason == "no_change"
    assert gone is not None and gone.reason == "vanished"


def test_create_diff_is_from_dev_null_and_marks_missing_final_newline() -> None:
    diff = unified_diff("new.txt", "", "one\ntwo", created=True)
    assert diff.startswith("--- /dev/null\n+++ b/new.txt\n")
    assert diff.endswith("+two\n\\ No newline at end of file\n")


def test_huge_diff_is_cut_with_a_marker() -> None:
    after = "x\n" * (MAX_DIFF_CHARS)
    diff = unified_diff("big.txt", "", after, created=True)
    assert "diff truncated" in diff
    assert len(diff) < MAX_DIFF_CHARS + 200


@given(st.text(max_size=50), st.text(min_size=1, max_size=5), st.text(max_size=5))
def test_located_edit_replaces_exactly_the_one_occurrence(text: str, old: str, new: str) -> None:
    where = locate(text, old)
    if isinstance(where, Located):
        assert text.count(old) == 1
        result = apply_located(text, where, new)
        assert result == text.replace(old, new, 1)
    else:
        assert where.reason in ("vanished", "ambiguous")
        assert (text.count(old) == 0) == (where.reason == "vanished") or \
            (where.reason == "ambiguous" and old in text)
