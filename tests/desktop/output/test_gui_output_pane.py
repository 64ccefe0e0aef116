"""The output pane in the real window (ui/tk/app/main_window.py installs it) against a real core: Find in Files results open the file at the line on a
click; Run output streams in with clickable file references; Stop ends the run."""

from __future__ import annotations

import re

import psutil
import pytest

from rio.config.instance import project_state_dir
from rio.runs.runner import ProjectCommands, load_project_commands, save_project_commands
from tests.desktop_support import InProcessApp
from tests.support import RioServer, wait_for
from ui.tk.output import pane as output_pane
from ui.tk.project import commands as project_commands

pytestmark = [pytest.mark.gui, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("pane")
    root = base / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return os.sep\n")
    (root / "notes.txt").write_text("call main() here\nand main again\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("main\n")
    srv = RioServer(root.resolve(), base).start()
    yield srv
    srv.stop()


@pytest.fixture
def app(tk_root, server, monkeypatch):
    # The UI side computes the project's state folder from its own environment.
    monkeypatch.setenv("RIO_STATE_DIR", server.env["RIO_STATE_DIR"])
    monkeypatch.setenv("RIO_CONFIG_DIR", server.env["RIO_CONFIG_DIR"])
    desk = InProcessApp(tk_root, server, geometry="900x600")
    pane, controller = desk.app.output_pane, desk.app.run_controller
    try:
        yield desk, pane, controller
    finally:
        if pane.running():
            controller.stop()
            desk.pump(lambda: not pane.running(), 20)
        desk.close()


def click(widget, index: str) -> None:
    widget.see(index)
    widget.update()
    x, y, w, h = widget.bbox(index)
    widget.event_generate("<Button-1>", x=x + 1, y=y + h // 2)
    widget.update()


def test_find_in_files_streams_results_and_a_click_opens_at_the_line(app):
    stub, pane, _ = app
    stub.handler("search.find_in_files")()   # the command shows the tab
    assert pane.notebook.index("current") == 0
    assert pane.find.start("main")
    assert stub.pump(lambda: not pane.find.running)
    rows = pane.find.text.get("1.0", "end-1c").splitlines()
    assert rows == ["notes.txt:1:6: call main() here", "notes.txt:2:5: and main again",
                    "src/app.py:3:5: def main():"]   # build/ is ignored by .gitignore
    assert "3 matches in 2 files" in pane.find.status.cget("text")
    click(pane.find.text, "3.2")
    assert stub.opened[-1] == ("src/app.py", 3, 5)
    assert stub.pump(lambda: stub.active is not None and stub.active.ready
                     and stub.active.summary["path"].endswith("src/app.py"))
    assert stub.active.text.index("insert") == "3.4"
    # Keyboard: Up then Enter opens the previous result.
    pane.find.move(-1)
    pane.find.open_current()
    assert stub.opened[-1] == ("notes.txt", 2, 5)


def test_find_in_files_sees_unsaved_edits_of_open_documents(app):
    stub, pane, _ = app
    editor = stub.open("notes.txt")
    editor.text.insert("1.0", "xyzzy ")   # typed, not saved
    assert pane.find.start("xyzzy")
    assert stub.pump(lambda: not pane.find.running)
    assert pane.find.text.get("1.0", "end-1c").strip() == "notes.txt:1:1: xyzzy call main() here"


def test_a_bad_pattern_is_reported_not_raised(app):
    _, pane, _ = app
    pane.find.regex.set(True)
    assert not pane.find.start("(")
    assert "regular expression" in pane.find.status.cget("text").lower()


def test_run_output_streams_with_clickable_references(app, server):
    stub, pane, controller = app
    save_project_commands(project_state_dir(server.root), ProjectCommands(
        run="echo building; echo 'src/app.py:4:12: warning: odd' >&2; "
            "echo 'at /usr/lib/x.py:3'; exit 2"))
    stub.handler("project.run")()
    assert stub.pump(lambda: "exit code 2" in pane.output.text.get("1.0", "end"), 20)
    shown = pane.output.text.get("1.0", "end-1c")
    assert "building" in shown and "src/app.py:4:12: warning: odd" in shown
    assert pane.notebook.index("current") == 1
    # stderr is coloured; the project file is a link, the path outside the project is not.
    row = next(i for i, line in enumerate(shown.splitlines(), 1) if line.startswith("src/app.py"))
    assert "stderr" in pane.output.text.tag_names(f"{row}.2")
    assert pane.output.link_at(f"{row}.2") == ("src/app.py", 4, 12)
    other = next(i for i, line in enumerate(shown.splitlines(), 1) if line.startswith("at /usr"))
    assert pane.output.link_at(f"{other}.5") is None
    header = shown.splitlines()[0]
    assert header.startswith("> Run:") and "src/app.py:4:12" in header
    at = header.index("src/app.py")
    assert pane.output.link_at(f"1.{at + 2}") is None   # the command line is not output
    click(pane.output.text, f"{row}.3")
    assert stub.opened[-1] == ("src/app.py", 4, 12)


def test_stop_ends_the_run_group(app, server):
    stub, pane, controller = app
    save_project_commands(project_state_dir(server.root), ProjectCommands(
        run="trap '' TERM; echo pid=$$; sleep 300"))
    controller.start("run")
    found = lambda: re.search(r"pid=(\d+)", pane.output.text.get("1.0", "end"))  # noqa: E731
    assert stub.pump(lambda: found() is not None, 20)
    pid = int(found().group(1))
    assert pane.running()
    stub.handler("project.stop")()
    assert stub.pump(lambda: "Stopped." in pane.output.text.get("1.0", "end"), 20)
    assert not pane.running()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_run_without_a_command_asks_for_one_and_saves_it(app, server):
    stub, pane, controller = app
    save_project_commands(project_state_dir(server.root), ProjectCommands())
    controller.start("build")
    dialog = controller.dialog
    assert dialog is not None and dialog.alive()
    dialog.build.set("echo built-ok")
    dialog.ok()
    assert load_project_commands(project_state_dir(server.root)).build == "echo built-ok"
    assert stub.pump(lambda: "built-ok" in pane.output.text.get("1.0", "end"), 20)
    assert "> Build: echo built-ok" in pane.output.text.get("1.0", "end")


def test_a_new_window_adopts_a_run_in_progress(app, server, tk_root):
    stub, pane, controller = app
    save_project_commands(project_state_dir(server.root), ProjectCommands(
        run="echo first; sleep 300"))
    controller.start("run")
    assert stub.pump(lambda: "first" in pane.output.text.get("1.0", "end"), 20)
    run = pane.current_run
    # A second pane (as after a UI restart) follows the run and can stop it.
    import tkinter as tk
    holder = tk.Frame(tk_root)
    other = output_pane.OutputPane(stub.app, holder)
    assert stub.pump(lambda: other.current_run == run)
    assert other.running()
    project_commands.RunController(stub.app, other).stop()
    assert stub.pump(lambda: "Stopped." in other.output.text.get("1.0", "end"), 20)


def test_f4_walks_through_results_and_references(app, server):
    stub, pane, _ = app
    pane.find.start("main")
    assert stub.pump(lambda: not pane.find.running)
    pane.show_find()
    stub.handler("search.next_result")()
    assert stub.opened[-1] == ("notes.txt", 1, 6)
    stub.handler("search.next_result")()
    assert stub.opened[-1] == ("notes.txt", 2, 5)
    stub.handler("search.prev_result")()
    assert stub.opened[-1] == ("notes.txt", 1, 6)
    save_project_commands(project_state_dir(server.root), ProjectCommands(
        run="echo 'src/app.py:1:1: one'; echo 'noise'; echo 'src/app.py:3:5: two'"))
    stub.handler("project.run")()
    assert stub.pump(lambda: "Finished" in pane.output.text.get("1.0", "end"), 20)
    assert pane.next_result() == ("src/app.py", 1, 1)
    assert pane.next_result() == ("src/app.py", 3, 5)
    assert pane.next_result() == ("src/app.py", 1, 1)    # wraps around
    assert pane.next_result(-1) == ("src/app.py", 3, 5)
    assert stub.opened[-1] == ("src/app.py", 3, 5)


def test_find_in_folder_from_the_tree_and_copy_from_the_output(app):
    stub, pane, _ = app
    tree = stub.app.project_tree
    assert stub.pump(lambda: "." in tree.loaded)
    tree.find_in_folder("src")
    assert pane.find.folder.get() == "src" and pane.notebook.index("current") == 0
    assert pane.find.start("main")
    assert stub.pump(lambda: not pane.find.running)
    assert pane.find.text.get("1.0", "end-1c").strip() == "src/app.py:3:5: def main():"
    pane.output.clear()
    pane.output.write("line one\nline two\n")
    assert pane.output.copy() == "line one\nline two\n"
    assert stub.root.clipboard_get() == "line one\nline two\n"


def test_a_core_crash_ends_the_run_and_the_pane_says_so(app, server):
    """kill -9 of the core mid-run: the run's group goes with it (swept by the core's cookie)
    and the pane, told by system.process, stops showing a run that will never exit."""
    stub, pane, controller = app
    save_project_commands(project_state_dir(server.root), ProjectCommands(
        run="echo pid=$$; sleep 300"))
    controller.start("run")
    found = lambda: re.search(r"pid=(\d+)", pane.output.text.get("1.0", "end"))  # noqa: E731
    assert stub.pump(lambda: found() is not None, 20)
    pid = int(found().group(1))
    assert wait_for(lambda: psutil.Process(pid).children(), 5)
    tree = [pid] + [p.pid for p in psutil.Process(pid).children(recursive=True)]
    core = server.pids()["core"]
    psutil.Process(core).kill()
    # The state changes at once; the line is drawn from after() (output is drawn in slices).
    assert stub.pump(lambda: not pane.running() and not pane.drawing, 20)
    assert "The run was lost" in pane.output.text.get("1.0", "end")

    def gone(p: int) -> bool:
        try:
            return psutil.Process(p).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
    assert wait_for(lambda: all(gone(p) for p in tree), 10), [p for p in tree if not gone(p)]
    assert stub.pump(lambda: server.pids().get("core") not in (None, core), 20)


def test_a_flood_of_output_is_drawn_in_order_and_linked_in_view(app):
    stub, pane, _ = app
    pane.run_started({"run": "run-flood", "command": "flood", "cwd": "."})
    lines = [f"src/app.py:{i % 4 + 1}:1: message {i}\n" for i in range(3000)]
    text = "".join(lines)
    for i in range(0, len(text), 20_000):   # as run.output events of the core's batch size
        pane._handle("run.output", {"run": "run-flood", "stream": "stdout",
                                    "text": text[i:i + 20_000]})
    assert pane.drawing                      # queued, not drawn inside the event handler
    assert stub.pump(lambda: not pane.drawing)
    shown = pane.output.text.get("2.0", "end-1c")
    assert shown == text
    # Only the lines around the view carry the link tag; a line scrolled into view gets it.
    linked = len(pane.output.text.tag_ranges("link")) // 2
    assert 0 < linked < 300
    pane.output.text.see("2.0")
    assert stub.pump(lambda: "link" in pane.output.text.tag_names("2.3"), 5)
    assert pane.output.link_at("2.3") == ("src/app.py", 1, 1)
    pane.runs["run-flood"]["state"] = "exited"


def test_python_traceback_lines_are_links(app):
    stub, pane, _ = app
    pane.run_started({"run": "run-tb", "command": "python x", "cwd": "."})
    trace = ('Traceback (most recent call last)\n'
             '  File "src/app.py", line 3, in main\n'
             '    return os.sep\n'
             '\U0001F600 File "src/app.py", line 4\n')
    pane._handle("run.output", {"run": "run-tb", "stream": "stderr", "text": trace})
    assert stub.pump(lambda: not pane.drawing)
    t = pane.output.text
    row = next(r for r in range(1, 20) if 'line 3' in t.get(f"{r}.0", f"{r}.end"))
    assert stub.pump(lambda: "link" in t.tag_names(f"{row}.4"), 5)
    assert pane.output.link_at(f"{row}.4") == ("src/app.py", 3, None)
    # After an emoji (two Tk columns) the link still covers exactly the reference.
    ranges = [str(i) for i in t.tag_ranges("link")]
    assert t.get(ranges[-2], ranges[-1]) == 'File "src/app.py", line 4'
    assert pane.output.link_at(f"{row + 2}.4") == ("src/app.py", 4, None)
    pane.runs["run-tb"]["state"] = "exited"


def test_a_find_in_files_hit_after_an_emoji_is_highlighted_exactly(app, server):
    stub, pane, _ = app
    (server.root / "emoji.txt").write_text("\U0001F600\U0001F389 zebra crossing\n",
                                          encoding="utf-8")
    try:
        stub.handler("search.find_in_files")()
        assert pane.find.start("zebra")
        assert stub.pump(lambda: not pane.find.running)
        t = pane.find.text
        ranges = [str(i) for i in t.tag_ranges("hit")]
        assert len(ranges) == 2 and t.get(*ranges) == "zebra"
    finally:
        (server.root / "emoji.txt").unlink()


def _column(widget, x: int, top: int, height: int) -> list[str]:
    """The screen's pixels in one column (``import``, the X server's own picture), top down."""
    import os
    import subprocess
    out = subprocess.run(["import", "-silent", "-window", "root", "-crop",
                          f"1x{height}+{widget.winfo_rootx() + x}+{widget.winfo_rooty() + top}",
                          "txt:-"], env={**os.environ}, capture_output=True, text=True,
                         check=True, timeout=30).stdout
    return [line.split()[2] for line in out.splitlines()[1:]]


@pytest.mark.skipif(__import__("shutil").which("import") is None,
                    reason="ImageMagick's import is not installed")
def test_a_selected_result_keeps_the_underscores_of_its_row_and_the_row_above(app, server):
    """Each underscore keeps a line of its own row's background below it: in the selected
    Find in Files row (white on the selection colour) and in the row above it. With no room
    below the rows, DejaVu Sans Mono's underscores sat on a row's last pixel line, so the
    selection bar painted right against the row above's and made its own its bottom edge:
    both read as gone. DejaVu Sans Mono when installed (the face of a machine without
    Terminus), else the editor's font."""
    import tkinter.font as tkfont
    stub, pane, _ = app
    if "DejaVu Sans Mono" in tkfont.families(stub.root):
        stub.app.settings.update(font="DejaVu Sans Mono", size=10)
        stub.app.apply_settings()
    (server.root / "snake.txt").write_text("".join(f"a_b_c_{i} = a_b\n" for i in range(4)))
    try:
        stub.handler("search.find_in_files")()
        assert pane.find.start("a_b_c")
        assert stub.pump(lambda: not pane.find.running)
        t = pane.find.text
        assert t.get("1.0", "2.0").startswith("snake.txt:1:1: a_b_c_0")
        pane.find.select(1)                     # the second row is the selected one
        t.update()
        t.winfo_pointerxy()     # a round trip: the X server has drawn what Tk sent before
        under = t.get("1.0", "1.end").index("a_b_c") + 1    # the first "_" of the text
        for row in (1, 2):
            x, _y, w, _h = t.bbox(f"{row}.{under}")
            _lx, top, _lw, height, _lbase = t.dlineinfo(f"{row}.0")
            pixels = _column(t, x + w // 2, top, height)
            background = pixels[0]              # the row's own, above the glyph
            drawn = [i for i, p in enumerate(pixels) if p != background]
            assert drawn, f"row {row}: no underscore drawn at all: {pixels}"
            low = drawn[-1]
            assert low + 1 < height and pixels[low + 1] == background, \
                f"row {row}: the underscore is the row's last pixel line: {pixels}"
    finally:
        (server.root / "snake.txt").unlink()
