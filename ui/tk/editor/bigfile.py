"""Big documents in a Tk Text: the widget holds a WINDOW of display rows, not the whole file.

Tk needs ~6.5× the text in memory and chokes on long lines (measured on 2 vCPUs: a 100 K-character
line costs ~9 ms a keystroke, a 1 M one ~80 ms). So above :data:`BIG_CHARS`, or when any line is
longer than :data:`LONG_LINE`, the editor shows at most :data:`WINDOW_ROWS` rows taken from its
replica of the document (the first screen comes straight from ``buffer.lines`` while the rest
loads), and a long line is cut into rows of :data:`SPLIT` characters for display only.

Tk lays out a whole display row on every change to it, so a key costs in proportion to the row
it lands in: a bare Tk ``insert`` + redisplay measured 0.09 ms at 1,024 characters, 0.23 ms at
2,048 and 0.46 ms at 4,096 (0.07 ms at 80). Rows may grow to twice :data:`SPLIT` while typing
before a re-render, so :data:`SPLIT` is 1,024: a key in a 1 MB one-line file then costs what it
costs in a short line (docs/adr/0026-start-path-and-long-line-keys.md).

:class:`LineWindow` is the display-free part: which document offsets each widget row shows,
mapping widget (row, col) ↔ document offset, and keeping that map right after an edit. The
widget side lives in ui/tk/editor/tab.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import overload

from rio.text.text import ChunkedText

BIG_CHARS = 8 * 1024 * 1024     # above this the window is used (also highlighting's limit)
LONG_LINE = 20_000              # a line longer than this forces the window too
SPLIT = 1_024                   # display row width for long lines (see the docstring)
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


class _Rows:
    """The window's rows as a sequence of :class:`Row`, made on demand from parallel lists.

    Starts after an edited row are shifted lazily (``shift_from``/``shift_by``): typing along
    one row of a 2,000-row window then costs O(1), not 2,000 record rebuilds (~5 ms a key,
    measured in tests/bench/bench_ui.py)."""

    def __init__(self) -> None:
        self.start: list[int] = []
        self.length: list[int] = []
        self.line: list[int] = []
        self.first: list[bool] = []
        self.shift_from = 0
        self.shift_by = 0

    def start_at(self, i: int) -> int:
        return self.start[i] + (self.shift_by if i >= self.shift_from else 0)

    def settle(self) -> None:
        if self.shift_by:
            by = self.shift_by
            self.start[self.shift_from:] = [x + by for x in self.start[self.shift_from:]]
        self.shift_from, self.shift_by = len(self.start), 0

    def __len__(self) -> int:
        return len(self.start)

    def __bool__(self) -> bool:
        return bool(self.start)

    @overload
    def __getitem__(self, i: int) -> Row: ...
    @overload
    def __getitem__(self, i: slice) -> list[Row]: ...
    def __getitem__(self, i: int | slice) -> Row | list[Row]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self.start)))]
        if i < 0:
            i += len(self.start)
        if not 0 <= i < len(self.start):
            raise IndexError(i)
        return Row(self.start_at(i), self.length[i], self.line[i], self.first[i])

    def __iter__(self) -> Iterator[Row]:
        for i in range(len(self.start)):
            yield self[i]


class LineWindow:
    """The rows a big-file widget shows; see the module docstring."""

    def __init__(self, text: ChunkedText, *, rows: int = WINDOW_ROWS, split: int = SPLIT):
        self.text = text
        self.max_rows = rows
        self.split = split
        self.rows = _Rows()

    @property
    def first_line(self) -> int:
        return self.rows.line[0] if self.rows else 0

    @property
    def last_line(self) -> int:
        return self.rows.line[-1] if self.rows else 0

    def render(self, first_line: int) -> str:
        """Rebuild the rows from document line ``first_line`` on; returns the widget text."""
        count = self.text.line_count
        line = max(0, min(first_line, count - 1))
        rows = _Rows()
        pieces: list[str] = []
        while line < count and len(rows) < self.max_rows:
            start = self.text.line_start(line)
            end = self.text.line_end(line)
            length = end - start
            for i in range(0, max(length, 1), self.split):
                n = min(self.split, length - i)
                rows.start.append(start + i)
                rows.length.append(n)
                rows.line.append(line)
                rows.first.append(i == 0)
                pieces.append(self.text.slice(start + i, start + i + n))
            line += 1
        rows.shift_from = len(rows.start)
        self.rows = rows
        return "\n".join(pieces)

    def centre_on(self, line: int) -> int:
        """The first line of a window that shows ``line`` with room above it."""
        return max(0, line - self.max_rows // 4)

    def offset_at(self, row: int, col: int) -> int:
        """Document offset of widget row ``row`` (0-based), column ``col``."""
        if not self.rows:
            return 0
        i = max(0, min(row, len(self.rows) - 1))
        return self.rows.start_at(i) + max(0, min(col, self.rows.length[i]))

    def position_of(self, offset: int) -> tuple[int, int] | None:
        """Widget (row, col) of a document offset, or None when it lies outside the window."""
        rows = self.rows
        lo, hi = 0, len(rows)
        while lo < hi:                      # bisect_right over the (lazily shifted) starts
            mid = (lo + hi) // 2
            if rows.start_at(mid) <= offset:
                lo = mid + 1
            else:
                hi = mid
        i = lo - 1
        if i < 0:
            return None
        start = rows.start_at(i)
        if offset > start + rows.length[i]:
            return None
        return i, offset - start

    def contains_line(self, line: int) -> bool:
        return bool(self.rows) and self.first_line <= line <= self.last_line

    def edit_in_row(self, start: int, end: int, text: str) -> int | None:
        """After the document took ``[start, end) → text``: when the change stays inside one
        row (no newline, the row stays within twice ``split``), update the map and return that
        row — the widget then applies the same edit itself. Otherwise None: re-render."""
        pos = self.position_of(start)
        if pos is None or "\n" in text:
            return None
        row, _col = pos
        rows = self.rows
        r_start, r_len = rows.start_at(row), rows.length[row]
        # Rows may grow to twice the split width before a re-render (typing into a long
        # line would otherwise redraw the whole window on every key).
        if end > r_start + r_len or r_len - (end - start) + len(text) > 2 * self.split:
            return None
        delta = len(text) - (end - start)
        rows.length[row] = r_len + delta
        if rows.shift_from != row + 1:
            rows.settle()
            rows.shift_from = row + 1
        rows.shift_by += delta
        return row

    def shift_after_remote(self, start: int, end: int, text: str) -> bool:
        """A change elsewhere: True when it lies wholly after the window (nothing to redraw)."""
        if not self.rows:
            return False
        last = len(self.rows) - 1
        return start > self.rows.start_at(last) + self.rows.length[last]
