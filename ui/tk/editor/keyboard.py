"""Typing in an editor: what the keyboard and ``ui.type`` share — Enter with auto-indent, Tab,
closers that dedent, overwrite mode — and the block commands (indent, dedent, toggle comment).

A mixin of :class:`ui.tk.editor.tab.EditorTab`. The rules are rio/text/edit_commands.py's; this
turns them into widget edits (through the Text's redirect, so each is a local edit sent to the
core) or into one ``buffer.apply`` batch (``EditorTab.apply_batch``: one undo step).
"""

from __future__ import annotations

import tkinter as tk
from typing import TYPE_CHECKING

from rio.text import edit_commands as ec

if TYPE_CHECKING:
    from rio.text.highlight import Highlighter
    from rio.text.replica import Replica
    from ui.tk.app.seams import EditorHost
    from ui.tk.editor.bigfile import LineWindow

CLOSERS = ")]}"


class EditorTyping:
    """Keys and block commands of an editor tab (mixed into EditorTab)."""

    # Provided by EditorTab:
    app: EditorHost
    text: tk.Text
    summary: dict[str, object]
    replica: Replica | None
    window: LineWindow | None
    highlighter: Highlighter | None
    ready: bool
    overwrite: bool

    def tab_width(self) -> int:
        return int(self.app.settings.get("tab_width", 4))

    def indent_style(self) -> ec.IndentStyle:
        return ec.IndentStyle(self.tab_width(), not self.app.settings.get("use_spaces", True))

    def _context(self, around: int, radius: int = 20_000) -> tuple[str, int]:
        """Text near an offset (for edit commands) and that text's start offset."""
        assert self.replica is not None
        buf = self.replica.buffer
        if self.window is None and len(buf) <= 2 * radius:
            return buf.text(), 0
        lo = buf.line_start(buf.offset_to_position(max(0, around - radius))[0])
        hi = min(len(buf), around + radius)
        return buf.slice(lo, hi), lo

    # --- typing (keys and ui.type share these) ------------------------------------------------
    def type_text(self, chars: str) -> None:
        """Type as the keyboard would: Enter auto-indents, Tab indents, closers dedent."""
        for ch in chars:
            if ch == "\n":
                self.newline()
            elif ch == "\t":
                self.tab()
            else:
                self.type_char(ch)

    def type_char(self, ch: str) -> None:
        if not self.ready:
            return
        if self.orig("tag", "ranges", "sel"):
            self.text.delete("sel.first", "sel.last")
        elif ch in CLOSERS and self.window is None:
            off = self.offset("insert")
            text, base = self._context(off)
            edit = ec.dedent_for_closer(text, off - base, ch, self.indent_style())
            if edit is not None:
                self.text.delete(self.index(edit.start + base), self.index(edit.end + base))
                self.text.insert(self.index(edit.start + base), edit.text)
        elif self.overwrite and self.orig("compare", "insert", "<", "insert lineend"):
            self.text.delete("insert")
        self.text.insert("insert", ch)
        self.text.see("insert")

    def newline(self) -> None:
        if not self.ready:
            return
        sel = self.selection()
        off = self.offset("insert")
        lo, hi = sel if sel else (off, off)
        text, base = self._context(lo)
        lang = (self.highlighter.lexer_name.lower() if self.highlighter else "")
        edit, cursor = ec.newline_with_indent(
            text, lo - base, hi - base, self.indent_style(), language=lang,
            comment_token=ec.comment_token_for(self.summary.get("name") or ""))
        self.text.delete(self.index(edit.start + base), self.index(edit.end + base))
        self.text.insert(self.index(edit.start + base), edit.text)
        idx = self.index(cursor + base)
        if idx is not None:
            self.orig("mark", "set", "insert", idx)
        self.orig("tag", "remove", "sel", "1.0", "end")
        self.text.see("insert")

    def tab(self) -> None:
        if not self.ready:
            return
        sel = self.selection()
        if sel and "\n" in self.orig("get", "sel.first", "sel.last"):
            self.block_indent(dedent=False)
            return
        self.type_char(self.indent_style().unit)

    def block_indent(self, dedent: bool) -> None:
        if not self.ready:
            return
        fn = ec.dedent_lines if dedent else ec.indent_lines

        def make() -> list[ec.TextEdit]:
            sel = self.selection() or (self.offset("insert"),) * 2
            text, base = self._context(sel[0])
            edits = fn(text, sel[0] - base, sel[1] - base, self.indent_style())
            return [ec.TextEdit(e.start + base, e.end + base, e.text) for e in edits]
        self.apply_batch(make, "Dedent" if dedent else "Indent", reselect=True)

    def toggle_comment(self) -> None:
        if not self.ready:
            return
        token = ec.comment_token_for(self.summary.get("name") or "") or "#"

        def make() -> list[ec.TextEdit]:
            sel = self.selection() or (self.offset("insert"),) * 2
            text, base = self._context(sel[0])
            edits = ec.toggle_comment(text, sel[0] - base, sel[1] - base, token)
            return [ec.TextEdit(e.start + base, e.end + base, e.text) for e in edits]
        self.apply_batch(make, "Toggle comment", reselect=True)

    def toggle_overwrite(self) -> None:
        self.overwrite = not self.overwrite
        self.text.configure(insertwidth=self.app.editor_font.measure("0") if self.overwrite
                            else 2)
        self.schedule_ui()
