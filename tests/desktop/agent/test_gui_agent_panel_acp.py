"""The agent panel with an ACP agent (the fake one, tests/fakes/acp_agent.py), in the real
desktop under Xvfb: its conversation shown like an API one, its own mode and model pickers, its
sign-in card, files it changed behind Rio's back (Review, Revert, Restore), and picking another
agent (tests/desktop/agent/agent_panel_desktop.py starts the desktop).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys

import pytest

from rio.protocol.errors import RioError
from tests.desktop.agent.agent_panel_desktop import (
    agent,
    answer_revert,
    notes_buffer,
)
from tests.fakes.model_servers import anthropic_text
from tests.support import REPO, wait_for

pytestmark = [pytest.mark.gui, pytest.mark.slow, pytest.mark.timeout(180)]


def test_an_acp_conversation_shows_like_an_api_one(desktop, model):
    """The panel does not care what is behind a conversation: the fake ACP agent's thought,
    plan, text and permission question, answered in the panel."""
    script = {"turns": [[{"thought": "Let me look."}, {"plan": ["read", "answer"]},
                         {"text": "Hello from ACP."}],
                        [{"permission": {"id": "t1", "title": "rm -rf build",
                                         "options": [["yes-1", "allow_once"],
                                                     ["no-1", "reject_once"]]}}]]}
    (desktop.root.parent / "acp.json").write_text(json.dumps(script))
    a = desktop.call("ui.agent", {"action": "open"})
    assert "fake (ACP)" in agent(desktop, lambda a: "fake (ACP)" in a["choices"])["choices"]
    cid = desktop.call("agent.new", {"agent": "fake"})["conversation"]
    desktop.call("ui.agent", {"action": "open", "conversation": cid})
    desktop.call("ui.agent", {"action": "send", "text": "hi"})
    a = agent(desktop, lambda a: a["state"] == "idle" and len(a["messages"]) == 2, 60)
    assert a["messages"][1] == {"role": "assistant", "text": "Hello from ACP."}
    assert a["provider"] == "fake (ACP)"
    assert {"thought", "plan"} <= set(a["blocks"])
    desktop.call("ui.agent", {"action": "send", "text": "clean up"})
    a = agent(desktop, lambda a: a["pending"], 60)
    assert a["pending"][0]["kind"] == "permission" and a["state"] == "waiting"
    assert a["pending"][0]["options"] == ["allow_once", "reject_once"]
    got = desktop.call("ui.agent", {"action": "answer", "option": "reject_once"})
    assert got["kind"] == "reject_once"
    a = agent(desktop, lambda a: a["state"] == "idle" and not a["pending"], 60)
    assert "permission: no-1" in a["messages"][-1]["text"]


def test_the_acp_agents_own_mode_and_model_pickers_reach_the_agent(desktop, model):
    """The fake ACP agent offers two modes and a model option: the header shows them after
    session/new; picking one in the panel reaches the agent (it says what it has)."""
    script = {"modes": {"current": "ask", "available": ["ask", "code"]},
              "default_turn": [{"report_settings": True}]}
    (desktop.root.parent / "acp.json").write_text(json.dumps(script))
    desktop.call("ui.agent", {"action": "open"})
    cid = desktop.call("agent.new", {"agent": "fake"})["conversation"]
    desktop.call("ui.agent", {"action": "open", "conversation": cid})
    desktop.call("ui.agent", {"action": "send", "text": "hi"})
    a = agent(desktop, lambda a: a["state"] == "idle" and len(a["messages"]) == 2, 60)
    assert a["messages"][1]["text"] == "mode: ask model: fast"
    assert [(p["id"], p["current"], p["values"]) for p in a["pickers"]] == [
        ("mode", "ask", ["ask", "code"]), ("model", "fast", ["fast", "smart"])]
    assert a["picker_boxes"] == ["mode", "model"]
    desktop.call("ui.agent", {"action": "agent_setting", "picker": "mode", "value": "code"})
    desktop.call("ui.agent", {"action": "agent_setting", "picker": "model", "value": "smart"})
    a = agent(desktop, lambda a: [p["current"] for p in a["pickers"]] == ["code", "smart"])
    desktop.call("ui.agent", {"action": "send", "text": "again"})
    a = agent(desktop, lambda a: a["state"] == "idle" and len(a["messages"]) == 4, 60)
    assert a["messages"][3]["text"] == "mode: code model: smart"
    # An API provider's conversation has no such pickers, and the core says so.
    api = desktop.call("agent.new", {})["conversation"]
    with pytest.raises(RioError) as err:
        desktop.call("agent.set_mode", {"conversation": api, "mode": "code"})
    assert err.value.kind == "protocol.bad_args"


def test_a_window_started_later_shows_the_agents_pickers_and_its_mcp_proposal_at_once(
        desktop, model):
    """The fake ACP agent offers modes and a model, and waits on a proposal of Rio's MCP tools
    (the turn's, held by its session like any other) when the window is started again: the
    new window shows the pickers without the agent's next update and the proposal with
    Approve, and approving it from the panel lands the edit — listed as the turn's."""
    script = {"modes": {"current": "ask", "available": ["ask", "code"]},
              "turns": [[{"mcp": {"tool": "propose_edit", "args": {
                  "path": "notes.txt", "old_text": "beta", "new_text": "theta"}}},
                  {"text": "done"}]]}
    (desktop.root.parent / "acp.json").write_text(json.dumps(script))
    cid = desktop.call("agent.new", {"agent": "fake"})["conversation"]
    desktop.call("agent.send", {"conversation": cid, "text": "beta to theta"})
    assert wait_for(lambda: any(e["topic"] == "agent.propose" for e in desktop.call(
        "agent.pending", {"conversation": cid})["events"]), 60)
    old_pid = desktop.pids()["ui"]
    os.kill(old_pid, signal.SIGKILL)
    assert wait_for(lambda: desktop.pids().get("ui") not in (None, old_pid), 30)
    a = agent(desktop, lambda a: a["conversation"] == cid and a["pending"]
              and a["pickers"], 60)
    assert [(p["id"], p["current"]) for p in a["pickers"]] == [("mode", "ask"),
                                                               ("model", "fast")]
    turn = next(e["data"]["turn"] for e in desktop.call(
        "agent.pending", {"conversation": cid})["events"] if e["topic"] == "agent.propose")
    assert a["pending"][0]["proposal"].startswith(f"{turn}.")
    assert a["pending"][0]["path"] == "notes.txt"
    assert desktop.call("ui.agent", {"action": "approve"})["applied"] is True
    desktop.wait_text(notes_buffer(desktop), "alpha\ntheta\n")
    a = agent(desktop, lambda a: a["state"] == "idle" and not a["pending"], 60)
    # the edit made through Rio's MCP tool is the turn's: its "Changed, not saved yet" card
    assert "turn_end" in a["blocks"] and a["undo"] == "available"
    bid = notes_buffer(desktop)
    desktop.call("buffer.close", {"buffer": bid, "discard": True})


def test_the_sign_in_card_offers_the_agents_own_ways_and_its_button_signs_in(desktop, model):
    """An agent that wants a sign-in at session/new: the card shows the terminal method as the
    exact command, the variable of the env-var method, and a Sign in button for the agent's
    own method — pressed, the agent is signed in and the next message is answered by the
    same agent process (no restart)."""
    script = {"auth": "new_session", "auth_methods": [
        {"id": "browser", "name": "Log in with the browser"},
        {"id": "term", "name": "Terminal login", "type": "terminal", "args": ["--login"]},
        {"id": "key", "name": "API key", "type": "env_var", "vars": ["FAKE_API_KEY"]}]}
    (desktop.root.parent / "acp.json").write_text(json.dumps(script))
    desktop.call("ui.agent", {"action": "open"})
    cid = desktop.call("agent.new", {"agent": "fake"})["conversation"]
    desktop.call("ui.agent", {"action": "open", "conversation": cid})
    desktop.call("ui.agent", {"action": "send", "text": "hi"})
    a = agent(desktop, lambda a: a["sign_in"] is not None and a["state"] != "thinking", 60)
    card = a["sign_in"]
    assert card["state"] == "needed"
    by_id = {m["id"]: m for m in card["methods"]}
    # the configured agent's whole command (its args too: runnable as shown), then the
    # method's (rio/acp/client.py settings_for, rio/acp/auth.py)
    fake = REPO / "tests" / "fakes" / "acp_agent.py"
    assert by_id["term"]["command"] == shlex.join(
        [sys.executable, str(fake), str(desktop.root.parent / "acp.json"), "--login"])
    assert "FAKE_API_KEY" in by_id["key"]["text"]
    assert by_id["browser"]["type"] == "agent" and by_id["browser"]["command"] == ""
    got = desktop.call("ui.agent", {"action": "sign_in"})
    assert got == {"signed_in": True, "method": "browser"}
    a = agent(desktop, lambda a: a["sign_in"]["state"] == "signed_in")
    desktop.call("ui.agent", {"action": "send", "text": "again"})
    a = agent(desktop, lambda a: a["state"] == "idle" and a["messages"][-1]["text"] ==
              "echo: again", 60)
    assert "note" not in a["blocks"]          # signed in, not "the agent had stopped"


def test_files_changed_behind_rios_back_can_be_reviewed_and_reverted(desktop, fresh, model):
    """The fake ACP agent rewrites notes.txt itself: the card offers Review (the tab and the
    diff) and Revert (after asking; never over a tab's unsaved text)."""
    notes = desktop.root / "notes.txt"
    script = {"turns": [[{"write_disk": {"path": str(notes), "content": "alpha\nBETA\n"}},
                         {"text": "Rewrote it."}]]}
    (desktop.root.parent / "acp.json").write_text(json.dumps(script))
    cid = desktop.call("agent.new", {"agent": "fake"})["conversation"]
    desktop.call("ui.agent", {"action": "open", "conversation": cid})
    desktop.call("ui.agent", {"action": "send", "text": "rewrite notes"})
    a = agent(desktop, lambda a: a["state"] == "idle" and a["changed_files"], 60)
    assert a["changed_files"] == [{"path": "notes.txt", "change": "modified", "revert": True,
                                   "state": None, "diff_shown": False}]
    got = desktop.call("ui.agent", {"action": "review", "path": "notes.txt"})
    assert got == {"path": "notes.txt", "diff_shown": True}
    desktop.wait_state(lambda s: any(t["path"] == "notes.txt" and t["active"]
                                     for t in s["tabs"]))
    desktop.wait_active_ready()
    bid = notes_buffer(desktop)
    desktop.wait_text(bid, "alpha\nBETA\n")
    desktop.call("ui.type", {"text": "typed "})       # unsaved text in the tab

    def revert(button: str = "Revert") -> None:
        answer_revert(desktop, "notes.txt", button)

    revert("Cancel")
    revert()
    a = agent(desktop, lambda a: (a["changed_files"][0]["state"] or "").startswith("not"))
    assert "unsaved changes" in a["changed_files"][0]["state"]
    assert notes.read_text() == "alpha\nBETA\n"
    assert "typed " in desktop.call("buffer.text", {"buffer": bid})["text"]
    desktop.call("buffer.close", {"buffer": bid, "discard": True})
    revert()
    agent(desktop, lambda a: a["changed_files"][0]["state"] == "reverted")
    assert notes.read_text() == "alpha\nbeta\n"
    bid = notes_buffer(desktop)
    assert desktop.call("buffer.info", {"buffer": bid})["undo_label"] == \
        "Revert the agent's change on disk"


def test_a_file_the_agent_deleted_is_restored_as_it_was_stored(desktop, fresh, model):
    """The agent deletes a Latin-1 file with CRLF line ends itself: the card offers Restore,
    which writes it back byte for byte (asking first), and never over a file that is there
    again."""
    gone = desktop.root / "gone.txt"
    stored = b"caf\xe9 cr\xe8me\r\nsecond line\r\n"
    gone.write_bytes(stored)
    script = {"turns": [[{"delete_disk": {"path": str(gone)}}, {"text": "Deleted it."}]]}
    (desktop.root.parent / "acp.json").write_text(json.dumps(script))
    cid = desktop.call("agent.new", {"agent": "fake"})["conversation"]
    desktop.call("ui.agent", {"action": "open", "conversation": cid})
    desktop.call("ui.agent", {"action": "send", "text": "delete gone.txt"})
    a = agent(desktop, lambda a: a["state"] == "idle" and a["changed_files"], 60)
    assert a["changed_files"] == [{"path": "gone.txt", "change": "deleted", "revert": True,
                                   "state": None, "diff_shown": False}]
    assert not gone.exists()

    def restore() -> None:
        # the dialog's button says Restore, as the row's does (it said Revert: issue 18)
        answer_revert(desktop, "gone.txt", "Restore")

    restore()
    agent(desktop, lambda a: a["changed_files"][0]["state"] == "restored")
    assert gone.read_bytes() == stored
    assert not [b for b in desktop.call("buffer.list") if b.get("path") == "gone.txt"]
    gone.write_bytes(b"written again\n")      # something is there again: never overwritten
    restore()
    a = agent(desktop, lambda a: (a["changed_files"][0]["state"] or "").startswith("not"))
    assert "there is a file at gone.txt again" in a["changed_files"][0]["state"]
    assert gone.read_bytes() == b"written again\n"


def test_a_crlf_file_the_agent_rewrote_is_reverted_with_its_line_endings(desktop, fresh, model):
    """Windows line endings: the diff is of the text as Rio reads it, so Revert puts the file
    back (it was refused as "changed again since"), CRLF kept; a second Revert is refused."""
    crlf = desktop.root / "crlf.txt"
    crlf.write_bytes(b"one\r\ntwo \xf0\x9f\x98\x80\r\nthree")
    script = {"turns": [[{"write_disk": {"path": str(crlf),
                                         "content": "one\r\n2 \U0001F600\r\nthree"}},
                         {"text": "Rewrote it."}]]}
    (desktop.root.parent / "acp.json").write_text(json.dumps(script))
    cid = desktop.call("agent.new", {"agent": "fake"})["conversation"]
    desktop.call("ui.agent", {"action": "open", "conversation": cid})
    desktop.call("ui.agent", {"action": "send", "text": "rewrite crlf"})
    agent(desktop, lambda a: a["state"] == "idle" and a["changed_files"]
          and a["changed_files"][0]["path"] == "crlf.txt", 60)

    def revert() -> None:
        answer_revert(desktop, "crlf.txt")

    revert()
    a = agent(desktop, lambda a: a["changed_files"][0]["state"] not in (None, "reverting"))
    assert a["changed_files"][0]["state"] == "reverted"
    assert crlf.read_bytes() == b"one\r\ntwo \xf0\x9f\x98\x80\r\nthree"
    revert()
    a = agent(desktop, lambda a: a["changed_files"][0]["state"] not in ("reverted",
                                                                       "reverting"))
    assert a["changed_files"][0]["state"].startswith("not reverted")
    assert crlf.read_bytes() == b"one\r\ntwo \xf0\x9f\x98\x80\r\nthree"
    for b in desktop.call("buffer.list"):
        if b.get("path", "").endswith("crlf.txt"):
            desktop.call("buffer.close", {"buffer": b["buffer"], "discard": True})


def test_picking_another_agent_starts_a_new_conversation_with_it_and_says_so(desktop, fresh,
                                                                           model):
    """Point 3: with a conversation shown, a pick in the Provider picker had no effect (the
    next message went to the old provider and the picker snapped back)."""
    (desktop.root.parent / "acp.json").write_text(json.dumps({}))       # echo
    model.push(anthropic_text("From the API."))
    desktop.call("ui.agent", {"action": "send", "text": "first"})
    agent(desktop, lambda a: a["state"] == "idle" and len(a["messages"]) == 2)
    agent(desktop, lambda a: "fake (ACP)" in a["choices"])
    got = desktop.call("ui.agent", {"action": "provider", "value": "fake (ACP)"})
    assert got["new"] is True and got["left"] == fresh and got["conversation"] != fresh
    a = agent(desktop, lambda a: a["conversation"] == got["conversation"])
    assert a["provider"] == "fake (ACP)" and a["blocks"] == ["note"]
    desktop.call("ui.agent", {"action": "send", "text": "to the agent"})
    a = agent(desktop, lambda a: a["state"] == "idle" and a["messages"]
              and a["messages"][-1]["text"] == "echo: to the agent", 60)
    assert a["provider"] == "fake (ACP)" and a["chooser"].startswith("fake (ACP) · to the ")
    assert desktop.call("agent.history", {"conversation": got["conversation"]})["agent"] == \
        "fake"
    # the earlier conversation is as it was, and the same pick again changes nothing
    assert len(desktop.call("agent.history", {"conversation": fresh})["turns"]) == 1
    again = desktop.call("ui.agent", {"action": "provider", "value": "fake (ACP)"})
    assert again["new"] is False and again["conversation"] == got["conversation"]
