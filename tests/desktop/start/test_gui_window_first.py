"""The desktop draws its window before the bus answers (issue 13, as IDLE shows its window
before anything else): started by the supervisor against an instance whose hub does not answer
yet, the titled window is already on screen while the connection is still being made."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from rio.config.instance import InstanceInfo, InstancePaths
from tests.support import REPO, RUNTIME_DIRS

pytestmark = [pytest.mark.gui, pytest.mark.timeout(60)]


def _visible(display: str, title: str) -> bool:
    out = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", title],
                         env={**os.environ, "DISPLAY": display}, capture_output=True, text=True)
    return bool(out.stdout.strip())


@pytest.fixture
def silent_instance(tmp_path, monkeypatch):
    """An instance file whose endpoints nobody has bound: connect() waits for its timeout."""
    runtime = Path("/tmp") / f"rio-wf-{uuid.uuid4().hex[:8]}"
    RUNTIME_DIRS.append(runtime)   # removed when the session ends (tests/conftest.py)
    monkeypatch.setenv("RIO_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("RIO_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / f"early-{uuid.uuid4().hex[:6]}"
    root.mkdir()
    name = f"wf{uuid.uuid4().hex[:8]}"
    paths = InstancePaths.for_name(name)
    paths.create()
    paths.write_info(InstanceInfo(name, str(root), os.getpid(), paths.requests_endpoint,
                                  paths.events_endpoint, time.time()))
    yield name, root
    paths.remove()


def test_the_window_is_on_screen_before_the_bus_answers(display, silent_instance):
    name, root = silent_instance
    env = {**os.environ, "DISPLAY": display, "PYTHONPATH": str(REPO),
           "RIO_PARENT_PID": str(os.getpid())}       # as the supervisor starts it
    proc = subprocess.Popen([sys.executable, "-m", "ui.tk", "--instance", name], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        title = root.name          # the window is titled "Rio — <folder>"
        deadline = time.monotonic() + 30
        seen = False
        while time.monotonic() < deadline and proc.poll() is None and not seen:
            seen = _visible(display, title)
            time.sleep(0.02)
        assert seen, f"no window titled {title!r} while connecting (exit {proc.poll()}): " \
            f"{proc.stderr.read().decode()[-800:] if proc.poll() is not None else ''}"
        assert proc.poll() is None, "the window showed while the bus was still being asked"
    finally:
        proc.kill()
        proc.wait(10)
