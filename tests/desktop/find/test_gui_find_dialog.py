"""The Find/Replace dialog and Go to line in the real window (ui/tk/app/main_window.py, real EditorTabs) on a
real core: replace goes through the core, and Replace All is ONE undo step there."""

from __future__ import annotations

import pytest

from tests.desktop_support import InProcessApp
from tests.support import RioServer
from ui.tk.find import dialog as find_dialog

pytestmark = [pytest.mark.gui, pytest.mark.timeout(90)]

TEXT = "alpha beta\nBeta gamma beta\nalphabet\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("find")
    root = base / "proj"
    root.mkdir()
    srv = RioServer(root, base).start()
    yield srv
    srv.stop()


@pytest.fixture
def app(tk_root, server, request, monkeypatch):
    monkeypatch.setenv("RIO_CONFIG_DIR", server.env["RIO_CONFIG_DIR"])
    name = f"{request.node.name[:40]}.txt"
    (server.root / name).write_text(TEXT)
    desk = InProcessApp(tk_root, server)
    desk.open(name)
    try:
        yield desk
    finally:
        desk.close()


def selected(app) -> str:
    w = app.active.text
    return w.get("sel.first", "sel.last") if w.tag_ranges("sel") else ""


def sel_index(app) -> str:
    return app.active.text.index("sel.first")


def test_find_next_prev_wrap_and_options(app):
    c = find_dialog.controller_for(app.app)
    dlg = c.show()
    dlg.pattern.set("beta")
    dlg.buttons["find_next"].invoke()
    assert selected(app) == "beta" and sel_index(app) == "1.6"
    hits = app.active.text.tag_ranges(find_dialog.HIT_TAG)   # every match in view is tinted
    assert [str(i) for i in hits[::2]] == ["1.6", "2.0", "2.11"]
    dlg.buttons["find_next"].invoke()
    assert selected(app) == "Beta" and sel_index(app) == "2.0"  # case-insensitive by default
    dlg.case.set(True)
    dlg.buttons["find_next"].invoke()
    assert selected(app) == "beta" and sel_index(app) == "2.11"
    dlg.buttons["find_next"].invoke()  # wraps to the start
    assert sel_index(app) == "1.6" and "continued" in c.message
    dlg.buttons["find_prev"].invoke()   # and back over the start
    assert sel_index(app) == "2.11"
    dlg.case.set(False)
    dlg.word.set(True)
    dlg.pattern.set("alpha")
    dlg.buttons["find_next"].invoke()
    dlg.buttons["find_next"].invoke()
    assert sel_index(app) == "1.0"  # "alphabet" is not the whole word
    dlg.regex.set(True)
    dlg.pattern.set("(unclosed")
    dlg.buttons["find_next"].invoke()
    assert "regular expression" in dlg.status.cget("text").lower()
    # F3 with the dialog closed repeats the last search.
    dlg.pattern.set("gamma")
    dlg.regex.set(False)
    dlg.close()
    app.root.update()
    assert not app.active.text.tag_ranges(find_dialog.HIT_TAG)  # closing clears the tint
    c.find()
    assert selected(app) == "gamma"
    assert c.history[:3] == ("gamma", "alpha", "beta")  # a bad pattern is not kept


def test_replace_all_is_one_undo_step_in_the_core(app):
    editor = app.active
    c = find_dialog.controller_for(app.app)
    dlg = c.show(replace=True)
    dlg.pattern.set("beta")
    dlg.replacement.set("BETA!")
    dlg.buttons["replace_all"].invoke()
    expected = "alpha BETA!\nBETA! gamma BETA!\nalphabet\n"
    assert app.pump(lambda: app.core_text(editor.buffer_id) == expected)
    assert app.pump(lambda: editor.text.get("1.0", "end-1c") == expected)
    assert app.pump(lambda: "Replaced 3 occurrences" in dlg.status.cget("text"))
    info = app.conn.call("buffer.info", {"buffer": editor.buffer_id})
    assert info["undo_label"] and "Replace All" in info["undo_label"]
    app.conn.call("buffer.undo", {"buffer": editor.buffer_id})
    assert app.core_text(editor.buffer_id) == TEXT  # ONE undo brings all three back
    assert app.pump(lambda: editor.text.get("1.0", "end-1c") == TEXT)


