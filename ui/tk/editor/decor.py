"""What an editor draws around the text: bookmarks, highlighting, the current line, the
matching bracket, the line-number gutter, and the status update after every move.

A part of :class:`ui.tk.editor.tab.EditorTab` (``tab.decor``). It owns what it draws with: the
highlighter, the theme, its scheduled jobs, the bookmark counter and what the gutter last showed.
Everything here only tags or draws: no text changes. Highlighting follows ADR 0012: the visible
lines after a short debounce, then the rest in small time-boxed steps from ``after`` so typing
never waits for the lexer.
"""

from __future__ import annotations

import tkinter as tk
from typing import TYPE_CHECKING, Any

from rio.text import edit_commands as ec
from rio.text.highlight import TAGS, Highlighter, LineRuns, retag_plan
from ui.tk.editor.offsets import EditorOffsets
from ui.tk.editor.seams import Document
from ui.tk.editor.text_redirect import TextRedirect
from ui.tk.widgets.theme import Theme

if TYPE_CHECKING:
    from ui.tk.app.seams import EditorHost

HIGHLIGHT_DEBOUNCE_MS = 40


class EditorDecorations:
    """Tags and drawings of an editor tab (see the module docstring). Its jobs are scheduled
    on the Text: they go with it when the tab is destroyed, and :meth:`cancel` ends them."""

    def __init__(self, doc: Document, app: EditorHost, text: tk.Text, gutter: tk.Canvas,
                 door: TextRedirect, offsets: EditorOffsets, theme: Theme):
        self.doc = doc
        self.app = app
        self.text = text
        self.gutter = gutter
        self.door = door
        self.offsets = offsets
        self.theme = theme
        #: the lexer of a document small enough to highlight (None: a big file, or loading)
        self.highlighter: Highlighter | None = None
        self._bm_seq = 0
        self._hl_job: str | None = None
        self._idle_job: str | None = None
        self._ui_job: str | None = None
        self._current_line_at: tuple[str, str] | None = None
        self._gutter_key: tuple[object, ...] | None = None

    def orig(self, *args: object) -> Any:
        return self.door.orig(*args)

    def cancel(self) -> None:
        """End the scheduled jobs (the tab is going)."""
        for job in (self._hl_job, self._idle_job, self._ui_job):
            if job is not None:
                self.text.after_cancel(job)
        self._hl_job = self._idle_job = self._ui_job = None

    # --- bookmarks ---------------------------------------------------------------------------------
    def bookmark_lines(self) -> list[int]:
        out = []
        for mark in self.orig("mark", "names"):
            if str(mark).startswith("bm"):
                out.append(int(str(self.orig("index", mark)).split(".")[0]))
        return sorted(set(out))

    def toggle_bookmark(self) -> None:
        line = int(str(self.orig("index", "insert")).split(".")[0])
        found = [m for m in map(str, self.orig("mark", "names")) if m.startswith("bm")
                 and int(str(self.orig("index", m)).split(".")[0]) == line]
        if found:
            for m in found:
                self.orig("mark", "unset", m)
        else:
            self._bm_seq += 1
            name = f"bm{self._bm_seq}"
            self.orig("mark", "set", name, f"{line}.0")
            self.orig("mark", "gravity", name, "left")
        self.schedule_ui()

    def next_bookmark(self, backwards: bool = False) -> None:
        lines = self.bookmark_lines()
        if not lines:
            return
        here = int(str(self.orig("index", "insert")).split(".")[0])
        if backwards:
            target = next((ln for ln in reversed(lines) if ln < here), lines[-1])
        else:
            target = next((ln for ln in lines if ln > here), lines[0])
        self.orig("mark", "set", "insert", f"{target}.0")
        self.orig("see", "insert")
        self.schedule_ui()

    # --- highlighting -----------------------------------------------------------------------------
    def schedule_highlight(self) -> None:
        if self.highlighter is None or not self.highlighter.enabled:
            return
        if self._hl_job is not None:
            self.text.after_cancel(self._hl_job)
        self._hl_job = self.text.after(HIGHLIGHT_DEBOUNCE_MS, self.highlight_visible)

    def _retag(self, line_runs: list[LineRuns]) -> None:
        line_text = self.offsets.row_text if self.offsets.maybe_astral else None
        for first, last, ranges in retag_plan(line_runs, line_text):
            for tag in TAGS:
                self.orig("tag", "remove", tag, first, last)
            for tag, pairs in ranges.items():
                self.orig("tag", "add", tag, *pairs)

    def text_changed(self, start: int, end: int, chars: str) -> None:
        """``[start, end)`` became ``chars`` (the widget shows it): relex from there, soon."""
        if self.highlighter is not None:
            self.highlighter.edit(start, end, chars)
            self.schedule_highlight()

    def highlight_visible(self) -> None:
        """Tag the lines in view now, then the rest in steps."""
        self._hl_job = None
        h = self.highlighter
        if h is None or not self.text.winfo_exists():
            return
        top = int(str(self.orig("index", "@0,0")).split(".")[0]) - 1
        bottom = int(str(self.orig("index", "@0,65535")).split(".")[0]) - 1
        self._retag(h.visible(top, bottom + 1))
        if self._idle_job is None and not h.done:
            self._idle_job = self.text.after(1, self._highlight_step)

    def _highlight_step(self) -> None:
        self._idle_job = None
        h = self.highlighter
        if h is None or not self.text.winfo_exists():
            return
        changed, done = h.step(budget_lines=400, budget_ms=8.0)
        self._retag(changed)
        if not done:
            self._idle_job = self.text.after(1, self._highlight_step)

    def rehighlight(self) -> None:
        """Fonts or theme changed: the tag styles are already updated; nothing to relex."""
        self.schedule_highlight()

    # --- after every move: current line, bracket, gutter, status ------------------------------
    def schedule_ui(self) -> None:
        if self._ui_job is None:
            self._ui_job = self.text.after_idle(self.update_ui)

    def update_ui(self) -> None:
        """The current line, the bracket, the gutter and the window's status, now."""
        self._ui_job = None
        if not self.text.winfo_exists():
            return
        # Re-tag only when the cursor changed lines: text typed inside the line takes the
        # tag from both neighbours (Tk's rule), and every re-tag redraws the line. The line
        # count is in the key: joining lines brings untagged text into this one.
        self._snap_insert()
        here = (str(self.orig("index", "insert linestart")), str(self.orig("index", "end")))
        if here != self._current_line_at:
            self._current_line_at = here
            self.orig("tag", "remove", "current_line", "1.0", "end")
            self.orig("tag", "add", "current_line", "insert linestart", "insert lineend+1c")
        self._update_bracket()
        self._draw_gutter()
        self.app.on_cursor(self.doc)

    def _snap_insert(self) -> None:
        """Never leave the cursor between the halves of an emoji (Tk 8.6 counts two columns
        for it, rio/text/utf16_columns.py): typing there would split it, and a mark inside a pair
        throws off Tk's own ``+Nc`` counting."""
        if not self.doc.ready or self.doc.replica is None:
            return
        line, col = map(int, str(self.orig("index", "insert")).split("."))
        if self.offsets.columns(line - 1).inside_pair(col):
            self.orig("mark", "set", "insert", f"{line}.{col - 1}")

    def _update_bracket(self) -> None:
        self.orig("tag", "remove", "bracket", "1.0", "end")
        if not self.doc.ready or self.doc.window is not None:
            return
        off = self.offsets.offset("insert")
        text, base = self.offsets.context(off, radius=5_000)
        # match_bracket looks at the character after the cursor and the one before it itself:
        # probing off - 1 here too reached two back (a bracket ending the previous line lit
        # up with the cursor at the start of this one).
        found = ec.match_bracket(text, off - base, limit=20_000)
        for o in found or ():
            idx = self.offsets.index(o + base)
            self.orig("tag", "add", "bracket", idx, f"{idx}+1c")

    def _draw_gutter(self) -> None:
        g = self.gutter
        replica, window = self.doc.replica, self.doc.window
        total = (replica.buffer.line_count if replica else
                 int(str(self.orig("index", "end-1c")).split(".")[0]))
        # Redraw only when what it shows changed: typing along a line changes none of this,
        # and redrawing ~40 numbers costs ~2 ms a keystroke (measured, tests/bench/bench_ui.py).
        # The top line's y and the font's family and line spacing are in it: a scroll by part
        # of a line, or another font at the same size, moves every number.
        # Only the top line's y and height: dlineinfo's x and width change with every
        # character typed on that line, and keying on them redrew the gutter on every key
        # typed on the top row (always, in a one-line file) — 1.3–2.4 ms a key (issue 13).
        font = self.app.editor_font
        top = self.orig("index", "@0,0")
        info = self.orig("dlineinfo", top)
        parts = str(info).split() if isinstance(info, str) else list(info or ())
        key = (str(top), tuple(str(p) for p in parts[1:2] + parts[3:4]), total,
               str(self.orig("index", "insert linestart")),
               tuple(self.bookmark_lines()), self.text.winfo_height(),
               self.app.settings.get("line_numbers", True), str(font.cget("size")),
               str(font.cget("family")), font.metrics("linespace"),
               self.theme.name, window.first_line if window is not None else -1)
        if key == self._gutter_key:
            return
        self._gutter_key = key
        g.delete("all")
        if not self.app.settings.get("line_numbers", True):
            return
        t = self.theme
        width = font.measure("0" * max(3, len(str(total)))) + 18
        if int(g.cget("width")) != width:
            g.configure(width=width)
        marks = set(self.bookmark_lines())
        cur = int(str(self.orig("index", "insert")).split(".")[0])
        idx = self.orig("index", "@0,0")
        bottom = self.text.winfo_height()
        while True:
            info = self.orig("dlineinfo", idx)
            if not info:
                break
            y = int(info[1]) if not isinstance(info, str) else int(str(info).split()[1])
            row = int(str(idx).split(".")[0])
            if window is not None:
                r = window.rows[row - 1] if row - 1 < len(window.rows) else None
                label = str(r.line + 1) if r is not None and r.first else ""
            else:
                label = str(row)
            if row in marks:
                g.create_rectangle(3, y + 3, 11, y + 11, fill="#0000a0" if t.name == "classic"
                                   else "#5a7dff", outline=t.face_dark)
            g.create_text(width - 6, y, anchor="ne", text=label, font=font,
                          fill=t.text_fg if row == cur else t.gutter_fg)
            nxt = self.orig("index", f"{idx}+1line")
            if nxt == idx or y > bottom:
                break
            idx = nxt
        g.create_line(width - 1, 0, width - 1, g.winfo_height() + 2000, fill=t.face_dark)
