"""Code-point ↔ UTF-16 columns (rio/text/utf16_columns.py), without Tk."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rio.text.utf16_columns import IDENTITY, columns, utf16_length

EMOJI = "\U0001F600"

LINES = st.lists(st.sampled_from(["a", "\u00e9", "\u6f22", EMOJI, "\U0001F3FD", "e\u0301",
                                  "\r"]), max_size=20).map("".join)


def _units(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def test_ascii_and_bmp_lines_share_the_identity_mapping():
    assert columns("plain ascii") is IDENTITY
    assert columns("caf\u00e9 \u6f22\u5b57") is IDENTITY
    assert columns(f"a{EMOJI}") is not IDENTITY


def test_emoji_columns():
    cols = columns(f"a{EMOJI}b{EMOJI}{EMOJI}")
    assert [cols.to_utf16(c) for c in range(6)] == [0, 1, 3, 4, 6, 8]
    assert [cols.to_codepoint(u) for u in range(9)] == [0, 1, 1, 2, 3, 3, 4, 4, 5]
    assert [cols.to_codepoint(u, round_up=True) for u in range(9)] == [0, 1, 2, 2, 3, 4, 4, 5, 5]
    assert [cols.inside_pair(u) for u in range(9)] == [False, False, True, False, False,
                                                     True, False, True, False]


@given(LINES)
def test_columns_agree_with_utf16_encoding(line):
    cols = columns(line)
    assert utf16_length(line) == _units(line)
    for cp in range(len(line) + 1):
        u = cols.to_utf16(cp)
        assert u == _units(line[:cp])
        assert cols.to_codepoint(u) == cp == cols.to_codepoint(u, round_up=True)
        assert not cols.inside_pair(u)
        if cp < len(line) and line[cp] > "\uffff":
            assert cols.inside_pair(u + 1)
            assert (cols.to_codepoint(u + 1), cols.to_codepoint(u + 1, True)) == (cp, cp + 1)
