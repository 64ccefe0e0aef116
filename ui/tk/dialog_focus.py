"""Closing a dialog without crashing Tk: focus given back first, destruction deferred.

Tk 8.6.13 under Xvfb crashed in TkSetFocusWin when a focused toplevel was destroyed and the
focus forced elsewhere afterwards, or when a window was destroyed while its focus events were
still on their way (core dumps from the GUI tests). Every dialog — ui/tk/dialogs.py's and the
bridged ones of ui/tk/dialog_bridge.py — closes through these two functions.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable


def give_focus_back_on_close(top: tk.Toplevel) -> Callable[[], None]:
    """Before ``top.destroy()``, give the keyboard focus back to the widget that had it when
    the dialog opened (as Tk's own tk_dialog does). Destroying a focused toplevel first and
    forcing the focus elsewhere afterwards crashed Tk 8.6.13 in TkSetFocusWin under Xvfb.
    Returns the give-back itself, for a caller that closes the window in its own way."""
    old = str(top.tk.call("focus"))
    if not old or old == str(top) or old.startswith(str(top) + "."):
        return lambda: None

    def focus_back() -> None:
        try:
            if int(top.tk.call("winfo", "exists", old)):
                top.tk.call("focus", old)
        except tk.TclError:
            pass
    destroy = top.destroy

    def focus_back_then_destroy() -> None:
        focus_back()
        destroy()
    top.destroy = focus_back_then_destroy  # type: ignore[method-assign]
    return focus_back


def destroy_later(top: tk.Toplevel, delay_ms: int = 200) -> None:
    """Unmap a dialog now and destroy it once X has reported the focus moving away: a window
    destroyed while its focus events were still on their way crashed Tk 8.6.13 in
    TkSetFocusWin (GUI tests under Xvfb, core dumps)."""
    top.withdraw()

    def destroy() -> None:
        try:
            if top.winfo_exists():
                tk.Toplevel.destroy(top)
        except tk.TclError:
            pass
    top.after(delay_ms, destroy)
