"""The test session's own environment, set up by tests/conftest.py before any test runs: nothing
of the user's is used or touched (issue 18, points 18–20; docs/testing.md).

* **Rio's folders** (``RIO_STATE_DIR``, ``RIO_CONFIG_DIR``, ``RIO_CACHE_DIR``) point into
  :data:`TRAP`, an empty folder of the session's, never the user's ``~/.local/state/rio``,
  ``~/.config/rio`` or ``~/.cache/rio``. A test points them at its ``tmp_path`` (``rio_env``
  does for the processes it starts); whatever lands in the trap was written outside a test's
  tmp folder, and the conftest fails the test that wrote it (:func:`trap_leftovers`).
* **Signals:** a runner started as a background job of a non-interactive shell (CI) ignores
  SIGINT and SIGQUIT, and an ignored signal is inherited across exec: ``rio chat`` started by a
  test would never see the Ctrl+C the test sends. The session catches them with a handler that
  does nothing instead (:func:`children_get_default_signals`): the runner still does not
  react, and the children the tests start begin with the default action.
* **Agents' sandbox:** ``RIO_AGENT_SANDBOX=off`` unless the run sets it: a test of agent
  sessions sees the agent's own processes and pids, and tests/agent/test_agent_sandbox.py (and the
  real agents' tests) ask for the box themselves. ``RIO_AGENT_SANDBOX=auto python -m pytest``
  runs every agent test boxed where the machine allows (ADR-0038).
* **The display:** GUI tests run on a private Xvfb the session starts, never on the user's
  ``$DISPLAY`` (windows opening on a desktop user's screen), unless ``RIO_TEST_DISPLAY=1``
  asks for it (:func:`given_display`; :func:`start_xvfb` starts one). ``DISPLAY`` is removed
  from the environment, so a test that starts a window without asking for the ``display``
  fixture fails instead of drawing on the user's screen.

This module imports nothing of Rio's: it runs before Rio's modules load.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import MutableMapping
from pathlib import Path

import pytest

_XVFB_START_TIMEOUT_S = 10.0

#: Set to 1 to run the GUI tests on $DISPLAY (a desktop, a VNC session you are watching)
#: instead of the session's own Xvfb.
USE_DISPLAY_ENV = "RIO_TEST_DISPLAY"

#: The folder Rio's own folders point into when a test did not point them elsewhere.
TRAP = Path(tempfile.mkdtemp(prefix="rio-tests-home-"))
TRAPPED = {"RIO_STATE_DIR": "state", "RIO_CONFIG_DIR": "config", "RIO_CACHE_DIR": "cache"}

#: The $DISPLAY the session was started with (None: none), before :func:`isolate` took it out.
USER_DISPLAY: str | None = None


def isolate(environ: MutableMapping[str, str] = os.environ) -> None:
    """Point Rio's folders into the trap, take the user's display out unless it was asked
    for, and let children get SIGINT's default action. Once, at the conftest's import."""
    global USER_DISPLAY
    for name, sub in TRAPPED.items():
        environ[name] = str(TRAP / sub)
    environ.setdefault("RIO_AGENT_SANDBOX", "off")
    USER_DISPLAY = environ.get("DISPLAY") or None
    if given_display(environ) is None:
        environ.pop("DISPLAY", None)
    children_get_default_signals()


def given_display(environ: MutableMapping[str, str]) -> str | None:
    """The display the GUI tests may use as it is: ``$DISPLAY`` when ``RIO_TEST_DISPLAY=1``
    asks for it, else None (the session starts its own Xvfb)."""
    if environ.get(USE_DISPLAY_ENV, "").strip() not in ("1", "yes", "true"):
        return None
    return environ.get("DISPLAY") or None


def display_usable(name: str) -> bool:
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


def start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    """A private Xvfb on a free display: (its process, ``":N"``); fails the test without one."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.fail("GUI tests need Xvfb, which is not installed: run `bash tools/test-deps.sh` "
                    "(Debian: apt-get install xvfb).")
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


def _ignore(_signum: int, _frame: object) -> None:
    """SIGINT or SIGQUIT in a runner that was started ignoring them: still ignored."""


def children_get_default_signals() -> list[int]:
    """Replace an inherited SIG_IGN for SIGINT and SIGQUIT by a handler that does nothing:
    this process goes on ignoring them, and a child starts with the default action (exec
    resets caught signals, not ignored ones). Returns the signals changed."""
    changed = []
    for signum in (signal.SIGINT, signal.SIGQUIT):
        if signal.getsignal(signum) == signal.SIG_IGN:
            signal.signal(signum, _ignore)
            changed.append(int(signum))
    return changed


def trap_leftovers() -> list[str]:
    """Everything in the trap (files and folders), relative to it: written by a test that
    did not point Rio's folders at its own tmp folder."""
    if not TRAP.exists():
        return []
    return sorted(str(p.relative_to(TRAP)) for p in TRAP.rglob("*"))


def clear_trap() -> None:
    for child in list(TRAP.iterdir()) if TRAP.exists() else []:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def remove_trap() -> None:
    shutil.rmtree(TRAP, ignore_errors=True)
