"""The real desktop the agent panel's GUI tests drive (tests/desktop/agent/test_gui_agent_panel*.py):
the window (`rio PATH`), the core and the real agent session process under Xvfb, against the
loopback Anthropic server (tests/fakes/model_servers.py, a fake key, never the internet) and the
fake ACP agent (tests/fakes/acp_agent.py). Each test module makes its own fixtures of these
(one desktop per module, ended by its fixture's finalizer); the helpers read ``ui.state``'s
``agent`` part."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

from tests.desktop_support import RioDesktop
from tests.fakes.model_servers import anthropic_text, anthropic_tool_use
from tests.support import REPO

NOTES = "alpha\nbeta\n"


def panel_desktop(tmp_path_factory, model_server, display) -> Iterator[RioDesktop]:
    """A module's desktop (its ``desktop`` fixture): a project with notes.txt and other.txt
    (open), the model server's URL and a fake key, and the fake ACP agent configured."""
    base = tmp_path_factory.mktemp("agent-panel")
    root = base / "proj"
    root.mkdir()
    (root / "notes.txt").write_text(NOTES)
    (root / "other.txt").write_text("one\n")
    d = RioDesktop(root, base, display, files=(str(root / "other.txt"),))
    d.env.update({"ANTHROPIC_BASE_URL": model_server.url, "ANTHROPIC_API_KEY": "test-key",
                  # keys the tests store go to the private file in the test's config folder,
                  # never to a keyring of the machine
                  "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"})
    folder = Path(d.env["RIO_CONFIG_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    # An ACP agent too: the fake one (tests/fakes/acp_agent.py), scripted by base/acp.json.
    (folder / "config.toml").write_text(
        f'[agents.fake]\ncommand = "{sys.executable}"\n'
        f'args = ["{REPO / "tests" / "fakes" / "acp_agent.py"}", "{base / "acp.json"}"]\n')
    # A loaded machine can miss 3 pings of 1 s; a session killed as "hung" is not the point.
    # Every test's conversation keeps its session process (idle ones stop after 5 minutes):
    # room for all of this module's, not the shipped 16.
    # The window is killed on purpose by several tests (a ui crash, a window started later):
    # more than the shipped 5 restarts a minute when the module runs fast.
    (folder / "supervisor.toml").write_text("[defaults]\nping_misses = 30\n\n"
                                            "[process.agent]\nmax_live = 64\n\n"
                                            "[process.ui]\nmax_restarts = 20\n")
    d.start()
    d.wait_state(lambda s: s.get("agent") is not None, 30)
    yield d
    d.stop()


def fresh_conversation(desktop) -> str:
    """A new, empty conversation shown in the open panel; notes.txt back to its text."""
    for b in desktop.call("buffer.list"):
        if b.get("path", "").endswith("notes.txt"):
            desktop.call("buffer.close", {"buffer": b["buffer"], "discard": True})
    # An API provider's conversation whatever the picker shows (New takes the picker's
    # choice, which follows the conversation shown — an ACP one after an ACP test).
    cid = desktop.call("agent.new", {})["conversation"]
    desktop.call("ui.agent", {"action": "open", "conversation": cid})
    desktop.wait_state(lambda s: s["agent"]["conversation"] == cid)
    return cid


def agent(desktop, predicate, timeout: float = 30.0) -> dict:
    return desktop.wait_state(lambda s: s.get("agent") is not None and predicate(s["agent"]),
                              timeout)["agent"]


def notes_buffer(desktop) -> str | None:
    return next((b["buffer"] for b in desktop.call("buffer.list")
                 if b.get("path", "").endswith("notes.txt")), None)


def propose(model, old: str, new: str, call: str) -> None:
    model.push(anthropic_tool_use(call, "propose_edit", {
        "path": "notes.txt", "old_text": old, "new_text": new}, text="Editing notes."),
        anthropic_text("Done."))


def a_msgs(a: dict, n: int) -> list:
    return a["messages"] if len(a["messages"]) == n else None


def answer_revert(desktop, path: str, button: str = "Revert") -> None:
    """Press the row's Revert (or Restore) as a user would: the agent_revert dialog opens,
    and ``button`` answers it."""
    assert desktop.call("ui.agent", {"action": "revert", "path": path})["asking"]
    desktop.wait_state(lambda s: any(d["name"] == "agent_revert" for d in s["dialogs_open"]))
    desktop.call("ui.dialog_answer", {"name": "agent_revert", "button": button})


def edge(a: dict) -> bool:
    g, w = a["geometry"], a["window"]
    if a["side"] == "right":
        return abs(g["x"] + g["width"] - w["width"]) <= 4
    return g["x"] <= 240
