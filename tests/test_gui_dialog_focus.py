"""Dialogs hand the keyboard focus back before they are destroyed (Tk 8.6.13 crashed in
TkSetFocusWin when a focused toplevel went first and the focus was forced elsewhere after)."""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk

import pytest

from ui.tk.dialog_bridge import bridge
from ui.tk.dialogs import Dialog
from ui.tk.theme import apply_theme

pytestmark = [pytest.mark.gui, pytest.mark.timeout(30)]


class _App:
    def __init__(self, root: tk.Tk):
        self.root = root
        self.theme = apply_theme(root, "classic")
        self.dialogs: dict = {}

    def ui_font_family(self) -> str:
        return "DejaVu Sans"


def _focus_on_editor(root: tk.Tk) -> tk.Text:
    text = tk.Text(root)
    text.pack()
    root.update()
    text.focus_force()
    root.update()
    return text


def test_a_dialog_gives_the_focus_back_then_goes_once_x_caught_up(tk_root):
    import time
    text = _focus_on_editor(tk_root)
    d = Dialog(_App(tk_root), "ask", "Ask", "Name?", ["OK", "Cancel"], lambda b, v: None,
               grab=False)
    button = d.button_widgets["OK"]
    button.focus_force()
    tk_root.update()
    assert str(tk_root.tk.call("focus")) == str(button)
    d.answer("OK")
    assert str(tk_root.tk.call("focus")) == str(text)     # at once
    assert not d.top.winfo_ismapped()                     # unmapped at once …
    deadline = time.monotonic() + 5
    while d.top.winfo_exists() and time.monotonic() < deadline:
        tk_root.update()
        time.sleep(0.01)
    assert not d.top.winfo_exists()                       # … destroyed a moment later
    assert str(tk_root.tk.call("focus")) == str(text)     # and the focus stayed


def test_a_bridged_dialog_gives_the_focus_back_before_it_goes(tk_root):
    text = _focus_on_editor(tk_root)
    top = tk.Toplevel(tk_root)
    entry = ttk.Entry(top)
    entry.pack()
    bridge(_App(tk_root), "x", top, {}, {"Close": lambda: top.destroy()})
    entry.focus_force()
    tk_root.update()
    order = []
    top.bind("<Destroy>", lambda e: order.append(str(tk_root.tk.call("focus"))), add="+")
    top.destroy()
    assert order and order[0] == str(text)
