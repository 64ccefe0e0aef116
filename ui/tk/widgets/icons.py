"""Toolbar icons drawn by Rio itself: 16×16 pixel art in code, no files, no downloads.

Each icon is a stack of small *sprites* — rows of palette letters, ``.`` for transparent —
painted onto a 16×16 canvas, then turned into a ``tk.PhotoImage``. The palette is the VGA
16-colour set plus two golds, so the icons have the crisp, flat '90s look of the theme.
The dark theme remaps a few colours (navy and grey vanish on a dark face).

``icon(name, theme, root)`` caches images per Tk interpreter: a PhotoImage belongs to one
interpreter, and Tk drops an image whose last Python reference goes away, so the cache is also
what keeps the toolbar's images alive.
"""

from __future__ import annotations

import tkinter as tk
import weakref
from collections.abc import Mapping
from types import MappingProxyType

from ui.tk.widgets.tk_calls import default_root, tk_root

SIZE = 16
Sprite = tuple[str, ...]

PALETTE: Mapping[str, str] = MappingProxyType({
    "k": "#000000", "w": "#ffffff", "s": "#c0c0c0", "g": "#808080",
    "r": "#ff0000", "R": "#800000", "y": "#ffff00", "Y": "#808000",
    "n": "#00ff00", "N": "#008000", "b": "#0000ff", "B": "#000080",
    "c": "#00ffff", "C": "#008080", "m": "#ff00ff", "M": "#800080",
    "o": "#e0b000",  # folder gold
})
_DARK_OVERRIDES = {"B": "#5a7dff", "g": "#a8a8a8", "N": "#20c020", "Y": "#c0c040"}

# --- sprites -----------------------------------------------------------------------------------

