"""The editor's view through the real widget (tests/editor_harness.py): bracket matching, the
line-number gutter, and the big-file window's navigation and undo."""

from __future__ import annotations

import pytest

from tests.editor_harness import widget_text

pytestmark = [pytest.mark.gui, pytest.mark.timeout(120)]


def _bracket_ranges(ed) -> list[str]:
    ed.decor.update_ui()
    return [str(i) for i in ed.orig("tag", "ranges", "bracket")]


# --- bracket matching --------------------------------------------------------------------------

def test_a_bracket_ending_the_previous_line_is_not_matched_from_the_next_line(editor):
    ed, _core = editor("f(x)\ny\n")
    ed.orig("mark", "set", "insert", "2.0")
    assert _bracket_ranges(ed) == []
    ed.orig("mark", "set", "insert", "1.4")            # right after ")"
    assert _bracket_ranges(ed) == ["1.1", "1.2", "1.3", "1.4"]
    ed.orig("mark", "set", "insert", "1.1")            # on "("
    assert _bracket_ranges(ed) == ["1.1", "1.2", "1.3", "1.4"]


# --- the gutter --------------------------------------------------------------------------------

def _gutter_rows(ed) -> dict[str, float]:
    g = ed.gutter
    return {g.itemcget(i, "text"): g.coords(i)[1] for i in g.find_all()
            if g.type(i) == "text"}


def _text_rows(ed) -> dict[str, float]:
    out = {}
    for n in range(1, 6):
        info = ed.orig("dlineinfo", f"{n}.0")
        if info:
            out[str(n)] = float(str(info).split()[1]) if isinstance(info, str) else float(info[1])
    return out


def _family_spaced_otherwise(root, font) -> str:
    """An installed family whose lines are spaced otherwise than ``font``'s at its size. Tk
    hands a silent substitute for a family that is not installed (Terminus on a machine
    without fonts-terminus became DejaVu Sans: the same spacing, and the test failed)."""
    import tkinter.font as tkfont

    from ui.tk.widgets.fonts import EDITOR_CANDIDATES, UI_CANDIDATES, resolves
    size, spacing = int(font.cget("size")), font.metrics("linespace")
    preferred = [family for family, _ in EDITOR_CANDIDATES + UI_CANDIDATES]
    for family in preferred + sorted(set(tkfont.families(root)) - set(preferred)):
        if family in tkfont.families(root) and resolves(root, family, size) and \
                tkfont.Font(root=root, family=family, size=size).metrics("linespace") != spacing:
            return family
    pytest.fail("no installed font family spaces lines otherwise than "
                f"{font.actual('family')} at size {size}: install fonts-dejavu-extra "
                "(tools/test-deps.sh does)")


def test_line_numbers_follow_a_font_change_at_the_same_size(editor, tk_root):
    ed, _core = editor("".join(f"line {i}\n" for i in range(40)))
    tk_root.geometry("500x400")          # the window's size, not the font's, sets the height
    tk_root.update()
    ed.decor.update_ui()
    before = _gutter_rows(ed)
    other = _family_spaced_otherwise(tk_root, ed.app.editor_font)
    ed.app.editor_font.configure(family=other)   # other line spacing, same size
    ed.apply_look(ed.app.theme)
    tk_root.update()
    ed.decor.update_ui()
    rows = _text_rows(ed)
    assert rows["3"] != before["3"], "the new font should change the line spacing"
    gutter = _gutter_rows(ed)
    assert all(gutter[k] == rows[k] for k in rows)


def test_line_numbers_follow_a_partial_line_scroll(editor, tk_root):
    ed, _core = editor("".join(f"line {i}\n" for i in range(200)))
    tk_root.geometry("400x300")
    tk_root.update()
    ed.decor.update_ui()
    ed.text.yview_scroll(3, "pixels")                    # a part of a line
    tk_root.update()
    ed.decor.update_ui()
    top = str(ed.orig("index", "@0,0")).split(".")[0]
    info = ed.orig("dlineinfo", f"{top}.0")
    y = int(str(info).split()[1]) if isinstance(info, str) else int(info[1])
    assert _gutter_rows(ed)[top] == y


# --- the big-file window ----------------------------------------------------------------------

@pytest.fixture
def small_big(monkeypatch):
    """Make "big" small: the window logic, without 100 MB."""
    import functools

    from ui.tk.editor import bigfile
    from ui.tk.editor import tab as editor
    monkeypatch.setattr(editor, "LineWindow", functools.partial(bigfile.LineWindow, rows=100))
    monkeypatch.setattr(bigfile, "BIG_CHARS", 1000)
    monkeypatch.setattr(bigfile, "MARGIN_ROWS", 10)


def test_ctrl_end_in_a_big_file_goes_to_the_last_line(editor, tk_root, small_big):
    lines = 5_000
    ed, core = editor("".join(f"row {i}\n" for i in range(lines)) + "last")
    assert ed.window is not None and ed.window.max_rows == 100
    tk_root.update()
    ed.text.focus_set()
    tk_root.update()
    ed.text.event_generate("<Control-End>")
    tk_root.update()
    assert ed.cursor() == (lines + 1, 4)
    ed.text.insert("insert", "!")
    core.pump()
    assert core.doc.text().endswith("row 4999\nlast!")
    ed.text.event_generate("<Control-Home>")
    tk_root.update()
    assert ed.cursor() == (1, 0)


def test_undo_after_go_to_line_in_a_big_file_puts_the_cursor_at_the_undone_edit(
        editor, tk_root, small_big):
    ed, core = editor("".join(f"row {i}\n" for i in range(3_000)))
    ed.goto(2_000, 0)
    for ch in "abc":
        ed.text.insert("insert", ch)
    core.pump()
    ed.goto(2_500, 2)
    core.request("buffer.undo", {"buffer": ed.buffer_id, "origin": "ui"}, lambda r: None)
    core.pump()
    assert core.doc.text() == ed.replica.text
    assert ed.cursor() == (2_000, 0)
    assert str(ed.text.get("insert linestart", "insert lineend")) == "row 1999"
    assert widget_text(ed).count("row 1999\n") == 1
