"""Preferences, About and Keyboard Shortcuts: three small windows over :mod:`ui.tk.prefs.model`.

Entry points the app calls: :func:`show_preferences`, :func:`show_about` and
:func:`show_shortcuts` (rows of ``(label, accelerator)`` from the command table). Preferences
writes ``app.settings``, saves them to ``config_base()/ui.json`` and calls
``app.apply_settings()``; OK applies and closes, Apply applies and stays.
"""

from __future__ import annotations

import platform
import sys
import tkinter as tk
import tkinter.font as tkfont
from tkinter import ttk
from typing import Any

from ui.tk.app.seams import PrefsHost
from ui.tk.prefs.model import (
    SIZE_RANGE,
    TAB_RANGE,
    THEME_NAMES,
    Preferences,
    filter_shortcuts,
    parse_form,
    save_preferences,
)
from ui.tk.widgets.dialog_bridge import (
    bridge,
    centre_over,
    dialog_window,
    open_windows,
    raise_if_open,
)

SAMPLE = "def hello(n):  # 0O 1lI {[()]}\n    return f\"Rio {n!r}\""


def _parent(app: PrefsHost) -> tk.Misc:
    return app.root


def _dialog(app: PrefsHost, title: str) -> tk.Toplevel:
    """A new Toplevel over the app's window, with the app's caption."""
    return dialog_window(app, _parent(app), title)


def monospace_families(root: tk.Misc) -> list[str]:
    """Installed families whose glyphs all have one width (checked, like ui/tk/widgets/fonts.py)."""
    out = []
    for family in sorted(set(tkfont.families(root)), key=str.casefold):
        if family.startswith("@"):
            continue
        try:
            if tkfont.Font(root=root, family=family, size=10).metrics("fixed"):
                out.append(family)
        except tk.TclError:
            continue
    return out


