"""Edit → AI Preferences… sets each model provider's endpoint and model (issue 18, point 14),
through the real dialog of the real window under Xvfb: what config.toml sets is shown, a value
that is not a usable URL keeps the dialog open and says which, a good one is written into
config.toml (the user's comments and other sections kept) and the next message goes there —
checked at the loopback OpenAI-compatible server it now names, with the model it now names."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.desktop_support import RioDesktop
from tests.fakes.model_servers import FakeModelServer, openai_text

pytestmark = [pytest.mark.gui, pytest.mark.slow, pytest.mark.timeout(180)]

CONFIG = """\
# my settings, by hand
[providers.openai]
endpoint = "http://127.0.0.1:9/v1"   # nothing listens here
timeout_s = 30

[agents.mine]
command = "/opt/mine/bin/mine"
"""


@pytest.fixture(scope="module")
def model_server():
    with FakeModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def desktop(tmp_path_factory, display):
    base = tmp_path_factory.mktemp("ai-prefs")
    root = base / "proj"
    root.mkdir()
    d = RioDesktop(root, base, display)
    folder = Path(d.env["RIO_CONFIG_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(CONFIG)
    d.start()
    d.wait_state(lambda s: s.get("agent") is not None, 30)
    yield d
    d.stop()


def open_prefs(desktop) -> dict:
    desktop.call("ui.menu", {"path": "Edit/AI Preferences"})
    s = desktop.wait_state(lambda s: any(d["name"] == "ai_preferences"
                                         for d in s["dialogs_open"]))
    return next(d for d in s["dialogs_open"] if d["name"] == "ai_preferences")


def test_a_providers_endpoint_and_model_are_set_checked_saved_and_used(desktop, model_server,
                                                                      tmp_path):
    config = Path(desktop.env["RIO_CONFIG_DIR"]) / "config.toml"
    d = open_prefs(desktop)
    fields = d["fields"]
    assert fields["openai_endpoint"] == "http://127.0.0.1:9/v1" and fields["openai_model"] == ""
    assert fields["anthropic_endpoint"] == "" and fields["anthropic_model"] == ""
    desktop.call("ui.screenshot", {"path": str(tmp_path / "ai-preferences.png")})
    # Not a usable URL: the dialog stays open, says which and why, and writes nothing.
    desktop.call("ui.dialog_answer", {"name": "ai_preferences", "button": "OK",
                                      "fields": {"openai_endpoint": "localhost:11434"}})
    d = next(d for d in desktop.state()["dialogs_open"] if d["name"] == "ai_preferences")
    assert "openai endpoint 'localhost:11434' is not a usable URL" in d["message"]
    assert config.read_text() == CONFIG
    # A key would cross the network in the clear: refused the same way.
    desktop.call("ui.dialog_answer", {"name": "ai_preferences", "button": "OK",
                                      "fields": {"openai_endpoint": "http://127.0.0.1:9/v1",
                                                 "anthropic_endpoint": "http://proxy.lan/x"}})
    d = next(d for d in desktop.state()["dialogs_open"] if d["name"] == "ai_preferences")
    assert "anthropic endpoint" in d["message"] and "plain http" in d["message"]
    assert config.read_text() == CONFIG
    # Good values: saved, and the dialog closes.
    endpoint = f"{model_server.url}/v1"
    desktop.call("ui.dialog_answer", {"name": "ai_preferences", "button": "OK",
                                      "fields": {"openai_endpoint": endpoint,
                                                 "openai_model": "tiny-coder:1b",
                                                 "anthropic_endpoint": ""}})
    desktop.wait_state(lambda s: not any(d["name"] == "ai_preferences"
                                         for d in s["dialogs_open"]))
    text = config.read_text()
    assert f'endpoint = "{endpoint}"   # nothing listens here\n' in text
    assert 'model = "tiny-coder:1b"' in text and "timeout_s = 30" in text
    assert text.startswith("# my settings, by hand\n")
    assert '[agents.mine]\ncommand = "/opt/mine/bin/mine"\n' in text
    # shown again as saved
    again = open_prefs(desktop)["fields"]
    assert again["openai_endpoint"] == endpoint and again["openai_model"] == "tiny-coder:1b"
    desktop.call("ui.dialog_answer", {"name": "ai_preferences", "button": "Cancel"})
    # The next message of an OpenAI-compatible conversation goes to that server and model.
    model_server.push(openai_text("Hello from the local server."))
    cid = desktop.call("agent.new", {"provider": "openai"})["conversation"]
    desktop.call("ui.agent", {"action": "open", "conversation": cid})
    desktop.wait_state(lambda s: s["agent"]["conversation"] == cid)
    desktop.call("ui.agent", {"action": "send", "text": "hi"})
    a = desktop.wait_state(lambda s: s["agent"]["state"] == "idle" and
                           len(s["agent"]["messages"]) == 2, 60)["agent"]
    assert a["messages"][1]["text"] == "Hello from the local server."
    (request,) = model_server.requests
    assert request.path == "/v1/chat/completions" and request.json["model"] == "tiny-coder:1b"
