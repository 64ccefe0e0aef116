"""The file's first screen in the window's first paint (issue 20, docs/adr/0043).

`rio FILE` forks its window before the supervisor and the core exist (actors/runtime/window_first.py);
the core answers a few hundred milliseconds later — seconds on a loaded machine — and until
then the window was an empty grey frame. Now the window's first paint holds the top of the
file it was asked to open, read from disk, where the editor will show it: its lines, line
numbers, the editor's font and colours, and the file's name in the title.

It is a picture, not an editor: nothing in it can be edited, and the core owns the document
as before. Keys typed while it shows are kept, in order, and given to the editor once it has
the core's text (:meth:`FirstScreen.hand_over`): printable characters, Enter and Tab through
the editor's own typing path (``EditorTab.type_text``), every other key (BackSpace, arrows,
Ctrl+…) as the same key event on the editor's text, so its own bindings decide. Clicks and
menus are not taken meanwhile, as before (they waited for the core then too).

Its life: :func:`first_screen_for` reads the file and builds it on the root before the window
is mapped (ui/tk/start/first.py); :meth:`FirstScreen.attach` puts it over the App's notebook once
the App is built (the menus and panes draw around it while the core starts);
:meth:`FirstScreen.cover` puts it over the file's editor tab when the core opens it;
:meth:`FirstScreen.hand_over` gives the editor the keys and goes, when the editor is ready.
:meth:`FirstScreen.drop` goes without an editor (the file could not be opened).

Not drawn (the editor alone shows the file): a file that is not a regular file or cannot be
read, one with a NUL byte (binary: the core refuses it), one with a UTF-16/32 byte-order mark,
and any file while the project has journals — unsaved edits the core is about to recover, so
the disk is not what the editor will show. Its decoding is the core's (rio/files/files.py
``decode_bytes``: a UTF-8 BOM, then UTF-8, then Latin-1) without importing it on the first
paint's path; the core's text replaces it either way.
"""

from __future__ import annotations

import os
import stat
import tkinter as tk
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from tkinter import font as tkfont
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:   # named only: this module is imported before the first paint, kept light
    from tkinter import ttk

    from ui.tk.app.seams import ScreenEditor

#: Lines drawn: more than the tallest window shows.
FIRST_LINES = 150
#: A line longer than this is cut for the picture (the editor shows it whole).
LINE_CHARS = 1000
#: At most this much of the file is read for it.
READ_BYTES = 256 * 1024
#: Where the editor tab is in the App's window, in pixels from the edges of the window's area
#: below the menu bar, besides the project tree's width and the output pane's height
#: (measured with the shipped fonts: toolbar, tab row, sashes, status bar; the first paint
#: draws the file there, tests/desktop/start/test_gui_first_screen.py holds the App to it).
EDITOR_TOP = 57
EDITOR_LEFT = 9
EDITOR_RIGHT = 4
EDITOR_BOTTOM = 30
#: Modifier bits of a key event's state that make a key a command, not a character
#: (Control, Alt/Mod1, Mod4/Super).
_COMMAND_STATE = 0x0004 | 0x0008 | 0x0040
_MODIFIER_KEYS = frozenset({"Shift_L", "Shift_R", "Control_L", "Control_R", "Alt_L", "Alt_R",
                            "Meta_L", "Meta_R", "Super_L", "Super_R", "Caps_Lock",
                            "ISO_Level3_Shift", "Num_Lock"})
_UTF16_32_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")


@dataclass(frozen=True)
class Key:
    """A key typed while the first screen showed: its keysym, state and character."""

    keysym: str
    state: int
    char: str

    @property
    def typed(self) -> str | None:
        """The text it types through the editor's typing path (Enter, Tab, a printable
        character without Control/Alt), or None: a key for the editor's bindings."""
        if self.state & _COMMAND_STATE:
            return None
        if self.keysym in ("Return", "KP_Enter"):
            return "\n"
        if self.keysym == "Tab":
            return "\t"
        if len(self.char) == 1 and self.char.isprintable():
            return self.char
        return None


