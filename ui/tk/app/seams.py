"""The seams between the desktop's parts, declared as Protocols.

An editor tab needs a little of its window (fonts, settings, where to report), and the file
actions need a little of an editor (its buffer, its summary, when it is quiet). Declaring
those faces here — instead of importing ``App`` into the editor and ``EditorTab`` into the file
actions — keeps the modules free of import circles (tests/house/test_layering.py) and says exactly
what each side relies on. Each room sees the window (ui/tk/app/main_window.py ``App``) through
the narrow face of what it uses, and mypy checks where the window is handed over that it has it:

* the editor: ``EditorHost``; the find dialog: ``FindHost`` (and ``SearchableEditor``);
* the output pane: ``OutputHost``; the run commands: ``RunHost``; the project tree:
  ``TreeHost`` — the last two see the output pane as ``RunOutput`` (the project room does not
  import the output room);
* Preferences, About, Shortcuts: ``PrefsHost``; the menus: ``MenuHost``; start-up and the
  core's events: ``CoreEventsHost``; the first screen, as the window drives it: ``StartScreen``.

The faces of the shared widgets (a dialog's owner, a tooltip's theme) are in
ui/tk/widgets/seams.py, those of the agent panel in ui/tk/agent/seams.py (``PanelApp``), and AI
Preferences' view of the panel next to it (ui/tk/prefs/ai_dialog.py ``AIPanel``).
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Iterator, Mapping
from pathlib import Path
from tkinter import ttk
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

from rio.protocol.errors import RioError
from rio.text.edit_commands import TextEdit
from rio.text.replica import Replica
from ui.tk.widgets.seams import DialogOwner, OpenDialog
from ui.tk.widgets.theme import Theme

if TYPE_CHECKING:   # named only: the seams stay light for every room that imports them
    from actors.bus.client import BusConnection  # zmq: imported by whoever connects
    from ui.tk.app.commands import Command, CommandTable
    from ui.tk.app.session import Session
    from ui.tk.editor.seams import Document

#: The window's editor tab (ui/tk/editor/tab.py ``EditorTab``). These seams cannot name it
#: (the editor imports them: a circle), so the Protocol that hands tabs back and forth takes
#: its type as a parameter: ``CoreEventsHost[EditorTab]``, checked against the real tab.
Tab = TypeVar("Tab")


class EditorHost(Protocol):
    """What an editor tab (ui/tk/editor/tab.py and its parts) uses of the window it lives in.

    The callbacks are told which tab: the tab itself, passed by whichever part noticed, which
    sees it only as its :class:`~ui.tk.editor.seams.Document` — so that is the type here,
    and the window finds its own tab in it (``App.on_cursor``)."""

    conn: BusConnection
    theme: Theme
    settings: dict[str, Any]
    editor_font: tkfont.Font

    def editor_font_tuple(self) -> tuple[str, int]: ...
    def show_error(self, err: RioError) -> None: ...
    def on_editor_state(self, ed: Document) -> None: ...
    def on_cursor(self, ed: Document) -> None: ...
    def buffer_lost(self, ed: Document, err: RioError) -> None: ...


class SavableEditor(Protocol):
    """What the file actions (save, save as, close, conflicts) use of an editor tab."""

    buffer_id: str
    summary: dict[str, Any]
    replica: Replica | None

    def update_summary(self, summary: dict[str, Any]) -> None: ...
    def when_quiet(self, fn: Callable[[], None]) -> None: ...


class SearchableEditor(Protocol):
    """What the find dialog (ui/tk/find/dialog.py) uses of an editor tab: its widget, its text,
    its offset mapping (a big file shows a window of rows) and its one batch door."""

    text: tk.Text
    buffer_id: str
    replica: Replica | None

    def offset(self, index: str) -> int: ...
    def index(self, offset: int) -> str | None: ...
    def selection(self) -> tuple[int, int] | None: ...
    def goto(self, line: int, col: int = 0, top: int | None = None) -> None: ...
    def schedule_ui(self) -> None: ...
    def apply_batch(self, make: Callable[[], list[TextEdit]], label: str,
                    reselect: bool = False,
                    on_done: Callable[[dict[str, Any]], None] | None = None,
                    on_error: Callable[[RioError], None] | None = None) -> None: ...


class Commands(Protocol):
    """Every room that plugs a feature in registers its commands (ui/tk/app/main_window.py
    ``register_command``): menus, toolbar and keys follow."""

    def register_command(self, name: str, label: str, accel: str, fn: Callable[[], object],
                         menu: str = "", icon: str | None = None, toggle: str | None = None,
                         group: int | None = None) -> object: ...


class FindHost(Commands, Protocol):
    """What the find dialog uses of the window."""

    root: tk.Tk
    settings: dict[str, Any]

    def active_editor(self) -> SearchableEditor | None: ...
    def set_message(self, text: str) -> None: ...


class MenuHost(Protocol):
    """What the menus, toolbar and keys (ui/tk/app/menus.py) use of the window."""

    root: tk.Tk
    theme: Theme
    commands: CommandTable
    session: Session                    # its ``recent`` files
    toolbar_hooks: list[Callable[[], object]]

    def invoke(self, name: str) -> object: ...
    def open_path(self, path: str) -> None: ...
    def toggle_values(self) -> dict[str, bool]: ...
    def choice_values(self) -> dict[str, str]: ...


class CoreEventsHost(DialogOwner, Protocol[Tab]):
    """What start-up and the core's events (ui/tk/app/core_events.py) use of the window;
    ``Tab`` is its editor tab."""

    conn: BusConnection
    session: Session                    # replaced as it changes
    notebook: ttk.Notebook
    editors: dict[str, Tab]             # buffer id → its tab
    unprotected: dict[str, str]         # buffer id → name, while its journal fails
    dialogs: dict[str, OpenDialog]      # ui.tk.widgets.dialogs.Dialog registers itself here

    #: the file's first screen while it shows (ui/tk/start/first_screen.py), else None
    first_screen: StartScreen | None

    def add_tab(self, summary: dict[str, Any], *, select: bool = True,
                cursor: tuple[int, int, int] | None = None) -> Tab: ...
    def focus_editor(self, ed: Tab) -> None: ...
    def first_screen_done(self, ed: Tab | None = None) -> None: ...
    def remove_tab(self, ed: Tab) -> None: ...
    def conflict_prompt(self, ed: Tab, *, on_save: bool = False,
                        then: Callable[[bool], None] | None = None) -> None: ...
    def set_message(self, text: str) -> None: ...
    def save_session(self) -> None: ...
    def resync_all(self) -> None: ...
    def _request(self, op: str, args: dict[str, Any], ok: Callable[[Any], object],
                 fail: Callable[[RioError], object] | None = None,
                 timeout: float = 30) -> None: ...


class CommandSet(Protocol):
    """The window's command table (ui/tk/app/commands.py) as a room that edits its entries
    sees it: the agent panel's preferences move the Agent menu's commands in and out of it."""

    def __iter__(self) -> Iterator[Command]: ...
    def add(self, command: Command) -> Command: ...


class ScreenEditor(Protocol):
    """What the file's first screen (ui/tk/start/first_screen.py) does with its file's editor
    tab when it hands over: types the keys it kept, then has it redrawn."""

    @property
    def text(self) -> tk.Text: ...
    def type_text(self, chars: str) -> None: ...
    def schedule_ui(self) -> None: ...


class StartScreen(Protocol):
    """The file's first screen (ui/tk/start/first_screen.py ``FirstScreen``) as the window
    drives it: the start room builds it before the window, so the window names only this."""

    @property
    def name(self) -> str: ...
    @property
    def editor(self) -> object: ...                # the editor tab it covers, once it does
    @property
    def placeholder(self) -> ttk.Frame | None: ...  # its own tab, until an editor covers it

    def attach(self, notebook: ttk.Notebook) -> None: ...
    def wants(self, summary: dict[str, Any]) -> bool: ...
    def cover(self, editor: tk.Misc) -> None: ...
    def hand_over(self, editor: ScreenEditor, focus: Callable[[], object]) -> int: ...
    def drop(self) -> int: ...
    def pump(self) -> None: ...                  # draw, and keep the keys, while waiting


class OutputHost(Commands, Protocol):
    """What the output pane (ui/tk/output/pane.py: Find in Files, run output) uses of the
    window: its slot, the bus, the project's folder, the look, and where a result opens."""

    conn: BusConnection

    @property
    def output_pane_slot(self) -> ttk.Frame: ...
    @property
    def project_root(self) -> str: ...
    @property
    def remote(self) -> str | None: ...            # a remote instance's files are not here
    @property
    def settings(self) -> Mapping[str, Any]: ...
    @property
    def editors(self) -> Mapping[str, SavableEditor]: ...   # unsaved texts for the search

    def active_editor(self) -> SearchableEditor | None: ...
    def open_path(self, path: str, line: int | None = None, col: int | None = None) -> None: ...