_PAGE: Sprite = (
    "kkkkkkkk....",
    "kwwwwwwkk...",
    "kwwwwwwkwk..",
    "kwwwwwwkwwk.",
    "kwwwwwwkkkkk",
    "kwwwwwwwwwwk",
    "kwwwwwwwwwwk",
    "kwwwwwwwwwwk",
    "kwwwwwwwwwwk",
    "kwwwwwwwwwwk",
    "kwwwwwwwwwwk",
    "kwwwwwwwwwwk",
    "kwwwwwwwwwwk",
    "kkkkkkkkkkkk",
)
_FOLDER: Sprite = (
    ".kkkk...........",
    "kooook..........",
    "kowoookkkkkkk...",
    "kooooooooooook..",
    "kooookkkkkkkkkkk",
    "koookyyyyyyyyyyk",
    "kookyyyyyyyyyyk.",
    "kookyyyyyyyyyk..",
    "kokyyyyyyyyyyk..",
    "kokyyyyyyyyyk...",
    "kkyyyyyyyyyyk...",
    "kkkkkkkkkkkk....",
)
_FLOPPY: Sprite = (
    "kkkkkkkkkkkkkk",
    "kBkwwwwwwwwkBk",
    "kBkwwwwwwwwkBk",
    "kBkwggggggwkBk",
    "kBkwwwwwwwwkBk",
    "kBkwggggggwkBk",
    "kBkwwwwwwwwkBk",
    "kBBkkkkkkkkBBk",
    "kBBBBBBBBBBBBk",
    "kBBBssssssBBBk",
    "kBBBsskkssBBBk",
    "kBBBsskkssBBBk",
    "kBBBssssssBBBk",
    "kkkkkkkkkkkkkk",
)
_SMALL_FLOPPY: Sprite = (
    "kkkkkkkkkkk",
    "kBkwwwwwkBk",
    "kBkwgggwkBk",
    "kBkwwwwwkBk",
    "kBkwgggwkBk",
    "kBBkkkkkBBk",
    "kBBBBBBBBBk",
    "kBBsssssBBk",
    "kBBskksBBBk",
    "kBBsssssBBk",
    "kkkkkkkkkkk",
)
_SCISSORS: Sprite = (
    ".k.......k..",
    ".kk.....kk..",
    "..k.....k...",
    "..kk...kk...",
    "...k...k....",
    "...kk.kk....",
    "....kkk.....",
    ".....k......",
    "....r.r.....",
    "..rrr.rrr...",
    ".r..r.r..r..",
    "r...r.r...r.",
    "r...r.r...r.",
    ".r.r...r.r..",
    "..r.....r...",
)
_SHEET: Sprite = (
    "kkkkkkkkk",
    "kwwwwwwwk",
    "kwgggggwk",
    "kwwwwwwwk",
    "kwgggggwk",
    "kwwwwwwwk",
    "kwggggwwk",
    "kwwwwwwwk",
    "kwgggggwk",
    "kwwwwwwwk",
    "kkkkkkkkk",
)
_SHEET_INKED: Sprite = tuple(row.replace("g", "B") for row in _SHEET)
_CLIPBOARD: Sprite = (
    "....kkkkk.....",
    ".kkkksssskkk..",
    "kYYkkkkkkkYYk.",
    "kYYYYYYYYYYYk.",
    "kYYYYYYYYYYYk.",
    "kYYYYYYYYYYYk.",
    "kYYYYYYYYYYYk.",
    "kYYYYYYYYYYYk.",
    "kYYYYYYYYYYYk.",
    "kYYYYYYYYYYYk.",
    "kYYYYYYYYYYYk.",
    "kYYYYYYYYYYYk.",
    "kYYYYYYYYYYYk.",
    "kkkkkkkkkkkkk.",
)
_UNDO: Sprite = (
    "...B..........",
    "..BB..........",
    ".BBBBBBBBB....",
    "BBBBBBBBBBB...",
    ".BBBBBBBBBBB..",
    "..BB.....BBBB.",
    "...B......BBB.",
    "..........BBB.",
    "..........BBB.",
    ".........BBB..",
    ".......BBBB...",
    "....BBBBBB....",
)
_LENS: Sprite = (
    "...kkkk.........",
    ".kkwwcckk.......",
    ".kwwcccck.......",
    "kwwcccccck......",
    "kwccccccck......",
    "kcccccccck......",
    "kcccccccck......",
    ".kcccccck.......",
    ".kkcccckk.......",
    "...kkkkkggk.....",
    ".........kgggk..",
    "..........kgggk.",
    "...........kgggk",
    "............kgk.",
    ".............k..",
)
_SMALL_LENS: Sprite = (
    "..kkkk....",
    ".kwccck...",
    "kwcccccck.",
    "kccccccck.",
    ".kcccck...",
    "..kkkkgk..",
    "......kggk",
    ".......kgk",
    "........k.",
)
_LETTER_A: Sprite = (
    ".BBB.",
    "....B",
    ".BBBB",
    "B...B",
    ".BBBB",
)
_ARROW_RIGHT: Sprite = (
    "....r..",
    "....rr.",
    "rrrrrrr",
    "....rr.",
    "....r..",
)
_LETTER_B: Sprite = (
    "N....",
    "N....",
    "NNNN.",
    "N...N",
    "N...N",
    "NNNN.",
)
_PLAY: Sprite = (
    "k......",
    "kk.....",
    "knk....",
    "knnk...",
    "knnnk..",
    "knnnnk.",
    "knnnNNk",
    "knnNNk.",
    "knNNk..",
    "kNNk...",
    "kNk....",
    "kk.....",
    "k......",
)
_STOP: Sprite = (
    "...kkkkkk...",
    "..krrrrrrk..",
    ".krrrrrrrrk.",
    "krrwwwwwwrrk",
    "krrwwwwwwrrk",
    "krrrrrrrrrrk",
    "krrrrrrrrrrk",
    "krrrrrrrrrrk",
    "krrrrrrrrrrk",
    ".krrrrrrrrk.",
    "..krrrrrrk..",
    "...kkkkkk...",
)
_BUBBLE: Sprite = (
    ".kkkkkkkkkkkk.",
    "kwwwwwwwwwwwwk",
    "kwwwwwwwwwwwwk",
    "kwwBBwwBBwwBBk",
    "kwwBBwwBBwwBBk",
    "kwwwwwwwwwwwwk",
    "kwwwwwwwwwwwwk",
    ".kkkwwkkkkkkk.",
    "...kwk........",
    "...kk.........",
    "...k..........",
)
_SPARK: Sprite = (
    "..y..",
    ".yoy.",
    "yoooy",
    ".yoy.",
    "..y..",
)
_RIBBON: Sprite = (
    "kkkkkkkkk",
    "krwrrrrrk",
    "krwrrrrrk",
    "krwrrrrrk",
    "krwrrrrrk",
    "krwrrrrrk",
    "krwrrrrrk",
    "krwrrrrrk",
    "krwrrrrrk",
    "krwrrrrrk",
    "krrrkrrrk",
    "krrk.krrk",
    "krk...krk",
    "kk.....kk",
)


