"""The desktop's main window: menus, toolbar, tabs, panes, status bar — a client of the core.

The window owns no document: every tab is an :class:`~ui.tk.editor.tab.EditorTab` fed by the core
over ``app.conn`` (drained from Tk's loop by ui/tk/app/bus_pump.py). What the window shows is
generated from the command table (ui/tk/app/menus.py over ui/tk/app/commands.py); what it remembers
between runs is ui/tk/app/session.py. App is the composition root: the status bar
(ui/tk/app/status_bar.py), start-up and the core's events (ui/tk/app/core_events.py) and the file
commands (ui/tk/app/file_actions.py) are parts it owns. The features installed after the first
paint (ui/tk/app/plugins.py: find dialog, output pane, run commands, project tree, agent panel) plug
in through the seams below and are imported lazily, so each side works alone:

``open_path(path, line, col)``, ``active_editor()``, ``output_pane_slot``, ``tree_slot``,
``conn``, ``register_command(name, label, accel, fn, menu=...)``, ``settings`` +
``apply_settings()``, ``save_all()``, ``project_root``.
"""

from __future__ import annotations

import logging
import os
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Sequence
from pathlib import Path
from tkinter import ttk
from typing import TYPE_CHECKING, Any, Callable

from rio.memory import give_back, is_large
from rio.protocol.errors import RioError, error_from_wire
from rio.protocol.frames import Reply, thaw
from ui.tk.app import plugins
from ui.tk.app import session as session_mod
from ui.tk.app.commands import Command, CommandTable, default_table
from ui.tk.app.core_events import CoreEvents
from ui.tk.app.file_actions import FileActions
from ui.tk.app.menus import CommandSurfaces
from ui.tk.app.seams import StartScreen
from ui.tk.app.status_bar import StatusBar, editor_cells
from ui.tk.editor.bindings import install_editor_bindings
from ui.tk.editor.seams import Document
from ui.tk.editor.tab import EditorTab
from ui.tk.widgets.dialogs import Dialog
from ui.tk.widgets.fonts import install_named_fonts
from ui.tk.widgets.seams import OpenDialog
from ui.tk.widgets.theme import THEMES, apply_theme
from ui.tk.widgets.tk_calls import select_tab, selected_tab, set_tab, tab_ids, tab_index

if TYPE_CHECKING:    # the plug-ins, imported after the first paint (ui/tk/app/plugins.py)
    from actors.bus.client import BusConnection
    from ui.tk.agent.panel import AgentPanel
    from ui.tk.output.pane import OutputPane
    from ui.tk.project.commands import RunController
    from ui.tk.project.tree import ProjectTree

log = logging.getLogger("rio.ui")

DEFAULT_SETTINGS: dict[str, Any] = {"font": "", "size": 0, "tab_width": 4, "use_spaces": True,
                                    "theme": "classic", "wrap": False, "line_numbers": True}
MIN_ZOOM, MAX_ZOOM = 6, 40
AUTOSAVE_MS = 2000


