"""Taking a unified diff back (the panel's Revert on files an agent changed behind Rio's back)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rio.agent.proposals import unified_diff
from rio.agent.unpatch import text_before

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "d d", "é"]), max_size=12)


def text(lines: list[str], end: bool) -> str:
    return "\n".join(lines) + ("\n" if end and lines else "")


@settings(max_examples=300)
@given(LINES, st.booleans(), LINES, st.booleans())
def test_the_text_before_any_change_comes_back(a, a_end, b, b_end):
    before, after = text(a, a_end), text(b, b_end)
    diff = unified_diff("f.txt", before, after)
    if before == after:
        assert text_before(diff, after) is None      # no diff: nothing to take back
    else:
        assert text_before(diff, after) == before


def test_a_file_changed_again_since_or_a_cut_diff_is_refused():
    before, after = "one\ntwo\nthree\n", "one\n2\nthree\n"
    diff = unified_diff("f.txt", before, after)
    assert text_before(diff, after) == before
    assert text_before(diff, "one\n2\nTHREE\n") is None
    assert text_before(diff, "") is None
    assert text_before(diff + "\n[… 120 more characters]\n", after) is None
    assert text_before("not a diff\n", after) is None
