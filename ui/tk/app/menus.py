"""The command table made visible: the menu bar, the toolbar and the keyboard shortcuts.

Everything here is generated from the window's :class:`~ui.tk.app.commands.CommandTable`
(ui/tk/app/commands.py): a plug-in that registers a command (``App.register_command``) gets its
menu entry, toolbar button and key at once. Rebuilds are coalesced to one per idle moment
(plug-ins register a dozen commands in a row, and each rebuild of every menu costs ~10 ms).
What this uses of the window is declared in ui/tk/app/seams.py (``MenuHost``).
"""

from __future__ import annotations

import tkinter as tk
from functools import partial
from tkinter import ttk

from ui.tk.app.commands import MENUS, strip_mnemonic, tk_sequences
from ui.tk.app.seams import MenuHost
from ui.tk.widgets.icons import ICON_NAMES, icon
from ui.tk.widgets.tooltip import Tooltip

#: Commands an entry widget does itself: its own clipboard keys, not the editor's.
TEXT_ONLY_IN_ENTRIES = {"edit.cut", "edit.copy", "edit.paste", "edit.select_all", "edit.undo",
                        "edit.redo"}
MENU_ACCEL_MARGIN = "   "     # after each menu accelerator (see menu_accel)
_ENTRY_CLASSES = ("Entry", "TEntry", "TCombobox", "Spinbox", "TSpinbox", "Text")


def menu_accel(accel: str) -> str:
    """A menu's accelerator text. Tk on X11 draws it flush against the menu's right border;
    trailing spaces give it the margin '90s menus had."""
    return f"{accel}{MENU_ACCEL_MARGIN}" if accel else ""


