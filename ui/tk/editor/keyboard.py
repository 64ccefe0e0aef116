"""Typing in an editor: what the keyboard and ``ui.type`` share — Enter with auto-indent, Tab,
closers that dedent, overwrite mode — and the block commands (indent, dedent, toggle comment).

A part of :class:`ui.tk.editor.tab.EditorTab` (``tab.typing``); it owns overwrite mode. The
rules are rio/text/edit_commands.py's; this turns them into widget edits (through the Text's
redirect, so each is a local edit sent to the core) or into one ``buffer.apply`` batch
(``EditorTab.apply_batch``: one undo step).
"""

from __future__ import annotations

import tkinter as tk
from typing import TYPE_CHECKING

from rio.text import edit_commands as ec
from ui.tk.editor.decor import EditorDecorations
from ui.tk.editor.offsets import EditorOffsets
from ui.tk.editor.seams import TypingTab
from ui.tk.editor.text_redirect import TextRedirect

if TYPE_CHECKING:
    from ui.tk.app.seams import EditorHost

CLOSERS = ")]}"


class EditorTyping:
    """Keys and block commands of an editor tab (see the module docstring). Edits go to the
    Text's own ``insert``/``delete``, so they pass the door like any key
    (ui/tk/editor/text_redirect.py)."""

    def __init__(self, tab: TypingTab, app: EditorHost, text: tk.Text, door: TextRedirect,
                 offsets: EditorOffsets, decor: EditorDecorations):
        self.editor = tab
        self.app = app
        self.text = text
        self.door = door
        self.offsets = offsets
        self.decor = decor
        self.overwrite = False

    def tab_width(self) -> int:
        return int(self.app.settings.get("tab_width", 4))

    def indent_style(self) -> ec.IndentStyle:
        return ec.IndentStyle(self.tab_width(), not self.app.settings.get("use_spaces", True))

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
        if not self.editor.ready:
            return
        if self.door.orig("tag", "ranges", "sel"):
            self.text.delete("sel.first", "sel.last")
        elif ch in CLOSERS and self.editor.window is None:
            off = self.offsets.offset("insert")
            text, base = self.offsets.context(off)
            edit = ec.dedent_for_closer(text, off - base, ch, self.indent_style())
            if edit is not None:
                self._replace(edit.start + base, edit.end + base, edit.text)
        elif self.overwrite and self.door.orig("compare", "insert", "<", "insert lineend"):
            self.text.delete("insert")
        self.text.insert("insert", ch)
        self.text.see("insert")

    def newline(self) -> None:
        if not self.editor.ready:
            return
        sel = self.editor.selection()
        off = self.offsets.offset("insert")
        lo, hi = sel if sel else (off, off)
        text, base = self.offsets.context(lo)
        highlighter = self.decor.highlighter
        lang = highlighter.lexer_name.lower() if highlighter else ""
        edit, cursor = ec.newline_with_indent(
            text, lo - base, hi - base, self.indent_style(), language=lang,
            comment_token=ec.comment_token_for(str(self.editor.summary.get("name") or "")))
        self._replace(edit.start + base, edit.end + base, edit.text)
        idx = self.offsets.index(cursor + base)
        if idx is not None:
            self.door.orig("mark", "set", "insert", idx)
        self.door.orig("tag", "remove", "sel", "1.0", "end")
        self.text.see("insert")

    def _replace(self, start: int, end: int, chars: str) -> None:
        """``[start, end)`` becomes ``chars``, through the Text's door (so it is a local edit
        sent to the core). An offset outside a big file's window is no edit, as Tk's own
        refusal of a bad index was."""
        first, last = self.offsets.index(start), self.offsets.index(end)
        if first is not None and last is not None:
            self.text.delete(first, last)
        at = self.offsets.index(start)
        if at is not None:
            self.text.insert(at, chars)

    def tab(self) -> None:
        if not self.editor.ready:
            return
        sel = self.editor.selection()
        if sel and "\n" in self.door.orig("get", "sel.first", "sel.last"):
            self.block_indent(dedent=False)
            return
        self.type_char(self.indent_style().unit)

    def block_indent(self, dedent: bool) -> None:
        if not self.editor.ready:
            return
        fn = ec.dedent_lines if dedent else ec.indent_lines

        def make() -> list[ec.TextEdit]:
            sel = self.editor.selection() or (self.offsets.offset("insert"),) * 2
            text, base = self.offsets.context(sel[0])
            edits = fn(text, sel[0] - base, sel[1] - base, self.indent_style())
            return [ec.TextEdit(e.start + base, e.end + base, e.text) for e in edits]
        self.editor.apply_batch(make, "Dedent" if dedent else "Indent", reselect=True)

    def toggle_comment(self) -> None:
        if not self.editor.ready:
            return
        token = ec.comment_token_for(str(self.editor.summary.get("name") or "")) or "#"

        def make() -> list[ec.TextEdit]:
            sel = self.editor.selection() or (self.offsets.offset("insert"),) * 2
            text, base = self.offsets.context(sel[0])
            edits = ec.toggle_comment(text, sel[0] - base, sel[1] - base, token)
            return [ec.TextEdit(e.start + base, e.end + base, e.text) for e in edits]
        self.editor.apply_batch(make, "Toggle comment", reselect=True)

    def toggle_overwrite(self) -> None:
        self.overwrite = not self.overwrite
        self.text.configure(insertwidth=self.app.editor_font.measure("0") if self.overwrite
                            else 2)
        self.decor.schedule_ui()
