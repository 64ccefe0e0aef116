"""Big documents in a Tk Text: the widget holds a WINDOW of display rows, not the whole file.

Tk needs ~6.5× the text in memory and chokes on long lines (PERF.md: a 100 K-character line
costs ~9 ms a keystroke, a 1 M one ~80 ms). So above :data:`BIG_CHARS`, or when any line is
longer than :data:`LONG_LINE`, the editor shows at most :data:`WINDOW_ROWS` rows taken from its
replica of the document (the first screen comes straight from ``buffer.lines`` while the rest
loads), and a long line is cut into rows of :data:`SPLIT` characters for display only.

:class:`LineWindow` is the display-free part: which document offsets each widget row shows,
mapping widget (row, col) ↔ document offset, and keeping that map right after an edit. The
widget side lives in ui/tk/editor.py.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from rio.text import ChunkedText

BIG_CHARS = 8 * 1024 * 1024     # above this the window is used (also highlighting's limit)
LONG_LINE = 20_000              # a line longer than this forces the window too
SPLIT = 4_096                   # display row width for long lines
WINDOW_ROWS = 2_000             # rows the widget holds at once
MARGIN_ROWS = 200               # re-window when the view comes this close to an edge
FIRST_SCREEN_LINES = 120        # lines fetched with buffer.lines for the first screen


def needs_window(length: int, longest_line: int) -> bool:
    return length > BIG_CHARS or longest_line > LONG_LINE


def split_line(line: str, width: int = SPLIT) -> list[str]:
    """A line cut into display rows of at most ``width`` characters (at least one row)."""
    if len(line) <= width:
        return [line]
    return [line[i:i + width] for i in range(0, len(line), width)]


@dataclass(frozen=True, slots=True)
class Row:
    start: int      # document offset of the row's first character
    length: int
    line: int       # 0-based document line
    first: bool     # True for a line's first row (continuations show no line number)


class LineWindow:
    """The rows a big-file widget shows; see the module docstring."""

    def __init__(self, text: ChunkedText, *, rows: int = WINDOW_ROWS, split: int = SPLIT):
        self.text = text
        self.max_rows = rows
        self.split = split
        self.rows: list[Row] = []
        self._starts: list[int] = []

    @property
    def first_line(self) -> int:
        return self.rows[0].line if self.rows else 0

    @property
    def last_line(self) -> int:
        return self.rows[-1].line if self.rows else 0

    def render(self, first_line: int) -> str:
        """Rebuild the rows from document line ``first_line`` on; returns the widget text."""
        count = self.text.line_count
        line = max(0, min(first_line, count - 1))
        rows: list[Row] = []
        pieces: list[str] = []
        while line < count and len(rows) < self.max_rows:
            start = self.text.line_start(line)
            end = self.text.line_end(line)
            length = end - start
            if length <= self.split:
                rows.append(Row(start, length, line, True))
                pieces.append(self.text.slice(start, end))
            else:
                for i in range(0, length, self.split):
                    n = min(self.split, length - i)
                    rows.append(Row(start + i, n, line, i == 0))
                    pieces.append(self.text.slice(start + i, start + i + n))
            line += 1
        self.rows = rows
        self._starts = [r.start for r in rows]
        return "\n".join(pieces)

    def centre_on(self, line: int) -> int:
        """The first line of a window that shows ``line`` with room above it."""
        return max(0, line - self.max_rows // 4)

    def offset_at(self, row: int, col: int) -> int:
        """Document offset of widget row ``row`` (0-based), column ``col``."""
        if not self.rows:
            return 0
        r = self.rows[max(0, min(row, len(self.rows) - 1))]
        return r.start + max(0, min(col, r.length))

    def position_of(self, offset: int) -> tuple[int, int] | None:
        """Widget (row, col) of a document offset, or None when it lies outside the window."""
        if not self.rows:
            return None
        i = bisect_right(self._starts, offset) - 1
        if i < 0:
            return None
        r = self.rows[i]
        if offset > r.start + r.length:
            return None
        return i, offset - r.start

    def contains_line(self, line: int) -> bool:
        return bool(self.rows) and self.first_line <= line <= self.last_line

    def edit_in_row(self, start: int, end: int, text: str) -> int | None:
        """After the document took ``[start, end) → text``: when the change stays inside one
        row (no newline, the row stays within ``split``), update the map and return that row —
        the widget then applies the same edit itself. Otherwise None: re-render."""
        pos = self.position_of(start)
        if pos is None or "\n" in text:
            return None
        row, col = pos
        r = self.rows[row]
        # Rows may grow to twice the split width before a re-render (typing into a long
        # line would otherwise redraw the whole window on every key).
        if end > r.start + r.length or r.length - (end - start) + len(text) > 2 * self.split:
            return None
        delta = len(text) - (end - start)
        self.rows[row] = Row(r.start, r.length + delta, r.line, r.first)
        for i in range(row + 1, len(self.rows)):
            q = self.rows[i]
            self.rows[i] = Row(q.start + delta, q.length, q.line, q.first)
            self._starts[i] = q.start + delta
        return row

    def shift_after_remote(self, start: int, end: int, text: str) -> bool:
        """A change elsewhere: True when it lies wholly after the window (nothing to redraw)."""
        if not self.rows:
            return False
        last = self.rows[-1]
        return start > last.start + last.length
