"""Show Difference in the conflict prompt, clicked and keyed as a user would (xdotool) in the
real window: the diff comes alone and closes with Close, Esc or ×, then the question comes
back. (It used to open over the prompt, which held the input grab: every click and key on the
diff went to the prompt behind it, and only ``ui.dialog_answer`` got out.)"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.desktop_support import RioDesktop
from tests.support import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.gui, pytest.mark.timeout(120),
              pytest.mark.skipif(shutil.which("xdotool") is None,
                                 reason="xdotool is not installed")]

SOURCE = "def f(x):\n    return x\n"


@pytest.fixture
def project_files():
    """The project of tests/desktop/conftest.py's ``desktop`` (f.py open)."""
    return {"f.py": SOURCE}


def _x(desktop: RioDesktop, *args: str, check: bool = True) -> str:
    env = {**os.environ, "DISPLAY": desktop.env["DISPLAY"]}
    return subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True,
                          check=check, timeout=10).stdout


def _dialog(desktop: RioDesktop, name: str, present: bool = True) -> dict | None:
    """Wait until dialog ``name`` is open and shown (or gone); return its description."""
    def shown(s: dict) -> bool:
        d = next((d for d in s["dialogs_open"] if d["name"] == name), None)
        return (d is not None and d.get("geometry") is not None) if present else d is None
    s = desktop.wait_state(shown)
    return next((d for d in s["dialogs_open"] if d["name"] == name), None)


def _windows(desktop: RioDesktop, dialog: dict) -> list[str]:
    """The X windows titled as ``dialog`` (the part of the title before any "—": xdotool's
    regular expression and that character disagree)."""
    title = dialog["title"].split("—")[0].strip()
    return _x(desktop, "search", "--onlyvisible", "--name", f"^{title}", check=False).split()


def _click(desktop: RioDesktop, name: str, control: str) -> None:
    """Click ``control`` of dialog ``name`` once the pointer is on it and the X server has the
    dialog there too: xdotool's move now and then lands elsewhere under Xvfb, and a new
    dialog is placed (centred) a moment after it is first shown."""
    def on_screen(window: str, x: int, y: int) -> bool:     # where the X server has it
        at = dict(v.split("=", 1) for v in
                  _x(desktop, "getwindowgeometry", "--shell", window, check=False).split())
        return "X" in at and int(at["X"]) <= x < int(at["X"]) + int(at["WIDTH"]) and \
            int(at["Y"]) <= y < int(at["Y"]) + int(at["HEIGHT"])

    def over() -> bool:
        dialog = _dialog(desktop, name)
        assert dialog is not None
        x, y = dialog["click"][control]
        _x(desktop, "mousemove", str(x), str(y))
        at = dict(v.split("=", 1) for v in _x(desktop, "getmouselocation", "--shell").split())
        return (int(at["X"]), int(at["Y"])) == (x, y) and any(
            on_screen(w, x, y) for w in _windows(desktop, dialog))
    assert wait_for(over, 10, 0.05), f"the pointer never got onto {name}'s {control!r}"
    _x(desktop, "click", "1")


def _escape(desktop: RioDesktop, dialog: dict) -> None:
    """Escape typed into the dialog's window (given the X focus first, as a click would)."""
    found: list[str] = []
    assert wait_for(lambda: bool(found.extend(_windows(desktop, dialog)) or found), 10)
    _x(desktop, "windowfocus", "--sync", found[-1], "key", "Escape")


def _shot(desktop: RioDesktop, path: Path) -> Path:
    env = {**os.environ, "DISPLAY": desktop.env["DISPLAY"]}
    subprocess.run(["import", "-silent", "-window", "root", str(path)], env=env, check=True,
                   timeout=30)
    return path


def test_show_difference_can_be_closed_then_asks_again(desktop, tmp_path):
    bid = next(t for t in desktop.wait_active_ready()["tabs"] if t["active"])["buffer"]
    desktop.call("ui.type", {"text": "# mine\n"})
    desktop.wait_text(bid, "# mine\n" + SOURCE)
    path = desktop.root / "f.py"
    before = path.stat().st_mtime_ns
    path.write_text("theirs\n")
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))  # seen at once
    conflict = _dialog(desktop, "conflict")
    assert conflict is not None

    for close in ("Close", "Escape", "×"):
        _click(desktop, "conflict", "Show Difference")
        diff = _dialog(desktop, "difference")
        assert diff is not None
        if close == "Close" and shutil.which("import"):
            print(f"\nscreenshot: {_shot(desktop, tmp_path / 'difference.png')}")
        # The diff alone: the question waits until it is closed.
        assert "conflict" not in {d["name"] for d in desktop.state()["dialogs_open"]}
        if close == "Escape":
            _escape(desktop, diff)
        else:
            _click(desktop, "difference", close)
        _dialog(desktop, "difference", present=False)
        conflict = _dialog(desktop, "conflict")     # … and then the question again
        assert conflict is not None

    _click(desktop, "conflict", "Keep Mine")
    assert wait_for(lambda: path.read_text() == "# mine\n" + SOURCE, 10)
    desktop.wait_state(lambda s: not s["dialogs_open"] and not any(
        t["dirty"] for t in s["tabs"]))
