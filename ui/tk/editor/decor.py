"""What an editor draws around the text: bookmarks, highlighting, the current line, the
matching bracket, the line-number gutter, and the status update after every move.

A mixin of :class:`ui.tk.editor.tab.EditorTab` (it uses the tab's ``text``, ``gutter``, ``orig``,
``replica``, ``window`` and ``app``). Everything here only tags or draws: no text changes.
Highlighting follows ADR 0012: the visible lines after a short debounce, then the rest in
small time-boxed steps from ``after`` so typing never waits for the lexer.
"""

from __future__ import annotations

from typing import Any

from rio.text import edit_commands as ec
from rio.text.highlight import TAGS, retag_plan

HIGHLIGHT_DEBOUNCE_MS = 40


class EditorDecorations:
    """Tags and drawings of an editor tab (mixed into EditorTab)."""

    # Provided by EditorTab:
    text: Any
    gutter: Any
    app: Any
    replica: Any
    window: Any
    highlighter: Any
    ready: bool
    _theme: Any
    _bm_seq: int
    _maybe_astral: bool
    _hl_job: Any
    _idle_job: Any
    _ui_job: Any
    _current_line_at: tuple[str, str] | None
    _gutter_key: tuple[Any, ...] | None

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
    def _schedule_highlight(self) -> None:
        if self.highlighter is None or not self.highlighter.enabled:
            return
        if self._hl_job is not None:
            self.after_cancel(self._hl_job)
        self._hl_job = self.after(HIGHLIGHT_DEBOUNCE_MS, self._highlight_visible)

    def _retag(self, line_runs: list) -> None:
        line_text = self._row_text if self._maybe_astral else None
        for first, last, ranges in retag_plan(line_runs, line_text):
            for tag in TAGS:
                self.orig("tag", "remove", tag, first, last)
            for tag, pairs in ranges.items():
                self.orig("tag", "add", tag, *pairs)

    def _highlight_visible(self) -> None:
        self._hl_job = None
        h = self.highlighter
        if h is None or not self.winfo_exists():
            return
        top = int(str(self.orig("index", "@0,0")).split(".")[0]) - 1
        bottom = int(str(self.orig("index", "@0,65535")).split(".")[0]) - 1
        self._retag(h.visible(top, bottom + 1))
        if self._idle_job is None and not h.done:
            self._idle_job = self.after(1, self._highlight_step)

    def _highlight_step(self) -> None:
        self._idle_job = None
        h = self.highlighter
        if h is None or not self.winfo_exists():
            return
        changed, done = h.step(budget_lines=400, budget_ms=8.0)
        self._retag(changed)
        if not done:
            self._idle_job = self.after(1, self._highlight_step)

    def rehighlight(self) -> None:
        """Fonts or theme changed: the tag styles are already updated; nothing to relex."""
        self._schedule_highlight()

    # --- after every move: current line, bracket, gutter, status ------------------------------
    def schedule_ui(self) -> None:
        if self._ui_job is None:
            self._ui_job = self.after_idle(self._update_ui)

    def _update_ui(self) -> None:
        self._ui_job = None
        if not self.winfo_exists():
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
        self.app.on_cursor(self)

    def _snap_insert(self) -> None:
        """Never leave the cursor between the halves of an emoji (Tk 8.6 counts two columns
        for it, rio/text/utf16_columns.py): typing there would split it, and a mark inside a pair
        throws off Tk's own ``+Nc`` counting."""
        if not self.ready or self.replica is None:
            return
        line, col = map(int, str(self.orig("index", "insert")).split("."))
        if self._columns(line - 1).inside_pair(col):
            self.orig("mark", "set", "insert", f"{line}.{col - 1}")

    def _update_bracket(self) -> None:
        self.orig("tag", "remove", "bracket", "1.0", "end")
        if not self.ready or self.window is not None:
            return
        off = self.offset("insert")
        text, base = self._context(off, radius=5_000)
        # match_bracket looks at the character after the cursor and the one before it itself:
        # probing off - 1 here too reached two back (a bracket ending the previous line lit
        # up with the cursor at the start of this one).
        found = ec.match_bracket(text, off - base, limit=20_000)
        for o in found or ():
            idx = self.index(o + base)
            self.orig("tag", "add", "bracket", idx, f"{idx}+1c")

    def _draw_gutter(self) -> None:
        g = self.gutter
        total = (self.replica.buffer.line_count if self.replica else
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
               self._theme.name, self.window.first_line if self.window is not None else -1)
        if key == self._gutter_key:
            return
        self._gutter_key = key
        g.delete("all")
        if not self.app.settings.get("line_numbers", True):
            return
        t = self._theme
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
            if self.window is not None:
                r = self.window.rows[row - 1] if row - 1 < len(self.window.rows) else None
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