class RunLog(Protocol):
    """The output pane's Output tab, as a run's notes are written to it."""

    def write(self, text: str, tag: str = "", run: str | None = None,
              link: bool = True) -> None: ...


class FindForm(Protocol):
    """The output pane's Find in Files form, as the tree fills its folder."""

    @property
    def folder(self) -> tk.StringVar: ...


class RunOutput(Protocol):
    """The output pane (ui/tk/output/pane.py ``OutputPane``) as the Project menu's run
    commands (ui/tk/project/commands.py) and the project tree (ui/tk/project/tree.py) use it:
    the project room may not import the output room, so it names this face of it."""

    @property
    def root_path(self) -> Path: ...
    @property
    def output(self) -> RunLog: ...
    @property
    def find(self) -> FindForm: ...
    @property
    def current_run(self) -> str | None: ...

    def running(self) -> bool: ...
    def run_started(self, record: dict[str, Any], label: str = "Run") -> None: ...
    def show_output(self) -> None: ...
    def show_find(self, pattern: str | None = None) -> None: ...


class RunHost(Commands, Protocol):
    """What the Project menu's run commands (ui/tk/project/commands.py) use of the window."""

    conn: BusConnection

    @property
    def root(self) -> tk.Tk: ...
    @property
    def settings(self) -> Mapping[str, Any]: ...   # save_before_run

    def save_all(self, then: Callable[[], None] | None = None) -> None: ...


class TreeHost(Commands, Protocol):
    """What the project tree (ui/tk/project/tree.py) uses of the window: its slot, the bus,
    the look, where a file opens, and the output pane's Find in Folder."""

    conn: BusConnection

    @property
    def tree_slot(self) -> ttk.Frame: ...
    @property
    def settings(self) -> Mapping[str, Any]: ...
    @property
    def output_pane(self) -> RunOutput | None: ...

    def open_path(self, path: str) -> None: ...


class PrefsHost(Protocol):
    """What Edit → Preferences, Help → About and Help → Keyboard Shortcuts
    (ui/tk/prefs/dialog.py) use of the window: the settings they edit and apply, the font
    shown, what About tells."""

    @property
    def root(self) -> tk.Tk: ...
    @property
    def settings(self) -> dict[str, Any]: ...      # Preferences writes into it
    @property
    def project_root(self) -> str: ...
    @property
    def instance(self) -> str: ...

    def apply_settings(self) -> None: ...
    def editor_font_tuple(self) -> tuple[str, int]: ...