def test_replace_all_with_regex_groups_in_selection(app):
    editor = app.active
    editor.text.tag_add("sel", "2.0", "3.0")   # the second line only
    c = find_dialog.controller_for(app.app)
    dlg = c.show(replace=True)
    assert dlg.in_sel.get()  # a multi-line selection turns "In selection" on
    dlg.regex.set(True)
    dlg.pattern.set(r"(\w+)a\b")
    dlg.replacement.set(r"<\1>")
    dlg.buttons["replace_all"].invoke()
    expected = "alpha beta\n<Bet> <gamm> <bet>\nalphabet\n"
    assert app.pump(lambda: app.core_text(editor.buffer_id) == expected)


def test_replace_one_replaces_the_selected_match_then_finds_the_next(app):
    editor = app.active
    c = find_dialog.controller_for(app.app)
    dlg = c.show(replace=True)
    dlg.pattern.set("beta")
    dlg.replacement.set("b")
    dlg.buttons["replace"].invoke()    # first press selects the match
    assert selected(app) == "beta" and app.core_text(editor.buffer_id) == TEXT
    dlg.buttons["replace"].invoke()    # second press replaces it through the core
    assert app.pump(lambda: app.core_text(editor.buffer_id) == TEXT.replace("beta", "b", 1))
    assert app.pump(lambda: selected(app) == "Beta")  # ...and moves to the next one


def test_replace_waits_for_keystrokes_in_flight(app):
    editor = app.active
    editor.text.insert("1.0", "xbeta ")  # a local keystroke, unacknowledged for a moment
    assert editor.replica.pending
    c = find_dialog.controller_for(app.app)
    c.pattern, c.replacement = "beta", "Z"
    assert c.replace_all() == 4
    expected = "xZ alpha Z\nZ gamma Z\nalphabet\n"
    app.pump(lambda: app.core_text(editor.buffer_id) == expected)
    assert app.core_text(editor.buffer_id) == expected, (c.message, editor.replica)
    assert app.pump(lambda: editor.text.get("1.0", "end-1c") == expected)


def test_goto_line(app):
    editor = app.active
    dlg = find_dialog.GotoDialog(app.app)
    dlg.value.set("nonsense")
    assert not dlg.ok() and "line number" in dlg.error.cget("text").lower()
    dlg.value.set("2:6")
    assert dlg.ok()
    assert editor.text.index("insert") == "2.5"
    dlg = find_dialog.GotoDialog(app.app)
    dlg.value.set("999")
    assert dlg.ok() and editor.text.index("insert") == "4.0"


def test_the_window_installs_the_search_commands(app):
    names = ("search.find", "search.replace", "search.find_next", "search.find_prev",
             "search.goto_line")
    assert all(app.handler(n) is not None for n in names)   # bound by find_dialog.install
    assert app.app.commands.get("search.find_next").accel == "F3"
    app.app.invoke("search.find")
    dlg = find_dialog.controller_for(app.app).dialog
    assert dlg is not None and dlg.alive()


@pytest.mark.timeout(90)
def test_a_regex_that_backtracks_neither_freezes_the_window_nor_fails_silently(app, server):
    """re held the window for minutes on ``(\\w+\\s?)+$`` over a line of a dozen words (a
    pattern people write); the regex package answers at once, and a pattern that backtracks
    even there is stopped after a second with a message saying what to change."""
    import time
    (server.root / "words.txt").write_text("word " * 12 + "!\n" + "a" * 60 + "!\n")
    app.open("words.txt")
    c = find_dialog.controller_for(app.app)
    dlg = c.show()
    dlg.regex.set(True)
    dlg.pattern.set(r"(\w+\s?)+$")
    started = time.monotonic()
    dlg.buttons["find_next"].invoke()
    assert time.monotonic() - started < 5
    assert "Cannot find" in dlg.status.cget("text")
    dlg.pattern.set(r"(a|aa)+$")
    dlg.buttons["find_next"].invoke()
    assert time.monotonic() - started < 15
    assert "backtracks" in dlg.status.cget("text") and "Simplify" in dlg.status.cget("text")
    dlg.close()