class CommandSurfaces:
    """The menu bar (``menubar``), the toolbar (``toolbar``) and the key bindings of a window."""

    def __init__(self, app: MenuHost):
        self.app = app
        root = app.root
        self.menubar = tk.Menu(root, tearoff=False)
        root.configure(menu=self.menubar)
        self.style_menubar()
        self.toolbar = ttk.Frame(root, style="Raised.TFrame", padding=(2, 2))
        self.toolbar.pack(side="top", fill="x")
        self.recent_menu: tk.Menu | None = None
        self.toggle_vars: dict[str, tk.BooleanVar] = {}
        self.choice_vars: dict[str, tk.StringVar] = {}
        self._bound_sequences: set[str] = set()
        self._icons: list[tk.PhotoImage] = []
        self._rebuild_job: str | None = None
        self._rebuild_toolbar_too = False

    def schedule_rebuild(self, toolbar_too: bool) -> None:
        """Rebuild the menus (and the toolbar) once the current burst of changes is over."""
        self._rebuild_toolbar_too = self._rebuild_toolbar_too or toolbar_too
        if self._rebuild_job is None:
            self._rebuild_job = self.app.root.after_idle(self._rebuild_now)

    def _rebuild_now(self) -> None:
        self._rebuild_job = None
        self.rebuild_menus()
        if self._rebuild_toolbar_too:
            self._rebuild_toolbar_too = False
            self.rebuild_toolbar()

    def style_menubar(self) -> None:
        t = self.app.theme
        self.menubar.configure(background=t.face, foreground=t.text_fg,
                               activebackground=t.title_active_bg,
                               activeforeground=t.title_active_fg,
                               disabledforeground=t.disabled_fg)

    def rebuild_menus(self) -> None:
        app, bar = self.app, self.menubar
        bar.delete(0, "end")
        for menu_name, label in MENUS:
            entries = app.commands.menu(menu_name)
            if not entries:
                continue
            old = bar.children.get(menu_name.lower())
            if old is not None:
                old.destroy()
            m = tk.Menu(bar, tearoff=False, name=menu_name.lower())
            text, underline = strip_mnemonic(label)
            bar.add_cascade(label=text, underline=underline, menu=m)
            for cmd in entries:
                if cmd is None:
                    m.add_separator()
                elif cmd.name == "file.recent":
                    self.recent_menu = tk.Menu(m, tearoff=False, name="recent")
                    m.add_cascade(label=cmd.text, underline=cmd.underline, menu=self.recent_menu)
                    self.fill_recent()
                elif cmd.toggle:
                    var = self.toggle_vars.setdefault(cmd.toggle, tk.BooleanVar(app.root))
                    m.add_checkbutton(label=cmd.text, underline=cmd.underline,
                                      accelerator=menu_accel(cmd.accel), variable=var,
                                      command=partial(app.invoke, cmd.name))
                elif cmd.choice:
                    choice = self.choice_vars.setdefault(cmd.choice[0], tk.StringVar(app.root))
                    m.add_radiobutton(label=cmd.text, underline=cmd.underline,
                                      accelerator=menu_accel(cmd.accel), variable=choice,
                                      value=cmd.choice[1],
                                      command=partial(app.invoke, cmd.name))
                else:
                    m.add_command(label=cmd.text, underline=cmd.underline,
                                  accelerator=menu_accel(cmd.accel),
                                  command=partial(app.invoke, cmd.name))
        self.sync(app.toggle_values(), app.choice_values())
        self._bind_keys()

    def sync(self, toggles: dict[str, bool], choices: dict[str, str]) -> None:
        """Make the check and radio entries show the window's state."""
        for key, var in self.toggle_vars.items():
            if key in toggles and var.get() != toggles[key]:
                var.set(toggles[key])
        for key, choice in self.choice_vars.items():
            current = choices.get(key, "")
            if choice.get() != current:
                choice.set(current)

    def fill_recent(self) -> None:
        menu = self.recent_menu
        if menu is None:
            return
        menu.delete(0, "end")
        recent = self.app.session.recent
        if not recent:
            menu.add_command(label="(none)", state="disabled")
        for i, path in enumerate(recent):
            label = f"{i + 1} {path}" if i < 9 else path
            menu.add_command(label=label, underline=0 if i < 9 else -1,
                             command=partial(self.app.open_path, path))

    def _bind_keys(self) -> None:
        root = self.app.root
        for cmd in self.app.commands:
            for seq in tk_sequences(cmd.accel):
                if seq in self._bound_sequences:
                    continue
                self._bound_sequences.add(seq)
                root.bind_class("RioKeys", seq, partial(self._key, seq=seq, in_editor=True))
                root.bind(seq, partial(self._key, seq=seq, in_editor=False))

    def _key(self, event: tk.Event, seq: str, in_editor: bool) -> str | None:
        cmd = next((c for c in self.app.commands if seq in tk_sequences(c.accel)), None)
        if cmd is None:
            return None
        if not in_editor and cmd.name in TEXT_ONLY_IN_ENTRIES and \
                event.widget.winfo_class() in _ENTRY_CLASSES:
            return None  # an entry's own clipboard keys, not the editor's
        self.app.invoke(cmd.name)
        return "break"

    def rebuild_toolbar(self) -> None:
        app = self.app
        for w in self.toolbar.winfo_children():
            w.destroy()
        self._icons = []
        for cmd in app.commands.toolbar():
            if cmd is None:
                ttk.Separator(self.toolbar, orient="vertical").pack(side="left", fill="y",
                                                                     padx=4, pady=2)
                continue
            if cmd.icon not in ICON_NAMES:
                continue
            img = icon(cmd.icon, app.theme.name, app.root)
            self._icons.append(img)
            b = ttk.Button(self.toolbar, image=img, style="Toolbutton", takefocus=False,
                           command=partial(app.invoke, cmd.name), name=f"tb_{cmd.icon}")
            b.pack(side="left", padx=1)
            Tooltip(b, cmd.tooltip, app)
        for hook in app.toolbar_hooks:
            hook()   # e.g. the agent panel's AI button at the right end (ui/tk/agent/panel.py)
