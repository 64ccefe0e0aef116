"""Dialogs hand the keyboard focus back before they are destroyed (Tk 8.6.13 crashed in
TkSetFocusWin when a focused toplevel went first and the focus was forced elsewhere after)."""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk

import pytest

from tests.support import wait_for
from ui.tk.widgets.dialog_bridge import bridge
from ui.tk.widgets.dialogs import Dialog
from ui.tk.widgets.theme import apply_theme

pytestmark = [pytest.mark.gui, pytest.mark.timeout(30)]


class _App:
    def __init__(self, root: tk.Tk):
        self.root = root
        self.theme = apply_theme(root, "classic")
        self.dialogs: dict = {}
        self.editor_font = "TkFixedFont"

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
    _settle(tk_root, lambda: not d.top.winfo_exists())
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


# --- the input grab: a window opened over a modal dialog is never dead --------------------------

def _grab(root: tk.Tk) -> str:
    held = root.tk.splitlist(root.tk.call("grab", "current"))
    return str(held[0]) if held else ""


def _settle(root: tk.Tk, until, seconds: float = 5.0) -> None:
    def updated() -> bool:
        root.update()
        return bool(until())
    wait_for(updated, seconds, 0.01)


def test_a_window_opened_over_a_modal_dialog_takes_the_grab_and_gives_it_back(tk_root):
    """The Difference window over the conflict prompt: the prompt held the grab, so Close, ×
    and Esc of the window over it went to the prompt and nothing closed it."""
    from ui.tk.widgets.dialogs import text_window
    app = _App(tk_root)
    _focus_on_editor(tk_root)
    under = Dialog(app, "conflict", "File Changed", "Changed on disk.", ["Reload", "Keep Mine"],
                   lambda b, v: None)
    tk_root.update()
    assert _grab(tk_root) == str(under.top)
    closed = []
    over = text_window(app, "difference", "Difference", "-a\n+b\n",
                       on_close=lambda: closed.append(True))     # not modal by itself
    tk_root.update()
    assert _grab(tk_root) == str(over.top)
    over.top.event_generate("<Escape>")       # Esc reaches it …
    tk_root.update()
    assert closed == [True] and "difference" not in app.dialogs
    assert _grab(tk_root) == str(under.top)   # … and the prompt under it is modal again


def test_a_modal_dialog_over_another_gives_the_grab_back(tk_root):
    app = _App(tk_root)
    _focus_on_editor(tk_root)
    under = Dialog(app, "unsaved", "Rio", "Save?", ["Save", "Cancel"], lambda b, v: None)
    tk_root.update()
    over = Dialog(app, "error", "Rio", "Disk full.", ["OK"], lambda b, v: None)
    tk_root.update()
    assert _grab(tk_root) == str(over.top)
    over.answer("OK")
    assert _grab(tk_root) == str(under.top)   # not released to nobody
    under.answer("Cancel")
    assert _grab(tk_root) == ""


def test_a_bridged_window_shown_over_a_modal_dialog_takes_the_grab(tk_root):
    app = _App(tk_root)
    _focus_on_editor(tk_root)
    under = Dialog(app, "conflict", "File Changed", "Changed.", ["Reload"], lambda b, v: None)
    tk_root.update()
    top = tk.Toplevel(tk_root)
    ttk.Button(top, text="Close", command=top.destroy).pack()
    bridge(app, "shortcuts", top, {}, {"Close": top.destroy})
    _settle(tk_root, until=lambda: _grab(tk_root) == str(top))     # once it is shown
    assert _grab(tk_root) == str(top)
    app.dialogs["shortcuts"].answer("Close")
    tk_root.update()
    assert _grab(tk_root) == str(under.top)


def test_a_dialog_asked_again_at_once_does_not_share_the_closing_ones_window(tk_root):
    """The conflict prompt asked again right after it was answered (after Show Difference):
    a Toplevel of the same path makes tkinter destroy the closing one at once — what
    destroy_later exists to avoid — and the closing one's deferred destroy must not reach
    the new one."""
    app = _App(tk_root)
    _focus_on_editor(tk_root)
    first = Dialog(app, "conflict", "File Changed", "Changed.", ["Reload"], lambda b, v: None)
    tk_root.update()
    first.answer("Reload")
    gone = str(first.top)
    again = Dialog(app, "conflict", "File Changed", "Changed.", ["Reload"], lambda b, v: None)
    assert str(again.top) != gone and first.top.winfo_exists()     # still closing, apart
    _settle(tk_root, lambda: not int(tk_root.tk.call("winfo", "exists", gone)))
    tk_root.update()
    assert not int(tk_root.tk.call("winfo", "exists", gone))
    assert again.top.winfo_exists() and again.top.winfo_ismapped()
    assert app.dialogs["conflict"] is again and _grab(tk_root) == str(again.top)
    again.answer("Reload")
