"""The project tree in the real window (ui/tk/app/main_window.py installs it) against a real core: lazy fs.list, ignores applied by the core, open by
double-click and Enter, refresh keeps open folders open."""

from __future__ import annotations

import shutil

import pytest

from tests.desktop_support import InProcessApp
from tests.support import RioServer

pytestmark = [pytest.mark.slow, pytest.mark.gui, pytest.mark.timeout(90)]


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n")
    (root / "src" / "deep" / "b.py").write_text("b = 1\n")
    (root / "README.md").write_text("# hi\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref\n")
    (root / "node_modules" / "x").mkdir(parents=True)
    (root / ".gitignore").write_text("*.log\n")
    (root / "debug.log").write_text("noise\n")
    return root


@pytest.fixture
def app(tk_root, project, tmp_path, monkeypatch):
    srv = RioServer(project, tmp_path).start()
    monkeypatch.setenv("RIO_CONFIG_DIR", srv.env["RIO_CONFIG_DIR"])
    try:
        desk = InProcessApp(tk_root, srv, geometry="600x500")
        try:
            yield desk
        finally:
            desk.close()
    finally:
        srv.stop()


def children(tree, iid=""):
    return [tree.tree.item(c, "text") for c in tree.tree.get_children(iid)]


def test_tree_lists_lazily_and_opens_files(app):
    tree = app.app.project_tree
    assert app.pump(lambda: not tree.busy and "." in tree.loaded)
    # Folders first; .git, node_modules and the .gitignore'd log are left out by the core.
    assert children(tree) == ["src", ".gitignore", "README.md"]
    assert children(tree, "src") == ["…"]   # not listed until opened
    assert "src" not in tree.loaded
    tree.tree.focus("src")
    tree.tree.item("src", open=True)
    tree.tree.event_generate("<<TreeviewOpen>>")
    assert app.pump(lambda: "src" in tree.loaded)
    assert children(tree, "src") == ["deep", "a.py"]
    # Double-click a file opens it.
    app.root.update()
    tree.tree.see("src/a.py")
    app.root.update()
    x, y, w, h = tree.tree.bbox("src/a.py")
    for _ in range(2):  # a double click (Tk refuses to generate <Double-…> itself)
        tree.tree.event_generate("<ButtonPress-1>", x=x + 5, y=y + h // 2)
        tree.tree.event_generate("<ButtonRelease-1>", x=x + 5, y=y + h // 2)
    assert app.opened[-1] == ("src/a.py", None, None)
    assert app.pump(lambda: app.active is not None and app.active.ready)
    assert app.active.text.get("1.0", "end-1c") == "print('a')\n"
    # Enter on a folder opens it; on a file opens the file.
    tree.tree.focus_force()  # key events go to the focus window
    tree.tree.focus("src/deep")
    app.root.update()
    tree.tree.event_generate("<Return>")
    assert app.pump(lambda: "src/deep" in tree.loaded)
    tree.select("src/deep/b.py")
    tree.tree.event_generate("<Return>")
    assert app.opened[-1][0] == "src/deep/b.py"
    # The tab comes when the core answers and takes the focus: wait, then focus the tree.
    assert app.pump(lambda: app.active is not None and app.active.ready
                    and app.active.summary["path"].endswith("b.py"))
    assert app.handler("project.refresh_tree") == tree.refresh
    app.handler("view.focus_tree")()
    app.root.update()
    assert app.root.focus_get() is tree.tree


def test_refresh_shows_changes_and_keeps_folders_open(app, project):
    tree = app.app.project_tree
    assert app.pump(lambda: "." in tree.loaded)
    tree.expand("src")
    assert app.pump(lambda: "src" in tree.loaded)
    (project / "src" / "c.py").write_text("")
    (project / "NEW.txt").write_text("")
    shutil.rmtree(project / "src" / "deep")
    tree.refresh()
    assert app.pump(lambda: not tree.busy)
    assert children(tree) == ["src", ".gitignore", "NEW.txt", "README.md"]
    assert children(tree, "src") == ["a.py", "c.py"]
    assert tree.tree.item("src", "open")


def test_a_file_saved_under_a_new_name_appears(app, project):
    tree = app.app.project_tree
    assert app.pump(lambda: "." in tree.loaded)
    tree.expand("src")
    assert app.pump(lambda: "src" in tree.loaded)
    buf = app.conn.call("buffer.new", {"text": "new\n"})
    app.conn.call("buffer.save", {"buffer": buf["buffer"], "path": "src/fresh.py"})
    assert app.pump(lambda: tree.tree.exists("src/fresh.py"))
    app.conn.call("buffer.close", {"buffer": buf["buffer"], "discard": True})


def test_files_made_and_deleted_on_disk_show_without_refresh(app, project):
    """The core watches the project (fs.changed): what another program or an agent's shell
    does on disk shows in the tree with no Refresh — in an open folder, in a new folder,
    not for an ignored file; a closed folder is listed afresh when opened."""
    tree = app.app.project_tree
    assert app.pump(lambda: not tree.busy and "." in tree.loaded)
    tree.expand("src")
    assert app.pump(lambda: "src" in tree.loaded)
    # The watcher arms once the core is ready: the first change may come before it.
    made = []

    def shows_new_file() -> bool:
        if not made or not tree.tree.exists(made[-1]):
            name = f"agent{len(made)}.txt"
            (project / name).write_text("by an agent\n")
            made.append(name)
            return app.pump(lambda: tree.tree.exists(name), 0.5)
        return True
    assert app.pump(shows_new_file, 20), "a file made on disk never showed"
    (project / "src" / "c.py").write_text("")
    (project / "trace.log").write_text("ignored\n")
    assert app.pump(lambda: tree.tree.exists("src/c.py"), 10)
    (project / "src" / "a.py").unlink()
    assert app.pump(lambda: not tree.tree.exists("src/a.py"), 10)
    (project / "pkg" / "inner").mkdir(parents=True)
    assert app.pump(lambda: tree.tree.exists("pkg"), 10)
    tree.expand("pkg")
    assert app.pump(lambda: children(tree, "pkg") == ["inner"], 10)
    (project / "pkg" / "inner" / "late.py").write_text("")
    tree.expand("pkg/inner")
    assert app.pump(lambda: children(tree, "pkg/inner") == ["late.py"], 10)
    (project / "pkg" / "inner" / "later.py").write_text("")
    assert app.pump(lambda: children(tree, "pkg/inner") == ["late.py", "later.py"], 10)
    shutil.rmtree(project / "pkg")
    assert app.pump(lambda: not tree.tree.exists("pkg"), 10)
    assert not tree.tree.exists("trace.log")
    assert "src" in children(tree) and tree.tree.item("src", "open")
