"""A restart brings the window back where it was and the editor as it was left: the saved
geometry is the one ``geometry()`` takes back (it used to be the client area's, whose y is
below the menu bar, so the window moved down ~30 px at every start), and a cursor restored
into a text that has no size yet does not scroll it sideways (it came back scrolled one
column right). There is no window manager under Xvfb: the frame's part of the same rule
(``wm geometry`` is the outer corner) is Tk's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tkinter as tk
from pathlib import Path

import pytest

from tests.desktop_support import RioDesktop
from tests.support import wait_for
from ui.tk.app.main_window import window_geometry

LONG = "".join(f"row {i} " + "x" * 240 + "\n" for i in range(1, 40))


def _outer_corner(display: str, title: str) -> tuple[int, int]:
    """Where the X server has the window's outer corner (its wrapper, menu bar included)."""
    out = subprocess.run(["xwininfo", "-name", title], env={**os.environ, "DISPLAY": display},
                         capture_output=True, text=True, check=True, timeout=10).stdout
    at = {k.strip(): v.strip() for k, v in
          (line.split(":", 1) for line in out.splitlines() if ":" in line)}
    return int(at["Absolute upper-left X"]), int(at["Absolute upper-left Y"])


def _outer_corner_of(d: RioDesktop, display: str) -> tuple[int, int]:
    """The window's outer corner, found by its title as it is now: a title read from the
    state may change before xwininfo looks (the file's name is added once its tab is
    active), so a title no window has any more is read again."""
    return wait_for(lambda: _outer_corner(display, d.state()["window"]["title"]), 10, 0.1,
                    what="the window's outer corner", ignore=(subprocess.CalledProcessError,))


@pytest.mark.gui
@pytest.mark.timeout(30)
def test_the_saved_geometry_puts_the_window_back_where_it_was(tk_root):
    """The restore math on a real Tk window with a menu bar: saving and restoring, again and
    again, never moves it."""
    bar = tk.Menu(tk_root)
    bar.add_cascade(label="File", menu=tk.Menu(bar, tearoff=False))
    tk_root.configure(menu=bar)
    tk_root.geometry("640x420+40+60")
    tk_root.update()
    corner = (tk_root.winfo_rootx(), tk_root.winfo_rooty())     # the client area's
    assert corner[1] > 60                                       # below the menu bar
    for _ in range(3):
        saved = window_geometry(tk_root)
        assert saved == "640x420+40+60"
        tk_root.geometry(saved)                                 # what the next start does
        tk_root.update()
        assert (tk_root.winfo_rootx(), tk_root.winfo_rooty()) == corner


@pytest.mark.slow
@pytest.mark.gui
@pytest.mark.timeout(150)
@pytest.mark.skipif(shutil.which("xwininfo") is None, reason="xwininfo is not installed")
def test_a_restart_brings_the_window_and_the_editor_back_as_they_were(tmp_path, display):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "long.py").write_text(LONG)
    first = RioDesktop(project, tmp_path / "base", display, files=(str(project / "long.py"),))
    env = first.env
    places: list[tuple[int, int]] = []
    geometries: list[str] = []
    for start in range(3):
        d = first if start == 0 else RioDesktop(project, tmp_path / "base", display)
        d.env = env                          # the same state folder: the same session
        d.start()
        try:
            if start == 0:
                d.wait_active_ready()
                d.call("ui.open", {"path": "long.py", "line": 5, "col": 2})   # column 1
            s = d.wait_state(lambda s: s["cursor"] == {"line": 5, "col": 1} and s["view"])
            assert s["view"]["left"] == 0, f"start {start}: scrolled sideways: {s['view']}"
            places.append(_outer_corner_of(d, display))
            d.call("ui.quit", {})
            assert d.proc.wait(30) == 0      # the session is saved as the window closes
            saved = next(Path(env["RIO_STATE_DIR"]).glob("projects/*/ui-session.json"))
            geometries.append(json.loads(saved.read_text())["layout"]["geometry"])
        finally:
            d.stop()
    assert places == [places[0]] * 3, f"the window moved: {places}"
    assert geometries == [geometries[0]] * 3, geometries
    assert geometries[0].endswith(f"+{places[0][0]}+{places[0][1]}")
