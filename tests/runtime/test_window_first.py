"""`rio FILE`: the window first (ADR-0026 b). The `rio` process starts the window process before
it imports the supervisor, which adopts it as its ``ui`` child; the window is drawn from its
command line alone, with no instance file and no hub yet."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from rio.cli.main import COMMANDS, _choices, build_parser
from tests.desktop_support import RioDesktop
from tests.support import REPO, rio_env, wait_for, wait_gone


def test_the_command_names_the_desktop_path_knows_are_the_parsers() -> None:
    parser = build_parser()
    assert parser._subparsers is not None
    assert sorted(COMMANDS) == sorted(_choices(parser._subparsers._group_actions[0]))


def _visible(display: str, title: str) -> bool:
    out = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", title],
                         env={**os.environ, "DISPLAY": display}, capture_output=True, text=True)
    return bool(out.stdout.strip())


@pytest.mark.gui
@pytest.mark.timeout(60)
def test_the_window_is_drawn_with_no_instance_file_and_no_hub(display, tmp_path) -> None:
    root = tmp_path / f"first-{uuid.uuid4().hex[:6]}"
    root.mkdir()
    env = {**rio_env(tmp_path), "DISPLAY": display}
    name = f"wf{uuid.uuid4().hex[:8]}"       # nothing serves it: no runtime folder at all
    proc = subprocess.Popen([sys.executable, "-m", "ui.tk", "--instance", name,
                             "--root", str(root)], env=env, cwd=str(REPO),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        seen = wait_for(lambda: proc.poll() is not None or _visible(display, root.name), 30)
        assert seen and proc.poll() is None, \
            f"no window titled {root.name!r} (exit {proc.poll()})"
        assert not (Path(env["RIO_RUNTIME_DIR"]) / name).exists()
    finally:
        proc.kill()
        proc.wait(10)
        proc.stderr.close()


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "hello.py").write_text("def hello():\n    return 1\n")
    return root


@pytest.mark.gui
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_rio_starts_the_window_itself_and_the_supervisor_adopts_it(project, tmp_path,
                                                                   display) -> None:
    desktop = RioDesktop(project, tmp_path / "base", display,
                         files=(str(project / "hello.py"),))
    desktop.start()
    try:
        desktop.wait_active_ready()
        ui = next(p for p in desktop.call("system.status")["processes"] if p["name"] == "ui")
        window = psutil.Process(ui["pid"])
        # A fork of `rio` itself (the supervisor's process): no interpreter start of its own,
        # so its command line is rio's and its name says what it is. In a session of its own,
        # it logs where a window the supervisor starts logs, carries its own spawn cookie
        # (for what it starts) and ends with the supervisor.
        assert window.ppid() == desktop.proc.pid
        assert window.name() == "rio-window"
        assert window.cmdline() == psutil.Process(desktop.proc.pid).cmdline()
        assert os.getpgid(window.pid) == window.pid == os.getsid(window.pid)
        assert os.path.samefile(f"/proc/{window.pid}/fd/2", ui["log"])
        assert [t["name"] for t in desktop.state()["tabs"]] == ["hello.py"]
        # The window is the supervisor's child like any other: a crash is restarted the
        # same way (window first again).
        window.kill()
        assert wait_for(lambda: next(p for p in desktop.call("system.status")["processes"]
                                     if p["name"] == "ui")["pid"] not in (None, window.pid)
                        and desktop.ui_ready(), 60)
        again = next(p for p in desktop.call("system.status")["processes"] if p["name"] == "ui")
        assert psutil.Process(again["pid"]).cmdline()[1:5] == ["-P", "-m", "ui.tk", "--instance"]
    finally:
        desktop.stop()


@pytest.mark.gui
@pytest.mark.timeout(120)
def test_the_early_window_goes_when_the_instance_cannot_start(project, tmp_path,
                                                              display) -> None:
    env = {**rio_env(tmp_path), "DISPLAY": display}
    config = Path(env["RIO_CONFIG_DIR"])
    config.mkdir(parents=True)
    (config / "supervisor.toml").write_text("[process.core]\nrestart = \"sometimes\"\n")
    name = f"wf{uuid.uuid4().hex[:8]}"
    done = subprocess.run([sys.executable, "-m", "rio.cli", str(project / "hello.py"),
                           "--instance", name], env=env, cwd=str(project),
                          capture_output=True, text=True, timeout=90)
    assert done.returncode == 1 and "restart must be one of" in done.stderr, done.stderr
    # The window had been started (its log opened) before the config was read...
    assert (Path(env["RIO_STATE_DIR"]) / "logs" / f"{name}.ui.log").exists()
    # ...and it did not outlive the refusal.
    windows = [p for p in psutil.process_iter(["cmdline", "name"])
               if p.info["cmdline"] and name in p.info["cmdline"]
               and ("ui.tk" in p.info["cmdline"] or p.info["name"] == "rio-window")]
    assert not wait_gone(windows, 10), [p.pid for p in windows]
