"""Scrolling a big document's window of rows (ui/tk/editor/bigfile.py) in an editor's Text.

A mixin of :class:`ui.tk.editor.tab.EditorTab`. A big document is not all in the widget: the Text
holds a window of rows (:class:`~ui.tk.editor.bigfile.LineWindow`) around the view. The scrollbar maps
the whole document; scrolling near the window's edges, or a change that moves the cursor out of
it, renders the window again around the new place. Small documents scroll as a plain Text.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk
from typing import TYPE_CHECKING

from ui.tk.editor import bigfile

if TYPE_CHECKING:
    from rio.text.replica import Replica
    from ui.tk.editor.bigfile import LineWindow


class EditorWindowing:
    """The big-file window's scrolling (mixed into EditorTab)."""

    # Provided by EditorTab:
    text: tk.Text
    vbar: ttk.Scrollbar
    replica: Replica | None
    window: LineWindow | None

    def _rerender(self, cursor: int | None = None) -> None:
        assert self.window is not None
        top = self.top_line()
        if cursor is None:
            cursor = self.offset("insert")
        cursor = min(cursor, len(self.replica.buffer)) if self.replica else 0
        line = self.replica.buffer.offset_to_position(cursor)[0] if self.replica else 0
        first = self.window.first_line
        if not first <= line < first + self.window.max_rows - bigfile.MARGIN_ROWS or \
                line < first + (bigfile.MARGIN_ROWS if first else 0):
            first = self.window.centre_on(line)
        self.orig("delete", "1.0", "end")
        self.orig("insert", "1.0", self.window.render(first))
        idx = self.index(cursor)
        if idx is not None:
            self.orig("mark", "set", "insert", idx)
        self._scroll_to_line(top)
        self.see_insert()

    def _scroll_to_line(self, line: int) -> None:
        if self.window is None:
            self.orig("yview", f"{line}.0")
            return
        row = next((i for i, r in enumerate(self.window.rows) if r.line >= line - 1), 0)
        self.orig("yview", f"{row + 1}.0")

    def _yview(self, *args: str) -> None:
        if self.window is None or self.replica is None:
            self.text.yview(*args)
            return
        if args and args[0] == "moveto":
            line = int(float(args[1]) * self.replica.buffer.line_count)
            self.orig("delete", "1.0", "end")
            self.orig("insert", "1.0", self.window.render(self.window.centre_on(line)))
            self._scroll_to_line(line + 1)
            self.orig("mark", "set", "insert", "@0,0")
        else:
            self.text.yview(*args)
        self._check_window_edges()

    def _check_window_edges(self) -> None:
        w = self.window
        if w is None or self.replica is None or not w.rows:
            return
        top_row = int(str(self.orig("index", "@0,0")).split(".")[0]) - 1
        near_top = top_row < bigfile.MARGIN_ROWS and w.first_line > 0
        near_end = (len(w.rows) - top_row < bigfile.MARGIN_ROWS
                    and w.last_line < self.replica.buffer.line_count - 1)
        if near_top or near_end:
            line = w.rows[top_row].line
            cursor = self.offset("insert")
            self.orig("delete", "1.0", "end")
            self.orig("insert", "1.0", w.render(w.centre_on(line)))
            idx = self.index(cursor)
            self.orig("mark", "set", "insert", idx if idx is not None else "@0,0")
            self._scroll_to_line(line + 1)

    def _on_yscroll(self, first: str, last: str) -> None:
        if self.window is not None and self.replica is not None and self.window.rows:
            count = max(1, self.replica.buffer.line_count)
            top = self.top_line() - 1
            span = max(1, int(str(self.orig("index", "@0,65535")).split(".")[0])
                       - int(str(self.orig("index", "@0,0")).split(".")[0]))
            self.vbar.set(top / count, min(1.0, (top + span) / count))
            self.after_idle(self._check_window_edges)
        else:
            self.vbar.set(first, last)
        self.schedule_ui()
