"""Replace All against a core that restarted since the editor's last change (ADR-0020): the
core refuses the stale base, nothing is replaced, and the dialog says what happened."""

from __future__ import annotations

import os
import signal

import pytest

from tests.desktop_support import InProcessApp
from tests.support import RioServer, wait_for
from ui.tk.find import dialog as find_dialog

pytestmark = [pytest.mark.gui, pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def app(tk_root, tmp_path, monkeypatch):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("beta alpha beta\n")
    server = RioServer(root, tmp_path).start()
    monkeypatch.setenv("RIO_CONFIG_DIR", server.env["RIO_CONFIG_DIR"])
    try:
        desk = InProcessApp(tk_root, server)
        try:
            yield desk, server
        finally:
            desk.close()
    finally:
        server.stop()


def test_replace_all_after_a_core_restart_is_refused_and_explained(app):
    stub, server = app
    editor = stub.open("notes.txt")
    editor.text.insert("1.0", ">")          # unsaved, so the core recovers it after the kill
    assert stub.pump(lambda: stub.core_text(editor.buffer_id) == ">beta alpha beta\n")
    core = server.pids()["core"]
    os.kill(core, signal.SIGKILL)
    assert wait_for(lambda: any(p["ready"] and p["pid"] != core for p in
                                server.call("system.status")["processes"]
                                if p["name"] == "core"), 30)
    dlg = find_dialog.controller_for(stub.app).show(replace=True)
    dlg.pattern.set("beta")
    dlg.replacement.set("BETA")
    dlg.buttons["replace_all"].invoke()     # based on the editor's pre-restart version
    assert stub.pump(lambda: "core restarted" in dlg.status.cget("text"), 20)
    assert stub.core_text(editor.buffer_id) == ">beta alpha beta\n"
