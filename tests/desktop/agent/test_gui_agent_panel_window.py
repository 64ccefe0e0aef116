"""The agent panel in the window, in the real desktop under Xvfb: where it docks, minimised,
dragged, its Mode picker and a theme switch, the AI features off, the API key dialog, per-turn
limits, and ``ui.state``'s report of where it is (tests/desktop/agent/agent_panel_desktop.py starts the
desktop; the model is the loopback Anthropic server). Its widths and wrapping are
test_gui_agent_panel_layout.py's.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from rio.protocol.errors import RioError
from tests.desktop.agent.agent_panel_desktop import (
    a_msgs,
    agent,
    edge,
    propose,
)
from tests.fakes.model_servers import anthropic_text, anthropic_tool_use
from tests.support import wait_for

pytestmark = [pytest.mark.gui, pytest.mark.slow, pytest.mark.timeout(180)]


def test_docking_left_and_closing(desktop, fresh):
    a = desktop.call("ui.agent", {"action": "open", "side": "left"})
    assert a["open"] and a["side"] == "left"
    a = desktop.call("ui.agent", {"action": "close"})
    assert not a["open"]
    a = desktop.call("ui.agent", {"action": "open", "side": "right"})
    assert a["open"] and a["side"] == "right"
    # Ctrl+Shift+A toggles it from the keyboard.
    desktop.call("ui.key", {"keysym": "A", "state": "Control-Shift"})
    agent(desktop, lambda a: not a["open"])
    desktop.call("ui.key", {"keysym": "A", "state": "Control-Shift"})
    agent(desktop, lambda a: a["open"])


def test_ai_features_off_hides_every_ai_element_and_stops_the_turn(desktop, fresh, model):
    model.push(anthropic_text("Slow ", "answer").slow(0.2, hold_open=True))
    desktop.call("ui.agent", {"action": "send", "text": "go slowly"})
    agent(desktop, lambda a: a["state"] == "thinking" and len(a["messages"]) == 2)
    assert desktop.state()["agent"]["button"] is True
    desktop.call("ui.menu", {"path": "Edit/AI Preferences"})
    desktop.wait_state(lambda s: any(d["name"] == "ai_preferences" for d in s["dialogs_open"]))
    desktop.call("ui.dialog_answer", {"name": "ai_preferences", "button": "OK",
                                      "fields": {"show_ai": False}})
    a = agent(desktop, lambda a: not a["shown"] and not a["open"] and a["state"] == "idle")
    assert a["button"] is False
    s = desktop.state()
    assert s["status"]["agent"] == "No agent"
    assert model.disconnected.wait(10)          # the running turn was stopped
    # ... and the agent processes were ended (the idle timer's way: a message restarts one).
    assert wait_for(lambda: not [p for p in desktop.call("system.status")["processes"]
                                 if p["name"].startswith("agent:")
                                 and p["state"] in ("running", "starting")], 20)
    with pytest.raises(Exception, match="turned off"):
        desktop.call("ui.agent", {"action": "open"})
    with pytest.raises(RioError):
        desktop.call("ui.menu", {"path": "Agent/Agent Panel"})   # the Agent menu is gone
    desktop.call("ui.menu", {"path": "Edit/AI Preferences"})
    desktop.wait_state(lambda s: any(d["name"] == "ai_preferences" for d in s["dialogs_open"]))
    desktop.call("ui.dialog_answer", {"name": "ai_preferences", "button": "OK",
                                      "fields": {"show_ai": True, "show_button": True}})
    a = agent(desktop, lambda a: a["shown"] and a["button"])
    assert desktop.state()["status"]["agent"] == "Agent idle"
    desktop.call("ui.menu", {"path": "Agent/Agent Panel"})
    agent(desktop, lambda a: a["open"])


def test_minimised_the_strip_shows_the_state_and_the_questions_waiting(desktop, fresh, model):
    a = desktop.call("ui.agent", {"action": "minimise"})
    assert a["minimised"] and a["strip"] == {"dot": "#008000", "count": ""}
    propose(model, "beta", "zeta", "toolu_m1")
    desktop.call("ui.agent", {"action": "send", "text": "while folded"})
    a = agent(desktop, lambda a: a["pending"])
    assert a["minimised"] and a["strip"] == {"dot": "#ff0000", "count": "1"}
    a = desktop.call("ui.agent", {"action": "open"})          # restores it
    assert a["open"] and not a["minimised"] and a["strip"] is None
    desktop.call("ui.agent", {"action": "reject"})
    agent(desktop, lambda a: a["state"] == "idle")


def test_the_mode_picker_sets_the_gate_and_a_theme_switch_keeps_the_panel(desktop, fresh,
                                                                         model):
    a = desktop.call("ui.agent", {"action": "open"})
    assert agent(desktop, lambda a: a["mode"] == "review")
    got = desktop.call("ui.agent", {"action": "mode", "mode": "auto_buffer"})
    assert got["mode"] == "auto_buffer"
    assert desktop.call("agent.mode", {})["mode"] == "auto_buffer"
    agent(desktop, lambda a: a["mode"] == "auto_buffer")
    desktop.call("ui.agent", {"action": "mode", "mode": "review"})
    model.push(anthropic_text("Themed."))
    desktop.call("ui.agent", {"action": "send", "text": "before the switch"})
    a = agent(desktop, lambda a: a["state"] == "idle" and len(a["messages"]) == 2)
    desktop.call("ui.menu", {"path": "View/Dark Theme"})
    try:
        after = agent(desktop, lambda a: a["open"] and a["messages"] == a_msgs(a, 2))
        assert after["messages"] == a["messages"] and after["conversation"] == fresh
        assert desktop.state()["theme"] == "dark"
    finally:
        desktop.call("ui.menu", {"path": "View/Classic Theme"})


def test_dragging_the_caption_across_the_window_docks_the_panel_there(desktop, fresh):
    import shutil
    import subprocess
    if shutil.which("xdotool") is None:
        pytest.skip("xdotool is not installed")
    a = desktop.call("ui.agent", {"action": "open", "side": "right"})
    a = agent(desktop, lambda a: a["caption"] is not None)
    x, y = a["caption"]
    env = {**os.environ, "DISPLAY": desktop.env["DISPLAY"]}

    def drag(to_x: int) -> None:
        subprocess.run(["xdotool", "mousemove", str(x), str(y), "mousedown", "1",
                        "mousemove", str((x + to_x) // 2), str(y), "mousemove", str(to_x), str(y),
                        "mouseup", "1"], env=env, check=True, timeout=10)
    drag(40)
    a = agent(desktop, lambda a: a["side"] == "left" and a["open"] and a["caption"])
    x, y = a["caption"]
    drag(x + 700)
    agent(desktop, lambda a: a["side"] == "right" and a["open"])


def test_ai_features_off_stay_off_in_a_restarted_window(desktop, fresh):
    def set_ai(on: bool) -> None:
        desktop.call("ui.menu", {"path": "Edit/AI Preferences"})
        desktop.wait_state(lambda s: any(d["name"] == "ai_preferences"
                                         for d in s["dialogs_open"]))
        desktop.call("ui.dialog_answer", {"name": "ai_preferences", "button": "OK",
                                          "fields": {"show_ai": on}})
    set_ai(False)
    try:
        old_pid = desktop.pids()["ui"]
        os.kill(old_pid, signal.SIGKILL)
        assert wait_for(lambda: desktop.pids().get("ui") not in (None, old_pid), 30)
        a = agent(desktop, lambda a: not a["shown"], 60)
        assert not a["open"] and not a["button"]
        assert desktop.state()["status"]["agent"] == "No agent"
        with pytest.raises(RioError):
            desktop.call("ui.menu", {"path": "Agent/Agent Panel"})
    finally:
        set_ai(True)
    agent(desktop, lambda a: a["shown"] and a["button"])
    desktop.call("ui.menu", {"path": "Agent/Agent Panel"})


def test_the_api_key_dialog_never_shows_a_key_nor_takes_one_over_the_bus(desktop, fresh,
                                                                         model):
    from tests.fakes.model_servers import anthropic_error
    model.push(anthropic_error(401, "authentication_error", "invalid x-api-key"))
    desktop.call("ui.agent", {"action": "send", "text": "who am I?"})
    agent(desktop, lambda a: a["state"] == "error")
    desktop.call("ui.menu", {"path": "Agent/Set API Key"})
    s = desktop.wait_state(lambda s: any(d["name"] == "api_key" for d in s["dialogs_open"]))
    dialog = next(d for d in s["dialogs_open"] if d["name"] == "api_key")
    assert dialog["fields"]["key"] == "" and dialog["fields"]["provider"] == "anthropic"
    # The environment variable wins, and the dialog says so.
    assert "ANTHROPIC_API_KEY" in dialog["fields"]["state"]
    secret = "sk-openai-test-0123456789"
    with pytest.raises(Exception, match="never sent over the bus"):
        desktop.call("ui.dialog_answer", {"name": "api_key", "button": "Save",
                                          "fields": {"key": secret}})
    desktop.call("ui.dialog_answer", {"name": "api_key", "button": "Save",
                                      "fields": {"provider": "openai"}})   # nothing typed
    s = desktop.wait_state(lambda s: any(
        d["name"] == "api_key" and d["fields"]["state"] == "openai: not set"
        and "empty" in d["message"] for d in s["dialogs_open"]))
    assert not (Path(desktop.env["RIO_CONFIG_DIR"]) / "credentials.json").exists()
    desktop.call("ui.dialog_answer", {"name": "api_key", "button": "Close"})
    desktop.wait_state(lambda s: not any(d["name"] == "api_key" for d in s["dialogs_open"]))


def test_per_turn_limits_are_shown_checked_saved_and_applied_by_the_gate(desktop, fresh,
                                                                       model):
    """AI Preferences shows the gate's per-turn limits; a bad value keeps the dialog open and
    says why; a good one is saved by the core's gate and ends the next turn at it."""
    def open_prefs() -> dict:
        desktop.call("ui.menu", {"path": "Edit/AI Preferences"})
        s = desktop.wait_state(lambda s: any(
            d["name"] == "ai_preferences" and d["fields"]["max_requests"]
            for d in s["dialogs_open"]))
        return next(d for d in s["dialogs_open"] if d["name"] == "ai_preferences")

    d = open_prefs()
    assert {k: d["fields"][k] for k in ("max_requests", "max_tool_calls", "max_agent_changes",
                                        "max_agent_requests")} == {
        "max_requests": "24", "max_tool_calls": "64", "max_agent_changes": "24",
        "max_agent_requests": "400"}
    desktop.call("ui.dialog_answer", {"name": "ai_preferences", "button": "OK",
                                      "fields": {"max_agent_changes": "0"}})
    d = next(d for d in desktop.state()["dialogs_open"] if d["name"] == "ai_preferences")
    assert "max_agent_changes" in d["message"] and "1 to 100,000" in d["message"]
    assert desktop.call("gate.status")["limits"]["max_agent_changes"] == 24
    try:
        desktop.call("ui.dialog_answer", {"name": "ai_preferences", "button": "OK",
                                          "fields": {"max_agent_changes": "24",
                                                     "max_requests": "1"}})
        assert wait_for(lambda: desktop.call("gate.status")["limits"]["max_requests"] == 1,
                        10)
        model.push(anthropic_tool_use("r1", "fs_read", {"path": "notes.txt"}),
                   anthropic_text("Read it."))
        desktop.call("ui.agent", {"action": "send", "text": "read notes"})
        a = agent(desktop, lambda a: a["state"] == "error")
        assert "limit of 1 model requests" in a["messages"][-1]["text"]
    finally:
        desktop.call("agent.limits", {"max_requests": 24})
    assert open_prefs()["fields"]["max_requests"] == "24"
    desktop.call("ui.dialog_answer", {"name": "ai_preferences", "button": "Cancel"})


