"""The agent panel's place in the real window (ui/tk/app/main_window.py's App, in this process under Xvfb,
against a real core): docked on either side it reaches the window's edge at its width, every
control whole, whatever the window's size; its rows wrap instead of cutting pickers off
(issue 18, points 2, 7 and 8). What is checked is what ``ui.state``'s ``agent`` reports
(``geometry``, ``window``, ``cut``: ui/tk/agent/actions.py), the same as scripts read.
"""

from __future__ import annotations

import json

import pytest

from tests.desktop_support import InProcessApp
from tests.support import RioServer

pytestmark = [pytest.mark.gui, pytest.mark.timeout(120)]

#: How far from the window's edge the panel may stop: the panes' own 2 px margin.
EDGE_PX = 4


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("panel-layout")
    root = base / "proj"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    srv = RioServer(root.resolve(), base).start()
    yield srv
    srv.stop()


def start(tk_root, server, monkeypatch, *, side: str = "right", geometry: str = "1024x768",
          width: int = 380) -> InProcessApp:
    """The window with the panel open on ``side`` (preferences as a user left them)."""
    folder = server.base / "config"
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("RIO_CONFIG_DIR", str(folder))
    (folder / "ui.json").write_text(json.dumps({"agent_side": side, "agent_open": True,
                                                "agent_width": width}))
    desk = InProcessApp(tk_root, server, geometry=geometry)
    tk_root.geometry(geometry)        # the session's saved size came after: this one
    assert desk.pump(lambda: desk.app.agent_panel is not None
                     and desk.app.agent_panel.is_open)
    return desk


def settle(desk: InProcessApp, seconds: float = 0.3) -> dict:
    desk.pump(lambda: False, seconds)
    return desk.app.agent_panel.describe()


def resize(desk: InProcessApp, geometry: str) -> dict:
    desk.root.geometry(geometry)
    return settle(desk)


def reaches_the_edge(a: dict) -> bool:
    g, w = a["geometry"], a["window"]
    if a["side"] == "right":
        return abs(g["x"] + g["width"] - w["width"]) <= EDGE_PX
    return g["x"] <= EDGE_PX + 230      # right of the project tree (220 px), on the left


@pytest.mark.parametrize("side", ["right", "left"])
def test_docked_on_either_side_the_panel_reaches_the_edge_with_every_control_whole(
        tk_root, server, monkeypatch, side):
    """Issue 18 point 2: docked right, the panel was squeezed to its 220 px minimum with dead
    grey space right of it, growing with the window; its Stop read "Sto"."""
    desk = start(tk_root, server, monkeypatch, side=side)
    try:
        for geometry in ("1024x768", "1270x790", "1024x768", "1150x700"):
            a = resize(desk, geometry)
            assert a["window"]["width"] == int(geometry.split("x")[0]), a
            assert a["geometry"]["width"] == 380, (geometry, a["geometry"])
            assert reaches_the_edge(a), (geometry, a["geometry"], a["window"])
            assert a["cut"] == [], (geometry, a["cut"])
    finally:
        desk.close()


def test_a_window_that_starts_narrow_gives_the_panel_its_width_when_it_grows(
        tk_root, server, monkeypatch):
    desk = start(tk_root, server, monkeypatch, geometry="700x600")
    try:
        a = settle(desk)
        assert a["geometry"]["width"] < 380 and reaches_the_edge(a)
        a = resize(desk, "1024x768")
        assert a["geometry"]["width"] == 380 and reaches_the_edge(a) and a["cut"] == []
    finally:
        desk.close()


def test_the_panel_dragged_to_its_minimum_keeps_every_control(tk_root, server, monkeypatch):
    """The header wraps (Provider and Mode, then Stop) instead of cutting it; the width the
    user dragged to is the one a resized window keeps."""
    desk = start(tk_root, server, monkeypatch)
    try:
        panel = desk.app.agent_panel
        pane = desk.app.hpane
        total = pane.winfo_width()
        pane.sash_place(1, total - 220 - int(pane.cget("sashwidth")), 0)
        pane.event_generate("<ButtonRelease-1>")
        a = settle(desk)
        assert a["geometry"]["width"] == 220 and panel.prefs.width == 220
        assert a["cut"] == [] and len(panel.head.rows) >= 2
        a = resize(desk, "1270x790")
        assert a["geometry"]["width"] == 220 and reaches_the_edge(a)
    finally:
        panel.set_prefs(width=380)
        desk.close()


