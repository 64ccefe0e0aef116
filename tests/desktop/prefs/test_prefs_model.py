"""ui/tk/prefs/model.py: checked preferences, the form parser, ui.json, shortcut filtering."""

from __future__ import annotations

import json

import pytest

from ui.tk.prefs.model import (
    Preferences,
    filter_shortcuts,
    load_preferences,
    parse_form,
    prefs_path,
    save_preferences,
)


def test_from_settings_is_lenient():
    p = Preferences.from_settings({"size": 99, "tab_width": "8", "theme": "neon", "wrap": 1,
                                   "font": "Terminus", "use_spaces": False})
    assert p == Preferences(font="Terminus", size=0, tab_width=4, use_spaces=False,
                            theme="classic", wrap=False, line_numbers=True)


def test_parse_form():
    p = parse_form({"font": " DejaVu Sans Mono ", "size": "12", "tab_width": "2",
                    "use_spaces": False, "theme": "dark", "wrap": True, "line_numbers": False})
    assert p == Preferences("DejaVu Sans Mono", 12, 2, False, "dark", True, False)


@pytest.mark.parametrize("field, value, words", [
    ("size", "abc", "Size"), ("size", "5", "Size"), ("size", "41", "Size"),
    ("tab_width", "0", "Tab width"), ("tab_width", "", "Tab width"), ("theme", "pink", "Theme"),
])
def test_parse_form_rejects(field, value, words):
    form = {"font": "", "size": "10", "tab_width": "4", "theme": "classic", field: value}
    with pytest.raises(ValueError) as info:
        parse_form(form)
    assert words in str(info.value)


def test_save_and_load_round_trip_in_the_config_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path / "cfg"))
    assert prefs_path() == tmp_path / "cfg" / "ui.json"
    assert load_preferences() == {}
    prefs = Preferences(font="Terminus", size=12, theme="dark")
    save_preferences(prefs)
    assert load_preferences() == prefs.to_settings()


def test_load_keeps_only_known_checked_keys_and_survives_damage(tmp_path):
    path = tmp_path / "ui.json"
    path.write_text(json.dumps({"size": 12, "theme": "neon", "other": 1}))
    assert load_preferences(path) == {"size": 12, "theme": "classic"}
    path.write_text("{broken")
    assert load_preferences(path) == {}
    path.write_text(json.dumps({"other": 1}))
    save_preferences(Preferences(), path)
    assert json.loads(path.read_text())["other"] == 1


def test_filter_shortcuts():
    rows = [("Save", "Ctrl+S"), ("Save As...", "Ctrl+Shift+S"), ("Find Next", "F3")]
    assert filter_shortcuts(rows, "") == rows
    assert filter_shortcuts(rows, "save shift") == [("Save As...", "Ctrl+Shift+S")]
    assert filter_shortcuts(rows, "f3") == [("Find Next", "F3")]
