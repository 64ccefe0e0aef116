"""The plug-in modules inside the real window (ui/tk/app/main_window.py with real EditorTabs) on a real core:
Replace All through the EditorTab's offset mapping, a Find in Files click opening the file at
the line, the Project menu's Run streaming into the Output tab."""

from __future__ import annotations

import pytest

from rio.config.instance import project_state_dir
from rio.runs.runner import ProjectCommands, save_project_commands
from tests.desktop_support import InProcessApp
from tests.support import RioServer, wait_for
from ui.tk.find import dialog as find_dialog

pytestmark = [pytest.mark.slow, pytest.mark.gui, pytest.mark.timeout(120)]


@pytest.fixture
def desktop(tk_root, tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("alpha beta\nbeta gamma\n" + "pad\n" * 200 +
                                       "last beta\n")
    (root / "notes.txt").write_text("beta here\n")
    srv = RioServer(root, tmp_path).start()
    for key in ("RIO_STATE_DIR", "RIO_CONFIG_DIR", "RIO_RUNTIME_DIR"):
        monkeypatch.setenv(key, srv.env[key])
    try:
        # The app installs the plug-in modules just after its first paint (a cold-start measure).
        desk = InProcessApp(tk_root, srv, state_dir=project_state_dir(root))
        app = desk.app
        try:
            yield app, srv
        finally:
            if app.run_controller is not None and app.output_pane.running():
                app.run_controller.stop()
                wait(tk_root, lambda: not app.output_pane.running(), 20)
            desk.close()
    finally:
        srv.stop()


def wait(root, predicate, timeout: float = 10.0) -> bool:
    def updated() -> bool:
        root.update()
        return bool(predicate())
    return bool(wait_for(updated, timeout, 0.005))


def open_editor(app, path: str, line: int | None = None):
    app.open_path(path, line)
    assert wait(app.root, lambda: app.active_editor() is not None and app.active_editor().ready
                and app.active_editor().summary.get("path") == path)
    return app.active_editor()


def test_plugins_are_installed_in_the_real_window(desktop):
    app, _ = desktop
    names = {c.name for c in app.commands}
    assert {"search.find", "search.goto_line", "search.find_in_files", "project.run",
            "project.set_commands", "project.refresh_tree"} <= names
    assert app.output_pane is not None and app.project_tree is not None


def test_replace_all_in_a_real_editor_is_one_undo_step(desktop):
    app, srv = desktop
    ed = open_editor(app, "src/a.py")
    original = srv.call("buffer.text", {"buffer": ed.buffer_id})["text"]
    c = find_dialog.controller_for(app)
    c.pattern = "beta"
    assert c.find() and ed.selection() == (6, 10)
    c.replacement = "B"
    assert c.replace_all() == 3
    expected = original.replace("beta", "B")
    assert wait(app.root, lambda: srv.call("buffer.text", {"buffer": ed.buffer_id})["text"]
                == expected)
    assert wait(app.root, lambda: ed.text.get("1.0", "end-1c") == expected)
    srv.call("buffer.undo", {"buffer": ed.buffer_id})
    assert srv.call("buffer.text", {"buffer": ed.buffer_id})["text"] == original
    assert wait(app.root, lambda: ed.text.get("1.0", "end-1c") == original)


def test_find_in_files_click_opens_the_file_at_the_line(desktop):
    app, _ = desktop
    pane = app.output_pane
    app.invoke("search.find_in_files")
    assert pane.find.start("beta")
    assert wait(app.root, lambda: not pane.find.running)
    rows = pane.find.text.get("1.0", "end-1c").splitlines()
    assert rows[-1] == "src/a.py:203:6: last beta"
    row = len(rows)
    pane.find.text.see(f"{row}.0")
    app.root.update()
    x, y, _w, h = pane.find.text.bbox(f"{row}.2")
    pane.find.text.event_generate("<Button-1>", x=x + 1, y=y + h // 2)
    assert wait(app.root, lambda: app.active_editor() is not None
                and app.active_editor().ready and app.active_editor().cursor() == (203, 5))


def test_run_streams_into_the_output_tab(desktop):
    app, srv = desktop
    save_project_commands(project_state_dir(srv.root), ProjectCommands(
        run="echo 'src/a.py:2:1: here'; exit 1"))
    app.invoke("project.run")
    pane = app.output_pane
    assert wait(app.root, lambda: "exit code 1" in pane.output.text.get("1.0", "end"), 20)
    assert pane.output.link_at("2.3") == ("src/a.py", 2, 1)


def test_goto_line_in_a_real_editor(desktop):
    app, _ = desktop
    ed = open_editor(app, "src/a.py")
    dlg = find_dialog.GotoDialog(app)
    assert "1–204" in str(dlg.prompt.cget("text"))
    dlg.value.set("150:3")
    assert dlg.ok()
    assert wait(app.root, lambda: ed.cursor() == (150, 2))


def test_find_in_a_windowed_big_document(desktop):
    """A 30 000-character line puts the editor in window mode (ui/tk/editor/bigfile.py): Tk indices
    are not document positions, and a match far below is outside the rows the widget holds."""
    app, srv = desktop
    text = "x" * 30_000 + "\n" + "line\n" * 3000 + "the needle\n"
    (srv.root / "big.txt").write_text(text)
    ed = open_editor(app, "big.txt")
    assert ed.window is not None
    c = find_dialog.controller_for(app)
    c.pattern = "needle"
    assert c.find()
    start = text.index("needle")
    assert ed.selection() == (start, start + 6)
    assert ed.cursor() == (3002, 10)
    c.replacement = "pin"
    assert c.replace_all() == 1
    assert wait(app.root, lambda: srv.call("buffer.text", {"buffer": ed.buffer_id})["text"]
                == text.replace("needle", "pin"))


def test_dialogs_are_drivable_through_the_apps_dialog_registry(desktop):
    """ui.state lists app.dialogs and ui.dialog_answer answers them (ui/tk/app/control.py)."""
    app, srv = desktop
    ed = open_editor(app, "src/a.py")
    app.invoke("search.find")
    find = app.dialogs["find"]
    find.set_fields({"pattern": "gamma", "case": "true"})
    find.answer("Find Next")
    assert ed.selection() == (16, 21)
    assert find.describe()["fields"]["pattern"] == "gamma"
    app.invoke("search.replace")        # the same window, now in Replace mode
    assert "find" not in app.dialogs and "Replace All" in app.dialogs["replace"].buttons
    app.dialogs["replace"].set_fields({"pattern": "pad", "replacement": "p"})
    app.dialogs["replace"].answer("Replace All")
    assert wait(app.root, lambda: srv.call("buffer.text", {"buffer": ed.buffer_id})["text"]
                .count("p\n") == 200)
    assert wait(app.root,
                lambda: "Replaced 200" in app.dialogs["replace"].describe()["message"])
    app.dialogs["replace"].answer("Close")
    assert "replace" not in app.dialogs
    app.invoke("search.goto_line")
    app.dialogs["goto"].set_fields({"line": "7"})
    app.dialogs["goto"].answer("OK")
    assert ed.cursor() == (7, 0) and "goto" not in app.dialogs
    app.invoke("edit.preferences")
    app.dialogs["preferences"].set_fields({"tab_width": "3"})
    app.dialogs["preferences"].answer("OK")
    assert app.settings["tab_width"] == 3 and "preferences" not in app.dialogs
    app.invoke("help.about")
    assert "Instance" in app.dialogs["about"].describe()["message"]
    app.dialogs["about"].answer("OK")
    app.invoke("project.set_commands")
    app.dialogs["run_commands"].set_fields({"build": "make"})
    app.dialogs["run_commands"].answer("OK")
    app.invoke("help.shortcuts")
    app.dialogs["shortcuts"].set_fields({"search": "find"})
    assert "shortcuts" in app.dialogs


def test_run_saves_modified_files_first(desktop):
    app, srv = desktop
    ed = open_editor(app, "src/a.py")
    ed.text.insert("1.0", "# edited\n")   # a keystroke path: the editor sends it to the core
    assert wait(app.root, lambda: srv.call("buffer.info", {"buffer": ed.buffer_id})["dirty"])
    assert wait(app.root, lambda: ed.summary.get("dirty"))
    save_project_commands(project_state_dir(srv.root), ProjectCommands(run="head -1 src/a.py"))
    app.invoke("project.run")
    assert wait(app.root, lambda: "Finished" in app.output_pane.output.text.get("1.0", "end"),
                20)
    assert "# edited" in app.output_pane.output.text.get("1.0", "end")
    assert (srv.root / "src" / "a.py").read_text().startswith("# edited\n")
