"""The command table: every action of the desktop, by name, with how it is shown and reached.

Menus, the toolbar, key bindings, the keyboard-shortcut list and the ``ui.menu`` control op are
all generated from this one table, so a label, its mnemonic and its accelerator can never
disagree between the menu and the key that really fires. Nothing here touches Tk: the table is
plain data plus key-sequence translation, and is tested without a display.

A label marks its Alt mnemonic with ``&`` (``"&Save"`` → "Save", underline 0), as the Windows
resource files of the time did. An accelerator is written the way the menu shows it
(``"Ctrl+Shift+S"``, ``"F3"``, ``"Ctrl+="``) and :func:`tk_sequences` turns it into the Tk event
patterns to bind.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator

#: The menu bar, left to right (the Agent menu is filled by ui/tk/agent/panel.py; a menu with
#: no commands is not shown).
MENUS: tuple[tuple[str, str], ...] = (
    ("File", "&File"), ("Edit", "&Edit"), ("Search", "&Search"), ("View", "&View"),
    ("Project", "&Project"), ("Agent", "&Agent"), ("Help", "&Help"),
)

Handler = Callable[[], object]


@dataclass(frozen=True)
class Command:
    """One action. ``menu`` is the top-level menu it sits in ("" for key-only commands);
    ``group`` orders the menu and puts a separator between groups; ``toggle`` names a boolean
    setting shown as a check mark; ``choice`` is ``(setting, value)`` for one of several values
    of a setting, shown as a radio mark on the current one."""

    name: str
    label: str                      # with the & mnemonic marker
    menu: str = ""
    accel: str = ""                 # as shown: "Ctrl+S"
    icon: str | None = None         # toolbar icon name (ui/tk/widgets/icons.py); None = not on toolbar
    group: int = 0
    toggle: str | None = None
    handler: Handler | None = field(default=None, compare=False)
    choice: tuple[str, str] | None = None

    @property
    def text(self) -> str:
        return strip_mnemonic(self.label)[0]

    @property
    def underline(self) -> int:
        return strip_mnemonic(self.label)[1]

    @property
    def tooltip(self) -> str:
        return f"{self.text.rstrip('.')} ({self.accel})" if self.accel else self.text.rstrip(".")


def strip_mnemonic(label: str) -> tuple[str, int]:
    """``"Save &As..."`` → ``("Save As...", 5)``; ``"&&"`` is a literal ampersand; -1 = none."""
    out: list[str] = []
    underline = -1
    i = 0
    while i < len(label):
        ch = label[i]
        if ch == "&" and i + 1 < len(label):
            if label[i + 1] == "&":
                out.append("&")
                i += 2
                continue
            if underline < 0:
                underline = len(out)
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out), underline


_KEY_NAMES = {"=": "equal", "+": "plus", "-": "minus", "/": "slash", "\\": "backslash",
              ",": "comma", ".": "period", ";": "semicolon", "[": "bracketleft",
              "]": "bracketright", "`": "grave", "'": "apostrophe", "Tab": "Tab",
              "Del": "Delete", "Delete": "Delete", "Ins": "Insert", "Insert": "Insert",
              "Enter": "Return", "Esc": "Escape", "PgUp": "Prior", "PgDn": "Next",
              "Home": "Home", "End": "End", "Space": "space", "Backspace": "BackSpace"}
_MODIFIERS = {"Ctrl": "Control", "Shift": "Shift", "Alt": "Alt"}


def tk_sequences(accel: str) -> tuple[str, ...]:
    """The Tk event patterns for an accelerator as shown in a menu.

    Letters bind both cases, so Caps Lock does not silently disable shortcuts; with Shift the
    keysym is the upper-case letter (that is what X reports). ``""`` gives no patterns.
    """
    if not accel:
        return ()
    parts = accel.split("+")
    if accel.endswith("++"):      # "Ctrl++"
        parts = parts[:-2] + ["+"]
    *mods, key = parts
    tk_mods = []
    for mod in mods:
        if mod not in _MODIFIERS:
            raise ValueError(f"unknown modifier {mod!r} in accelerator {accel!r}")
        tk_mods.append(_MODIFIERS[mod])
    prefix = "-".join(tk_mods) + ("-" if tk_mods else "")
    if len(key) == 1 and key.isalpha():
        if "Shift" in tk_mods:
            return (f"<{prefix}{key.upper()}>",)
        return (f"<{prefix}{key.lower()}>", f"<{prefix}{key.upper()}>")
    if len(key) == 1 and key.isdigit():
        # "<Alt-1>" would be Alt + mouse button 1: a digit key is spelt "Key-1".
        return (f"<{prefix}Key-{key}>",)
    name = _KEY_NAMES.get(key, key)
    if "Shift" in tk_mods and name == "Tab":
        # X turns Shift+Tab into ISO_Left_Tab on most keymaps; bind both.
        rest = "-".join(m for m in tk_mods if m != "Shift")
        rest = rest + "-" if rest else ""
        return (f"<{prefix}Tab>", f"<{rest}ISO_Left_Tab>")
    return (f"<{prefix}{name}>",)


class CommandTable:
    """Commands by name, in registration order (which is also the menu order within a group)."""

    def __init__(self, commands: Iterable[Command] = ()) -> None:
        self._commands: dict[str, Command] = {}
        for cmd in commands:
            self.add(cmd)

    def add(self, command: Command) -> Command:
        """Add or replace a command (a later registration of the same name wins, keeping its
        place — a plug-in module can take over a placeholder)."""
        self._commands[command.name] = command
        return command

    def bind(self, name: str, handler: Handler) -> None:
        self._commands[name] = replace(self._commands[name], handler=handler)

    def __contains__(self, name: str) -> bool:
        return name in self._commands

    def __iter__(self) -> Iterator[Command]:
        return iter(self._commands.values())

    def get(self, name: str) -> Command:
        try:
            return self._commands[name]
        except KeyError:
            raise KeyError(f"no command {name!r}") from None

    def invoke(self, name: str) -> object:
        cmd = self.get(name)
        if cmd.handler is None:
            raise LookupError(f"command {name!r} has no handler yet")
        return cmd.handler()

    def menu(self, menu: str) -> list[Command | None]:
        """The entries of one menu in order; None stands for a separator between groups."""
        entries = [c for c in self._commands.values() if c.menu == menu]
        groups = sorted({c.group for c in entries})
        out: list[Command | None] = []
        for g in groups:
            if out:
                out.append(None)
            out.extend(c for c in entries if c.group == g)
        return out

    def by_path(self, path: str) -> Command:
        """``"File/Save"`` or ``"File/Save As..."`` (mnemonic markers and a trailing "..."
        optional, case-insensitive) → the command; also accepts a command name."""
        if path in self._commands:
            return self._commands[path]
        menu, _, item = path.partition("/")
        want = _norm_label(item)
        for cmd in self._commands.values():
            if cmd.menu.lower() == menu.strip().lower() and _norm_label(cmd.label) == want:
                return cmd
        raise KeyError(f"no menu item {path!r}")

    def toolbar(self) -> list[Command | None]:
        """Commands with icons, in order, with None between menus (a toolbar separator)."""
        out: list[Command | None] = []
        last_menu = None
        for cmd in self._commands.values():
            if cmd.icon is None:
                continue
            if last_menu is not None and cmd.menu != last_menu:
                out.append(None)
            out.append(cmd)
            last_menu = cmd.menu
        return out

    def shortcuts(self) -> list[tuple[str, str, str]]:
        """``(menu, label, accelerator)`` for every command that has a key, for the help list."""
        return [(c.menu or "Editor", c.text, c.accel) for c in self._commands.values()
                if c.accel]

    def conflicts(self) -> dict[str, list[str]]:
        """Accelerators claimed by more than one command (a table bug)."""
        seen: dict[str, list[str]] = {}
        for c in self._commands.values():
            if c.accel:
                seen.setdefault(c.accel.lower(), []).append(c.name)
        return {k: v for k, v in seen.items() if len(v) > 1}


def _norm_label(label: str) -> str:
    text = strip_mnemonic(label)[0].strip().lower()
    return text[:-3].rstrip() if text.endswith("...") else text.rstrip("…").rstrip()


def _c(name: str, label: str, menu: str, accel: str = "", icon: str | None = None,
       group: int = 0, toggle: str | None = None,
       choice: tuple[str, str] | None = None) -> Command:
    return Command(name, label, menu, accel, icon, group, toggle, choice=choice)


#: The desktop's built-in commands. The app binds handlers by name; the plug-in modules (find, output, project tree) replace
#: the Search and Project placeholders through ``app.register_command``.
DEFAULT_COMMANDS: tuple[Command, ...] = (
    _c("file.new", "&New", "File", "Ctrl+N", "new"),
    _c("file.open", "&Open...", "File", "Ctrl+O", "open"),
    _c("file.open_folder", "Open &Folder...", "File", "Ctrl+Shift+O"),
    _c("file.recent", "&Recent Files", "File"),            # a cascade, filled by the app
    _c("file.save", "&Save", "File", "Ctrl+S", "save", group=1),
    _c("file.save_as", "Save &As...", "File", "Ctrl+Shift+S", group=1),
    _c("file.save_all", "Save A&ll", "File", "Ctrl+Alt+S", "save_all", group=1),
    _c("file.revert", "Re&vert", "File", group=2),
    _c("file.close", "&Close", "File", "Ctrl+W", group=2),
    _c("file.quit", "E&xit", "File", "Ctrl+Q", group=3),

    _c("edit.undo", "&Undo", "Edit", "Ctrl+Z", "undo"),
    _c("edit.redo", "&Redo", "Edit", "Ctrl+Y", "redo"),
    _c("edit.cut", "Cu&t", "Edit", "Ctrl+X", "cut", group=1),
    _c("edit.copy", "&Copy", "Edit", "Ctrl+C", "copy", group=1),
    _c("edit.paste", "&Paste", "Edit", "Ctrl+V", "paste", group=1),
    _c("edit.select_all", "Select &All", "Edit", "Ctrl+A", group=1),
    _c("edit.indent", "&Indent", "Edit", "Ctrl+]", group=2),
    _c("edit.dedent", "&Dedent", "Edit", "Ctrl+[", group=2),
    _c("edit.comment", "Toggle Co&mment", "Edit", "Ctrl+/", group=2),
    _c("edit.overwrite", "&Overwrite Mode", "Edit", "Insert", group=2, toggle="overwrite"),
    _c("edit.preferences", "Pr&eferences...", "Edit", group=3),

    _c("search.find", "&Find...", "Search", "Ctrl+F", "find"),
    _c("search.replace", "&Replace...", "Search", "Ctrl+H", "replace"),
    _c("search.find_next", "Find &Next", "Search", "F3"),
    _c("search.find_prev", "Find &Previous", "Search", "Shift+F3"),
    _c("search.find_in_files", "Find in F&iles...", "Search", "Ctrl+Shift+F", group=1),
    _c("search.goto_line", "&Go to Line...", "Search", "Ctrl+G", group=1),
    _c("search.bookmark_toggle", "Toggle &Bookmark", "Search", "Ctrl+F2", "bookmarks", group=2),
    _c("search.bookmark_next", "Next Boo&kmark", "Search", "F2", group=2),
    _c("search.bookmark_prev", "Previous Bookm&ark", "Search", "Shift+F2", group=2),

    _c("view.wrap", "&Word Wrap", "View", "Alt+Z", toggle="wrap"),
    _c("view.line_numbers", "&Line Numbers", "View", toggle="line_numbers"),
    _c("view.zoom_in", "Zoom &In", "View", "Ctrl+=", group=1),
    _c("view.zoom_out", "Zoom &Out", "View", "Ctrl+-", group=1),
    _c("view.zoom_reset", "&Reset Zoom", "View", "Ctrl+0", group=1),
    _c("view.theme_classic", "&Classic Theme", "View", group=2, choice=("theme", "classic")),
    _c("view.theme_dark", "&Dark Theme", "View", group=2, choice=("theme", "dark")),
    _c("view.next_tab", "Ne&xt Tab", "View", "Ctrl+Tab", group=3),
    _c("view.prev_tab", "Pre&vious Tab", "View", "Ctrl+Shift+Tab", group=3),

    _c("project.run", "&Run", "Project", "F5", "run"),
    _c("project.build", "&Build", "Project", "Ctrl+B"),
    _c("project.stop", "&Stop", "Project", "Shift+F5", "stop"),

    _c("help.shortcuts", "&Keyboard Shortcuts", "Help", "F1"),
    _c("help.about", "&About Rio", "Help", group=1),
)


def default_table() -> CommandTable:
    return CommandTable(DEFAULT_COMMANDS)
