"""Offsets-in, offsets-out access to an editor tab, for the find dialog (ui/tk/find/dialog.py).

The dialog searches and replaces in document offsets; an editor's Text speaks Tk indices. This
goes through the EditorTab's own mapping (``offset``, ``index``, ``selection``, ``goto``: Tk
columns count UTF-16 units and a big document shows a window of rows, ADR-0022), and reads the
text from the editor's replica. What it uses of an editor is ``SearchableEditor`` (ui/tk/app/seams.py).
"""

from __future__ import annotations

import tkinter as tk

from ui.tk.app.seams import SearchableEditor
from ui.tk.find.model import LineIndex


class EditorAccess:
    """Offsets-in, offsets-out access to an editor tab (see the module docstring)."""

    def __init__(self, editor: SearchableEditor):
        self.editor = editor
        self.widget: tk.Text = editor.text
        self._index: LineIndex | None = None
        self._text: str | None = None

    def text(self) -> str:
        if self._text is None:
            replica = self.editor.replica
            self._text = replica.text if replica is not None else self.widget.get("1.0", "end-1c")
            self._index = LineIndex(self._text)
        return self._text

    @property
    def index(self) -> LineIndex:
        self.text()
        assert self._index is not None
        return self._index

    def line_count(self) -> int:
        replica = self.editor.replica
        return int(replica.buffer.line_count) if replica is not None else self.index.line_count

    def position(self, offset: int) -> tuple[int, int]:
        """(1-based line, 0-based col) — from the replica's chunked text when there is one:
        a line index over a 100 MB string would cost a second."""
        replica = self.editor.replica
        if replica is not None:
            buf = replica.buffer
            line, col = buf.offset_to_position(max(0, min(offset, len(buf))))
            return line + 1, col
        return self.index.position(offset)

    def cursor(self) -> int:
        return int(self.editor.offset("insert"))   # the editor maps big-file windows too

    def selection(self) -> tuple[int, int] | None:
        sel = self.editor.selection()
        return (int(sel[0]), int(sel[1])) if sel and sel[0] != sel[1] else None

    def _offset_of_view(self, tk_index: str) -> int:
        """Document offset of a Tk index of the widget."""
        return int(self.editor.offset(self.widget.index(tk_index)))

    def _tk_index_if_shown(self, offset: int) -> str | None:
        """Tk index of ``offset`` when the widget holds it (never moves a big file's window)."""
        found = self.editor.index(offset)
        return None if found is None else str(found)

    def _tk_index(self, offset: int) -> str:
        found = self.editor.index(offset)
        if found is None:
            # Outside a big file's window of rows: move the window there first.
            line, col = self.position(offset)
            self.editor.goto(line, col)
            found = self.editor.index(offset)
        return str(found) if found is not None else self.index.tk_index(offset)

    def select(self, start: int, end: int) -> None:
        w = self.widget
        a = self._tk_index(start)
        b = self._tk_index(end) if end != start else a
        w.tag_remove("sel", "1.0", "end")
        if end != start:
            w.tag_add("sel", a, b)
        w.mark_set("insert", b)
        w.see(a)
        w.see(b)
        self.editor.schedule_ui()

    def goto(self, line: int, col: int = 0) -> None:
        self.editor.goto(line, col)
        self.widget.focus_set()