class PreferencesDialog:
    def __init__(self, app: PrefsHost, top: tk.Toplevel):
        self.app = app
        self.top = top
        top.resizable(False, False)
        current = Preferences.from_settings(app.settings)
        font = current.font or _current_font(app)[0]
        size = current.size or _current_font(app)[1]
        body = ttk.Frame(top, padding=10)
        body.pack(fill="both", expand=True)

        self.font = tk.StringVar(top, value=font)
        self.size = tk.StringVar(top, value=str(size))
        self.tab_width = tk.StringVar(top, value=str(current.tab_width))
        self.use_spaces = tk.BooleanVar(top, value=current.use_spaces)
        self.theme = tk.StringVar(top, value=current.theme)
        self.wrap = tk.BooleanVar(top, value=current.wrap)
        self.line_numbers = tk.BooleanVar(top, value=current.line_numbers)

        editor = ttk.LabelFrame(body, text=" Editor font ", padding=8)
        editor.grid(row=0, column=0, columnspan=2, sticky="ew")
        ttk.Label(editor, text="Font:", underline=0).grid(row=0, column=0, sticky="w")
        self.font_box = ttk.Combobox(editor, textvariable=self.font, width=28,
                                     values=monospace_families(top))
        self.font_box.grid(row=0, column=1, sticky="w", padx=6, pady=2)
        ttk.Label(editor, text="Size:", underline=0).grid(row=0, column=2, sticky="w")
        self.size_box = ttk.Spinbox(editor, textvariable=self.size, from_=SIZE_RANGE[0],
                                    to=SIZE_RANGE[1], width=4, command=self._preview)
        self.size_box.grid(row=0, column=3, sticky="w", padx=6)
        self.sample = tk.Text(editor, height=2, width=44, borderwidth=2, relief="sunken",
                              wrap="none", cursor="arrow")
        self.sample.insert("1.0", SAMPLE)
        self.sample.configure(state="disabled")
        self.sample.grid(row=1, column=0, columnspan=4, sticky="ew", pady=(6, 0))

        indent = ttk.LabelFrame(body, text=" Indentation ", padding=8)
        indent.grid(row=1, column=0, sticky="nsew", pady=(8, 0), padx=(0, 4))
        ttk.Label(indent, text="Tab width:", underline=0).grid(row=0, column=0, sticky="w")
        self.tab_box = ttk.Spinbox(indent, textvariable=self.tab_width, from_=TAB_RANGE[0],
                                   to=TAB_RANGE[1], width=4)
        self.tab_box.grid(row=0, column=1, sticky="w", padx=6)
        ttk.Radiobutton(indent, text="Insert spaces", variable=self.use_spaces, value=True,
                        underline=7).grid(row=1, column=0, columnspan=2, sticky="w")
        ttk.Radiobutton(indent, text="Keep tabs", variable=self.use_spaces, value=False,
                        underline=5).grid(row=2, column=0, columnspan=2, sticky="w")

        view = ttk.LabelFrame(body, text=" View ", padding=8)
        view.grid(row=1, column=1, sticky="nsew", pady=(8, 0), padx=(4, 0))
        for i, name in enumerate(THEME_NAMES):
            ttk.Radiobutton(view, text=f"{name.title()} theme", variable=self.theme,
                            value=name).grid(row=i, column=0, sticky="w")
        ttk.Checkbutton(view, text="Word wrap", variable=self.wrap, underline=0).grid(
            row=2, column=0, sticky="w")
        ttk.Checkbutton(view, text="Line numbers", variable=self.line_numbers,
                        underline=0).grid(row=3, column=0, sticky="w")

        self.status = ttk.Label(body, text="", foreground="#c00000")
        self.status.grid(row=2, column=0, columnspan=2, sticky="w", pady=(6, 0))
        buttons = ttk.Frame(body)
        buttons.grid(row=3, column=0, columnspan=2, sticky="e", pady=(6, 0))
        self.buttons = {}
        for label, fn in (("OK", self.ok), ("Cancel", self.cancel), ("Apply", self.apply)):
            b = ttk.Button(buttons, text=label, width=10, command=fn,
                           default="active" if label == "OK" else "normal")
            b.pack(side="left", padx=2)
            self.buttons[label] = b
        for var in (self.font, self.size):
            var.trace_add("write", lambda *_: self._preview())
        top.bind("<Return>", lambda e: self.ok())
        top.bind("<Escape>", lambda e: self.cancel())
        top.protocol("WM_DELETE_WINDOW", self.cancel)
        bridge(app, "preferences", top,
               {"font": self.font, "size": self.size, "tab_width": self.tab_width,
                "use_spaces": self.use_spaces, "theme": self.theme, "wrap": self.wrap,
                "line_numbers": self.line_numbers},
               {"OK": self.ok, "Cancel": self.cancel, "Apply": self.apply})
        self._preview()
        self.font_box.focus_set()

    def _preview(self) -> None:
        try:
            size = int(self.size.get())
        except ValueError:
            return
        if SIZE_RANGE[0] <= size <= SIZE_RANGE[1] and self.font.get().strip():
            self.sample.configure(font=(self.font.get().strip(), size))

    def values(self) -> dict[str, Any]:
        return {"font": self.font.get(), "size": self.size.get(),
                "tab_width": self.tab_width.get(), "use_spaces": self.use_spaces.get(),
                "theme": self.theme.get(), "wrap": self.wrap.get(),
                "line_numbers": self.line_numbers.get()}

    def apply(self) -> bool:
        try:
            prefs = parse_form(self.values())
        except ValueError as exc:
            self.status.configure(text=str(exc))
            return False
        self.status.configure(text="")
        self.app.settings.update(prefs.to_settings())
        try:
            save_preferences(prefs)
        except OSError as exc:
            self.status.configure(text=f"Applied, but not saved: {exc.strerror or exc}")
        self.app.apply_settings()
        return True

    def ok(self) -> None:
        if self.apply():
            self.top.destroy()

    def cancel(self) -> None:
        self.top.destroy()


def _current_font(app: PrefsHost) -> tuple[str, int]:
    family, size = app.editor_font_tuple()
    return str(family), int(size)


def show_preferences(app: PrefsHost) -> PreferencesDialog:
    existing = open_windows(app).get("preferences")
    if isinstance(existing, PreferencesDialog) and raise_if_open(existing):
        return existing
    top = _dialog(app, "Preferences")
    dlg = open_windows(app)["preferences"] = PreferencesDialog(app, top)
    centre_over(top, _parent(app))
    return dlg


# ------------------------------------------------------------------------------------- about