def test_ui_state_reports_where_the_panel_is_and_it_reaches_the_windows_edge(desktop, fresh):
    """Point 2, through the real window: docked right or left the panel reaches the window's
    edge, every control whole — also after the window is resized to 1024×768 (xdotool)."""
    import shutil
    import subprocess
    sizes = [None]
    if shutil.which("xdotool"):
        sizes += [(1024, 768), (1270, 780)]
    env = {**os.environ, "DISPLAY": desktop.env["DISPLAY"]}
    was = desktop.state()["agent"]["window"]

    def resize(width: int, height: int) -> None:
        # the window's title, "other.txt — Rio — proj": its dashes do not match
        found = subprocess.run(["xdotool", "search", "--name", "Rio.*proj$"], env=env,
                               capture_output=True, text=True, timeout=10)
        for wid in found.stdout.split():
            subprocess.run(["xdotool", "windowsize", wid, str(width), str(height)], env=env,
                           timeout=10, check=False)

    def resized(width: int, height: int) -> bool:
        for _ in range(3):       # a resize racing the window's own geometry: asked again
            resize(width, height)
            if wait_for(lambda: desktop.state()["agent"]["window"]["width"] == width, 8):
                return True
        return False
    try:
        for size in sizes:
            if size is not None:
                assert resized(*size), size
            for side in ("right", "left"):
                desktop.call("ui.agent", {"action": "open", "side": side})
                a = agent(desktop, lambda a, side=side, size=size: a["geometry"] is not None
                          and a["side"] == side and a["cut"] == [] and edge(a)
                          and (size is None or a["window"]["width"] == size[0]), 20)
                assert a["geometry"]["width"] >= 220 and a["geometry"]["height"] > 300
    finally:
        if len(sizes) > 1:
            resize(was["width"], was["height"])
        desktop.call("ui.agent", {"action": "open", "side": "right"})
