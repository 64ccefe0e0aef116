"""Preferences, display-free: the settings the Preferences dialog edits, their checks, and
where they live (``config_base()/ui.json`` — the user's, for every project; the window layout
and open documents are per project, in ui-session.json).

The app keeps ``app.settings`` as a plain dict (ui/tk/app/main_window.py); :class:`Preferences` is the
checked, typed form of the keys this module owns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ui.tk.prefs.store import UI_FILE, read_ui, ui_path, update_ui

PREFS_FILE = UI_FILE
SIZE_RANGE = (6, 40)
TAB_RANGE = (1, 16)
THEME_NAMES = ("classic", "dark")


@dataclass(frozen=True)
class Preferences:
    font: str = ""          # "" = the checked default (ui/tk/widgets/fonts.py)
    size: int = 0           # 0 = the default font's size
    tab_width: int = 4
    use_spaces: bool = True
    theme: str = "classic"
    wrap: bool = False
    line_numbers: bool = True

    def to_settings(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> "Preferences":
        """Lenient: a value of the wrong type or out of range falls back to the default."""
        d = cls()
        out: dict[str, Any] = {}
        for f in fields(cls):
            value = settings.get(f.name, getattr(d, f.name))
            default = getattr(d, f.name)
            if isinstance(default, bool):
                value = value if isinstance(value, bool) else default
            elif isinstance(default, int):
                value = value if isinstance(value, int) and not isinstance(value, bool) else default
            else:
                value = value if isinstance(value, str) else default
            out[f.name] = value
        if out["size"] and not SIZE_RANGE[0] <= out["size"] <= SIZE_RANGE[1]:
            out["size"] = d.size
        if not TAB_RANGE[0] <= out["tab_width"] <= TAB_RANGE[1]:
            out["tab_width"] = d.tab_width
        if out["theme"] not in THEME_NAMES:
            out["theme"] = d.theme
        return cls(**out)


def parse_form(values: Mapping[str, Any]) -> Preferences:
    """The dialog's fields (strings and booleans) → Preferences; ValueError says what is wrong
    in words for the dialog's status line."""
    def number(name: str, label: str, lo: int, hi: int) -> int:
        text = str(values.get(name, "")).strip()
        if not text.isdigit() or not lo <= int(text) <= hi:
            raise ValueError(f"{label} must be a whole number from {lo} to {hi}.")
        return int(text)

    theme = str(values.get("theme", "classic"))
    if theme not in THEME_NAMES:
        raise ValueError(f"Theme must be one of {', '.join(THEME_NAMES)}.")
    font = str(values.get("font", "")).strip()
    return Preferences(font=font, size=number("size", "Size", *SIZE_RANGE),
                       tab_width=number("tab_width", "Tab width", *TAB_RANGE),
                       use_spaces=bool(values.get("use_spaces", True)), theme=theme,
                       wrap=bool(values.get("wrap", False)),
                       line_numbers=bool(values.get("line_numbers", True)))


def prefs_path(folder: Path | None = None) -> Path:
    return ui_path(folder)


def load_preferences(path: Path | None = None) -> dict[str, Any]:
    """The saved settings (only the keys this module knows, checked); {} when there are none
    or the file is damaged — preferences must never stop the editor from starting."""
    data = read_ui(path)
    prefs = Preferences.from_settings(data).to_settings()
    return {k: v for k, v in prefs.items() if k in data}


def save_preferences(prefs: Preferences, path: Path | None = None) -> Path:
    """Write this module's keys through the UI's one writer (ui/tk/prefs/store.py: atomic,
    one read-merge-write); the agent panel's keys and keys of other versions are kept."""
    return update_ui(prefs.to_settings(), path)


def filter_shortcuts(rows: list[tuple[str, str]], query: str) -> list[tuple[str, str]]:
    """Rows whose label or keys contain every word of ``query`` (case-insensitive)."""
    words = query.lower().split()
    return [r for r in rows if all(w in f"{r[0]} {r[1]}".lower() for w in words)]