class AboutBox:
    def __init__(self, app: PrefsHost, top: tk.Toplevel):
        self.top = top
        top.resizable(False, False)
        body = ttk.Frame(top, padding=14)
        body.pack(fill="both", expand=True)
        self.image: tk.PhotoImage | None = None
        try:
            from ui.tk.widgets.icons import icon
            theme = str(app.settings.get("theme", "classic"))
            self.image = icon("run", theme, top)
            ttk.Label(body, image=self.image).grid(row=0, column=0, rowspan=3, sticky="n",
                                                   padx=(0, 12))
        except Exception:  # noqa: BLE001 -- the box works without its picture
            self.image = None
        try:
            from rio import __version__ as version
        except ImportError:
            version = "dev"
        ttk.Label(body, text=f"Rio {version}", font=("TkDefaultFont", 14, "bold")).grid(
            row=0, column=1, sticky="w")
        ttk.Label(body, text="A '90s-style editor that drives coding agents.").grid(
            row=1, column=1, sticky="w")
        details = [f"Project: {app.project_root or '—'}",
                   f"Instance: {app.instance or '—'}",
                   f"Python {platform.python_version()}, Tk {tk.TkVersion}, "
                   f"{sys.platform}"]
        self.text = "\n".join(details)
        ttk.Label(body, text=self.text, justify="left", foreground="#404040").grid(
            row=2, column=1, sticky="w", pady=(8, 0))
        ok = ttk.Button(body, text="OK", width=10, command=top.destroy, default="active")
        ok.grid(row=3, column=0, columnspan=2, pady=(12, 0))
        top.bind("<Return>", lambda e: top.destroy())
        top.bind("<Escape>", lambda e: top.destroy())
        bridge(app, "about", top, {}, {"OK": top.destroy}, message=self.text)
        ok.focus_set()


def show_about(app: PrefsHost) -> AboutBox:
    existing = open_windows(app).get("about")
    if isinstance(existing, AboutBox) and raise_if_open(existing):
        return existing
    top = _dialog(app, "About Rio")
    box = open_windows(app)["about"] = AboutBox(app, top)
    centre_over(top, _parent(app))
    return box


# ---------------------------------------------------------------------------------- shortcuts

class ShortcutsWindow:
    def __init__(self, top: tk.Toplevel, rows: list[tuple[str, str]],
                 app: PrefsHost | None = None):
        self.top = top
        self.rows = [(str(label).replace("&", ""), str(accel)) for label, accel in rows]
        top.geometry("460x420")
        body = ttk.Frame(top, padding=8)
        body.pack(fill="both", expand=True)
        bar = ttk.Frame(body)
        bar.pack(side="top", fill="x")
        ttk.Label(bar, text="Search:", underline=0).pack(side="left")
        self.query = tk.StringVar(top)
        self.entry = ttk.Entry(bar, textvariable=self.query)
        self.entry.pack(side="left", fill="x", expand=True, padx=(4, 0))
        table = ttk.Frame(body)
        table.pack(side="top", fill="both", expand=True, pady=(6, 6))
        self.tree = ttk.Treeview(table, columns=("keys",), show="tree headings",
                                 selectmode="browse")
        self.tree.heading("#0", text="Command")
        self.tree.heading("keys", text="Keys")
        self.tree.column("#0", width=280)
        self.tree.column("keys", width=140)
        scroll = ttk.Scrollbar(table, orient="vertical", command=self.tree.yview)
        self.tree.configure(yscrollcommand=scroll.set)
        scroll.pack(side="right", fill="y")
        self.tree.pack(side="left", fill="both", expand=True)
        ttk.Button(body, text="Close", width=10, command=top.destroy).pack(side="right")
        self.query.trace_add("write", lambda *_: self.fill())
        top.bind("<Escape>", lambda e: top.destroy())
        if app is not None:
            bridge(app, "shortcuts", top, {"search": self.query}, {"Close": top.destroy})
        self.fill()
        self.entry.focus_set()

    def fill(self) -> None:
        self.tree.delete(*self.tree.get_children())
        for label, accel in filter_shortcuts(self.rows, self.query.get()):
            self.tree.insert("", "end", text=label, values=(accel,))

    def shown(self) -> list[tuple[str, str]]:
        return [(self.tree.item(i, "text"), self.tree.set(i, "keys"))
                for i in self.tree.get_children()]


def show_shortcuts(app: PrefsHost, rows: list[tuple[str, str]]) -> ShortcutsWindow:
    existing = open_windows(app).get("shortcuts")
    if isinstance(existing, ShortcutsWindow) and raise_if_open(existing):
        return existing
    top = _dialog(app, "Keyboard Shortcuts")
    win = open_windows(app)["shortcuts"] = ShortcutsWindow(top, rows, app)
    centre_over(top, _parent(app))
    return win
