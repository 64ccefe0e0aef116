"""The look: themes, fonts and icons. GUI tests run under Xvfb (tests/conftest.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tkinter as tk
from pathlib import Path
from tkinter import ttk

import pytest

from rio.text.highlight import STYLE_CLASSES, TAGS, Highlighter, retag_plan
from ui.tk.widgets import fonts, icons, theme
from ui.tk.widgets.theme import THEMES, apply_theme, get_theme, syntax_tag_options

HEX = re.compile(r"^#[0-9a-fA-F]{6}$")
EXPECTED_EDITOR_FAMILIES = {c[0] for c in fonts.EDITOR_CANDIDATES}
EXPECTED_UI_FAMILIES = {c[0] for c in fonts.UI_CANDIDATES}


# --- display-free checks -----------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(THEMES))
def test_theme_colours_are_complete_and_valid(name):
    t = THEMES[name]
    for field_name, value in vars(t).items():
        if field_name not in ("name", "ttk_name", "syntax"):
            assert HEX.match(value), (field_name, value)
    assert set(t.syntax) == set(STYLE_CLASSES)
    opts = syntax_tag_options(t, ("Terminus", 12))
    assert set(opts) == set(TAGS)
    assert opts["syn.keyword"]["font"] == "{Terminus} 12 bold roman"


def test_get_theme_by_short_or_ttk_name():
    assert get_theme("dark") is get_theme("rio-dark") is THEMES["dark"]
    with pytest.raises(KeyError):
        get_theme("neon")


def test_classic_is_the_grey_navy_desktop():
    t = THEMES["classic"]
    assert (t.face, t.selection_bg, t.title_active_bg) == ("#c0c0c0", "#000080", "#000080")


@pytest.mark.parametrize("name", icons.ICON_NAMES)
def test_icon_pixels_are_16x16_in_palette_and_not_empty(name):
    rows = icons.pixels(name)
    assert len(rows) == 16 and all(len(r) == 16 for r in rows)
    used = set("".join(rows)) - {"."}
    assert used <= set(icons.PALETTE)
    assert sum(ch != "." for row in rows for ch in row) > 40  # a drawing, not a speck


def test_required_icons_exist():
    assert set(icons.ICON_NAMES) >= {"new", "open", "save", "save_all", "cut", "copy", "paste",
                                      "undo", "redo", "find", "replace", "run", "stop", "agent",
                                      "bookmarks"}
    assert len({icons.pixels(n) for n in icons.ICON_NAMES}) == len(icons.ICON_NAMES)
    with pytest.raises(KeyError):
        icons.pixels("nope")


# --- under a display ---------------------------------------------------------------------------

def _window(root: tk.Tk, theme_name: str = "classic") -> dict[str, tk.Misc]:
    root.geometry("640x420+0+0")
    editor_font, _ = fonts.install_named_fonts(root)
    menubar = tk.Menu(root)
    filemenu = tk.Menu(menubar)
    filemenu.add_command(label="Open…")
    menubar.add_cascade(label="File", menu=filemenu)
    root.configure(menu=menubar)
    bar = ttk.Frame(root, style="Raised.TFrame")
    bar.pack(fill="x")
    for name in ("new", "open", "save", "cut", "copy", "paste", "find", "run", "stop"):
        ttk.Button(bar, image=icons.icon(name, theme_name, root),
                   style="Toolbutton").pack(side="left")
    body = ttk.Panedwindow(root, orient="horizontal")
    body.pack(fill="both", expand=True)
    tree = ttk.Treeview(body, show="tree")
    tree.insert("", "end", text="rio/")
    tree.insert("", "end", text="README.md")
    body.add(tree, weight=1)
    notebook = ttk.Notebook(body)
    text = tk.Text(notebook, width=40, height=10, font=editor_font.as_tuple())
    source = "@cache\nclass Greeter:\n    def hello(self, name):\n" \
             "        return f'hi {name}' * 2  # greet\n"
    text.insert("1.0", source)
    theme.style_text(text, get_theme(theme_name), editor_font.as_tuple())
    for first, last, ranges in retag_plan(Highlighter("hello.py", source).visible(0, 10)):
        for tag in TAGS:
            text.tag_remove(tag, first, last)
        for tag, pairs in ranges.items():
            text.tag_add(tag, *pairs)
    notebook.add(text, text="hello.py")
    body.add(notebook, weight=3)
    form = ttk.Frame(root)
    form.pack(fill="x")
    ttk.Entry(form).pack(side="left")
    ttk.Combobox(form, values=["Python", "C"]).pack(side="left")
    ttk.Checkbutton(form, text="Match case").pack(side="left")
    ttk.Button(form, text="Find Next").pack(side="left")
    listbox = tk.Listbox(root, height=2)
    listbox.insert("end", "a.py:1:1: hit")
    listbox.pack(fill="x")
    canvas = tk.Canvas(root, height=10)
    canvas.pack(fill="x")
    ttk.Label(root, text="Ln 1, Col 1", style="Status.TLabel").pack(fill="x")
    return {"text": text, "listbox": listbox, "canvas": canvas, "menu": filemenu}


def _screenshot(root: tk.Tk, out: Path) -> Path | None:
    """Save the screen to ``out`` (the test's tmp folder) for a human to look at (not
    committed, not compared)."""
    if shutil.which("import") is None:
        return None
    root.update()
    subprocess.run(["import", "-window", "root", str(out)], check=True, timeout=30,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


@pytest.mark.gui
@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", ["classic", "dark"])
def test_apply_theme_styles_ttk_and_classic_widgets(tk_root, name, tmp_path):
    t = apply_theme(tk_root, name)
    widgets = _window(tk_root, name)
    style = ttk.Style(tk_root)
    assert style.theme_use() == t.ttk_name
    assert style.lookup("TButton", "background") == t.face
    assert style.lookup("Treeview", "fieldbackground") == t.field_bg
    # Classic widgets created after apply_theme take colours from the option database.
    assert str(widgets["text"].cget("background")) == t.editor_bg
    assert str(widgets["text"].cget("selectbackground")) == t.selection_bg
    assert str(widgets["listbox"].cget("background")) == t.field_bg
    assert str(widgets["menu"].cget("activebackground")) == t.title_active_bg
    # Highlight runs landed on the right characters.
    text = widgets["text"]
    assert text.get(*text.tag_ranges("syn.name.class")) == "Greeter"
    assert text.get(*text.tag_ranges("syn.comment")) == "# greet"
    comment_fg = widgets["text"].tag_cget("syn.comment", "foreground")
    assert str(comment_fg) == t.syntax["comment"].foreground
    shot = _screenshot(tk_root, tmp_path / f"rio-theme-{name}.png")
    if shot is not None:
        assert shot.stat().st_size > 1000


@pytest.mark.gui
@pytest.mark.timeout(60)
def test_switching_theme_recolours_existing_widgets(tk_root):
    apply_theme(tk_root, "classic")
    widgets = _window(tk_root)
    dark = apply_theme(tk_root, "dark")
    assert str(widgets["text"].cget("background")) == dark.editor_bg
    assert str(widgets["listbox"].cget("background")) == dark.field_bg
    assert str(tk_root.cget("background")) == dark.face
    # And back: both ttk themes exist once in this interpreter.
    classic = apply_theme(tk_root, "classic")
    assert str(widgets["text"].cget("background")) == classic.editor_bg


@pytest.mark.gui
@pytest.mark.timeout(60)
def test_fonts_are_expected_families_that_really_resolve(tk_root):
    editor = fonts.editor_font(tk_root)
    ui = fonts.ui_font(tk_root)
    assert editor.family in EXPECTED_EDITOR_FAMILIES, editor
    assert ui.family in EXPECTED_UI_FAMILIES, ui
    assert not editor.fallback and not ui.fallback
    for choice in (editor, ui):
        actual = tk.font.Font(root=tk_root, family=choice.family, size=choice.size).actual()
        assert actual["family"].lower() == choice.family.lower()
    # A family that does not exist is silently substituted by Xft: resolves() must say so.
    assert not fonts.resolves(tk_root, "No Such Font Rio", 10)


@pytest.mark.gui
@pytest.mark.timeout(60)
def test_missing_candidates_fall_back_to_named_font(tk_root):
    choice = fonts.pick_font(tk_root, (("No Such Font Rio", 10),), "TkFixedFont")
    assert choice.fallback
    assert choice.family == tk.font.nametofont("TkFixedFont", root=tk_root).actual("family")


@pytest.mark.gui
@pytest.mark.timeout(60)
def test_install_named_fonts(tk_root):
    editor, ui = fonts.install_named_fonts(tk_root)
    assert tk.font.nametofont("TkFixedFont", root=tk_root).actual("family") == editor.family
    assert tk.font.nametofont("TkDefaultFont", root=tk_root).actual("family") == ui.family


@pytest.mark.gui
@pytest.mark.timeout(60)
def test_icons_are_photoimages_with_transparency_and_cached(tk_root):
    img = icons.icon("save", root=tk_root)
    assert (img.width(), img.height()) == (16, 16)
    rows = icons.pixels("save")
    assert img.transparency_get(0, 0) is True and rows[0][0] == "."
    y, x = next((y, x) for y, row in enumerate(rows) for x, ch in enumerate(row) if ch == "B")
    assert not img.transparency_get(x, y)
    assert img.get(x, y) == (0, 0, 128)  # navy
    assert icons.icon("save") is img  # default root: the same interpreter
    dark = icons.icon("save", "dark", tk_root)
    assert dark is not img and dark.get(x, y) != (0, 0, 128)
    for name in icons.ICON_NAMES:
        assert icons.icon(name, root=tk_root).width() == 16


def _luminance(widget: tk.Misc, colour: str) -> float:
    def channel(c: int) -> float:
        c = c / 65535
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = widget.winfo_rgb(colour)
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


@pytest.mark.gui
@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", sorted(THEMES))
@pytest.mark.parametrize("widget", ["TCheckbutton", "TRadiobutton"])
def test_a_ticked_box_and_a_selected_radio_button_stand_out(tk_root, name, widget):
    # The "alt" parent draws the box in indicatorcolor and the mark in foreground.
    apply_theme(tk_root, name)
    style = ttk.Style(tk_root)
    box = style.lookup(widget, "indicatorcolor", ("selected",))
    mark = style.lookup(widget, "foreground", ("selected",))
    hi, lo = sorted((_luminance(tk_root, box), _luminance(tk_root, mark)), reverse=True)
    assert (hi + 0.05) / (lo + 0.05) >= 4.5, (box, mark)     # WCAG AA contrast


@pytest.mark.gui
@pytest.mark.timeout(30)
@pytest.mark.skipif(shutil.which("import") is None, reason="needs ImageMagick's import")
def test_menu_shortcuts_keep_a_margin_from_the_right_edge(tk_root, tmp_path):
    from ui.tk.app.menus import menu_accel as _menu_accel
    t = apply_theme(tk_root, "classic")
    menu = tk.Menu(tk_root, tearoff=False)
    for label, accel in [("Save", "Ctrl+S"), ("Save As...", "Ctrl+Shift+S")]:
        menu.add_command(label=label, accelerator=_menu_accel(accel))
    tk_root.update()
    menu.post(10, 10)
    tk_root.update()
    shot = tmp_path / "menu.png"
    subprocess.run(["import", "-window", str(menu.winfo_id()), str(shot)], check=True,
                   timeout=20)
    menu.unpost()
    img = tk.PhotoImage(master=tk_root, file=str(shot))
    face = tuple(c // 257 for c in tk_root.winfo_rgb(t.face))
    width, height = img.width(), img.height()

    def inked(x: int, y: int) -> bool:          # text (anti-aliased too), not background
        return sum(abs(a - b) for a, b in zip(img.get(x, y), face)) > 120
    # Inside the 2 px raised border, the last 6 px stay clear of text.
    assert not [(x, y) for x in range(width - 8, width - 2) for y in range(2, height - 2)
                if inked(x, y)]
    assert any(inked(x, y) for x in range(width // 2, width - 8)
               for y in range(2, height - 2))      # the shortcuts are there