class App(FileActions[EditorTab]):
    def __init__(self, root: tk.Tk, conn: BusConnection, *, project_root: str, instance: str,
                 state_dir: Path | None = None, remote: str | None = None,
                 first_screen: StartScreen | None = None):
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
        self.core_events = CoreEvents(self)
        # The features installed after the first paint (ui/tk/app/plugins.py); None until then,
        # or for good when one could not be installed.
        self.output_pane: OutputPane | None = None
        self.run_controller: RunController | None = None
        self.project_tree: ProjectTree | None = None
        self.agent_panel: AgentPanel | None = None
        self.dialogs: dict[str, OpenDialog] = {}
        #: called after each toolbar rebuild (the agent panel adds its AI button)
        self.toolbar_hooks: list[Callable[[], object]] = []
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
        root.title(self.window_title())
        root.geometry(self.session.layout.geometry)
        root.minsize(480, 320)
        self._build()
        self._bind_handlers()
        install_editor_bindings(root)
        self.rebuild_menus()
        self.rebuild_toolbar()
        root.protocol("WM_DELETE_WINDOW", self.quit)
        #: the file's first screen from the window's first paint (ui/tk/start/first_screen.py):
        #: over the notebook, then over that file's editor until it has the core's text
        self.first_screen: StartScreen | None = first_screen
        if first_screen is not None:
            first_screen.attach(self.notebook)
            root.title(self.window_title(first_screen.name))
        # The plug-in panes come right after the window is first drawn (their
        # imports take ~0.1–0.25 s: the editor is usable first).
        self.root.after_idle(lambda: self.root.after(20, self._install_plugins))
        self.root.after(AUTOSAVE_MS, self._autosave)

    # --- building the window ---------------------------------------------------------------------
    def _build(self) -> None:
        root = self.root
        self.surfaces = CommandSurfaces(self)          # menus, toolbar, keys
        self.menubar, self.toolbar = self.surfaces.menubar, self.surfaces.toolbar
        bar = self.status_bar = StatusBar(root)
        # The agent panel (ui/tk/agent/panel.py) and ui.state (ui/tk/app/control.py) use these.
        self.status, self.message, self.status_vars = bar.frame, bar.message, bar.vars
        self.status_cells, self.agent_slot = bar.cells, bar.agent_slot
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
        self.surfaces.schedule_rebuild(bool(cmd.icon))
        return cmd

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

    def rebuild_menus(self) -> None:
        self.surfaces.rebuild_menus()

    def rebuild_toolbar(self) -> None:
        self.surfaces.rebuild_toolbar()

    def _fill_recent(self) -> None:
        self.surfaces.fill_recent()

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
        """The features installed after the first paint (ui/tk/app/plugins.py), in this
        order: the run commands need the output pane. Each is None when missing or broken."""
        plugins.install_find(self)
        self.output_pane = plugins.install_output(self)
        if self.output_pane is not None:
            self.run_controller = plugins.install_run_commands(self, self.output_pane)
        self.project_tree = plugins.install_tree(self, self.remove_tree_placeholder)
        self.agent_panel = plugins.install_agent(self)
        ed = self.active_editor()
        if ed is not None:
            self._reveal_in_tree(ed)    # the tab opened before the tree existed
        self.plugins_ready = True
        waiting, self._when_plugins = self._when_plugins, []
        for fn in waiting:
            fn()

    def remove_tree_placeholder(self) -> None:
        """The tree's slot is empty until the project tree fills it."""
        self._tree_placeholder.destroy()

    def when_plugins_ready(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` once the plug-in modules are installed (at once if they are)."""
        if self.plugins_ready:
            fn()
        else:
            self._when_plugins.append(fn)

    # --- tabs ------------------------------------------------------------------------------------
    def active_editor(self) -> EditorTab | None:
        try:
            current = selected_tab(self.notebook)
        except tk.TclError:
            return None
        if not current:
            return None
        widget = self.root.nametowidget(current)
        return widget if isinstance(widget, EditorTab) else None

    def tabs(self) -> list[EditorTab]:
        """The editor tabs, in order (not the first screen's own tab while it shows)."""
        widgets = [self.root.nametowidget(t) for t in tab_ids(self.notebook)]
        return [w for w in widgets if isinstance(w, EditorTab)]

    def add_tab(self, summary: dict[str, Any], *, select: bool = True,
                cursor: tuple[int, int, int] | None = None) -> EditorTab:
        bid = summary["buffer"]
        ed = self.editors.get(bid)
        if ed is None:
            ed = EditorTab(self.notebook, self, summary)
            self.editors[bid] = ed
            screen = self.first_screen
            if screen is not None and screen.wants(summary) and screen.placeholder is not None:
                # in the place of the first screen's own tab, which it covers until it is live
                self.notebook.insert(screen.placeholder, ed, text=self._tab_title(ed))
                screen.cover(ed)
            else:
                self.notebook.add(ed, text=self._tab_title(ed))
            ed.load(cursor)
        if select:
            select_tab(self.notebook, ed)
            self.focus_editor(ed)
        return ed

    def focus_editor(self, ed: EditorTab) -> None:
        """The keyboard to ``ed`` — unless the first screen still shows: it keeps the keys
        until it hands them to its editor (:meth:`on_editor_state`)."""
        if self.first_screen is None:
            ed.text.focus_set()

    def first_screen_done(self, ed: EditorTab | None = None) -> None:
        """The first screen goes: its keys to ``ed`` (its file's editor, now live), or lost
        when there is none (the file could not be opened), which the status bar says."""
        screen, self.first_screen = self.first_screen, None
        if screen is None:
            return
        if ed is not None:
            screen.hand_over(ed, ed.text.focus_set)
            return
        lost = screen.drop()
        current = self.active_editor()
        if current is not None:
            current.text.focus_set()
        if lost:
            self.set_message(f"{lost} key{'s' if lost != 1 else ''} typed before the file "
                             "opened could not be kept.")

    def _tab_title(self, ed: EditorTab) -> str:
        name = ed.summary.get("name") or "Untitled"
        return f" {name} * " if ed.summary.get("dirty") else f" {name} "

    def remove_tab(self, ed: EditorTab) -> None:
        if self.first_screen is not None and self.first_screen.editor is ed:
            self.first_screen_done(None)
        if ed.replica is not None and is_large(len(ed.replica.buffer)):
            self.root.after(1000, lambda: give_back(collect=True))   # rio/memory.py
        self.editors.pop(ed.buffer_id, None)
        try:
            self.notebook.forget(ed)
        except tk.TclError:
            pass
        ed.destroy()
        self._on_tab_changed()
        self.save_session()

    def cycle_tab(self, step: int) -> None:
        tabs = tab_ids(self.notebook)
        if not tabs:
            return
        current = selected_tab(self.notebook)
        i = tabs.index(current) if current in tabs else 0
        select_tab(self.notebook, tabs[(i + step) % len(tabs)])
        ed = self.active_editor()
        if ed is not None:
            ed.text.focus_set()

    def _on_middle_click(self, event: tk.Event) -> None:
        try:
            index = tab_index(self.notebook, f"@{event.x},{event.y}")
        except tk.TclError:
            return
        tabs = tab_ids(self.notebook)
        if 0 <= index < len(tabs):
            widget = self.root.nametowidget(tabs[index])
            if isinstance(widget, EditorTab):
                self.close_editor(widget)

    def _on_tab_changed(self) -> None:
        ed = self.active_editor()
        # The message was about the tab that showed it: each tab shows its own again.
        self.status_bar.show_tab(ed.buffer_id if ed is not None else None)
        if ed is not None:
            self.root.title(self.window_title(str(ed.summary.get('name') or 'Untitled')))
            self.on_cursor(ed)
            self._reveal_in_tree(ed)
        else:
            screen = self.first_screen
            self.root.title(self.window_title(screen.name if screen is not None else None))

    def window_title(self, document: str | None = None) -> str:
        """``[document — ]Rio — project``, and the server a remote window is connected to
        (``rio --connect``): ``… — on HOST:PORT``."""
        title = f"Rio — {Path(self.project_root).name}"
        if self.remote:
            title += f" — on {self.remote.removeprefix('tcp://')}"
        return f"{document} — {title}" if document else title

    # --- editor callbacks ----------------------------------------------------------------------
    # The editor's callbacks (ui/tk/app/seams.py EditorHost) are handed the tab by whichever
    # of its parts noticed, typed as that part sees it (a Document): it is one of our tabs.
    def on_editor_state(self, ed: Document) -> None:
        if not isinstance(ed, EditorTab):
            return
        if ed.ready and self.first_screen is not None and self.first_screen.editor is ed:
            self.first_screen_done(ed)
        if ed.buffer_id not in self.editors or self.editors[ed.buffer_id] is not ed:
            return
        try:
            set_tab(self.notebook, ed, text=self._tab_title(ed))
        except tk.TclError:
            return
        if ed is self.active_editor():
            self.on_cursor(ed)

    def on_cursor(self, ed: Document) -> None:
        tab = self.active_editor()
        if tab is None or ed is not tab:
            return
        line, col = tab.cursor()
        self.status_bar.show(editor_cells(line, col, tab.selection_size() if tab.ready else 0,
                                          tab.summary, tab.overwrite))
        self._sync_toggles()

    def buffer_lost(self, ed: Document, err: RioError) -> None:
        """The core no longer knows this buffer (a core restart lost a clean document)."""
        if not isinstance(ed, EditorTab):
            return
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
        ed = self.active_editor()
        self.status_bar.say(text, ed.buffer_id if ed is not None else None)

    def _reveal_in_tree(self, ed: EditorTab) -> None:
        """Select the active document's file in the project tree (opening its folders)."""
        tree = self.project_tree
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
        return self.status_bar.cut()

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

    # --- start-up, the core's events (ui/tk/app/core_events.py) ---------------------------------------
    def start(self, requested: Sequence[str] = ()) -> None:
        """Rebuild the tabs from the core (a UI restart loses nothing) and the session."""
        self.core_events.start(requested)

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

    def toggle_values(self) -> dict[str, bool]:
        """What the View and Edit menus' check entries show."""
        ed = self.active_editor()
        return {"wrap": bool(self.settings.get("wrap")),
                "line_numbers": bool(self.settings.get("line_numbers", True)),
                "overwrite": bool(ed and ed.overwrite)}

    def choice_values(self) -> dict[str, str]:
        """What the radio entries (the theme) show."""
        return {**{k: str(v) for k, v in self.settings.items()}, "theme": self.theme.name}

    def _sync_toggles(self) -> None:
        self.surfaces.sync(self.toggle_values(), self.choice_values())

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
            self.surfaces.style_menubar()
            self.rebuild_menus()
        family = self.settings.get("font") or self.editor_font.cget("family")
        size = int(self.settings.get("size") or self.editor_font.cget("size"))
        if (family, size) != self.editor_font_tuple():
            self.editor_font.configure(family=family, size=size)
            self._zoom_base = size
        for ed in self.tabs():
            ed.apply_look(self.theme)
        if self.output_pane is not None:
            try:
                self.output_pane.apply_theme()
            except Exception:  # a plug-in's bug must not stop a theme switch
                log.exception("output pane restyle")
        self._sync_toggles()
        self.save_session()

    # The dialogs themselves live in ui/tk/prefs/dialog.py.
    def preferences(self) -> None:
        from ui.tk.prefs import dialog as prefs_dialog
        prefs_dialog.show_preferences(self)

    def show_shortcuts(self) -> None:
        from ui.tk.prefs import dialog as prefs_dialog
        prefs_dialog.show_shortcuts(self, [(label, accel)
                                           for _m, label, accel in self.commands.shortcuts()])

    def show_about(self) -> None:
        from ui.tk.prefs import dialog as prefs_dialog
        prefs_dialog.show_about(self)

    # --- session -------------------------------------------------------------------------------
    def current_session(self) -> session_mod.Session:
        docs = []
        for ed in self.tabs():
            line, col = ed.cursor() if ed.ready else (1, 0)
            top = ed.top_line() if ed.ready else 1
            docs.append(session_mod.DocState(ed.buffer_id, ed.summary.get("path"), line, col,
                                             top))
        tabs = [str(ed) for ed in self.tabs()]
        current = selected_tab(self.notebook)
        active = tabs.index(current) if current in tabs else 0
        try:
            tree_w = self.hpane.sash_coord(0)[0]
            out_h = self.vpane.winfo_height() - self.vpane.sash_coord(0)[1]
        except tk.TclError:
            tree_w, out_h = self.session.layout.tree_width, self.session.layout.output_height
        geometry = window_geometry(self.root) if self.root.winfo_ismapped() else \
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


def window_geometry(root: tk.Tk) -> str:
    """``WxH+X+Y`` to save and give back to ``root.geometry()`` at the next start: Tk's ``wm
    geometry``, whose position is the window's outer corner — the window manager's frame
    when there is one — as ``geometry()`` takes it, and whose height leaves the menu bar out,
    as ``geometry()`` does. ``winfo_geometry`` is the client area's: its y is below the menu
    bar (and the frame's title), so the window moved down ~30 px at every restart."""
    return str(root.wm_geometry())


def _saved_preferences() -> dict[str, Any]:
    """The Preferences dialog's file (ui/tk/prefs/model.py), when that module exists."""
    try:
        from ui.tk.prefs.model import load_preferences
    except ImportError:
        return {}
    try:
        return dict(load_preferences())
    except Exception:  # preferences must never stop the window
        log.exception("preferences")
        return {}

