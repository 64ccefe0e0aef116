"""Shared fixtures: an X display for GUI tests and a Tk root on it.

GUI tests ask for ``tk_root`` (or ``display``) and carry ``@pytest.mark.gui`` plus a timeout.
They run on an Xvfb of the session's own — never on the user's $DISPLAY unless
``RIO_TEST_DISPLAY=1`` asks for it (tests/session_env.py) — and we FAIL (never skip) when
Xvfb is missing: a skipped GUI suite looks green while testing nothing.

Before any test: tests/session_env.py points Rio's state, config and cache folders into a trap
folder (a test that writes there fails: everything a test writes goes under its tmp_path),
takes the user's display out, and gives the children tests start SIGINT's default action.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Iterator

import pytest

# Tests never reach the internet: the public ACP agent registry (rio/acp/registry.py) is off
# for every test and every process a test starts, unless a test points discovery at a
# loopback server of its own.
os.environ["RIO_AGENT_REGISTRY_URL"] = "off"
# Every event published in a test — by this process's bus code and by every process a test
# starts — is checked against the catalogue (rio/protocol/events.py); set before any of Rio's
# modules is imported, since they read it once (RIO_CHECK_EVENTS=0 pytest … turns it off).
# See _events_checked below.
os.environ.setdefault("RIO_CHECK_EVENTS", "1")

from tests import session_env  # after the variables above, before Rio's modules

session_env.isolate()


@pytest.fixture(scope="session", autouse=True)
def _remove_runtime_dirs() -> Iterator[None]:
    """Tests leave no ``/tmp/rio-t-*`` runtime folder behind (tests/support.py rio_env)."""
    yield
    from tests.support import remove_runtime_dirs
    remove_runtime_dirs()


@pytest.fixture(autouse=True)
def _writes_stay_in_tmp() -> Iterator[None]:
    """A test that wrote into Rio's own folders without pointing them at its tmp_path (the
    trap of tests/session_env.py, where they point otherwise) fails, naming what it wrote."""
    yield
    left = session_env.trap_leftovers()
    if left:
        session_env.clear_trap()
        pytest.fail("written into Rio's state/config/cache folders instead of under tmp_path "
                    "(set RIO_STATE_DIR / RIO_CONFIG_DIR / RIO_CACHE_DIR to the test's "
                    f"tmp_path, or use tests.support.rio_env): {left}", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _remove_trap() -> Iterator[None]:
    yield
    session_env.remove_trap()


@pytest.fixture(scope="session")
def display() -> Iterator[str]:
    """An X display name usable for the whole session: our own Xvfb, or $DISPLAY when
    ``RIO_TEST_DISPLAY=1`` asks for it (and it answers)."""
    current = session_env.given_display(os.environ) or ""
    if current and session_env.display_usable(current):
        yield current
        return
    proc, name = session_env.start_xvfb()
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
