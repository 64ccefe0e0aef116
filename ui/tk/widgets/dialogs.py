"""The desktop's own dialogs: message boxes with named buttons, and small forms.

Not ``tkinter.messagebox``: those run a nested wait inside Tcl and expose no widgets, so neither
the ``ui.dialog_answer`` control op nor a test could press their buttons. A :class:`Dialog` is a
transient Toplevel that calls back with the button pressed and the fields' values, and is listed
in ``app.dialogs`` by name while open, so ``ui.state`` can report it and ``ui.dialog_answer``
can answer it exactly as a user would.
"""

from __future__ import annotations

import itertools
import tkinter as tk
from dataclasses import dataclass
from functools import partial
from tkinter import ttk
from typing import Any, Callable, Mapping, Sequence

from ui.tk.widgets.dialog_focus import (
    destroy_later,
    give_focus_back_on_close,
    grab_holder,
    take_grab,
)
from ui.tk.widgets.seams import CaptionOwner, DialogOwner, TextWindowOwner

Answer = Callable[[str, dict[str, str]], None]
_SERIAL = itertools.count(1)


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    value: str = ""
    choices: tuple[str, ...] = ()     # a read-only combobox when given


class Dialog:
    """A modal-looking (grabbed, transient) dialog that answers through a callback.

    ``buttons`` are labels; the first is the default (Enter), the one named "Cancel" (or the
    last) answers Escape and the window's close box. ``grab=False`` makes it non-modal, unless
    it opens over a modal dialog: then it takes the grab all the same (a window under someone
    else's grab gets no click and no key), and gives it back when it closes.
    """

    def __init__(self, app: DialogOwner, name: str, title: str, message: str,
                 buttons: Sequence[str], on_answer: Answer, *,
                 fields: Sequence[Field] = (), detail: str = "", icon: str = "info",
                 body: Callable[[ttk.Frame], None] | None = None, grab: bool = True):
        self.app = app
        self.name = name
        self.buttons = tuple(buttons)
        self.on_answer = on_answer
        self.done = False
        root = app.root
        widget = f"dlg_{name}"
        if widget in root.children:
            # The last dialog of that name is still closing (destroy_later): a second
            # Toplevel of that path makes tkinter destroy it at once, what destroy_later
            # avoids (the conflict prompt is asked again as soon as the difference closes;
            # sharing the path, ui.state once met "bad window path name .dlg_conflict").
            widget += f"_{next(_SERIAL)}"
        self.top = top = tk.Toplevel(root, name=widget)
        self._focus_back = give_focus_back_on_close(top)
        top.title(title)
        # A raised edge of its own: crisp under any window manager, and still a 3-D box
        # where there is none (Xvfb screenshots).
        top.configure(relief="raised", bd=2, background=app.theme.face)
        top.transient(root)
        top.resizable(False, False)
        top.protocol("WM_DELETE_WINDOW", lambda: self.answer(self._cancel_label()))
        if not window_manager_running():
            _caption(top, title, app, lambda: self.answer(self._cancel_label()))
        outer = ttk.Frame(top, padding=12)
        outer.pack(fill="both", expand=True)
        row = ttk.Frame(outer)
        row.pack(fill="x")
        glyph = {"info": "i", "warning": "!", "question": "?", "error": "x"}.get(icon, "i")
        colour = {"info": "#000080", "warning": "#808000", "question": "#000080",
                  "error": "#c00000"}.get(icon, "#000080")
        badge = tk.Canvas(row, width=34, height=34, highlightthickness=0,
                          background=app.theme.face)
        badge.create_oval(2, 2, 32, 32, fill=colour, outline="#000000")
        badge.create_text(17, 17, text=glyph, fill="#ffffff",
                          font=(app.ui_font_family(), 14, "bold"))
        badge.pack(side="left", anchor="n", padx=(0, 12))
        texts = ttk.Frame(row)
        texts.pack(side="left", fill="both", expand=True)
        self.message = ttk.Label(texts, text=message, wraplength=380, justify="left")
        self.message.pack(anchor="w")
        if detail:
            ttk.Label(texts, text=detail, wraplength=380, justify="left",
                      foreground=app.theme.disabled_fg).pack(anchor="w", pady=(6, 0))
        self.vars: dict[str, tk.StringVar] = {}
        self.widgets: dict[str, ttk.Widget] = {}
        if fields:
            form = ttk.Frame(outer)
            form.pack(fill="x", pady=(10, 0))
            for i, f in enumerate(fields):
                ttk.Label(form, text=f.label).grid(row=i, column=0, sticky="w", pady=2,
                                                   padx=(0, 8))
                var = tk.StringVar(top, f.value)
                if f.choices:
                    w: ttk.Widget = ttk.Combobox(form, textvariable=var, values=f.choices,
                                                 state="readonly", width=18)
                else:
                    w = ttk.Entry(form, textvariable=var, width=44)
                w.grid(row=i, column=1, sticky="ew", pady=2)
                self.vars[f.name] = var
                self.widgets[f.name] = w
            form.columnconfigure(1, weight=1)
        if body is not None:
            extra = ttk.Frame(outer)
            extra.pack(fill="both", expand=True, pady=(10, 0))
            body(extra)
        bar = ttk.Frame(outer)
        bar.pack(fill="x", pady=(14, 0))
        self.button_widgets: dict[str, ttk.Button] = {}
        for label in reversed(self.buttons):
            b = ttk.Button(bar, text=label, width=max(10, len(label) + 2),
                           command=partial(self.answer, label))
            b.pack(side="right", padx=(6, 0))
            self.button_widgets[label] = b
        top.bind("<Return>", lambda e: self.answer(self.buttons[0]))
        top.bind("<Escape>", lambda e: self.answer(self._cancel_label()))
        app.dialogs[name] = self
        top.update_idletasks()
        self._centre()
        first = next(iter(self.widgets.values()), None) or self.button_widgets[self.buttons[0]]
        first.focus_set()
        self._release_grab: Callable[[], None] = lambda: None
        if grab or grab_holder(top) not in ("", str(top)):
            self._release_grab = take_grab(top)

    def _cancel_label(self) -> str:
        return "Cancel" if "Cancel" in self.buttons else self.buttons[-1]

    def _centre(self) -> None:
        root = self.app.root
        w, h = self.top.winfo_reqwidth(), self.top.winfo_reqheight()
        x = root.winfo_rootx() + (root.winfo_width() - w) // 2
        y = root.winfo_rooty() + (root.winfo_height() - h) // 3
        self.top.geometry(f"+{max(0, x)}+{max(0, y)}")

    def values(self) -> dict[str, str]:
        return {k: v.get() for k, v in self.vars.items()}

    def set_fields(self, fields: Mapping[str, Any]) -> None:
        for k, v in fields.items():
            if k not in self.vars:
                raise KeyError(f"dialog {self.name!r} has no field {k!r}; "
                               f"it has {', '.join(self.vars) or 'none'}")
            self.vars[k].set(str(v))

    def answer(self, button: str) -> None:
        if self.done:
            return
        if button not in self.buttons:
            raise KeyError(f"dialog {self.name!r} has no button {button!r}; "
                           f"it has {', '.join(self.buttons)}")
        self.done = True
        values = self.values()
        if self.app.dialogs.get(self.name) is self:
            del self.app.dialogs[self.name]
        self._release_grab()        # back to the dialog under this one, if any
        self._focus_back()          # before the window goes, as tk_dialog does
        destroy_later(self.top)
        self.on_answer(button, values)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.top.title(),
                "message": str(self.message.cget("text")), "buttons": list(self.buttons),
                "fields": self.values(), **_where(self.top, self.button_widgets)}


