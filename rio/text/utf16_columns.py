"""Columns of one line in two units: code points (the core) and UTF-16 code units (Tk 8.6).

The core counts ``str`` characters (code points). Tk 8.6 stores text as UTF-16 internally, so a
character outside the Basic Multilingual Plane (most emoji, U+10000 and up) takes TWO index
positions in a Tk Text: in ``a😀b`` the ``b`` is at Tk column 3 but at code-point column 2.
Measured with Tk 8.6.13 under Xvfb (tests/desktop/editor/test_gui_astral.py pins these):

* ``"line.col"`` indices count UTF-16 units, and a column can fall *between* the two halves
  of a pair (``1.2`` above); inserting there or deleting half a pair leaves broken bytes.
* Index arithmetic (``insert-1c``, ``+1c``) and the Left/Right keys step over a whole pair, and
  ``get`` returns the joined character, so only columns need converting.

Everything that crosses between widget indices and core offsets goes through
:func:`columns` (the editor's ``offset``/``index``, highlighting's tag ranges, the big-file
window's rows). A column inside a pair is rounded down or up: a deletion starting inside a
pair starts before it, one ending inside ends after it, so a pair is only ever removed whole.

Cheap for ordinary lines: an ASCII line (checked in C by ``str.isascii``) and any line without
astral characters get the shared identity mapping; other lines are looked up once and cached
by their text.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from functools import lru_cache

_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


class LineColumns:
    """Column conversion for one line; ``astral`` holds the code-point columns of its
    characters above U+FFFF (empty for the identity mapping)."""

    __slots__ = ("_units", "astral")

    def __init__(self, astral: tuple[int, ...] = ()) -> None:
        self.astral = astral
        # UTF-16 column where each astral character starts (it and its low half: 2 units).
        self._units = tuple(col + i for i, col in enumerate(astral))

    @property
    def identity(self) -> bool:
        return not self.astral

    def to_utf16(self, col: int) -> int:
        """Tk column of code-point column ``col``."""
        if not self.astral:
            return col
        return col + bisect_left(self.astral, col)

    def to_codepoint(self, col: int, round_up: bool = False) -> int:
        """Code-point column of Tk column ``col``; inside a pair, the column before the pair
        (or after it with ``round_up``)."""
        if not self.astral:
            return col
        whole = bisect_right(self._units, col - 2)      # pairs that end at or before col
        if whole < len(self._units) and self._units[whole] + 1 == col:
            return col - whole - (0 if round_up else 1)
        return col - whole

    def inside_pair(self, col: int) -> bool:
        """True when Tk column ``col`` falls between the two halves of a pair."""
        if not self.astral:
            return False
        i = bisect_left(self._units, col - 1)
        return i < len(self._units) and self._units[i] + 1 == col


IDENTITY = LineColumns()


@lru_cache(maxsize=512)
def _columns_of(text: str) -> LineColumns:
    found = tuple(m.start() for m in _ASTRAL.finditer(text))
    return LineColumns(found) if found else IDENTITY


def columns(line: str) -> LineColumns:
    """The column mapping of one line of text (no newline inside)."""
    if line.isascii():
        return IDENTITY
    return _columns_of(line)


def utf16_length(text: str) -> int:
    """How many Tk index positions ``text`` takes."""
    if text.isascii():
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))

