"""Pick the editor and UI fonts, checked against what Tk really gives.

Under Xft, Tk sees only fontconfig fonts and asking for a missing family silently returns some
other font — even ``"fixed"`` becomes a proportional face (seen under Xvfb with Tk 8.6). So every
candidate is checked with ``Font.actual("family")`` and the first one that really resolves wins.
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
from dataclasses import dataclass

# The crisp '90s face first (fonts-terminus-otb, then the TTF build), then a sure thing.
EDITOR_CANDIDATES: tuple[tuple[str, int], ...] = (
    ("Terminus", 12),
    ("Terminus (TTF)", 12),
    ("DejaVu Sans Mono", 10),
    ("Liberation Mono", 10),
    ("Courier New", 10),
)
UI_CANDIDATES: tuple[tuple[str, int], ...] = (
    ("DejaVu Sans", 9),
    ("Liberation Sans", 9),
    ("Arial", 9),
    ("Helvetica", 9),
)


@dataclass(frozen=True)
class FontChoice:
    """A family Tk resolved to exactly, with the size to use; ``fallback`` when it is Tk's
    named default because no candidate resolved."""

    family: str
    size: int
    fallback: bool = False

    def as_tuple(self) -> tuple[str, int]:
        return (self.family, self.size)


def _norm(name: str) -> str:
    return name.strip().lower()


def resolves(root: tk.Misc, family: str, size: int) -> bool:
    """True when asking Tk for ``family`` gives that family, not a silent substitute."""
    actual = tkfont.Font(root=root, family=family, size=size).actual("family")
    return _norm(str(actual)) == _norm(family)


def pick_font(root: tk.Misc, candidates: tuple[tuple[str, int], ...],
              fallback_named: str) -> FontChoice:
    """The first candidate that really resolves, else the named Tk font (TkFixedFont…)."""
    available = {_norm(f) for f in tkfont.families(root)}
    for family, size in candidates:
        if _norm(family) in available and resolves(root, family, size):
            return FontChoice(family, size)
    named = tkfont.nametofont(fallback_named, root=root)
    actual = named.actual()
    return FontChoice(str(actual["family"]), int(actual["size"]) or 10, fallback=True)


def editor_font(root: tk.Misc) -> FontChoice:
    """Monospace font for the editor, output pane and terminal-like views."""
    return pick_font(root, EDITOR_CANDIDATES, "TkFixedFont")


def ui_font(root: tk.Misc) -> FontChoice:
    """Sans font for menus, dialogs, tabs and the status bar."""
    return pick_font(root, UI_CANDIDATES, "TkDefaultFont")


def install_named_fonts(root: tk.Misc) -> tuple[FontChoice, FontChoice]:
    """Point Tk's named fonts at our choices, so every widget follows without options.

    TkDefaultFont/TkMenuFont/TkTextFont… become the UI font; TkFixedFont the editor font.
    Returns ``(editor, ui)``.
    """
    editor, ui = editor_font(root), ui_font(root)
    for name in ("TkDefaultFont", "TkMenuFont", "TkTextFont", "TkHeadingFont",
                 "TkCaptionFont", "TkSmallCaptionFont", "TkIconFont", "TkTooltipFont"):
        try:
            tkfont.nametofont(name, root=root).configure(family=ui.family, size=ui.size)
        except tk.TclError:  # a named font missing on this Tk build is harmless
            continue
    tkfont.nametofont("TkFixedFont", root=root).configure(family=editor.family,
                                                          size=editor.size)
    return editor, ui
