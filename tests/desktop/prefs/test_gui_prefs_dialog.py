"""Preferences, About and the shortcut list, driven as a user would."""

from __future__ import annotations

import json

import pytest

from ui.tk.prefs import dialog as prefs_dialog

pytestmark = [pytest.mark.gui, pytest.mark.timeout(60)]


class App:
    """Just the seams the dialogs use."""

    def __init__(self, root):
        self.root = root
        self.settings = {"font": "", "size": 0, "tab_width": 4, "use_spaces": True,
                         "theme": "classic", "wrap": False, "line_numbers": True}
        self.applied = []
        self.project_root = "/tmp/project"
        self.instance = "test-instance"

    def apply_settings(self):
        self.applied.append(dict(self.settings))

    def editor_font_tuple(self):
        return ("DejaVu Sans Mono", 10)


@pytest.fixture
def app(tk_root, tmp_path, monkeypatch):
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path / "cfg"))
    return App(tk_root)


def test_preferences_apply_save_and_validate(app, tmp_path):
    dlg = prefs_dialog.show_preferences(app)
    assert dlg.font.get() == "DejaVu Sans Mono" and dlg.size.get() == "10"
    assert "DejaVu Sans Mono" in dlg.font_box.cget("values")  # monospace families offered
    dlg.size.set("3")
    dlg.buttons["OK"].invoke()
    assert "Size must be" in dlg.status.cget("text") and not app.applied
    assert dlg.top.winfo_exists()
    dlg.size.set("13")
    dlg.tab_width.set("2")
    dlg.theme.set("dark")
    dlg.use_spaces.set(False)
    dlg.wrap.set(True)
    dlg.buttons["Apply"].invoke()
    assert app.applied[-1]["size"] == 13 and app.applied[-1]["theme"] == "dark"
    assert app.settings["tab_width"] == 2 and app.settings["use_spaces"] is False
    saved = json.loads((tmp_path / "cfg" / "ui.json").read_text())
    assert saved["size"] == 13 and saved["wrap"] is True and saved["font"] == "DejaVu Sans Mono"
    # Opening it again raises the same window instead of a second one.
    assert prefs_dialog.show_preferences(app) is dlg
    dlg.buttons["OK"].invoke()
    assert not dlg.top.winfo_exists()


def test_cancel_changes_nothing(app, tmp_path):
    dlg = prefs_dialog.show_preferences(app)
    dlg.size.set("20")
    dlg.buttons["Cancel"].invoke()
    assert not app.applied and app.settings["size"] == 0
    assert not (tmp_path / "cfg" / "ui.json").exists()


def test_about_box(app):
    box = prefs_dialog.show_about(app)
    assert "test-instance" in box.text and "Python" in box.text
    box.top.focus_force()  # key events go to the focus window
    app.root.update()
    box.top.event_generate("<Escape>")
    app.root.update()
    assert not box.top.winfo_exists()


def test_shortcut_list_filters(app):
    rows = [("&Save", "Ctrl+S"), ("Save &As...", "Ctrl+Shift+S"), ("Find &Next", "F3"),
            ("&Run", "F5")]
    win = prefs_dialog.show_shortcuts(app, rows)
    assert win.shown() == [("Save", "Ctrl+S"), ("Save As...", "Ctrl+Shift+S"),
                           ("Find Next", "F3"), ("Run", "F5")]
    win.entry.insert(0, "save")
    app.root.update()
    assert [label for label, _ in win.shown()] == ["Save", "Save As..."]