def _where(top: tk.Toplevel, buttons: Mapping[str, tk.Misc]) -> dict[str, Any]:
    """Where the dialog is on the screen, and the centre of each button and of the drawn
    close box ("×"), so a script or a test can click them as a user would (xdotool)."""
    try:
        if not top.winfo_ismapped():
            return {"geometry": None, "click": {}}
        controls = dict(buttons)
        close = top.children.get("keep_caption")
        if close is not None and "keep_close" in close.children:
            controls["×"] = close.children["keep_close"]
        return {"geometry": {"x": top.winfo_rootx(), "y": top.winfo_rooty(),
                             "width": top.winfo_width(), "height": top.winfo_height()},
                "click": {label: [w.winfo_rootx() + w.winfo_width() // 2,
                                  w.winfo_rooty() + w.winfo_height() // 2]
                          for label, w in controls.items()}}
    except tk.TclError:
        return {"geometry": None, "click": {}}


_WM: list[bool] = []


def window_manager_running() -> bool:
    """Is an (EWMH) window manager decorating our windows? Asked once, via xprop.

    Without one (a bare X server, Xvfb) a dialog would have no title bar at all, so the dialog
    draws a classic caption of its own."""
    if not _WM:
        import shutil
        import subprocess
        running = True
        if shutil.which("xprop"):
            try:
                out = subprocess.run(["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"],
                                     capture_output=True, text=True, timeout=3).stdout
                running = "window id" in out
            except (OSError, subprocess.TimeoutExpired):
                running = True
        _WM.append(running)
    return _WM[0]


def _caption(top: tk.Toplevel, title: str, app: CaptionOwner,
             close: Callable[[], None]) -> None:
    t = app.theme
    bar = tk.Frame(top, background=t.title_active_bg, name="keep_caption")
    bar.pack(side="top", fill="x", padx=1, pady=(1, 0))
    tk.Label(bar, text=title, background=t.title_active_bg, foreground=t.title_active_fg,
             font=(app.ui_font_family(), 9, "bold"), anchor="w", padx=4,
             name="keep_title").pack(side="left", fill="x", expand=True, pady=2)
    tk.Button(bar, text="×", command=close, width=2, padx=0, pady=0, bd=2, relief="raised",
              background=t.face, foreground=t.text_fg, highlightthickness=0,
              font=(app.ui_font_family(), 8, "bold"), takefocus=False,
              name="keep_close").pack(side="right", padx=2, pady=2)


def text_window(app: TextWindowOwner, name: str, title: str, content: str,
                tags: Callable[[tk.Text], None] | None = None, *,
                on_close: Callable[[], None] | None = None, grab: bool = False) -> Dialog:
    """A read-only text in a dialog (the difference view); ``on_close()`` runs when it is
    closed (Close, Esc, ×)."""
    holder: dict[str, tk.Text] = {}

    def body(frame: ttk.Frame) -> None:
        t = tk.Text(frame, width=90, height=24, wrap="none", font=app.editor_font,
                    background=app.theme.editor_bg, foreground=app.theme.editor_fg,
                    relief="sunken", bd=2, highlightthickness=0)
        sb = ttk.Scrollbar(frame, orient="vertical", command=t.yview)
        t.configure(yscrollcommand=sb.set)
        t.pack(side="left", fill="both", expand=True)
        sb.pack(side="right", fill="y")
        t.insert("1.0", content)
        if tags is not None:
            tags(t)
        t.configure(state="disabled")
        holder["t"] = t

    return Dialog(app, name, title, "", ["Close"],
                  lambda b, v: on_close() if on_close is not None else None, body=body,
                  grab=grab)
