"""The keys every editor shares: Tk class bindings on the ``RioEditor`` bindtag, which each
EditorTab's Text carries ahead of the Text class (ui/tk/editor/tab.py), so a ``"break"`` here stops
Tk's own binding. Installed once per Tk root by the window (ui/tk/app/main_window.py).

A binding finds its editor as the Text's master: an EditorTab's Text is its child.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable

from ui.tk.editor.tab import EditorTab


def install_editor_bindings(root: tk.Misc) -> None:
    """Class bindings shared by every editor (``RioEditor`` tag, ahead of the Text class)."""

    def ed(event: tk.Event) -> EditorTab | None:
        w = event.widget
        return w.master if isinstance(w, tk.Text) and isinstance(w.master, EditorTab) else None

    def key(event: tk.Event) -> str | None:
        e = ed(event)
        # Control (0x4) and Alt (0x8, Mod1) chords are shortcuts and menu mnemonics (Alt+F
        # opens File through Tk's "all" bindings), never text.
        if e is None or not event.char or int(event.state) & 0xC or event.keysym in (
                "BackSpace", "Delete", "Return", "Tab", "Escape", "KP_Enter"):
            return None
        if ord(event.char[0]) < 32 or ord(event.char[0]) == 127:
            return None
        e.typing.type_char(event.char)
        return "break"

    def bind(seq: str, fn: Callable[[EditorTab], object]) -> None:
        def handler(event: tk.Event) -> str:
            e = ed(event)
            if e is not None:
                fn(e)
            return "break"
        root.bind_class("RioEditor", seq, handler)

    def document_edge(end: bool) -> Callable[[tk.Event], str | None]:
        # Tk's own Ctrl+End/Ctrl+Home go to the ends of the WIDGET: in a big file's window
        # that is its last row (line 2,000), not the document's last line.
        def handler(event: tk.Event) -> str | None:
            e = ed(event)
            if e is None or e.window is None or e.replica is None:
                return None
            e.orig("tag", "remove", "sel", "1.0", "end")
            if end:
                last = e.replica.buffer.line_count
                e.goto(last, e.replica.buffer.line_end(last - 1))
            else:
                e.goto(1, 0)
            return "break"
        return handler

    root.bind_class("RioEditor", "<KeyPress>", key)
    root.bind_class("RioEditor", "<Control-End>", document_edge(True))
    root.bind_class("RioEditor", "<Control-Home>", document_edge(False))
    bind("<Return>", lambda e: e.typing.newline())
    bind("<KP_Enter>", lambda e: e.typing.newline())
    bind("<Tab>", lambda e: e.typing.tab())
    bind("<Shift-Tab>", lambda e: e.block_indent(dedent=True))
    bind("<ISO_Left_Tab>", lambda e: e.block_indent(dedent=True))
    def moved(event: tk.Event) -> None:
        e = ed(event)
        if e is not None:
            e.schedule_ui()

    for seq in ("<KeyRelease>", "<ButtonRelease-1>", "<B1-Motion>", "<FocusIn>", "<Configure>"):
        root.bind_class("RioEditor", seq, moved, add="+")
