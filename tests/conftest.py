"""Shared fixtures: an X display for GUI tests and a Tk root on it.

GUI tests ask for ``tk_root`` (or ``display``) and carry ``@pytest.mark.gui`` plus a timeout.
Without a usable $DISPLAY we start our own Xvfb, and we FAIL (never skip) when Xvfb is missing:
a skipped GUI suite looks green while testing nothing, and CI installs Xvfb.
"""

from __future__ import annotations

import logging
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
# Every event published in a test — by this process's bus code and by every process a test
# starts — is checked against the catalogue (rio/protocol/events.py); set before any of Rio's
# modules is imported, since they read it once (RIO_CHECK_EVENTS=0 pytest … turns it off).
# See _events_checked below.
os.environ.setdefault("RIO_CHECK_EVENTS", "1")


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


#: Test modules that publish made-up topics or shapes on purpose: they test the bus itself
#: (routing, numbering, frames, the remote bridge), not Rio's events, so their in-process
#: event checks are off. Processes they start (rio_env) still check theirs.
_UNCHECKED_EVENTS = frozenset({
    "test_bus", "test_remote", "test_frame_fuzz", "test_bus_reply_with_events",
    "test_bus_async",
})


class _BadEvents(logging.Handler):
    """Collects the ERROR lines of failed event checks (rio.protocol.events.MARKER)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        from rio.protocol.events import MARKER
        message = record.getMessage()
        if message.startswith(MARKER):
            self.lines.append(message)


@pytest.fixture(autouse=True)
def _events_checked(request: pytest.FixtureRequest,
                    monkeypatch: pytest.MonkeyPatch) -> Iterator[_BadEvents | None]:
    """A malformed event published in this process fails the test, even when a catch-all
    (an actor, a bus thread) swallowed the raise: the failed check's ERROR line is caught
    here. Real instances are checked by tests/support.py ``RioServer.stop``."""
    owner = getattr(request.node, "module", None)
    module = owner.__name__.rsplit(".", 1)[-1] if owner is not None else ""
    if module in _UNCHECKED_EVENTS:
        from actors.bus import async_client, client, hub, service
        for checked in (async_client, client, hub, service):
            monkeypatch.setattr(checked, "CHECK_EVENTS", False)
        yield None
        return
    handler = _BadEvents()
    events_log = logging.getLogger("rio.events")
    events_log.addHandler(handler)
    try:
        yield handler
    finally:
        events_log.removeHandler(handler)
    if handler.lines:
        pytest.fail("malformed events were published (rio/protocol/events.py):\n"
                    + "\n".join(handler.lines), pytrace=False)


@pytest.fixture
def bad_events(_events_checked: _BadEvents | None) -> _BadEvents:
    """For a test that publishes a malformed event on purpose: the failed checks logged so
    far (``.lines``); clear them once asserted, or the test fails at teardown."""
    assert _events_checked is not None, "this module's event checks are off"
    return _events_checked
