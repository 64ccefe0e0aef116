"""Rio's look: a classic grey 3-D desktop theme ("rio-classic") and a dark variant ("rio-dark").

Both are ttk themes built on Tk's ``alt`` theme — the one modelled on classic Windows — because
its borders are drawn with Tk 3-D borders: from a ``#c0c0c0`` face Tk derives the white and
dark-grey bevel shades itself, so buttons and frames get crisp 1–2 px bevels with no images.
Classic Tk widgets (Text, Listbox, Menu, Canvas…) do not follow ttk styles, so they get the same
colours through the option database (:func:`apply_theme`) and, for widgets that already exist,
through :func:`restyle_tree`.

Other code reads colours by name from :data:`THEMES` (``theme.editor_bg``, ``theme.syntax``…)
instead of hard-coding them, so the dark variant comes for free.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Mapping
from dataclasses import dataclass, field
from tkinter import ttk
from types import MappingProxyType
from typing import TYPE_CHECKING

from rio.text.syntax_classes import STYLE_CLASSES, TAG_PREFIX

if TYPE_CHECKING:   # the stub's name for one entry of theme_create's settings
    from tkinter.ttk import _ThemeSettingsValue

PARENT_THEME = "alt"


@dataclass(frozen=True)
class SyntaxStyle:
    foreground: str
    bold: bool = False
    italic: bool = False
    background: str = ""


@dataclass(frozen=True)
class Theme:
    """Named colours of one theme. ``ttk_name`` is the ttk theme it installs."""

    name: str
    ttk_name: str
    face: str                # window, button and bar face
    face_light: str          # top-left bevel
    face_dark: str           # bottom-right bevel
    text_fg: str             # text on the face (labels, menus)
    disabled_fg: str
    field_bg: str            # entry / list background
    field_fg: str
    editor_bg: str
    editor_fg: str
    cursor: str
    selection_bg: str
    selection_fg: str
    current_line: str
    gutter_bg: str
    gutter_fg: str
    status_bg: str
    status_fg: str
    output_bg: str
    output_fg: str
    output_error: str
    link: str
    search_hit: str
    bracket_match: str
    title_active_bg: str     # active title / focused pane caption
    title_active_fg: str
    title_inactive_bg: str
    title_inactive_fg: str
    tooltip_bg: str
    trough: str              # scrollbar trough
    syntax: Mapping[str, SyntaxStyle] = field(default_factory=dict)


def _syntax(**styles: SyntaxStyle) -> Mapping[str, SyntaxStyle]:
    by_class = {name.replace("_", "."): style for name, style in styles.items()}
    missing = set(STYLE_CLASSES) - set(by_class)
    if missing:
        raise ValueError(f"theme lacks syntax classes {sorted(missing)}")
    return MappingProxyType(by_class)


CLASSIC = Theme(
    name="classic", ttk_name="rio-classic",
    face="#c0c0c0", face_light="#ffffff", face_dark="#808080",
    text_fg="#000000", disabled_fg="#808080",
    field_bg="#ffffff", field_fg="#000000",
    editor_bg="#ffffff", editor_fg="#000000", cursor="#000000",
    selection_bg="#000080", selection_fg="#ffffff",
    current_line="#f4f4e4",
    gutter_bg="#d8d8d8", gutter_fg="#606060",
    status_bg="#c0c0c0", status_fg="#000000",
    # The output pane is a DOS box: light grey on black, like the consoles of the time.
    output_bg="#000000", output_fg="#c0c0c0", output_error="#ff5555",
    link="#0000ff", search_hit="#ffff00", bracket_match="#00ffff",
    title_active_bg="#000080", title_active_fg="#ffffff",
    title_inactive_bg="#808080", title_inactive_fg="#c0c0c0",
    tooltip_bg="#ffffe1", trough="#e0e0e0",
    # Visual C++ 6 / Turbo-era colours on white.
    syntax=_syntax(
        keyword=SyntaxStyle("#0000ff", bold=True),
        string=SyntaxStyle("#800000"),
        comment=SyntaxStyle("#008000", italic=True),
        number=SyntaxStyle("#008080"),
        name_function=SyntaxStyle("#000080", bold=True),
        name_class=SyntaxStyle("#008080", bold=True),
        operator=SyntaxStyle("#000000"),
        builtin=SyntaxStyle("#800080"),
        decorator=SyntaxStyle("#808000"),
        error=SyntaxStyle("#ffffff", background="#ff0000"),
    ),
)

DARK = Theme(
    name="dark", ttk_name="rio-dark",
    face="#3c3c3c", face_light="#5a5a5a", face_dark="#1e1e1e",
    text_fg="#e0e0e0", disabled_fg="#808080",
    field_bg="#252526", field_fg="#e0e0e0",
    editor_bg="#1e1e1e", editor_fg="#d4d4d4", cursor="#ffffff",
    selection_bg="#264f78", selection_fg="#ffffff",
    current_line="#2a2a2a",
    gutter_bg="#2d2d2d", gutter_fg="#858585",
    status_bg="#3c3c3c", status_fg="#e0e0e0",
    output_bg="#000000", output_fg="#c0c0c0", output_error="#ff6b6b",
    link="#6cb6ff", search_hit="#6b5d00", bracket_match="#005f5f",
    title_active_bg="#000080", title_active_fg="#ffffff",
    title_inactive_bg="#4a4a4a", title_inactive_fg="#a0a0a0",
    tooltip_bg="#464646", trough="#2a2a2a",
    syntax=_syntax(
        keyword=SyntaxStyle("#569cd6", bold=True),
        string=SyntaxStyle("#ce9178"),
        comment=SyntaxStyle("#6a9955", italic=True),
        number=SyntaxStyle("#b5cea8"),
        name_function=SyntaxStyle("#dcdcaa"),
        name_class=SyntaxStyle("#4ec9b0", bold=True),
        operator=SyntaxStyle("#d4d4d4"),
        builtin=SyntaxStyle("#c586c0"),
        decorator=SyntaxStyle("#d7ba7d"),
        error=SyntaxStyle("#ffffff", background="#a01010"),
    ),
)

THEMES: Mapping[str, Theme] = MappingProxyType({"classic": CLASSIC, "dark": DARK})


def get_theme(name: str) -> Theme:
    """A theme by short name (``classic``/``dark``) or ttk name (``rio-classic``)."""
    for theme in THEMES.values():
        if name in (theme.name, theme.ttk_name):
            return theme
    raise KeyError(f"unknown theme {name!r}; known: {', '.join(THEMES)}")


# --- ttk -----------------------------------------------------------------------------------

def _ttk_settings(t: Theme) -> dict[str, _ThemeSettingsValue]:
    return {
        ".": {"configure": {
            "background": t.face, "foreground": t.text_fg, "troughcolor": t.trough,
            "selectbackground": t.selection_bg, "selectforeground": t.selection_fg,
            "fieldbackground": t.field_bg, "insertcolor": t.cursor,
            "lightcolor": t.face_light, "darkcolor": t.face_dark, "bordercolor": t.face_dark,
            "focuscolor": t.text_fg, "borderwidth": 2, "relief": "flat"},
              "map": {"foreground": [("disabled", t.disabled_fg)],
                      "background": [("disabled", t.face)]}},
        "TButton": {"configure": {"padding": (8, 2), "relief": "raised", "borderwidth": 2,
                                  "anchor": "center"},
                    "map": {"relief": [("pressed", "sunken")],
                            "background": [("active", t.face)]}},
        # Toolbar buttons: flat until hovered (raised), sunk while pressed — Office 97 style.
        "Toolbutton": {"configure": {"padding": 2, "relief": "flat", "borderwidth": 1},
                       "map": {"relief": [("pressed", "sunken"), ("selected", "sunken"),
                                          ("active", "raised")],
                               "background": [("active", t.face), ("pressed", t.face)]}},
        "TEntry": {"configure": {"padding": 2, "relief": "sunken", "borderwidth": 2,
                                 "fieldbackground": t.field_bg, "foreground": t.field_fg}},
        "TCombobox": {"configure": {"padding": 1, "fieldbackground": t.field_bg,
                                    "foreground": t.field_fg, "arrowcolor": t.text_fg},
                      "map": {"fieldbackground": [("readonly", t.field_bg)]}},
        "TSpinbox": {"configure": {"fieldbackground": t.field_bg, "foreground": t.field_fg,
                                   "arrowcolor": t.text_fg}},
        # The "alt" parent draws the box with ``indicatorcolor`` and the tick or dot with
        # ``foreground`` (it ignores indicatorbackground/-foreground): without these the dark
        # theme drew a light mark in a white box, nearly invisible.
        "TCheckbutton": {"configure": {"indicatorcolor": t.field_bg, "foreground": t.text_fg},
                         "map": {"indicatorcolor": [("disabled", t.face), ("pressed", t.face)]}},
        "TRadiobutton": {"configure": {"indicatorcolor": t.field_bg, "foreground": t.text_fg},
                         "map": {"indicatorcolor": [("disabled", t.face), ("pressed", t.face)]}},
        "TFrame": {"configure": {"background": t.face}},
        "Sunken.TFrame": {"configure": {"relief": "sunken", "borderwidth": 2}},
        "Raised.TFrame": {"configure": {"relief": "raised", "borderwidth": 2}},
        "TLabelframe": {"configure": {"relief": "groove", "borderwidth": 2}},
        "TLabel": {"configure": {"background": t.face, "foreground": t.text_fg}},
        "Status.TLabel": {"configure": {"relief": "sunken", "borderwidth": 1, "padding": (4, 1),
                                        "background": t.status_bg, "foreground": t.status_fg}},
        "Title.TLabel": {"configure": {"background": t.title_active_bg,
                                       "foreground": t.title_active_fg, "padding": (4, 1)}},
        "InactiveTitle.TLabel": {"configure": {"background": t.title_inactive_bg,
                                               "foreground": t.title_inactive_fg,
                                               "padding": (4, 1)}},
        "TNotebook": {"configure": {"tabmargins": (2, 2, 2, 0), "borderwidth": 2}},
        "TNotebook.Tab": {"configure": {"padding": (8, 2), "background": t.face},
                          "map": {"expand": [("selected", (2, 2, 2, 0))],
                                  "background": [("selected", t.face)]}},
        "Treeview": {"configure": {"background": t.field_bg, "foreground": t.field_fg,
                                   "fieldbackground": t.field_bg, "rowheight": 18},
                     "map": {"background": [("selected", t.selection_bg)],
                             "foreground": [("selected", t.selection_fg)]}},
        "Treeview.Heading": {"configure": {"relief": "raised", "padding": (4, 1)}},
        "TScrollbar": {"configure": {"arrowcolor": t.text_fg, "relief": "raised",
                                     "borderwidth": 2, "arrowsize": 16}},
        "TProgressbar": {"configure": {"background": t.selection_bg, "borderwidth": 2}},
        "TPanedwindow": {"configure": {"background": t.face}},
        "Sash": {"configure": {"sashthickness": 5, "gripcount": 0}},
        "TSeparator": {"configure": {"background": t.face_dark}},
    }


def ensure_ttk_theme(root: tk.Misc, theme: Theme) -> ttk.Style:
    """Create the ttk theme once per interpreter, then return the style object."""
    style = ttk.Style(root)
    if theme.ttk_name not in style.theme_names():
        style.theme_create(theme.ttk_name, parent=PARENT_THEME, settings=_ttk_settings(theme))
    return style


# --- classic Tk widgets --------------------------------------------------------------------

def classic_options(t: Theme) -> dict[str, str | int]:
    """Option-database entries for classic Tk widgets (applied to widgets created later)."""
    return {
        "*Background": t.face, "*Foreground": t.text_fg,
        "*activeBackground": t.face, "*activeForeground": t.text_fg,
        "*disabledForeground": t.disabled_fg,
        "*highlightBackground": t.face, "*highlightColor": t.text_fg,
        "*selectBackground": t.selection_bg, "*selectForeground": t.selection_fg,
        "*troughColor": t.trough, "*insertBackground": t.cursor,
        "*Text.background": t.editor_bg, "*Text.foreground": t.editor_fg,
        "*Text.relief": "sunken", "*Text.borderWidth": 2, "*Text.highlightThickness": 0,
        "*Text.inactiveSelectBackground": t.face_dark,
        "*Listbox.background": t.field_bg, "*Listbox.foreground": t.field_fg,
        "*Listbox.relief": "sunken", "*Listbox.borderWidth": 2,
        "*Entry.background": t.field_bg, "*Entry.foreground": t.field_fg,
        "*Canvas.background": t.face, "*Canvas.highlightThickness": 0,
        # '90s menus: raised 2 px border, navy highlight bar, no hover border.
        "*Menu.background": t.face, "*Menu.foreground": t.text_fg,
        "*Menu.activeBackground": t.title_active_bg, "*Menu.activeForeground": t.title_active_fg,
        "*Menu.selectColor": t.text_fg, "*Menu.relief": "raised", "*Menu.borderWidth": 2,
        "*Menu.activeBorderWidth": 0, "*Menu.tearOff": 0,
        "*Menubutton.activeBackground": t.title_active_bg,
        "*Menubutton.activeForeground": t.title_active_fg,
    }


def syntax_tag_options(t: Theme, font: tuple[str, int] | None = None) -> dict[str, dict[str, str]]:
    """Options for ``text.tag_configure(tag, **opts)`` per highlight tag (``syn.keyword``…).

    Bold/italic need a font; without one only colours are set.
    """
    out: dict[str, dict[str, str]] = {}
    for cls, style in t.syntax.items():
        opts: dict[str, str] = {"foreground": style.foreground}
        if style.background:
            opts["background"] = style.background
        if font is not None and (style.bold or style.italic):
            weight = "bold" if style.bold else "normal"
            slant = "italic" if style.italic else "roman"
            opts["font"] = " ".join([f"{{{font[0]}}}", str(font[1]), weight, slant])
        out[TAG_PREFIX + cls] = opts
    return out


def style_text(text: tk.Text, t: Theme, font: tuple[str, int] | None = None) -> None:
    """Colour an editor Text: background, selection, cursor and the syntax tags."""
    text.configure(background=t.editor_bg, foreground=t.editor_fg, insertbackground=t.cursor,
                   selectbackground=t.selection_bg, selectforeground=t.selection_fg,
                   inactiveselectbackground=t.face_dark)
    for tag, opts in syntax_tag_options(t, font).items():
        text.tag_configure(tag, **opts)
    # The selection must stay visible over syntax colours and search hits.
    text.tag_raise("sel")


_CLASSIC_WIDGET_OPTIONS = {
    "Text": ("background", "foreground", "insertbackground", "selectbackground",
             "selectforeground"),
    "Listbox": ("background", "foreground", "selectbackground", "selectforeground"),
    "Canvas": ("background",),
    "Menu": ("background", "foreground", "activebackground", "activeforeground"),
    "Frame": ("background",), "Toplevel": ("background",), "Tk": ("background",),
    "Label": ("background", "foreground"),
}


def _values_for(widget_class: str, t: Theme) -> dict[str, str]:
    if widget_class == "Text":
        return {"background": t.editor_bg, "foreground": t.editor_fg,
                "insertbackground": t.cursor, "selectbackground": t.selection_bg,
                "selectforeground": t.selection_fg}
    if widget_class == "Listbox":
        return {"background": t.field_bg, "foreground": t.field_fg,
                "selectbackground": t.selection_bg, "selectforeground": t.selection_fg}
    if widget_class == "Menu":
        return {"background": t.face, "foreground": t.text_fg,
                "activebackground": t.title_active_bg, "activeforeground": t.title_active_fg}
    if widget_class == "Label":
        return {"background": t.face, "foreground": t.text_fg}
    return {"background": t.face}


def restyle_tree(widget: tk.Misc, t: Theme) -> int:
    """Recolour existing classic widgets under ``widget`` (a live theme switch); returns how
    many were touched. Widgets a view styled itself (e.g. the output pane) can be marked by
    setting their Tk name to start with ``keep_`` to be left alone."""
    touched = 0
    stack = [widget]
    while stack:
        w = stack.pop()
        cls = w.winfo_class()
        if cls in _CLASSIC_WIDGET_OPTIONS and not str(w).rsplit(".", 1)[-1].startswith("keep_"):
            try:
                w.configure(**_values_for(cls, t))
                touched += 1
            except tk.TclError:
                pass
        stack.extend(w.winfo_children())
    return touched


def apply_theme(root: tk.Misc, name: str = "classic") -> Theme:
    """Install and use a theme for ttk widgets, new classic widgets and existing ones."""
    t = get_theme(name)
    style = ensure_ttk_theme(root, t)
    style.theme_use(t.ttk_name)
    for pattern, value in classic_options(t).items():
        root.option_add(pattern, value)
    restyle_tree(root, t)
    return t
