"""Shared fixtures: an X display for GUI tests and a Tk root on it.

GUI tests ask for ``tk_root`` (or ``display``) and carry ``@pytest.mark.gui`` plus a timeout.
Without a usable $DISPLAY we start our own Xvfb, and we FAIL (never skip) when Xvfb is missing:
a skipped GUI suite looks green while testing nothing, and CI installs Xvfb.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

_XVFB_START_TIMEOUT_S = 10.0

# Tests never reach the internet: the public ACP agent registry (rio/acp/registry.py) is off
# for every test and every process a test starts, unless a test points discovery at a
# loopback server of its own.
os.environ["RIO_AGENT_REGISTRY_URL"] = "off"


def _display_usable(name: str) -> bool:
    """True when a client can connect to ``name`` (xdpyinfo if present, else Tk itself)."""
    if not name:
        return False
    env = {**os.environ, "DISPLAY": name}
    probe = ["xdpyinfo"] if shutil.which("xdpyinfo") else [
        sys.executable, "-c", "import tkinter; tkinter.Tk().destroy()"]
    try:
        done = subprocess.run(probe, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=_XVFB_START_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.fail("GUI tests need an X display: $DISPLAY is unset or unusable and Xvfb is not "
                    "installed. Install it (Debian: apt-get install xvfb) or set DISPLAY.")
    # -displayfd makes Xvfb pick a free display number and write it to the pipe when ready,
    # so there is no race over lock files and no sleep-and-hope.
    # stderr goes to a file, not a pipe: nobody drains a pipe during the session and a full
    # pipe would freeze the X server mid-test.
    log = tempfile.TemporaryFile()
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [xvfb, "-displayfd", str(write_fd), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=log,
        start_new_session=True)
    os.close(write_fd)
    number = b""
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            number = pipe.readline().strip()
    finally:
        if not number:
            proc.kill()
            proc.wait(timeout=_XVFB_START_TIMEOUT_S)
            log.seek(0)
            err = log.read().decode(errors="replace")[-500:]
            log.close()
            pytest.fail(f"Xvfb did not start: {err}")
    log.close()  # the child keeps its own descriptor
    return proc, f":{number.decode()}"


@pytest.fixture(scope="session", autouse=True)
def _remove_runtime_dirs() -> Iterator[None]:
    """Tests leave no ``/tmp/rio-t-*`` runtime folder behind (tests/support.py rio_env)."""
    yield
    from tests.support import remove_runtime_dirs
    remove_runtime_dirs()


@pytest.fixture(scope="session")
def display() -> Iterator[str]:
    """An X display name usable for the whole session; our own Xvfb when none is usable."""
    current = os.environ.get("DISPLAY", "")
    if _display_usable(current):
        yield current
        return
    proc, name = _start_xvfb()
    os.environ["DISPLAY"] = name
    try:
        yield name
    finally:
        if current:
            os.environ["DISPLAY"] = current
        else:
            os.environ.pop("DISPLAY", None)
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture
def tk_root(display: str) -> Iterator[object]:
    """A fresh ``tkinter.Tk`` on the test display, destroyed after the test."""
    import tkinter as tk

    root = tk.Tk()
    try:
        yield root
    finally:
        root.destroy()
