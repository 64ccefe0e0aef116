"""The desktop ends with the supervisor that started it through the bus layer's watch
(actors/bus/parent_watch.py), without importing process control or psutil: the UI may import
only the bus client, and the bus imports nothing of the actors above it (tests/house/test_layering.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from actors.runtime import process_control as pc
from tests.support import REPO, wait_for

PY = sys.executable

#: What the desktop's start does (ui/tk/start/desktop.py), then says which layers it loaded.
WINDOW = """
import os, sys, time
from actors.bus.client import end_with_supervisor
supervised = end_with_supervisor()
print("ready", os.getpid(), supervised, "psutil" in sys.modules,
      "actors.runtime.process_control" in sys.modules, flush=True)
while True:
    time.sleep(60)
"""

#: A stand-in supervisor: starts the window as its child, says its pid, waits to be killed.
SUPERVISOR = """
import os, subprocess, sys, time
env = dict(os.environ, RIO_PARENT_PID=str(os.getpid()))
window = subprocess.Popen([sys.executable, sys.argv[1]], env=env, stdout=subprocess.PIPE)
print(window.stdout.readline().decode().strip(), flush=True)
while True:
    time.sleep(60)
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RIO_PARENT_PID", "RIO_LIFELINE_FD")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def started() -> Iterator[list[pc.Spawned]]:
    """What a test starts; the finalizer stops each and sweeps its cookie (the window too)."""
    spawned: list[pc.Spawned] = []
    try:
        yield spawned
    finally:
        for one in spawned:
            if one in pc.live_spawned():
                pc.stop(one, stdin_grace=0, term_grace=0, kill_grace=2.0)
            pc.sweep(one.cookie)
            for stream in (one.popen.stdin, one.popen.stdout):
                if stream is not None:
                    stream.close()


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_the_window_ends_when_its_supervisor_is_killed(tmp_path: Path, started) -> None:
    (tmp_path / "window.py").write_text(WINDOW)
    (tmp_path / "supervisor.py").write_text(SUPERVISOR)
    supervisor = pc.spawn([PY, str(tmp_path / "supervisor.py"), str(tmp_path / "window.py")],
                          env=_env(), stderr=None)
    started.append(supervisor)
    assert supervisor.popen.stdout is not None
    word, pid, supervised, psutil_loaded, pc_loaded = \
        supervisor.popen.stdout.readline().decode().split()
    assert (word, supervised) == ("ready", "True")
    assert (psutil_loaded, pc_loaded) == ("False", "False")   # the bus layer's watch alone
    window = int(pid)
    assert not _gone(window)
    os.kill(supervisor.pid, signal.SIGKILL)
    assert wait_for(lambda: _gone(window), 10), "the window outlived its supervisor"


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_the_window_exits_at_once_on_the_supervisors_term(tmp_path: Path, started) -> None:
    """PDEATHSIG's SIGTERM (or a stop's) ends it with 128 + the signal, as process control's
    children do."""
    (tmp_path / "window.py").write_text(WINDOW)
    window = pc.spawn([PY, str(tmp_path / "window.py")], env=_env(), stderr=None)
    started.append(window)
    assert window.popen.stdout is not None
    assert window.popen.stdout.readline().decode().split()[2] == "True"   # RIO_PARENT_PID set
    os.kill(window.pid, signal.SIGTERM)
    assert window.popen.wait(10) == 128 + signal.SIGTERM


@pytest.mark.timeout(60)
def test_a_window_started_by_hand_keeps_no_watch(tmp_path: Path) -> None:
    (tmp_path / "window.py").write_text(WINDOW)
    window = subprocess.Popen([PY, str(tmp_path / "window.py")], env=_env(),
                              stdout=subprocess.PIPE)
    try:
        assert window.stdout is not None
        assert window.stdout.readline().decode().split()[2] == "False"
    finally:
        window.kill()
        window.wait(10)
        if window.stdout is not None:
            window.stdout.close()
