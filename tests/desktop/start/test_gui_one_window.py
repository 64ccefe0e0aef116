"""One window per instance: a second `rio FILE` on a folder whose instance already has a window
raises that window and opens the file there (as '90s editors did), instead of attaching a second
window that would take the `ui.*` route from the first and leave with it."""

from __future__ import annotations

import psutil
import pytest

from tests.desktop_support import RioDesktop
from tests.support import wait_for

pytestmark = [pytest.mark.gui, pytest.mark.slow]


@pytest.fixture
def project_files():
    """The project of tests/desktop/conftest.py's ``project`` and ``desktop`` (hello.py open)."""
    return {"hello.py": "def hello():\n    return 1\n", "other.txt": "the second file\n"}


def _is_window(p: psutil.Process) -> bool:
    """A window process: `rio`'s own fork (named rio-window) or a started `-m ui.tk…`."""
    try:
        return p.is_running() and (p.name() == "rio-window" or "ui.tk" in " ".join(p.cmdline()))
    except psutil.Error:
        return False


def _ui_processes(desktop: RioDesktop) -> list[psutil.Process]:
    return [p for p in desktop.tree() if _is_window(p)]


@pytest.mark.timeout(120)
def test_a_second_rio_opens_the_file_in_the_window_already_open(desktop, project):
    desktop.wait_active_ready()
    first_ui = {p.pid for p in _ui_processes(desktop)}
    assert len(first_ui) == 1

    done = desktop.cli(str(project / "other.txt"), "--instance", desktop.name, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "already has a window" in done.stdout

    # The file is a tab of the first window, and that window still serves ui.* on its own.
    state = desktop.wait_state(
        lambda s: any(t["name"] == "other.txt" and t["active"] for t in s["tabs"]))
    assert [t["name"] for t in state["tabs"]] == ["hello.py", "other.txt"]
    assert {p.pid for p in _ui_processes(desktop)} == first_ui
    # No window process was left behind by the second command.
    assert not [p for p in psutil.process_iter(["cmdline"])
                if p.info["cmdline"] and _is_window(p)
                and desktop.name in " ".join(p.info["cmdline"]) and p.pid not in first_ui]
    assert desktop.call("ui.raise")["raised"] is True


@pytest.mark.timeout(120)
def test_a_second_rio_on_the_folder_alone_raises_the_window(desktop, project):
    desktop.wait_active_ready()
    first_ui = {p.pid for p in _ui_processes(desktop)}
    done = desktop.cli(str(project), "--instance", desktop.name, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "raised it." in done.stdout
    assert wait_for(lambda: {p.pid for p in _ui_processes(desktop)} == first_ui, 5)
    assert desktop.ui_ready()
