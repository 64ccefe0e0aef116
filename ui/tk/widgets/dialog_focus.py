"""Opening and closing a dialog without locking or crashing Tk: the input grab handed on and
back, focus given back first, destruction deferred.

Tk 8.6.13 under Xvfb crashed in TkSetFocusWin when a focused toplevel was destroyed and the
focus forced elsewhere afterwards, or when a window was destroyed while its focus events were
still on their way (core dumps from the GUI tests). Every dialog — ui/tk/widgets/dialogs.py's and the
bridged ones of ui/tk/widgets/dialog_bridge.py — closes through these functions.

A modal dialog holds the app's input grab (:func:`take_grab`); a window opened over it must
take the grab in turn, or Tk gives every click and key to the grabbed dialog behind it and the
new window is dead (the Difference window over the conflict prompt: Close, × and Esc did
nothing). The grab goes back to the dialog under it when the window closes.
"""

from __future__ import annotations

import tkinter as tk
import weakref
from collections.abc import Callable

from ui.tk.widgets.tk_calls import tk_root


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


#: Per app (its Tk root): the modal windows open, the one holding the grab last.
_GRAB_STACKS: weakref.WeakKeyDictionary[tk.Tk, list[str]] = weakref.WeakKeyDictionary()


def _grab_stack(top: tk.Misc) -> list[str]:
    """The modal windows open in ``top``'s app, the one holding the grab last."""
    return _GRAB_STACKS.setdefault(tk_root(top), [])


def grab_holder(top: tk.Misc) -> str:
    """The path of the window holding this app's input grab ("" when none does)."""
    try:   # one grab per display; the list of them all is what `grab current` gives
        held = top.tk.splitlist(top.tk.call("grab", "current"))
    except tk.TclError:
        return ""
    return str(held[0]) if held else ""


def take_grab(top: tk.Toplevel) -> Callable[[], None]:
    """Make ``top`` modal: the app's input grab moves to it. The returned function — run by
    the caller when the dialog is answered, and by itself when ``top`` is unmapped or
    destroyed — releases it and hands it back to the modal window ``top`` was opened over, if
    that one is still shown. Idempotent."""
    stack = _grab_stack(top)
    name = str(top)
    try:
        top.grab_set()
    except tk.TclError:  # another grab (a menu's) is active: modality is a nicety
        return lambda: None
    if name in stack:
        stack.remove(name)
    stack.append(name)
    released = [False]

    def release() -> None:
        if released[0]:
            return
        released[0] = True
        if name in stack:
            stack.remove(name)
        holder = grab_holder(top)
        if holder not in (name, ""):
            return          # a window opened over this one holds it: it hands it on itself
        if holder == name:
            try:
                top.grab_release()
            except tk.TclError:
                pass
        for under in reversed(stack):
            try:
                if int(top.tk.call("winfo", "exists", under)) and \
                        int(top.tk.call("winfo", "viewable", under)):
                    top.tk.call("grab", "set", under)
                    return
            except tk.TclError:
                continue

    def gone(event: tk.Event) -> None:
        if event.widget is top:
            release()
    top.bind("<Unmap>", gone, add="+")
    top.bind("<Destroy>", gone, add="+")
    return release


def modal_over_grab(top: tk.Toplevel) -> None:
    """A window that is not modal itself (Find, Preferences…) takes the grab whenever it is
    shown while a modal dialog holds it, so it is never shown dead over that dialog."""
    if getattr(top, "_rio_modal_over_grab", False):
        return
    top._rio_modal_over_grab = True  # type: ignore[attr-defined]

    def shown(event: tk.Event | None = None) -> None:
        if event is not None and event.widget is not top:
            return
        holder = grab_holder(top)
        if not holder or holder == str(top) or holder.startswith(str(top) + "."):
            return
        try:
            if top.tk.call("winfo", "class", holder) == "Menu":
                return      # a menu's own short grab
        except tk.TclError:
            return
        take_grab(top)
    top.bind("<Map>", shown, add="+")
    if top.winfo_ismapped():
        shown()


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
