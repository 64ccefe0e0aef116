"""The file's first screen in the window's first paint (ui/tk/start/first_screen.py, ADR-0043): the
window `rio FILE` forks shows the file's text before any core exists, read-only, and the keys
typed while it shows are kept and given, in order, to the editor once it has the core's text."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.editor_harness import close_editor, open_editor, widget_text
from tests.support import REPO, rio_env, wait_for
from ui.tk.start.first_screen import FirstScreen, first_screen_for, read_first_screen

pytestmark = [pytest.mark.gui, pytest.mark.timeout(60)]

TEXT = "".join(f"line {n}\n" for n in range(1, 301))


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("RIO_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path / "config"))
    root = tmp_path / f"proj-{uuid.uuid4().hex[:6]}"
    root.mkdir()
    (root / "notes.py").write_text(TEXT)
    return root


def _screen(tk_root, project: Path) -> FirstScreen:
    tk_root.geometry("900x700")       # the early window has the saved size (ui/tk/start/early.py)
    screen = first_screen_for(tk_root, str(project), [str(project / "notes.py")])
    assert screen is not None
    tk_root.update()
    return screen


def test_the_first_screen_shows_the_files_text_before_any_core(tk_root, project) -> None:
    screen = _screen(tk_root, project)
    shown = screen.text.get("1.0", "end-1c")
    assert shown.startswith("line 1\nline 2\n") and "line 150" in shown
    assert "line 151" not in shown                       # a screen, not the file
    assert screen.text.winfo_viewable() and screen.text.winfo_height() > 50
    assert str(screen.text.cget("state")) == "disabled"  # nothing to edit in a picture
    assert tk_root.title().startswith("notes.py — Rio — ")
    numbers = [screen.gutter.itemcget(i, "text") for i in screen.gutter.find_withtag("number")]
    assert numbers[:3] == ["1", "2", "3"] and len(numbers) == 150
    screen.drop()


def test_keys_typed_on_the_first_screen_are_kept_for_the_editor(tk_root, project) -> None:
    screen = _screen(tk_root, project)
    screen.text.focus_force()
    tk_root.update()
    for keysym in ("x", "y", "Return", "z", "BackSpace", "w"):
        screen.text.event_generate(f"<KeyPress-{keysym}>", when="now")
    screen.text.event_generate("<KeyPress-Shift_L>", when="now")      # not a key of its own
    tk_root.update()
    assert [k.keysym for k in screen.keys] == ["x", "y", "Return", "z", "BackSpace", "w"]
    assert screen.text.get("1.0", "1.end") == "line 1"                # not typed into it

    ed, core = open_editor(tk_root, TEXT, "notes.py")
    try:
        screen.cover(ed)
        given = screen.hand_over(ed, ed.text.focus_set)
        core.pump()
        tk_root.update()
        assert given == 6
        # In order, through the editor's own paths: typed text, then BackSpace's binding.
        assert widget_text(ed) == "xy\nw" + TEXT
        assert core.doc.text() == widget_text(ed)          # the core has them, not just Tk
        assert not screen.frame.winfo_exists()
    finally:
        close_editor(ed)


def test_a_file_with_journals_waiting_is_not_drawn(tk_root, project) -> None:
    from rio.config.instance import journal_dir
    journals = journal_dir(project)
    journals.mkdir(parents=True)
    (journals / "b1").write_bytes(b"unsaved edits")
    assert first_screen_for(tk_root, str(project), [str(project / "notes.py")]) is None


def test_what_is_read_for_the_first_screen(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"\xef\xbb\xbfa\r\nb\rc\n")
    assert read_first_screen(path) == "a\nb\nc\n"
    path.write_bytes("é\n".encode("latin-1"))
    assert read_first_screen(path) == "é\n"
    path.write_text("".join(f"{n}\n" for n in range(1, 20)))
    assert read_first_screen(path, top=5, lines=2) == "5\n6"
    path.write_bytes(b"bin\x00ary")
    assert read_first_screen(path) is None
    assert read_first_screen(tmp_path) is None                       # not a regular file
    assert read_first_screen(tmp_path / "absent") is None


@pytest.mark.timeout(60)
def test_the_first_paint_loads_neither_highlighting_nor_the_bus() -> None:
    """What drawing the first screen imports (ui/tk/start/first_screen.py ``first_screen_for``) stays
    off pygments (the theme names the style classes from rio/text/syntax_classes.py), the bus
    and the App: they load after the file is on screen."""
    code = ("import sys, ui.tk.start.first, ui.tk.start.first_screen, rio.config.instance, ui.tk.app.session, "
            "ui.tk.widgets.fonts, ui.tk.widgets.theme, ui.tk.app.commands, ui.tk.prefs.model; "
            "print(' '.join(m for m in ('pygments', 'zmq', 'msgpack', 'ui.tk.app.main_window', "
            "'ui.tk.editor.tab') if m in sys.modules) or 'none')")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), capture_output=True,
                         text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["none"]


def _titles(display: str, pattern: str) -> list[str]:
    """The titles of the visible windows whose title matches ``pattern`` (xdotool's regular
    expression, matched against a name in which it does not find the em dash)."""
    env = {**os.environ, "DISPLAY": display}
    out = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", pattern], env=env,
                         capture_output=True, text=True)
    return [subprocess.run(["xdotool", "getwindowname", wid], env=env, capture_output=True,
                           text=True).stdout.strip() for wid in out.stdout.split()]


def test_rio_file_s_window_is_titled_with_the_file_before_any_instance(display, tmp_path) -> None:
    """The window-first path itself (`rio FILE` runs ``python -m ui.tk --root DIR``): with no
    instance nor hub at all, the window is on screen with the file's name in its title."""
    root = tmp_path / f"first-{uuid.uuid4().hex[:6]}"
    root.mkdir()
    (root / "hello.py").write_text("print('hello')\n")
    env = {**rio_env(tmp_path), "DISPLAY": display}
    name = f"fs{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen([sys.executable, "-m", "ui.tk", "--instance", name,
                             "--root", str(root), "--open", str(root / "hello.py")],
                            env=env, cwd=str(REPO), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        title = f"hello.py — Rio — {root.name}"
        seen = wait_for(lambda: proc.poll() is not None or
                        title in _titles(display, root.name), 30)
        assert seen and proc.poll() is None, f"no window titled {title!r} (exit {proc.poll()})"
    finally:
        proc.kill()
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_keys_typed_as_soon_as_rio_files_window_shows_reach_the_document(display,
                                                                          tmp_path) -> None:
    """`rio FILE` end to end: keys typed (a real keyboard, XTEST) the moment its window is on
    screen — on the first screen while the core starts, or on the editor if it was quicker —
    all reach the core's document, in order, at the top of the file."""
    from tests.desktop_support import RioDesktop
    root = tmp_path / "proj"
    root.mkdir()
    (root / "hello.py").write_text("def hello():\n    return 1\n")
    desktop = RioDesktop(root, tmp_path / "base", display, files=(str(root / "hello.py"),))
    desktop.proc = subprocess.Popen(
        [sys.executable, "-m", "rio.cli", str(root / "hello.py"), "--instance", desktop.name],
        env=desktop.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, cwd=str(root))
    desktop.known_pids.add(desktop.proc.pid)
    env = {**os.environ, "DISPLAY": display}
    try:
        ids: list[str] = []

        def shown() -> bool:
            out = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "hello.py"],
                                 env=env, capture_output=True, text=True)
            ids[:] = out.stdout.split()
            return bool(ids)
        assert wait_for(shown, 30, 0.01), "no window for hello.py"
        subprocess.run(["xdotool", "windowfocus", "--sync", ids[0]], env=env, check=True,
                       timeout=10)
        subprocess.run(["xdotool", "type", "--delay", "20", "x = 0"], env=env, check=True,
                       timeout=10)
        subprocess.run(["xdotool", "key", "Return"], env=env, check=True, timeout=10)
        assert wait_for(lambda: desktop.core_ready() and desktop.ui_ready(), 60)
        state = desktop.wait_active_ready()
        buffer = next(t["buffer"] for t in state["tabs"] if t["active"])
        desktop.wait_text(buffer, "x = 0\ndef hello():\n    return 1\n")
    finally:
        desktop.stop()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_first_screen_is_drawn_where_the_apps_editor_will_be(tk_root, tmp_path,
                                                                 monkeypatch) -> None:
    """ui/tk/start/first_screen.py places the picture by constants (EDITOR_TOP …) before the App
    exists: the App's editor tab, built from the same saved layout, must be there, or the
    file's lines jump when the editor takes over."""
    from tests.desktop_support import InProcessApp
    from tests.support import RioServer
    from ui.tk.start import first_screen as fs
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.py").write_text(TEXT)
    srv = RioServer(root, tmp_path).start()
    monkeypatch.setenv("RIO_CONFIG_DIR", srv.env["RIO_CONFIG_DIR"])
    monkeypatch.setenv("RIO_STATE_DIR", srv.env["RIO_STATE_DIR"])
    app = None
    try:
        app = InProcessApp(tk_root, srv, geometry="1000x700")
        ed = app.open(str(root / "notes.py"))
        tk_root.update()
        layout = app.app.session.layout
        x = ed.winfo_rootx() - tk_root.winfo_rootx()
        y = ed.winfo_rooty() - tk_root.winfo_rooty()
        bottom = tk_root.winfo_height() - (y + ed.winfo_height())
        right = tk_root.winfo_width() - (x + ed.winfo_width())
        assert abs(x - (layout.tree_width + fs.EDITOR_LEFT)) <= 3, (x, layout.tree_width)
        assert abs(y - fs.EDITOR_TOP) <= 3, y
        assert abs(right - fs.EDITOR_RIGHT) <= 3, right
        assert abs(bottom - (layout.output_height + fs.EDITOR_BOTTOM)) <= 3, \
            (bottom, layout.output_height)
    finally:
        if app is not None:
            app.close()
        srv.stop()