def _mirror(sprite: Sprite) -> Sprite:
    return tuple(row[::-1] for row in sprite)


# Each icon: layers (sprite, x, y), painted in order.
_LAYERS: Mapping[str, tuple[tuple[Sprite, int, int], ...]] = MappingProxyType({
    "new": ((_PAGE, 2, 1),),
    "open": ((_FOLDER, 0, 2),),
    "save": ((_FLOPPY, 1, 1),),
    "save_all": ((_SMALL_FLOPPY, 0, 0), (_SMALL_FLOPPY, 5, 5)),
    "cut": ((_SCISSORS, 2, 0),),
    "copy": ((_SHEET, 1, 0), (_SHEET_INKED, 6, 5)),
    "paste": ((_CLIPBOARD, 1, 1), (_SHEET_INKED, 6, 5)),
    "undo": ((_UNDO, 1, 2),),
    "redo": ((_mirror(_UNDO), 1, 2),),
    "find": ((_LENS, 0, 0),),
    "replace": ((_LETTER_A, 0, 0), (_ARROW_RIGHT, 5, 3), (_LETTER_B, 11, 0),
                (_SMALL_LENS, 5, 7)),
    "run": ((_PLAY, 5, 1),),
    "stop": ((_STOP, 2, 2),),
    "agent": ((_BUBBLE, 1, 3), (_SPARK, 11, 0)),
    "bookmarks": ((_RIBBON, 4, 1),),
})
ICON_NAMES: tuple[str, ...] = tuple(_LAYERS)


def pixels(name: str) -> tuple[str, ...]:
    """The 16 rows of palette letters of an icon (``.`` transparent)."""
    try:
        layers = _LAYERS[name]
    except KeyError:
        raise KeyError(f"no icon {name!r}; known: {', '.join(ICON_NAMES)}") from None
    canvas = [["."] * SIZE for _ in range(SIZE)]
    for sprite, x0, y0 in layers:
        for dy, row in enumerate(sprite):
            for dx, ch in enumerate(row):
                if ch != ".":
                    canvas[y0 + dy][x0 + dx] = ch  # IndexError = a sprite drawn off-canvas
    return tuple("".join(row) for row in canvas)


def palette_for(theme: str) -> Mapping[str, str]:
    if theme in ("dark", "rio-dark"):
        return MappingProxyType({**PALETTE, **_DARK_OVERRIDES})
    return PALETTE


def make_photo(root: tk.Misc, rows: tuple[str, ...], palette: Mapping[str, str]) -> tk.PhotoImage:
    """A PhotoImage from rows of palette letters; ``.`` pixels stay transparent because only
    the opaque runs of each row are ever put."""
    image = tk.PhotoImage(master=root, width=len(rows[0]), height=len(rows))
    for y, row in enumerate(rows):
        x = 0
        while x < len(row):
            if row[x] == ".":
                x += 1
                continue
            end = x
            while end < len(row) and row[end] != ".":
                end += 1
            colours = " ".join(palette[ch] for ch in row[x:end])
            image.put("{" + colours + "}", to=(x, y))
            x = end
    return image


_CACHE: weakref.WeakKeyDictionary[tk.Misc, dict[tuple[str, str], tk.PhotoImage]] = \
    weakref.WeakKeyDictionary()


def icon(name: str, theme: str = "classic", root: tk.Misc | None = None) -> tk.PhotoImage:
    """The icon ``name`` for ``theme``, built once per Tk root and kept alive by the cache.

    ``root`` defaults to tkinter's default root (the first ``tk.Tk()``), which is what a
    single-window app has.
    """
    top = tk_root(root if root is not None else default_root("create an icon"))
    per_root = _CACHE.setdefault(top, {})
    key = (name, "dark" if theme in ("dark", "rio-dark") else "classic")
    image = per_root.get(key)
    if image is None:
        image = make_photo(top, pixels(name), palette_for(key[1]))
        per_root[key] = image
    return image
