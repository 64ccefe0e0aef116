"""The desktop's main window: menus, toolbar, tabs, panes, status bar — a client of the core.

The window owns no document: every tab is an :class:`~ui.tk.editor.EditorTab` fed by the core
over ``app.conn`` (drained from Tk's loop by ui/tk/bus_pump.py). What the window shows is
generated from the command table (ui/tk/commands.py); what it remembers between runs is
ui/tk/session.py. The plug-in modules (find dialog, output pane, project tree, run commands,
preferences) plug in through the seams below and are imported lazily, so each side works alone:

``open_path(path, line, col)``, ``active_editor()``, ``output_pane_slot``, ``tree_slot``,
``conn``, ``register_command(name, label, accel, fn, menu=...)``, ``settings`` +
``apply_settings()``, ``save_all()``, ``project_root``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import tkinter as tk
import tkinter.font as tkfont
from pathlib import Path
from tkinter import ttk
from typing import Any, Callable

from rio.protocol.errors import BusError, RioError, error_from_wire
from rio.protocol.frames import Reply, thaw
from ui.tk import session as session_mod
from ui.tk.commands import MENUS, Command, CommandTable, default_table, tk_sequences
from ui.tk.dialogs import Dialog
from ui.tk.editor import EditorTab
from ui.tk.editor_bindings import install_editor_bindings
from ui.tk.file_actions import FileActions, newline_name
from ui.tk.fonts import install_named_fonts
from ui.tk.icons import ICON_NAMES, icon
from ui.tk.theme import THEMES, apply_theme
from ui.tk.tooltip import Tooltip

log = logging.getLogger("rio.ui")

DEFAULT_SETTINGS: dict[str, Any] = {"font": "", "size": 0, "tab_width": 4, "use_spaces": True,
                                    "theme": "classic", "wrap": False, "line_numbers": True}
TEXT_ONLY_IN_ENTRIES = {"edit.cut", "edit.copy", "edit.paste", "edit.select_all", "edit.undo",
                        "edit.redo"}
MIN_ZOOM, MAX_ZOOM = 6, 40
MENU_ACCEL_MARGIN = "   "     # after each menu accelerator (see _menu_accel)
READY = "Ready"               # the status message when there is nothing to say
AUTOSAVE_MS = 2000


class App(FileActions):
    def __init__(self, root: tk.Tk, conn: Any, *, project_root: str, instance: str,
                 state_dir: Path | None = None, remote: str | None = None):
        self.root = root
        self.conn = conn
        #: the project's folder on the instance's machine (another one when ``remote``)
        self.project_root = project_root
        #: ``tcp://HOST:PORT`` when this window shows a remote instance (``rio --connect``)
        self.remote = remote
        self.instance = instance
        self.state_dir = state_dir
        self.session = session_mod.load(state_dir) if state_dir else session_mod.Session()
        self.settings: dict[str, Any] = {**DEFAULT_SETTINGS, **dict(self.session.settings),
                                         **_saved_preferences()}
        self.commands: CommandTable = default_table()
        self.editors: dict[str, EditorTab] = {}
        self.plugins_ready = False          # set by _install_plugins, just after the first draw
        self._when_plugins: list[Callable[[], object]] = []
        #: buffer id → name, while its journal cannot be written (buffer.journal_failed)
        self.unprotected: dict[str, str] = {}
        self.dialogs: dict[str, Dialog] = {}
        self.message = tk.StringVar(root, READY)
        self._bound_sequences: set[str] = set()
        self._toggle_vars: dict[str, tk.BooleanVar] = {}
        self._choice_vars: dict[str, tk.StringVar] = {}
        self._messages: dict[str, str] = {}      # the status message each tab last had
        self.quitting = False
        self.exit_code = 0
        self.theme = apply_theme(root, self.settings.get("theme", "classic"))
        editor_choice, ui_choice = install_named_fonts(root)
        self._ui_family = ui_choice.family
        self.settings["font"] = self.settings.get("font") or editor_choice.family
        self.settings["size"] = int(self.settings.get("size") or editor_choice.size)
        self.editor_font = tkfont.Font(root, family=self.settings["font"],
                                       size=self.settings["size"])
        self._zoom_base = self.settings["size"]
        root.title(f"Rio — {Path(project_root).name}")
        root.geometry(self.session.layout.geometry)
        root.minsize(480, 320)
        self._build()
        self._bind_handlers()
        install_editor_bindings(root)
        self.rebuild_menus()
        self.rebuild_toolbar()
        root.protocol("WM_DELETE_WINDOW", self.quit)
        # The plug-in panes come right after the window is first drawn (their
        # imports take ~0.1–0.25 s: the editor is usable first).
        self.root.after_idle(lambda: self.root.after(20, self._install_plugins))
        self.root.after(AUTOSAVE_MS, self._autosave)

    # --- building the window ---------------------------------------------------------------------
    def _build(self) -> None:
        root = self.root
        self.menubar = tk.Menu(root, tearoff=False)
        root.configure(menu=self.menubar)
        self._style_menubar()
        self.toolbar = ttk.Frame(root, style="Raised.TFrame", padding=(2, 2))
        self.toolbar.pack(side="top", fill="x")
        self.status = ttk.Frame(root, padding=(2, 2))
        self.status.pack(side="bottom", fill="x")
        self._build_status()
        lay = self.session.layout
        self.hpane = tk.PanedWindow(root, orient="horizontal", sashwidth=5, bd=0,
                                    sashrelief="raised", background=self.theme.face)
        self.hpane.pack(side="top", fill="both", expand=True, padx=2, pady=(2, 0))
        self.tree_slot = ttk.Frame(self.hpane, style="Sunken.TFrame", width=lay.tree_width)
        self.vpane = tk.PanedWindow(self.hpane, orient="vertical", sashwidth=5, bd=0,
                                    sashrelief="raised", background=self.theme.face)
        self.hpane.add(self.tree_slot, minsize=80, width=lay.tree_width)
        self.hpane.add(self.vpane, minsize=200)
        self.notebook = ttk.Notebook(self.vpane, takefocus=False)
        self.output_pane_slot = ttk.Frame(self.vpane, style="Sunken.TFrame",
                                          height=lay.output_height)
        self.vpane.add(self.notebook, minsize=120, stretch="always")
        # "never": the editor takes the extra room (tk.PanedWindow stretches the last pane).
        self.vpane.add(self.output_pane_slot, minsize=40, height=lay.output_height,
                       stretch="never")
        self.notebook.bind("<<NotebookTabChanged>>", lambda e: self._on_tab_changed())
        self.notebook.bind("<Button-2>", self._on_middle_click)
        self._tree_placeholder = ttk.Label(self.tree_slot, text="", anchor="nw")
        self._tree_placeholder.pack(fill="both", expand=True)

    def _build_status(self) -> None:
        s = self.status
        self.status_vars = {k: tk.StringVar(self.root, "") for k in
                            ("position", "selection", "encoding", "newline", "mode", "modified",
                             "agent")}
        # The fixed cells are packed first, from the right: pack hands out space in packing
        # order, so a long message packed first pushed the agent cell off the window. The
        # message takes what is left and is cut (its full text stays in ui.state).
        ttk.Sizegrip(s).pack(side="right", anchor="se")
        self.agent_slot = ttk.Frame(s)
        self.agent_slot.pack(side="right", padx=(2, 0))
        self.status_cells: dict[str, tk.Widget] = {"agent": self.agent_slot}
        ttk.Label(self.agent_slot, textvariable=self.status_vars["agent"],
                  style="Status.TLabel", width=12, anchor="center").pack()
        self.status_vars["agent"].set("No agent")
        widths = {"position": 16, "selection": 10, "encoding": 9, "newline": 5, "mode": 4,
                  "modified": 9}
        for key in ("modified", "mode", "newline", "encoding", "selection", "position"):
            cell = ttk.Label(s, textvariable=self.status_vars[key], style="Status.TLabel",
                             width=widths[key], anchor="center")
            cell.pack(side="right", padx=(2, 0))
            self.status_cells[key] = cell
        self.message_label = ttk.Label(s, textvariable=self.message, style="Status.TLabel",
                                       anchor="w", width=1)
        self.message_label.pack(side="left", fill="x", expand=True)

    def ui_font_family(self) -> str:
        return self._ui_family

    def editor_font_tuple(self) -> tuple[str, int]:
        return (str(self.editor_font.cget("family")), int(self.editor_font.cget("size")))

    # --- the command table → menus, toolbar, keys ------------------------------------------------
    def register_command(self, name: str, label: str, accel: str, fn: Callable[[], object],
                         menu: str = "", icon: str | None = None, toggle: str | None = None,
                         group: int | None = None) -> Command:
        """Add or replace a command; menus, toolbar and keys follow."""
        old = self.commands.get(name) if name in self.commands else None
        cmd = Command(name, label, menu or (old.menu if old else ""), accel,
                      icon if icon is not None else (old.icon if old else None),
                      group if group is not None else (old.group if old else 9),
                      toggle if toggle is not None else (old.toggle if old else None), fn,
                      choice=old.choice if old else None)
        self.commands.add(cmd)
        if hasattr(self, "menubar"):
            # Coalesced: plug-ins register a dozen commands in a row, and each rebuild of
            # every menu costs ~10 ms.
            self._rebuild_toolbar_too = getattr(self, "_rebuild_toolbar_too", False) or \
                bool(cmd.icon)
            if getattr(self, "_rebuild_job", None) is None:
                self._rebuild_job = self.root.after_idle(self._rebuild_now)
        return cmd

    def _rebuild_now(self) -> None:
        self._rebuild_job = None
        self.rebuild_menus()
        if self._rebuild_toolbar_too:
            self._rebuild_toolbar_too = False
            self.rebuild_toolbar()

    def invoke(self, name: str) -> object:
        cmd = self.commands.get(name)
        if cmd.handler is None:
            self.set_message(f"{cmd.text}: not available in this build.")
            return None
        try:
            return cmd.handler()
        except RioError as err:
            self.show_error(err)
        return None

    def _style_menubar(self) -> None:
        t = self.theme
        self.menubar.configure(background=t.face, foreground=t.text_fg,
                               activebackground=t.title_active_bg,
                               activeforeground=t.title_active_fg,
                               disabledforeground=t.disabled_fg)

    def rebuild_menus(self) -> None:
        bar = self.menubar
        bar.delete(0, "end")
        for menu_name, label in MENUS:
            entries = self.commands.menu(menu_name)
            if not entries:
                continue
            old = bar.children.get(menu_name.lower())
            if old is not None:
                old.destroy()
            m = tk.Menu(bar, tearoff=False, name=menu_name.lower())
            text, underline = _mn(label)
            bar.add_cascade(label=text, underline=underline, menu=m)
            for cmd in entries:
                if cmd is None:
                    m.add_separator()
                elif cmd.name == "file.recent":
                    self.recent_menu = tk.Menu(m, tearoff=False, name="recent")
                    m.add_cascade(label=cmd.text, underline=cmd.underline, menu=self.recent_menu)
                    self._fill_recent()
                elif cmd.toggle:
                    var = self._toggle_vars.setdefault(cmd.toggle, tk.BooleanVar(self.root))
                    m.add_checkbutton(label=cmd.text, underline=cmd.underline,
                                      accelerator=_menu_accel(cmd.accel), variable=var,
                                      command=lambda n=cmd.name: self.invoke(n))
                elif cmd.choice:
                    var = self._choice_vars.setdefault(cmd.choice[0], tk.StringVar(self.root))
                    m.add_radiobutton(label=cmd.text, underline=cmd.underline,
                                      accelerator=_menu_accel(cmd.accel), variable=var,
                                      value=cmd.choice[1],
                                      command=lambda n=cmd.name: self.invoke(n))
                else:
                    m.add_command(label=cmd.text, underline=cmd.underline,
                                  accelerator=_menu_accel(cmd.accel),
                                  command=lambda n=cmd.name: self.invoke(n))
        self._sync_toggles()
        self._bind_keys()

    def _fill_recent(self) -> None:
        menu = self.recent_menu
        menu.delete(0, "end")
        if not self.session.recent:
            menu.add_command(label="(none)", state="disabled")
        for i, path in enumerate(self.session.recent):
            label = f"{i + 1} {path}" if i < 9 else path
            menu.add_command(label=label, underline=0 if i < 9 else -1,
                             command=lambda p=path: self.open_path(p))

    def _bind_keys(self) -> None:
        for cmd in self.commands:
            for seq in tk_sequences(cmd.accel):
                if seq in self._bound_sequences:
                    continue
                self._bound_sequences.add(seq)
                self.root.bind_class("RioKeys", seq, lambda e, s=seq: self._key(e, s, True))
                self.root.bind(seq, lambda e, s=seq: self._key(e, s, False))

    def _key(self, event: tk.Event, seq: str, in_editor: bool) -> str | None:
        cmd = next((c for c in self.commands if seq in tk_sequences(c.accel)), None)
        if cmd is None:
            return None
        if not in_editor and cmd.name in TEXT_ONLY_IN_ENTRIES and \
                event.widget.winfo_class() in ("Entry", "TEntry", "TCombobox", "Spinbox",
                                               "TSpinbox", "Text"):
            return None  # an entry's own clipboard keys, not the editor's
        self.invoke(cmd.name)
        return "break"

    def rebuild_toolbar(self) -> None:
        for w in self.toolbar.winfo_children():
            w.destroy()
        self._icons = []
        for cmd in self.commands.toolbar():
            if cmd is None:
                ttk.Separator(self.toolbar, orient="vertical").pack(side="left", fill="y",
                                                                     padx=4, pady=2)
                continue
            if cmd.icon not in ICON_NAMES:
                continue
            img = icon(cmd.icon, self.theme.name, self.root)
            self._icons.append(img)
            b = ttk.Button(self.toolbar, image=img, style="Toolbutton", takefocus=False,
                           command=lambda n=cmd.name: self.invoke(n), name=f"tb_{cmd.icon}")
            b.pack(side="left", padx=1)
            Tooltip(b, cmd.tooltip, self)
        for hook in getattr(self, "toolbar_hooks", ()):
            hook()   # e.g. the agent panel's AI button at the right end (ui/tk/agent_panel.py)

    def _bind_handlers(self) -> None:
        h: dict[str, Callable[[], object]] = {
            "file.new": self.new_file, "file.open": self.open_dialog,
            "file.open_folder": self.open_folder_dialog, "file.save": self.save_active,
            "file.save_as": self.save_as_active, "file.save_all": self.save_all,
            "file.revert": self.revert_active, "file.close": self.close_active,
            "file.quit": self.quit,
            "edit.undo": lambda: self._undo("buffer.undo"),
            "edit.redo": lambda: self._undo("buffer.redo"),
            "edit.cut": lambda: self._virtual("<<Cut>>"),
            "edit.copy": lambda: self._virtual("<<Copy>>"),
            "edit.paste": lambda: self._virtual("<<Paste>>"),
            "edit.select_all": self._select_all,
            "edit.indent": lambda: self._with_editor(lambda e: e.block_indent(False)),
            "edit.dedent": lambda: self._with_editor(lambda e: e.block_indent(True)),
            "edit.comment": lambda: self._with_editor(EditorTab.toggle_comment),
            "edit.overwrite": lambda: self._with_editor(EditorTab.toggle_overwrite),
            "edit.preferences": self.preferences,
            "search.bookmark_toggle": lambda: self._with_editor(EditorTab.toggle_bookmark),
            "search.bookmark_next": lambda: self._with_editor(lambda e: e.next_bookmark()),
            "search.bookmark_prev": lambda: self._with_editor(lambda e: e.next_bookmark(True)),
            "view.wrap": lambda: self._toggle_setting("wrap"),
            "view.line_numbers": lambda: self._toggle_setting("line_numbers"),
            "view.zoom_in": lambda: self.zoom(+1), "view.zoom_out": lambda: self.zoom(-1),
            "view.zoom_reset": lambda: self.zoom(0),
            "view.theme_classic": lambda: self.set_theme("classic"),
            "view.theme_dark": lambda: self.set_theme("dark"),
            "view.next_tab": lambda: self.cycle_tab(+1),
            "view.prev_tab": lambda: self.cycle_tab(-1),
            "help.shortcuts": self.show_shortcuts, "help.about": self.show_about,
        }
        for name, fn in h.items():
            self.commands.bind(name, fn)

    def _install_plugins(self) -> None:
        """The plug-in modules, when present. Each is optional: a missing or broken one costs only
        its own feature, never the window."""
        def attempt(what: str, fn: Callable[[], object]) -> object:
            try:
                return fn()
            except ImportError:
                return None
            except Exception:  # noqa: BLE001 -- a plug-in's bug must not stop the editor
                log.exception("could not install %s", what)
                return None

        def find() -> object:
            from ui.tk import find_dialog
            return find_dialog.install(self)

        def output() -> object:
            from ui.tk import output_pane
            return output_pane.install(self)

        def tree() -> object:
            from ui.tk import project_tree
            self._tree_placeholder.destroy()
            return project_tree.install(self)

        attempt("find dialog", find)
        self.output_pane = attempt("output pane", output)
        if self.output_pane is not None:
            def project() -> object:
                from ui.tk import project_commands
                return project_commands.install(self, self.output_pane)
            attempt("run commands", project)
        attempt("project tree", tree)

        def agent() -> object:
            from ui.tk import agent_panel
            return agent_panel.install(self)
        self.agent_panel = attempt("agent panel", agent)
        ed = self.active_editor()
        if ed is not None:
            self._reveal_in_tree(ed)    # the tab opened before the tree existed
        self.plugins_ready = True
        waiting, self._when_plugins = self._when_plugins, []
        for fn in waiting:
            fn()

    def when_plugins_ready(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` once the plug-in modules are installed (at once if they are)."""
        if self.plugins_ready:
            fn()
        else:
            self._when_plugins.append(fn)

    # --- tabs ------------------------------------------------------------------------------------
    def active_editor(self) -> EditorTab | None:
        try:
            current = self.notebook.select()
        except tk.TclError:
            return None
        if not current:
            return None
        widget = self.root.nametowidget(current)
        return widget if isinstance(widget, EditorTab) else None

    def tabs(self) -> list[EditorTab]:
        return [self.root.nametowidget(t) for t in self.notebook.tabs()]

    def add_tab(self, summary: dict[str, Any], *, select: bool = True,
                cursor: tuple[int, int, int] | None = None) -> EditorTab:
        bid = summary["buffer"]
        ed = self.editors.get(bid)
        if ed is None:
            ed = EditorTab(self.notebook, self, summary)
            self.editors[bid] = ed
            self.notebook.add(ed, text=self._tab_title(ed))
            ed.load(cursor)
        if select:
            self.notebook.select(ed)
            ed.text.focus_set()
        return ed

    def _tab_title(self, ed: EditorTab) -> str:
        name = ed.summary.get("name") or "Untitled"
        return f" {name} * " if ed.summary.get("dirty") else f" {name} "

    def remove_tab(self, ed: EditorTab) -> None:
        self.editors.pop(ed.buffer_id, None)
        try:
            self.notebook.forget(ed)
        except tk.TclError:
            pass
        ed.destroy()
        self._on_tab_changed()
        self.save_session()

    def cycle_tab(self, step: int) -> None:
        tabs = self.notebook.tabs()
        if not tabs:
            return
        i = tabs.index(self.notebook.select()) if self.notebook.select() in tabs else 0
        self.notebook.select(tabs[(i + step) % len(tabs)])
        ed = self.active_editor()
        if ed is not None:
            ed.text.focus_set()

    def _on_middle_click(self, event: tk.Event) -> None:
        try:
            index = self.notebook.index(f"@{event.x},{event.y}")
        except tk.TclError:
            return
        tabs = self.notebook.tabs()
        if 0 <= index < len(tabs):
            self.close_editor(self.root.nametowidget(tabs[index]))

    def _on_tab_changed(self) -> None:
        ed = self.active_editor()
        # The message was about the tab that showed it: each tab shows its own again.
        self.message.set(self._messages.get(ed.buffer_id, READY) if ed is not None else READY)
        if ed is not None:
            self.root.title(f"{ed.summary.get('name') or 'Untitled'} — Rio — "
                            f"{Path(self.project_root).name}")
            self.on_cursor(ed)
            self._reveal_in_tree(ed)
        else:
            self.root.title(f"Rio — {Path(self.project_root).name}")
            for k in ("position", "selection", "encoding", "newline", "mode", "modified"):
                self.status_vars[k].set("")

    # --- editor callbacks ----------------------------------------------------------------------
    def on_editor_state(self, ed: EditorTab) -> None:
        if ed.buffer_id not in self.editors or self.editors[ed.buffer_id] is not ed:
            return
        try:
            self.notebook.tab(ed, text=self._tab_title(ed))
        except tk.TclError:
            return
        if ed is self.active_editor():
            self.on_cursor(ed)

    def on_cursor(self, ed: EditorTab) -> None:
        if ed is not self.active_editor():
            return
        line, col = ed.cursor()
        n = ed.selection_size() if ed.ready else 0
        fmt = ed.summary.get("format") or {}
        values = {"position": f"Ln {line}, Col {col + 1}", "selection": f"Sel {n}" if n else "",
                  "encoding": str(fmt.get("encoding") or "utf-8").upper(),
                  "newline": newline_name(fmt.get("newline")).upper(),
                  "mode": "OVR" if ed.overwrite else "INS",
                  "modified": "Modified" if ed.summary.get("dirty") else ""}
        for key, value in values.items():
            var = self.status_vars[key]
            if var.get() != value:   # a set redraws its label even when nothing changed
                var.set(value)
        self._sync_toggles()

    def buffer_lost(self, ed: EditorTab, err: RioError) -> None:
        """The core no longer knows this buffer (a core restart lost a clean document)."""
        path = ed.summary.get("path")
        if path:
            def got(reply: Reply) -> None:
                if reply.ok:
                    summary = thaw(reply.result)
                    self.editors.pop(ed.buffer_id, None)
                    self.editors[summary["buffer"]] = ed
                    ed.rebind(summary)
                else:
                    self.show_error(error_from_wire(thaw(reply.error)))
            self.conn.request("buffer.open", {"path": path}, got)
            return
        # Untitled and gone: give the user the text back as a new buffer.
        # Rebased editors send their pending edits again onto it; others show it as it is.
        text = ("" if ed.replica is None else
                ed.replica.core_text if ed.can_rebase() else ed.replica.text)

        def made(reply: Reply) -> None:
            if reply.ok:
                summary = thaw(reply.result)
                self.editors.pop(ed.buffer_id, None)
                self.editors[summary["buffer"]] = ed
                ed.rebind(summary)
        self.conn.request("buffer.new", {"text": text}, made)

    def show_error(self, err: RioError) -> None:
        self.set_message(f"{err.message} {err.next}")
        Dialog(self, "error", "Rio", err.message, ["OK"], lambda b, v: None,
               detail=f"{err.next}\n({err.kind})", icon="error")

    def set_message(self, text: str) -> None:
        self.message.set(text)
        ed = self.active_editor()
        if ed is not None:
            self._messages[ed.buffer_id] = text

    def _reveal_in_tree(self, ed: EditorTab) -> None:
        """Select the active document's file in the project tree (opening its folders)."""
        tree = getattr(self, "project_tree", None)
        path = ed.summary.get("path")
        if tree is None or not path:
            return
        try:
            rel = Path(path).resolve().relative_to(Path(self.project_root).resolve()).as_posix() \
                if Path(path).is_absolute() else Path(path).as_posix()
        except ValueError:
            return                      # outside the project: nothing to show
        tree.reveal(rel)

    def status_cells_cut(self) -> list[str]:
        """The fixed status-bar cells that do not fit whole in the window (none, normally)."""
        width = self.status.winfo_width()
        return sorted(k for k, w in self.status_cells.items()
                      if not w.winfo_ismapped() or w.winfo_x() < 0
                      or w.winfo_x() + w.winfo_width() > width)

    # --- files -----------------------------------------------------------------------------------
    def new_file(self) -> None:
        self._request("buffer.new", {}, lambda s: self.add_tab(s))

    def raise_window(self) -> None:
        """De-iconify the window and bring it to the front (``ui.raise``, ``ui.open``)."""
        self.root.deiconify()
        self.root.lift()
        try:
            self.root.focus_force()
        except tk.TclError:
            pass   # a window manager may refuse; the window is raised all the same

    def open_path(self, path: str, line: int | None = None, col: int | None = None,
                  then: Callable[[EditorTab], object] | None = None,
                  fail: Callable[[RioError], object] | None = None) -> None:
        """Open (or switch to) a file of the project; optionally put the cursor at line/col
        (1-based, as file:line:col references give them). ``then(editor)`` once it is live."""
        def opened(summary: dict[str, Any]) -> None:
            ed = self.add_tab(summary)
            if line is not None:
                ed.goto(int(line), max(0, int(col or 1) - 1) if col else 0)
            if summary.get("path"):
                self.session = self.session.with_recent(summary["path"])
                self._fill_recent()
            self.save_session()
            if then is not None:
                ed.when_ready(lambda: then(ed))
        self._request("buffer.open", {"path": str(path)}, opened, fail)

    # --- start-up, events, resync -------------------------------------------------------------------
    def start(self, requested: list[str] = ()) -> None:
        """Rebuild the tabs from the core (a UI restart loses nothing) and the session."""
        self.conn.subscribe("buffer.", self._on_buffer_event)
        self.conn.subscribe("system.process", self._on_process)
        self.conn.on_gap = lambda topic, expected, got: self.resync_all()
        buffers = list(self._call_when_up("buffer.list"))
        try:
            recovered = self._call_when_up("buffer.recover")
        except RioError:
            recovered = {"buffers": [], "count": 0}
        by_id = {b["buffer"]: b for b in buffers}
        plans, active = session_mod.restore_plan(self.session, buffers, requested)
        asked = set(requested)
        built: list[EditorTab | None] = [None] * len(plans)

        def select_active() -> None:
            target = built[active] if active < len(built) else None
            if target is not None:
                self.notebook.select(target)
                target.text.focus_set()

        for i, plan in enumerate(plans):
            cursor = (plan.line, plan.col, plan.top)
            if plan.buffer and plan.buffer in by_id:
                built[i] = self.add_tab(by_id[plan.buffer], select=False, cursor=cursor)
            elif plan.path:
                def opened(summary: dict[str, Any], i: int = i, cursor=cursor) -> None:
                    built[i] = self.add_tab(summary, select=False, cursor=cursor)
                    if i == active:
                        select_active()

                def missing(err: RioError, path: str = plan.path) -> None:
                    # A file named on the command line is opened, not reopened.
                    verb = "open" if path in asked else "reopen"
                    self.set_message(f"Could not {verb} {path}: {err.message} {err.next}")
                self._request("buffer.open", {"path": plan.path}, opened, missing)
        select_active()
        self._recovered_notice(recovered)
        self.save_session()

    def _call_when_up(self, op: str, wait_s: float = 60.0) -> Any:
        """A start-up call that waits for the core: the supervisor starts the window and the
        core together, so the first ``buffer.*`` may find nobody serving it yet. Then it waits
        on the bus for the supervisor's ``system.process`` event saying the core is ready (no
        sleep), and asks again — at least every 0.5 s, in case the event came first."""
        deadline = time.monotonic() + wait_s
        core_up: list[Any] = []

        def on_process(event: Any) -> None:
            if event.data.get("name") == "core" and event.data.get("event") == "ready":
                core_up.append(event)

        self.conn.subscribe("system.process", on_process)
        try:
            while True:
                core_up.clear()
                try:
                    return self.conn.call(op, {}, timeout=5)
                except BusError:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise
                    self.conn.wait_for(lambda: core_up, min(0.5, remaining))
        finally:
            self.conn.unsubscribe("system.process", on_process)

    def _recovered_notice(self, report: dict[str, Any]) -> None:
        ids = [b["buffer"] for b in report.get("buffers") or ()]
        new = [i for i in ids if i not in self.session.seen_recoveries]
        failures = report.get("failures") or ()
        if not new and not failures:
            return
        self.session = dataclasses.replace(
            self.session, seen_recoveries=(self.session.seen_recoveries + tuple(new))[-200:])
        names = [b.get("name") or b["buffer"] for b in report.get("buffers") or ()
                 if b["buffer"] in new]
        n = len(new)
        msg = f"Recovered {n} unsaved document{'s' if n != 1 else ''}"
        if failures:
            msg += f"; {len(failures)} journal{'s' if len(failures) != 1 else ''} damaged"
        self.set_message(msg + ".")
        detail = ""
        if names:
            detail = ("Rio stopped unexpectedly last time. Your unsaved changes were brought "
                      "back and are open in tabs: " + ", ".join(names) + ". Save them to keep "
                      "them.")
        for failure in failures:
            # Each says what could not be replayed, which document, and where the damaged
            # journal was kept (file.journal_damaged), with what to do next.
            detail += f"\n\n{failure.get('message', '')} {failure.get('next', '')}".rstrip()
        Dialog(self, "recovered", "Rio", msg, ["OK"], lambda b, v: None,
               detail=detail.strip(), icon="warning" if failures else "info")

    def _on_buffer_event(self, event: Any) -> None:
        data = thaw(event.data)
        ed = self.editors.get(data.get("buffer", ""))
        topic = event.topic
        if topic == "buffer.changed":
            if ed is not None:
                ed.on_changed(data)
        elif topic == "buffer.saved" and ed is not None:
            ed.update_summary(data)
        elif topic == "buffer.closed" and ed is not None:
            self.remove_tab(ed)
        elif topic == "buffer.conflict" and ed is not None:
            self.conflict_prompt(ed)
        elif topic == "buffer.recovered":
            self._recovered_notice(data)
        elif topic == "buffer.journal_failed":
            self._journal_failed(data, ed)
        elif topic == "buffer.journal_restored":
            self._journal_restored(data, ed)

    def _journal_failed(self, data: dict[str, Any], ed: EditorTab | None) -> None:
        """A document whose edits can no longer be journaled is named, with what to do: until
        the journal is written again its edits are refused rather than left unprotected."""
        name = data.get("name") or (ed.summary.get("name") if ed else None) or data["buffer"]
        self.unprotected[data["buffer"]] = str(name)
        self.set_message(f"{name} is not protected: {data.get('message', '')}")
        Dialog(self, "journal_failed", "Rio", f"{name}: edits cannot be journaled",
               ["OK"], lambda b, v: None,
               detail=f"{data.get('message', '')}\n\n{data.get('next', '')}".strip(),
               icon="error")

    def _journal_restored(self, data: dict[str, Any], ed: EditorTab | None) -> None:
        name = self.unprotected.pop(data["buffer"], None) or data.get("name") or data["buffer"]
        self.set_message(f"{name} is journaled again: edits are protected.")

    def _on_process(self, event: Any) -> None:
        data = thaw(event.data)
        if data.get("name") != "core":
            return
        what = data.get("event")
        if what in ("exited", "hung"):
            self._core_down = True
            self.set_message("The core stopped; Rio is restarting it…")
        elif what == "ready" and getattr(self, "_core_down", False):
            # Only after a stop we saw: the first "ready" of a fresh start changes nothing.
            self._core_down = False
            self.set_message("The core restarted; documents were reloaded from it.")
            self.resync_all()
        elif what == "gave_up":
            self.set_message("The core keeps failing; see `rio status`. Unsaved work is in "
                             "the journal.")

    def resync_all(self) -> None:
        for ed in list(self.editors.values()):
            ed.resync()

    # --- undo, clipboard, view ----------------------------------------------------------------------
    def _with_editor(self, fn: Callable[[EditorTab], object]) -> None:
        ed = self.active_editor()
        if ed is not None and ed.ready:
            fn(ed)

    def _undo(self, op: str) -> None:
        ed = self.active_editor()
        if ed is None:
            return

        def failed(err: RioError) -> None:
            self.set_message(err.message)
            self.root.bell()
        ed.when_quiet(lambda: self._request(op, {"buffer": ed.buffer_id,
                                                 "origin": f"ui:{os.getpid()}"},
                                            lambda _r: None, failed))

    def _virtual(self, event: str) -> None:
        ed = self.active_editor()
        if ed is not None and ed.ready:
            ed.text.event_generate(event)
            ed.schedule_ui()

    def _select_all(self) -> None:
        ed = self.active_editor()
        if ed is not None:
            ed.text.tag_add("sel", "1.0", "end-1c")
            ed.schedule_ui()

    def _toggle_setting(self, key: str) -> None:
        self.settings[key] = not self.settings.get(key)
        self.apply_settings()

    def _sync_toggles(self) -> None:
        ed = self.active_editor()
        values = {"wrap": bool(self.settings.get("wrap")),
                  "line_numbers": bool(self.settings.get("line_numbers", True)),
                  "overwrite": bool(ed and ed.overwrite)}
        for key, var in self._toggle_vars.items():
            if key in values and var.get() != values[key]:
                var.set(values[key])
        for key, choice in self._choice_vars.items():
            current = str(self.theme.name if key == "theme" else self.settings.get(key, ""))
            if choice.get() != current:
                choice.set(current)

    def zoom(self, step: int) -> None:
        size = self._zoom_base if step == 0 else int(self.editor_font.cget("size")) + step
        size = max(MIN_ZOOM, min(MAX_ZOOM, size))
        self.editor_font.configure(size=size)
        for ed in self.tabs():
            ed.apply_look(self.theme)
        self.set_message(f"Zoom: {size} pt")

    def set_theme(self, name: str) -> None:
        self.settings["theme"] = name
        self.apply_settings()

    def apply_settings(self) -> None:
        """Make the window follow ``self.settings`` (Preferences calls this after a change)."""
        name = str(self.settings.get("theme", "classic"))
        if name not in THEMES:
            name = "classic"
        if name != self.theme.name:
            self.theme = apply_theme(self.root, name)
            for pane in (self.hpane, self.vpane):
                pane.configure(background=self.theme.face)
            self.rebuild_toolbar()
            self._style_menubar()
            self.rebuild_menus()
        family = self.settings.get("font") or self.editor_font.cget("family")
        size = int(self.settings.get("size") or self.editor_font.cget("size"))
        if (family, size) != self.editor_font_tuple():
            self.editor_font.configure(family=family, size=size)
            self._zoom_base = size
        for ed in self.tabs():
            ed.apply_look(self.theme)
        restyle = getattr(getattr(self, "output_pane", None), "apply_theme", None)
        if callable(restyle):
            try:
                restyle()
            except Exception:  # noqa: BLE001 -- a plug-in's bug must not stop a theme switch
                log.exception("output pane restyle")
        self._sync_toggles()
        self.save_session()

    # The dialogs themselves live in ui/tk/prefs_dialog.py.
    def preferences(self) -> None:
        from ui.tk import prefs_dialog
        prefs_dialog.show_preferences(self)

    def show_shortcuts(self) -> None:
        from ui.tk import prefs_dialog
        prefs_dialog.show_shortcuts(self, [(label, accel)
                                           for _m, label, accel in self.commands.shortcuts()])

    def show_about(self) -> None:
        from ui.tk import prefs_dialog
        prefs_dialog.show_about(self)

    # --- session -------------------------------------------------------------------------------
    def current_session(self) -> session_mod.Session:
        docs = []
        for ed in self.tabs():
            line, col = ed.cursor() if ed.ready else (1, 0)
            top = ed.top_line() if ed.ready else 1
            docs.append(session_mod.DocState(ed.buffer_id, ed.summary.get("path"), line, col,
                                             top))
        tabs = self.notebook.tabs()
        active = tabs.index(self.notebook.select()) if self.notebook.select() in tabs else 0
        try:
            tree_w = self.hpane.sash_coord(0)[0]
            out_h = self.vpane.winfo_height() - self.vpane.sash_coord(0)[1]
        except tk.TclError:
            tree_w, out_h = self.session.layout.tree_width, self.session.layout.output_height
        geometry = self.root.winfo_geometry() if self.root.winfo_ismapped() else \
            self.session.layout.geometry
        layout = session_mod.Layout(geometry, max(80, tree_w), max(40, out_h))
        settings = {k: self.settings[k] for k in DEFAULT_SETTINGS if k in self.settings}
        return session_mod.Session(layout, tuple(docs), active, self.session.recent, settings,
                                   self.session.seen_recoveries)

    def _autosave(self) -> None:
        """Keep the session file current, so a crashed UI comes back with its cursors."""
        if self.quitting:
            return
        try:
            now = self.current_session()
            if now.to_json() != self.session.to_json():
                self.save_session()
        except tk.TclError:
            pass
        self.root.after(AUTOSAVE_MS, self._autosave)

    def save_session(self) -> None:
        if self.state_dir is None:
            return
        try:
            self.session = self.current_session()
            session_mod.save(self.state_dir, self.session)
        except (OSError, tk.TclError) as exc:
            log.warning("could not save the session: %s", exc)


def _saved_preferences() -> dict[str, Any]:
    """The Preferences dialog's file (ui/tk/prefs_model.py), when that module exists."""
    try:
        from ui.tk.prefs_model import load_preferences
    except ImportError:
        return {}
    try:
        return dict(load_preferences())
    except Exception:  # noqa: BLE001 -- preferences must never stop the window
        log.exception("preferences")
        return {}


def _menu_accel(accel: str) -> str:
    """A menu's accelerator text. Tk on X11 draws it flush against the menu's right border;
    trailing spaces give it the margin '90s menus had."""
    return f"{accel}{MENU_ACCEL_MARGIN}" if accel else ""


def _mn(label: str) -> tuple[str, int]:
    from ui.tk.commands import strip_mnemonic
    return strip_mnemonic(label)