CODEX_OPTIONS = [
    {"id": "mode", "name": "Approval Preset", "category": "mode", "type": "select",
     "currentValue": "auto", "options": [{"value": v, "name": n} for v, n in (
         ("read-only", "Read Only"), ("auto", "Default"), ("full-access", "Full Access"))]},
    {"id": "model", "name": "Model", "category": "model", "type": "select",
     "currentValue": "gpt-5.1-codex-max", "options": [
         {"value": v, "name": v} for v in ("gpt-5.1-codex-max", "gpt-5.1-codex-mini")]},
    {"id": "reasoning_effort", "name": "Reasoning Effort", "category": "thought_level",
     "type": "select", "currentValue": "medium", "options": [
         {"value": v, "name": v.title()} for v in ("low", "medium", "high")]}]


@pytest.mark.parametrize("width", [380, 220])
def test_codexs_three_pickers_wrap_and_stay_whole(tk_root, server, monkeypatch, width):
    """Issue 18 point 7: codex's Model and Reasoning pickers were cut off the panel, and its
    mode was offered twice ("Agent mode: Approval Preset:")."""
    desk = start(tk_root, server, monkeypatch, width=width)
    try:
        panel = desk.app.agent_panel
        cid = desk.conn.call("agent.new", {})["conversation"]
        assert desk.pump(lambda: panel.model.listing or True)
        panel.show_conversation(cid)
        conv = panel.model.get(cid)
        conv.agent_modes = {"current": "auto", "available": [
            {"id": o["value"], "name": o["name"]} for o in CODEX_OPTIONS[0]["options"]]}
        conv.agent_config = CODEX_OPTIONS
        panel.agent_pickers.forget()
        panel.agent_pickers.sync()
        a = settle(desk)
        assert [p["label"] for p in a["pickers"]] == ["Approval Preset", "Model",
                                                      "Reasoning Effort"]
        assert a["picker_boxes"] == ["mode", "model", "reasoning_effort"]
        assert a["geometry"]["width"] == width and a["cut"] == [], a["cut"]
        assert len(panel.agent_flow.rows) >= 2
        labels = [w.cget("text") for w in panel.agent_row.winfo_children()
                  for w in w.winfo_children() if w.winfo_class() == "TLabel"]
        assert "Agent mode:" not in labels
    finally:
        desk.close()


def test_the_provider_picker_shows_an_acp_agents_name_whole(tk_root, server, monkeypatch):
    """"opencode (ACP)" was cut to "opencode (ACF" in the drop-down."""
    desk = start(tk_root, server, monkeypatch)
    try:
        panel = desk.app.agent_panel
        panel._got_agents({"agents": [{"name": "opencode", "found": True}]})
        assert "opencode (ACP)" in panel.providers
        box = panel.provider_box
        import tkinter.font as tkfont
        font = tkfont.nametofont(str(box.cget("font") or "TkTextFont"))
        assert int(box.cget("width")) * font.measure("0") >= font.measure("opencode (ACP)")
        assert settle(desk)["cut"] == []
    finally:
        desk.close()


def test_a_pick_in_the_provider_picker_starts_a_new_conversation_and_says_so(
        tk_root, server, monkeypatch):
    """Issue 18 point 3, as a user does it: the picker's selection event. It had no effect —
    the next message went to the shown conversation's provider, the picker snapped back."""
    desk = start(tk_root, server, monkeypatch)
    try:
        panel = desk.app.agent_panel
        first = desk.conn.call("agent.new", {"provider": "anthropic"})["conversation"]
        panel.show_conversation(first)
        assert desk.pump(lambda: panel.model.shown is not None
                         and panel.provider.get() == "anthropic")
        panel.provider_box.set("openai")
        panel.provider_box.event_generate("<<ComboboxSelected>>")
        assert desk.pump(lambda: panel.model.current not in (None, first))
        conv = panel.model.shown
        assert conv.provider == "openai" and panel.provider.get() == "openai"
        assert [b.kind for b in conv.blocks] == ["note"]
        assert "new conversation with openai" in conv.blocks[0].text.lower()
        assert desk.conn.call("agent.history", {"conversation": conv.id})["provider"] == \
            "openai"
        settle(desk)
        assert panel.provider.get() == "openai"          # no snapping back
    finally:
        desk.close()
