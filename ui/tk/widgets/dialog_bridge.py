"""Make the Search/Project/Preferences dialogs first-class for the window and its ``ui.*`` ops.

The app keeps its open dialogs in ``app.dialogs`` (ui/tk/widgets/dialogs.py): ``ui.state`` lists them
and ``ui.dialog_answer {name, button, fields}`` answers them, so tests and the screenshot
script drive the real window. :func:`bridge` registers one of our Toplevels there through a
small adapter with the same face (``describe``, ``set_fields``, ``answer``) and removes it when
the window goes. :func:`caption` gives the window the app's drawn title bar when no window
manager decorates it (Xvfb), so it looks like every other dialog of the app.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from ui.tk.widgets.dialog_focus import give_focus_back_on_close, modal_over_grab
from ui.tk.widgets.seams import CaptionOwner

_TRUE = {"1", "true", "yes", "on"}


class FieldVar(Protocol):
    """A dialog's field as ``ui.state`` reads it and ``ui.dialog_answer`` fills it: a Tk
    variable, or an adapter with the same two methods (the API key's, which reads "")."""

    def get(self) -> object: ...
    def set(self, value: Any) -> None: ...


class BridgedDialog:
    """One of the app's own Toplevels with the face of an open dialog
    (:class:`ui.tk.widgets.seams.OpenDialog`), for ``app.dialogs``."""

    def __init__(self, app: object, name: str, top: tk.Toplevel, fields: Mapping[str, FieldVar],
                 buttons: Mapping[str, Callable[[], object]],
                 message: str | Callable[[], str] = ""):
        self.app = app
        self.name = name
        self.top = top
        self.fields = dict(fields)
        self.button_fns = dict(buttons)
        self.buttons = tuple(buttons)
        self.message = message

    def values(self) -> dict[str, Any]:
        return {k: v.get() for k, v in self.fields.items()}

    def describe(self) -> dict[str, Any]:
        message = self.message() if callable(self.message) else self.message
        return {"name": self.name, "title": self.top.title(), "message": message,
                "buttons": list(self.buttons), "fields": self.values()}

    def set_fields(self, fields: Mapping[str, Any]) -> None:
        for key, value in fields.items():
            var = self.fields.get(key)
            if var is None:
                raise KeyError(f"dialog {self.name!r} has no field {key!r}; "
                               f"it has {', '.join(self.fields) or 'none'}")
            if isinstance(var, tk.BooleanVar):
                var.set(value if isinstance(value, bool) else str(value).lower() in _TRUE)
            else:
                var.set(str(value))

    def answer(self, button: str) -> None:
        fn = self.button_fns.get(button)
        if fn is None:
            raise KeyError(f"dialog {self.name!r} has no button {button!r}; "
                           f"it has {', '.join(self.buttons)}")
        fn()


def bridge(app: object, name: str, top: tk.Toplevel, fields: Mapping[str, FieldVar],
           buttons: Mapping[str, Callable[[], object]], message: str | Callable[[], str] = "",
           replaces: tuple[str, ...] = ()) -> BridgedDialog:
    """Register ``top`` as ``app.dialogs[name]`` (when the app keeps such a registry) until it
    is destroyed. ``replaces`` are other names the same window had before (Find ↔ Replace).
    Shown while a modal dialog holds the input grab, the window takes the grab (and hands it
    back when it goes): it is never shown dead over that dialog. ``app`` is any window: one
    without a registry (a test's bare window, a dialog's before the App is built) only gets
    the focus and grab handling."""
    adapter = BridgedDialog(app, name, top, fields, buttons, message)
    give_focus_back_on_close(top)
    modal_over_grab(top)
    registry = getattr(app, "dialogs", None)
    if isinstance(registry, dict):
        for old in replaces:
            if getattr(registry.get(old), "top", None) is top:
                del registry[old]
        registry[name] = adapter

        def gone(event: tk.Event) -> None:
            if event.widget is top and registry.get(name) is adapter:
                del registry[name]

        top.bind("<Destroy>", gone, add="+")
    return adapter


def open_windows(owner: object) -> dict[str, object]:
    """The windows open for ``owner`` (an app, a panel), by kind: one of each kind at a time,
    a second ask raises it. Kept on the owner, so they go with it."""
    windows: dict[str, object] = vars(owner).setdefault("_rio_open_windows", {})
    return windows


def caption(app: object, top: tk.Toplevel, title: str, close: Callable[[], None]) -> None:
    """The app's drawn caption when no window manager draws one (call before packing); a
    window without a theme (:class:`~ui.tk.widgets.seams.CaptionOwner`) gets none."""
    try:
        from ui.tk.widgets.dialogs import _caption, window_manager_running
        if not window_manager_running() and isinstance(app, CaptionOwner):
            top.configure(relief="raised", bd=2, background=app.theme.face)
            _caption(top, title, app, close)
    except Exception:  # noqa: BLE001 -- decoration only; never stop a dialog from opening
        return


@runtime_checkable
class _Window(Protocol):
    @property
    def top(self) -> tk.Toplevel: ...


def raise_if_open(existing: object) -> bool:
    """Raise a window of :func:`open_windows` that is still open; True if so (the caller then
    returns it instead of opening a second one)."""
    if not isinstance(existing, _Window):
        return False
    try:
        if existing.top.winfo_exists():
            existing.top.deiconify()
            existing.top.lift()
            return True
    except tk.TclError:
        pass
    return False


def dialog_window(owner: object, parent: tk.Misc, title: str) -> tk.Toplevel:
    """A new dialog window over ``parent``'s window, with ``owner``'s drawn caption."""
    top = tk.Toplevel(parent)
    top.title(title)
    top.transient(parent.winfo_toplevel())
    caption(owner, top, title, top.destroy)
    return top


def centre_over(top: tk.Toplevel, parent: tk.Misc) -> None:
    """Put ``top`` in the middle of ``parent``'s window (without a window manager nobody else
    places it, and (0, 0) covers the menu bar)."""
    try:
        top.update_idletasks()
        owner = parent.winfo_toplevel()
        w, h = top.winfo_reqwidth(), top.winfo_reqheight()
        x = owner.winfo_rootx() + max(0, (owner.winfo_width() - w) // 2)
        y = owner.winfo_rooty() + max(0, (owner.winfo_height() - h) // 3)
        top.geometry(f"+{x}+{y}")
    except tk.TclError:
        return
