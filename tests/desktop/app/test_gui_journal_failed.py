"""The desktop names a document whose edits cannot be journaled (a full disk), and says when it
is protected again; a damaged journal's report reaches the user word for word."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import RioServer, wait_for

pytestmark = [pytest.mark.gui, pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def attached(tmp_path, display):
    """`rio serve --fault-injection` with a desktop window attached to it."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "hello.txt").write_text("Hello world\n")
    server = RioServer(root, tmp_path, extra_args=["--fault-injection"]).start()
    env = dict(server.env, DISPLAY=display)
    window = subprocess.Popen([sys.executable, "-m", "ui.tk", "--instance", server.name,
                               "--open", str(root / "hello.txt")], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, cwd=str(root))
    server.known_pids.add(window.pid)
    try:
        yield server, window
    finally:
        if window.poll() is None:
            window.terminate()
            try:
                window.wait(10)
            except subprocess.TimeoutExpired:
                window.kill()
                window.wait(5)
        server.stop()


def _state(server):
    try:
        return server.call("ui.state", timeout=3)
    except Exception:  # noqa: BLE001 -- the window is not up yet
        return None


def test_a_full_journal_disk_names_the_unprotected_document(attached):
    server, _window = attached
    assert wait_for(lambda: (s := _state(server)) is not None and s["tabs"]
                    and s["tabs"][0]["ready"], 40)
    server.call("system.fault", {"fault": "journal_fail",
                                 "params": {"errno": "ENOSPC", "after_bytes": 6}})
    server.call("ui.type", {"text": "x"})
    assert wait_for(lambda: _state(server)["status"]["unprotected"] == ["hello.txt"], 15)
    state = _state(server)
    assert "hello.txt is not protected" in state["status"]["message"]
    dialog = next(d for d in state["dialogs_open"] if d["name"] == "journal_failed")
    assert "hello.txt" in dialog["message"]
    server.call("ui.dialog_answer", {"name": "journal_failed", "button": "OK"})
    # Space is back (the fault fired once): the next edit is journaled and the name is cleared.
    server.call("ui.type", {"text": "y"})
    assert wait_for(lambda: _state(server)["status"]["unprotected"] == [], 15)
    assert "journaled again" in _state(server)["status"]["message"]
    buf = server.call("buffer.list")[0]["buffer"]
    assert wait_for(lambda: "y" in server.call("buffer.text", {"buffer": buf})["text"], 10)
