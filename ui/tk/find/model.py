"""The display-free half of Find/Replace and Go to line: offsets ↔ line/column, where the next
search starts, the pattern history, the "go to" field's syntax, and how a batch of edits moves a
selection. The dialogs in :mod:`ui.tk.find.dialog` are thin views over these.

Offsets are code points into the document text (the core's unit, docs/protocol.md); lines are
1-based and columns 0-based here, as Tk's ``"line.col"`` indices are.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rio.text.edit_commands import TextEdit
from rio.text.utf16_columns import LineColumns, columns

HISTORY_SIZE = 20


class LineIndex:
    """Line starts of one text, for offset ↔ (line, col) in O(log n)."""

    def __init__(self, text: str):
        starts = [0]
        find = text.find
        i = find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = find("\n", i + 1)
        self.starts = starts
        self.length = len(text)
        self._text = text

    @property
    def line_count(self) -> int:
        return len(self.starts)

    def position(self, offset: int) -> tuple[int, int]:
        """(1-based line, 0-based column) of ``offset`` (clamped into the text)."""
        offset = max(0, min(offset, self.length))
        line = bisect.bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line]

    def offset(self, line: int, col: int) -> int:
        """Offset of 1-based ``line`` and 0-based ``col`` (both clamped)."""
        line = max(1, min(line, self.line_count))
        start = self.starts[line - 1]
        end = self.starts[line] - 1 if line < self.line_count else self.length
        return start + max(0, min(col, end - start))

    def _columns(self, line: int) -> LineColumns:
        start = self.starts[line - 1]
        end = self.starts[line] - 1 if line < self.line_count else self.length
        return columns(self._text[start:end])

    def tk_index(self, offset: int) -> str:
        """The Tk ``"line.col"`` of ``offset``: Tk 8.6 counts an emoji as two columns."""
        line, col = self.position(offset)
        return f"{line}.{self._columns(line).to_utf16(col)}"

    def offset_of_tk(self, line: int, col: int) -> int:
        """Offset of a Tk ``line.col`` (its column in UTF-16 units)."""
        line = max(1, min(line, self.line_count))
        return self.offset(line, self._columns(line).to_codepoint(col))


def search_start(cursor: int, selection: tuple[int, int] | None, backward: bool) -> int:
    """Where Find Next/Previous starts: after the selection going forward (so a selected match
    is passed over), before it going back, else at the cursor."""
    if selection is not None and selection[0] != selection[1]:
        lo, hi = sorted(selection)
        return lo if backward else hi
    return cursor


def remember(history: Sequence[str], entry: str, size: int = HISTORY_SIZE) -> tuple[str, ...]:
    """The pattern history with ``entry`` first, without duplicates, at most ``size`` long."""
    if not entry:
        return tuple(history)
    return tuple([entry] + [h for h in history if h != entry])[:size]


def shift_range(scope: tuple[int, int], edits: Iterable[TextEdit]) -> tuple[int, int]:
    """Where a (lo, hi) range ends up after ``edits`` (non-overlapping, offsets of the text
    before them) are applied; edits inside the range grow or shrink it."""
    lo, hi = scope
    new_lo, new_hi = lo, hi
    for e in edits:
        delta = len(e.text) - (e.end - e.start)
        if e.end <= lo:
            new_lo += delta
            new_hi += delta
        elif e.start >= lo and e.end <= hi:
            new_hi += delta
    return new_lo, max(new_lo, new_hi)


@dataclass(frozen=True)
class GotoTarget:
    line: int
    col: int | None = None   # 1-based column when given


_GOTO = re.compile(r"^\s*(\d+)\s*(?:[:,.]\s*(\d+)\s*)?$")


def parse_goto(text: str, line_count: int) -> GotoTarget:
    """``"120"`` or ``"120:8"`` → a target; raises ValueError with a message for the user.
    A line past the end goes to the last line (like every editor of the time)."""
    m = _GOTO.match(text)
    if not m:
        raise ValueError("Type a line number, optionally with a column: 120 or 120:8")
    line = int(m.group(1))
    if line < 1:
        raise ValueError("Lines are numbered from 1")
    col = int(m.group(2)) if m.group(2) else None
    if col is not None and col < 1:
        raise ValueError("Columns are numbered from 1")
    return GotoTarget(min(line, max(1, line_count)), col)


def describe_replace_all(count: int, in_selection: bool) -> str:
    where = " in the selection" if in_selection else ""
    if count == 0:
        return f"Nothing to replace{where}."
    return f"Replaced {count} occurrence{'s' if count != 1 else ''}{where}."
