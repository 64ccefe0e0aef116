"""Scrolling a big document's window of rows (ui/tk/editor/bigfile.py) in an editor's Text.

A part of :class:`ui.tk.editor.tab.EditorTab` (``tab.rows``). A big document is not all in the
widget: the Text holds a window of rows (:class:`~ui.tk.editor.bigfile.LineWindow`) around the
view. The scrollbar maps the whole document; scrolling near the window's edges, or a change
that moves the cursor out of it, renders the window again around the new place. Small documents
scroll as a plain Text. The part holds no state of its own: the window is the tab's.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk

from ui.tk.editor import bigfile
from ui.tk.editor.decor import EditorDecorations
from ui.tk.editor.offsets import EditorOffsets
from ui.tk.editor.seams import RowsTab
from ui.tk.editor.text_redirect import TextRedirect


class EditorWindowing:
    """The big-file window's scrolling (see the module docstring). The Text's
    ``yscrollcommand`` is :meth:`on_yscroll` and the scrollbar's command is :meth:`yview`."""

    def __init__(self, tab: RowsTab, text: tk.Text, vbar: ttk.Scrollbar, door: TextRedirect,
                 offsets: EditorOffsets, decor: EditorDecorations):
        self.editor = tab
        self.text = text
        self.vbar = vbar
        self.door = door
        self.offsets = offsets
        self.decor = decor

    def _render(self, first_line: int) -> None:
        """The widget shows the window's rows from document line ``first_line``."""
        window = self.editor.window
        assert window is not None
        self.door.orig("delete", "1.0", "end")
        self.door.orig("insert", "1.0", window.render(first_line))

    def rerender(self, cursor: int | None = None) -> None:
        """Render the window again, around the cursor (``cursor``: its offset after a change)."""
        window, replica = self.editor.window, self.editor.replica
        assert window is not None
        top = self.editor.top_line()
        if cursor is None:
            cursor = self.offsets.offset("insert")
        cursor = min(cursor, len(replica.buffer)) if replica else 0
        line = replica.buffer.offset_to_position(cursor)[0] if replica else 0
        first = window.first_line
        if not first <= line < first + window.max_rows - bigfile.MARGIN_ROWS or \
                line < first + (bigfile.MARGIN_ROWS if first else 0):
            first = window.centre_on(line)
        self._render(first)
        idx = self.offsets.index(cursor)
        if idx is not None:
            self.door.orig("mark", "set", "insert", idx)
        self.scroll_to_line(top)
        self.editor.see_insert()

    def scroll_to_line(self, line: int) -> None:
        """Put document line ``line`` (1-based) at the top of the view."""
        window = self.editor.window
        if window is None:
            self.door.orig("yview", f"{line}.0")
            return
        row = next((i for i, r in enumerate(window.rows) if r.line >= line - 1), 0)
        self.door.orig("yview", f"{row + 1}.0")

    def yview(self, *args: str) -> None:
        """The scrollbar moved: a drag in a big file maps onto the whole document."""
        window, replica = self.editor.window, self.editor.replica
        if window is None or replica is None:
            self.text.yview(*args)
            return
        if args and args[0] == "moveto":
            line = int(float(args[1]) * replica.buffer.line_count)
            self._render(window.centre_on(line))
            self.scroll_to_line(line + 1)
            self.door.orig("mark", "set", "insert", "@0,0")
        else:
            self.text.yview(*args)
        self.check_window_edges()

    def check_window_edges(self) -> None:
        """Near the window's top or bottom edge: render it again around the view."""
        w, replica = self.editor.window, self.editor.replica
        if w is None or replica is None or not w.rows:
            return
        top_row = int(str(self.door.orig("index", "@0,0")).split(".")[0]) - 1
        near_top = top_row < bigfile.MARGIN_ROWS and w.first_line > 0
        near_end = (len(w.rows) - top_row < bigfile.MARGIN_ROWS
                    and w.last_line < replica.buffer.line_count - 1)
        if near_top or near_end:
            line = w.rows[top_row].line
            cursor = self.offsets.offset("insert")
            self._render(w.centre_on(line))
            idx = self.offsets.index(cursor)
            self.door.orig("mark", "set", "insert", idx if idx is not None else "@0,0")
            self.scroll_to_line(line + 1)

    def on_yscroll(self, first: str | float, last: str | float) -> None:
        """The Text's view moved: the scrollbar shows where the window is in the document."""
        window, replica = self.editor.window, self.editor.replica
        if window is not None and replica is not None and window.rows:
            count = max(1, replica.buffer.line_count)
            top = self.editor.top_line() - 1
            span = max(1, int(str(self.door.orig("index", "@0,65535")).split(".")[0])
                       - int(str(self.door.orig("index", "@0,0")).split(".")[0]))
            self.vbar.set(top / count, min(1.0, (top + span) / count))
            self.text.after_idle(self.check_window_edges)
        else:
            self.vbar.set(first, last)
        self.decor.schedule_ui()
