"""The sign-in card's Cancel (issue 18, point 5), in the real window against a real instance:
a sign-in the agent does itself (Codex's "Login with ChatGPT") that never finishes — offline,
the browser never comes back — used to leave the card greyed "Signing in…" for up to 600 s
with no way out. The card now offers Cancel while it signs in; pressed, the sign-in ends at
once with a line that says so, the card offers Sign in again, and the next message starts the
agent afresh — with its configuration as fixed meanwhile."""

from __future__ import annotations

import json
import sys
import tkinter as tk
from pathlib import Path
from typing import Any

import pytest

from tests.desktop_support import InProcessApp
from tests.support import REPO, RioServer, rio_env
from ui.tk.agent import control as agent_control

pytestmark = [pytest.mark.gui, pytest.mark.slow, pytest.mark.timeout(120)]

FAKE = REPO / "tests" / "fakes" / "acp_agent.py"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("sign-in")
    root = base / "proj"
    root.mkdir()
    env = rio_env(base)
    config = Path(env["RIO_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(
        f'[agents.fake]\ncommand = "{sys.executable}"\nargs = ["{FAKE}", "{base / "acp.json"}"]\n')
    srv = RioServer(root, base, env=env).start()
    yield srv
    srv.stop()


@pytest.fixture
def desk(tk_root, server, monkeypatch):
    monkeypatch.setenv("RIO_STATE_DIR", server.env["RIO_STATE_DIR"])
    monkeypatch.setenv("RIO_CONFIG_DIR", server.env["RIO_CONFIG_DIR"])
    app = InProcessApp(tk_root, server, geometry="1100x700")
    try:
        yield app
    finally:
        app.close()


def find(widget: tk.Misc, name: str) -> tk.Misc | None:
    """The widget called ``name`` under ``widget`` (depth first)."""
    for child in widget.winfo_children():
        if child.winfo_name() == name:
            return child
        found = find(child, name)
        if found is not None:
            return found
    return None


def control(desk: InProcessApp, args: dict[str, Any]) -> list[Any]:
    """``ui.agent`` as the window's control op runs it; the answers land in the list."""
    got: list[Any] = []
    result = desk.app.agent_panel.control(args, got.append)
    if result is not None and result is not agent_control.DEFER:
        got.append(result)
    return got


def test_cancel_on_the_card_ends_a_sign_in_that_never_finishes(desk, server):
    base = server.root.parent
    marker = base / "authenticating"
    (base / "acp.json").write_text(json.dumps({
        "auth": "new_session", "auth_hang": str(marker),
        "auth_methods": [{"id": "browser", "name": "Login with the browser"}]}))
    panel = desk.app.agent_panel
    cid = desk.conn.call("agent.new", {"agent": "fake"})["conversation"]
    opened = control(desk, {"action": "open", "conversation": cid})
    assert desk.pump(lambda: opened, 20)
    control(desk, {"action": "send", "text": "hi"})
    assert desk.pump(lambda: (a := panel.describe())["sign_in"] is not None and
                     a["state"] != "thinking", 60), panel.describe()
    assert find(panel.frame, "btn_cancel_sign_in") is None     # not before it signs in
    signing = control(desk, {"action": "sign_in"})
    assert desk.pump(lambda: marker.exists(), 20), "the agent was never asked to sign in"
    assert desk.pump(lambda: find(panel.frame, "btn_cancel_sign_in") is not None, 10)
    assert panel.describe()["sign_in"]["signing"] == "browser"
    cancel = find(panel.frame, "btn_cancel_sign_in")
    assert cancel is not None and str(cancel.cget("text")) == "Cancel"
    cancel.invoke()                                           # the user gives up waiting
    assert desk.pump(lambda: signing, 10), "the sign-in did not end"
    assert getattr(signing[0], "kind", None) == "agent.sign_in_cancelled", signing
    desk.pump(lambda: False, 0.2)
    card = panel.describe()["sign_in"]
    assert card["state"] == "needed" and card["signing"] is None
    assert find(panel.frame, "btn_cancel_sign_in") is None
    shown = panel.describe()
    assert any("cancelled the sign-in" in m["text"] for m in shown["messages"]), shown
    # The agent's configuration is fixed (it no longer wants a sign-in): the next message
    # starts it afresh and is answered.
    (base / "acp.json").write_text(json.dumps({"auth": "none"}))
    control(desk, {"action": "send", "text": "again"})
    assert desk.pump(lambda: (a := panel.describe())["state"] == "idle" and
                     a["messages"][-1]["text"] == "echo: again", 60), panel.describe()