def read_first_screen(path: str | os.PathLike[str], *, top: int = 1,
                      lines: int = FIRST_LINES) -> str | None:
    """The file's lines ``top`` … ``top + lines - 1`` (1-based), as the editor will show
    them; None when it is not drawn (the module's docstring says which files)."""
    try:
        with open(path, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            data = fh.read(READ_BYTES + 1)
    except OSError:
        return None
    if data.startswith(_UTF16_32_BOMS) or b"\x00" in data:
        return None
    if len(data) > READ_BYTES:
        cut = data.rfind(b"\n", 0, READ_BYTES)
        data = data[:cut + 1] if cut >= 0 else data[:READ_BYTES]
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    shown = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first = max(1, top) - 1
    return "\n".join(line[:LINE_CHARS] for line in shown[first:first + lines])


def journals_waiting(journal_dir: Path) -> bool:
    """Does the project have journals (unsaved edits the core recovers at its start)?"""
    try:
        with os.scandir(journal_dir) as entries:
            return any(e.is_file() and not e.name.endswith(".tmp") and ".damaged-" not in e.name
                       for e in entries)
    except OSError:
        return False


class FirstScreen:
    """The first screen's widgets on ``root`` (the module's docstring)."""

    def __init__(self, root: tk.Tk, path: str, text: str, *, first_line: int,
                 font: tuple[str, int], colours: dict[str, str], tree_width: int,
                 output_height: int, line_numbers: bool = True) -> None:
        self.root = root
        self.path = os.path.realpath(path)
        self.keys: list[Key] = []
        #: the file's editor tab, once this screen covers it (:meth:`cover`)
        self.editor: tk.Misc | None = None
        #: this screen's own tab in the App's notebook, until an editor covers it
        self.placeholder: ttk.Frame | None = None
        self.frame = tk.Frame(root, background=colours["editor_bg"], borderwidth=0,
                              highlightthickness=0, name="keep_first_screen")
        count = text.count("\n") + 1
        # The editor's gutter, drawn as the editor draws it (ui/tk/editor/decor.py
        # ``_draw_gutter``: a canvas ``measure("0" * max(3, digits)) + 18`` wide, numbers
        # right-aligned 6 px from its edge, one per line at the Text's line spacing), so the
        # text does not move sideways when the editor takes its place.
        measure = tkfont.Font(root=root, font=font)
        width = measure.measure("0" * max(3, len(str(first_line + count - 1)))) + 18
        spacing = measure.metrics("linespace")
        self.gutter = tk.Canvas(self.frame, width=width, borderwidth=0, highlightthickness=0,
                                background=colours["gutter_bg"], takefocus=False,
                                name="keep_gutter")
        for row, number in enumerate(range(first_line, first_line + count)):
            self.gutter.create_text(width - 6, 2 + row * spacing, anchor="ne", text=str(number),
                                    font=font, fill=colours["gutter_fg"], tags=("number",))
        self.text = tk.Text(self.frame, font=font, borderwidth=0, highlightthickness=0,
                            padx=4, pady=2, wrap="none", background=colours["editor_bg"],
                            foreground=colours["editor_fg"], insertwidth=0, cursor="",
                            name="keep_text")
        self.text.insert("1.0", text)
        self.text.configure(state="disabled")
        if line_numbers:
            self.gutter.pack(side="left", fill="y")
        self.text.pack(side="left", fill="both", expand=True)
        # (Named keep_…: the App's theme, applied when it is built, leaves them as they are.)
        # Our tag first: every key is kept and goes no further (the Text's own bindings would
        # move a cursor nobody sees).
        self.text.bindtags(("RioFirstScreen",) + self.text.bindtags())
        self.text.bind_class("RioFirstScreen", "<KeyPress>", self._keep)
        left = tree_width + EDITOR_LEFT
        self.frame.place(x=left, y=EDITOR_TOP, relwidth=1.0, relheight=1.0,
                         width=-left - EDITOR_RIGHT, height=-EDITOR_TOP - output_height -
                         EDITOR_BOTTOM)
        self.text.focus_set()

    def _keep(self, event: tk.Event) -> str:
        if event.keysym not in _MODIFIER_KEYS:
            self.keys.append(Key(str(event.keysym), int(event.state), str(event.char or "")))
        return "break"

    # --- its life ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def attach(self, notebook: ttk.Notebook) -> None:
        """Into the App's notebook: a tab of the file's name (the editor's tab takes its
        place, :meth:`cover`), with the picture over it, above the App's widgets."""
        from tkinter import ttk

        from ui.tk.widgets.tk_calls import select_tab
        self.placeholder = ttk.Frame(notebook, name="first_screen_tab")
        notebook.add(self.placeholder, text=f" {self.name} ")
        select_tab(notebook, self.placeholder)
        self._over(self.placeholder)
        try:
            # Clicks and keys anywhere in the window come here until the editor takes over:
            # no menu or button acts before the core answers (as before: the window was not
            # served at all then), and every key is kept.
            self.text.grab_set()
        except tk.TclError:
            pass                           # not viewable (yet): keys still come by focus

    def pump(self) -> None:
        """Draw what changed and take the keys typed, while the window waits for the hub or
        the core (ui/tk/start/desktop.py, ui/tk/app/core_events.py ``call_when_up``): the window's
        events (expose, keys: the grab sends them here) and idle redraws, no timers."""
        import _tkinter
        try:
            while self.root.tk.dooneevent(_tkinter.WINDOW_EVENTS | _tkinter.DONT_WAIT):
                pass
            self.root.update_idletasks()
        except tk.TclError:
            pass

    def _over(self, widget: tk.Misc) -> None:
        self.frame.place_configure(in_=widget, x=0, y=0, relwidth=1.0, relheight=1.0,
                                   width=0, height=0)
        self.frame.lift()
        self.text.focus_set()

    def wants(self, summary: dict[str, Any]) -> bool:
        """Is ``summary`` (a buffer the core opened) the file this screen shows?"""
        path = summary.get("path")
        return bool(path) and os.path.realpath(str(path)) == self.path

    def cover(self, editor: tk.Misc) -> None:
        """Over the file's editor tab (added in the place of this screen's own tab) until it
        has its text."""
        self.editor = editor
        self._over(editor)
        if self.placeholder is not None:
            self.placeholder.destroy()     # its tab goes with it
            self.placeholder = None

    def hand_over(self, editor: ScreenEditor, focus: Callable[[], object]) -> int:
        """The editor has the core's text: give it the keys typed meanwhile, then go. Returns
        how many keys it was given."""
        keys, self.keys = self.keys, []
        self.text.grab_release()
        self.frame.destroy()
        focus()
        text = ""
        for key in keys:
            typed = key.typed
            if typed is not None:
                text += typed
                continue
            if text:
                editor.type_text(text)
                text = ""
            try:
                editor.text.event_generate(f"<KeyPress-{key.keysym}>", state=key.state,
                                           when="now")
            except tk.TclError:
                continue               # a keysym this display does not know: dropped
        if text:
            editor.type_text(text)
        editor.schedule_ui()
        return len(keys)

    def drop(self) -> int:
        """Go without an editor (the file could not be opened); returns the keys lost."""
        lost = len(self.keys)
        self.keys = []
        self.text.grab_release()
        self.frame.destroy()
        if self.placeholder is not None:
            self.placeholder.destroy()
            self.placeholder = None
        return lost


def first_screen_for(root: tk.Tk, project_root: str, files: list[str]) -> FirstScreen | None:
    """The first screen of the file `rio FILE` opens first (it becomes the active tab,
    ui/tk/app/session.py ``restore_plan``), at the top line the session remembers for it, in the
    session's look; None when there is none to draw."""
    if not files:
        return None
    path = files[0]
    try:
        from rio.config.instance import journal_dir, project_state_dir
        from ui.tk.app import session as session_mod
        project = Path(project_root)
        if journals_waiting(journal_dir(project)):
            return None
        saved = session_mod.load(project_state_dir(project))
        top = next((d.top for d in saved.documents if d.path == path), 1)
        text = read_first_screen(path, top=top)
        if text is None:
            return None
        settings = _settings(saved.settings)
        from ui.tk.widgets.fonts import install_named_fonts
        from ui.tk.widgets.theme import THEMES
        theme = THEMES.get(str(settings.get("theme") or "classic"), THEMES["classic"])
        editor, _ui = install_named_fonts(root)       # as the App does: the menus' font too
        font = (str(settings.get("font") or editor.family),
                int(settings.get("size") or editor.size))
        _menubar(root)
        colours = {k: getattr(theme, k) for k in ("editor_bg", "editor_fg", "gutter_bg",
                                                  "gutter_fg")}
        root.configure(background=theme.face)
        root.title(f"{Path(path).name} — Rio — {project.name}")
        return FirstScreen(root, path, text, first_line=max(1, top), font=font,
                           colours=colours, tree_width=saved.layout.tree_width,
                           output_height=saved.layout.output_height,
                           line_numbers=bool(settings.get("line_numbers", True)))
    except Exception:  # noqa: BLE001 -- a picture that cannot be drawn is not drawn
        return None


def _menubar(root: tk.Tk) -> None:
    """The menu bar's titles (empty menus; the App's replace them): the bar takes its height
    in the first paint, so the file's lines do not move down when the App's comes."""
    from ui.tk.app.commands import MENUS, strip_mnemonic
    bar = tk.Menu(root, tearoff=False)
    for name, label in MENUS:
        if name == "Agent":
            continue                 # added later by the agent panel, as in the App
        text, underline = strip_mnemonic(label)
        bar.add_cascade(label=text, underline=underline,
                        menu=tk.Menu(bar, tearoff=False, name=f"first_{name.lower()}"))
    root.configure(menu=bar)


def _settings(session_settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The editor's look as the App will take it: the session's, then the preferences'."""
    settings = dict(session_settings or {})
    try:
        from ui.tk.prefs.model import load_preferences
        settings.update(dict(load_preferences()))
    except Exception:  # noqa: BLE001 -- the App reports a bad preferences file
        pass
    return settings
