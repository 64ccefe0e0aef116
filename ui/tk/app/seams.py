"""The seams between the desktop's parts, declared as Protocols.

An editor tab needs a little of its window (fonts, settings, where to report), and the file
actions need a little of an editor (its buffer, its summary, when it is quiet). Declaring
those faces here — instead of importing ``App`` into the editor and ``EditorTab`` into the file
actions — keeps the modules free of import circles (tests/house/test_layering.py) and says exactly
what each side relies on.
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
from tkinter import ttk
from typing import Any, Callable, Protocol

from rio.protocol.errors import RioError
from rio.text.edit_commands import TextEdit
from rio.text.replica import Replica
from ui.tk.widgets.theme import Theme


class EditorHost(Protocol):
    """What an editor tab (ui/tk/editor/tab.py and its mixins) uses of the window it lives in."""

    conn: Any
    theme: Theme
    settings: dict[str, Any]
    editor_font: tkfont.Font

    def editor_font_tuple(self) -> tuple[str, int]: ...
    def show_error(self, err: RioError) -> None: ...
    def on_editor_state(self, ed: Any) -> None: ...
    def on_cursor(self, ed: Any) -> None: ...
    def buffer_lost(self, ed: Any, err: RioError) -> None: ...


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


class FindHost(Protocol):
    """What the find dialog uses of the window."""

    root: tk.Tk
    settings: dict[str, Any]

    def active_editor(self) -> SearchableEditor | None: ...
    def set_message(self, text: str) -> None: ...
    def register_command(self, name: str, label: str, accel: str, fn: Callable[[], object],
                         menu: str = "", icon: str | None = None, toggle: str | None = None,
                         group: int | None = None) -> Any: ...


class MenuHost(Protocol):
    """What the menus, toolbar and keys (ui/tk/app/menus.py) use of the window."""

    root: tk.Tk
    theme: Theme
    commands: Any                       # ui.tk.app.commands.CommandTable
    session: Any                        # ui.tk.app.session.Session: its ``recent`` files
    toolbar_hooks: list[Callable[[], object]]

    def invoke(self, name: str) -> object: ...
    def open_path(self, path: str) -> None: ...
    def toggle_values(self) -> dict[str, bool]: ...
    def choice_values(self) -> dict[str, str]: ...


class CoreEventsHost(Protocol):
    """What start-up and the core's events (ui/tk/app/core_events.py) use of the window."""

    conn: Any
    session: Any                        # ui.tk.app.session.Session, replaced as it changes
    notebook: ttk.Notebook
    editors: dict[str, Any]             # buffer id → its EditorTab
    unprotected: dict[str, str]         # buffer id → name, while its journal fails
    dialogs: dict[str, Any]             # ui.tk.widgets.dialogs.Dialog registers itself here

    #: the file's first screen while it shows (ui/tk/start/first_screen.py), else None
    first_screen: Any

    def add_tab(self, summary: dict[str, Any], *, select: bool = True,
                cursor: tuple[int, int, int] | None = None) -> Any: ...
    def focus_editor(self, ed: Any) -> None: ...
    def first_screen_done(self, ed: Any = None) -> None: ...
    def remove_tab(self, ed: Any) -> None: ...
    def conflict_prompt(self, ed: Any, *, on_save: bool = False,
                        then: Callable[[bool], None] | None = None) -> None: ...
    def set_message(self, text: str) -> None: ...
    def save_session(self) -> None: ...
    def resync_all(self) -> None: ...
    def _request(self, op: str, args: dict[str, Any], ok: Callable[[Any], object],
                 fail: Callable[[RioError], object] | None = None,
                 timeout: float = 30) -> None: ...
