"""The agent panel's model with an ACP agent, without Tk: its extra events (thoughts, plans,
tool updates, permission questions, slash commands, sign-in, restarts, files changed behind Rio's
back), its pickers, @file completion and what is pending before the window is drawn."""

from __future__ import annotations

import pytest

from tests.desktop.agent.model_events import DIFF, T1, C, ev, run
from ui.tk.agent.history import blocks_from_history
from ui.tk.agent.model import (
    AgentModel,
    Conversation,
)

# --- the ACP agents' extra events --------------------------------------------------------------

def test_acp_thoughts_plans_tool_updates_and_silence():
    conv = Conversation(C)
    run(conv, ev("agent.turn", state="started", text="x"))
    assert run(conv, ev("agent.thought", text="Let me "), ev("agent.thought", text="see.")) == \
        [("block", 1), ("text", 1, "see.")]
    assert conv.blocks[1].kind == "thought" and conv.blocks[1].text == "Let me see."
    run(conv, ev("agent.tool", call="t1", name="read", input={}, title="Read a.py",
                 kind="read", status="pending"))
    assert run(conv, ev("agent.tool_update", call="t1", status="completed")) == [("update", 2)]
    assert conv.blocks[2].data["status"] == "ok" and conv.blocks[2].data["title"] == "Read a.py"
    plan = [{"content": "read", "priority": "high", "status": "completed"},
            {"content": "edit", "priority": "high", "status": "pending"}]
    assert run(conv, ev("agent.plan", entries=plan)) == [("block", 3)]
    plan[1]["status"] = "in_progress"
    assert run(conv, ev("agent.plan", entries=plan)) == [("update", 3)]
    from ui.tk.agent.extras import plan_lines
    assert plan_lines(conv.blocks[3].data["entries"]) == ["☑ read", "◐ edit"]
    assert run(conv, ev("agent.silent", seconds=30, give_up_after_s=300)) == [("block", 4)]
    assert conv.blocks[4].text.startswith("No word from the agent for 30 s")
    assert run(conv, ev("agent.silent", seconds=0, resumed=True)) == [("update", 4)]
    assert conv.blocks[4].text == "The agent is answering again."
    assert [m["role"] for m in conv.messages()] == ["user"]      # thoughts are not messages


def test_history_goes_before_what_the_events_showed_without_repeating_a_turn():
    """A conversation continued elsewhere (rio chat --conversation) is first seen mid-turn:
    its history is put before the live blocks, the live turn not repeated, and a proposal
    waiting in it still answers to its id."""
    T2 = f"{C}.2"
    conv = Conversation(C)
    run(conv, ("agent.turn", {"conversation": C, "turn": T2, "state": "started",
                              "text": "again"}),
        ("agent.propose", {"conversation": C, "turn": T2, "proposal": "p9", "call": "c9",
                           "path": "a", "kind": "edit", "diff": DIFF}))
    assert not conv.loaded
    history = {"provider": "openai", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "first"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "One."}]},
        {"role": "user", "content": [{"type": "text", "text": "again"}]}],
        "turns": [{"turn": T1, "status": "done"}, {"turn": T2, "status": "running"}]}
    conv.prepend_history(history, blocks_from_history(history))
    assert [(b.kind, b.text) for b in conv.blocks[:3]] == \
        [("user", "first"), ("assistant", "One."), ("user", "again")]
    assert conv.loaded and conv.provider == "openai" and len(conv.blocks) == 4
    assert conv.pending_list()[0]["proposal"] == "p9"
    assert conv.decided("p9", "applied") == [("update", 3)]


def test_at_file_prefix_and_completion_order():
    from ui.tk.agent.text import at_prefix, complete_paths
    assert at_prefix("look at @src/a") == "src/a"
    assert at_prefix("@") == "" and at_prefix("mail me@home") is None
    assert at_prefix("done @x.py and more") is None
    paths = ["docs/readme.md", "src/forecast.py", "forecast.py", "tests/test_forecast.py"]
    assert complete_paths("fore", paths) == ["forecast.py", "src/forecast.py",
                                             "tests/test_forecast.py"]
    assert complete_paths("SRC/", paths) == ["src/forecast.py"]
    assert complete_paths("", paths, limit=2) == ["docs/readme.md", "forecast.py"]


def test_the_picker_offers_providers_then_the_acp_agents_found():
    from ui.tk.agent.settings import new_conversation_args, picker_entries
    agents = [{"name": "claude", "found": True}, {"name": "codex", "found": False},
              {"name": "gemini", "found": True}]
    entries = picker_entries(["anthropic", "openai"], agents)
    assert entries == ["anthropic", "openai", "claude (ACP)", "gemini (ACP)"]
    assert picker_entries(entries, agents) == entries            # asked again: no twins
    assert new_conversation_args("claude (ACP)", "anthropic") == {"agent": "claude"}
    assert new_conversation_args("openai", "anthropic") == {"provider": "openai"}
    assert new_conversation_args("anthropic", "anthropic") == {}


def test_an_acp_permission_question_waits_like_a_proposal():
    conv = Conversation(C)
    options = [{"id": "a", "name": "Allow once", "kind": "allow_once"},
               {"id": "r", "name": "Reject", "kind": "reject_once"}]
    run(conv, ev("agent.turn", state="started", text="x"),
        ev("agent.permission", request="7", call="c1", title="Run make", tool_kind="execute",
           input={"command": "make"}, options=options))
    assert conv.state == "waiting"
    assert conv.pending_list() == [{"proposal": "perm:7", "path": None, "turn": T1,
                                    "kind": "permission",
                                    "options": ["allow_once", "reject_once"]}]
    run(conv, ev("agent.tool_result", call="c1", name="execute", ok=True, summary="done",
                 truncated=False))
    assert not conv.pending and conv.blocks[1].data["decision"] == "applied"


def test_an_acp_agents_slash_commands_complete_at_the_start_of_a_message():
    from ui.tk.agent.text import complete_commands, slash_prefix
    conv = Conversation(C)
    assert run(conv, ev("agent.commands", commands=[
        {"name": "review", "description": "Review the diff"},
        {"name": "init", "description": "Write a project guide"}, {"description": "no name"}])) == []
    assert [c["name"] for c in conv.commands] == ["review", "init"]
    assert slash_prefix("/re") == "re" and slash_prefix("/") == ""
    assert slash_prefix("say /re") is None and slash_prefix("/re view") is None
    assert complete_commands("re", conv.commands) == ["/review"]
    assert complete_commands("", conv.commands) == ["/review", "/init"]


@pytest.mark.timeout(30)
def test_open_a_terminal_here_runs_the_command_in_the_project_folder(tmp_path, monkeypatch):
    from ui.tk.agent.actions import open_terminal, terminal_argv
    log = tmp_path / "terminal.log"
    fake = tmp_path / "fake-terminal"
    fake.write_text("#!/bin/sh\n{ pwd; printf '%s|' \"$@\"; echo; "
                    f"env | grep -c '^RIO_' || true; }} > {log}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("TERMINAL", str(fake))
    monkeypatch.setenv("RIO_SECRET_BUS", "tcp://x")
    project = tmp_path / "proj"
    project.mkdir()
    proc = open_terminal(str(project), "claude-agent-acp --cli")
    assert proc.wait(timeout=10) == 0
    where, args, rio_vars = log.read_text().splitlines()
    assert where == str(project)
    assert args == '-e|sh|-c|claude-agent-acp --cli; exec "${SHELL:-sh}"|'
    assert rio_vars == "0"                      # Rio's own variables stay out
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(OSError, match="TERMINAL"):
        terminal_argv("x", {"PATH": str(empty)})


def test_the_status_tip_says_the_state_in_words():
    model = AgentModel()
    assert "idle" in model.status_tip()
    model.apply("agent.turn", {"conversation": "a", "turn": "a.1", "state": "started",
                               "text": "x"})
    assert "working" in model.status_tip()
    model.apply("agent.propose", {"conversation": "a", "turn": "a.1", "proposal": "p",
                                  "call": "c", "path": "f", "kind": "edit", "diff": ""})
    assert model.status_tip().startswith("The agent waits for you: 1 question.")
    model.current = "a"
    model.apply("agent.turn", {"conversation": "a", "turn": "a.1", "state": "error",
                               "error": {"kind": "agent.network", "message": "Cut.",
                                         "next": "Retry."}})
    assert model.status_tip().startswith("The agent's last turn failed: Cut.")


def test_an_acp_conversation_is_named_by_its_agent():
    from ui.tk.agent.model import who
    assert who({"provider": "anthropic"}) == "anthropic"
    assert who({"provider": None, "agent": "claude"}) == "claude (ACP)"
    model = AgentModel()
    model.set_listing([{"conversation": "a", "title": "t", "provider": None, "agent": "codex"}])
    assert model.get("a").provider == "codex (ACP)"


def test_an_agent_restarted_and_files_changed_behind_rios_back_are_shown():
    conv = Conversation(C)
    conv.apply("agent.turn", {"conversation": C, "turn": "t1", "state": "started", "text": "go"})
    conv.apply("agent.restarted", {"conversation": C, "turn": "t1", "agent": "claude",
                                   "resumed": True, "message": "claude stopped; started again."})
    files = [{"path": f"f{i}.py", "change": "modified"} for i in range(14)]
    files[0]["change"] = "created"
    conv.apply("agent.changed_files", {"conversation": C, "turn": "t1", "files": files,
                                       "more": 2})
    notes = [b for b in conv.blocks if b.kind == "note"]
    assert notes[0].text == "claude stopped; started again."
    text = notes[1].text
    assert text.startswith("The agent changed 16 files on disk itself: f0.py (created), ")
    assert "f11.py (modified)" in text and "f12.py" not in text
    assert "and 4 more" in text and "ask before anything is overwritten" in text
    # Nothing changed: no note.
    assert conv.apply("agent.changed_files", {"conversation": C, "turn": "t1", "files": []}) == []


def test_what_changed_files_could_not_compare_is_said_with_the_list_or_alone():
    """A project past the comparison's cap (ADR-0042): its note goes with the card, and is
    said alone when nothing it compared changed."""
    conv = Conversation(C)
    conv.apply("agent.turn", {"conversation": C, "turn": "t1", "state": "started", "text": "go"})
    note = "Files after d019/f0999.txt (in path order) were not compared: the project has more."
    conv.apply("agent.changed_files", {"conversation": C, "turn": "t1", "more": 0,
                                       "files": [{"path": "a.py", "change": "modified"}],
                                       "unchecked": {"after": "d019/f0999.txt", "note": note}})
    conv.apply("agent.changed_files", {"conversation": C, "turn": "t1", "files": [], "more": 0,
                                       "unchecked": {"after": "d019/f0999.txt", "note": note}})
    card, alone = [b for b in conv.blocks if b.kind == "note"]
    assert card.text.startswith("The agent changed 1 file on disk itself: a.py (modified)")
    assert card.text.endswith(note) and card.data["unchecked"] == note
    assert alone.text == note and "changed_files" not in alone.data


def test_a_note_event_is_shown_as_a_note_block():
    conv = Conversation(C)
    conv.apply("agent.turn", {"conversation": C, "turn": "t1", "state": "started", "text": "go"})
    conv.apply("agent.note", {"conversation": C, "turn": "t1", "note": "auto_allowed",
                              "text": "mcp__rio__read_buffer: auto-allowed"})
    notes = [b for b in conv.blocks if b.kind == "note"]
    assert [n.text for n in notes] == ["mcp__rio__read_buffer: auto-allowed"]
    assert conv.apply("agent.note", {"conversation": C, "turn": "t1", "text": ""}) == []


def test_an_acp_agents_modes_and_select_options_become_its_pickers():
    """agent.modes / agent.config (as the session publishes them) → the header's pickers;
    grouped select values are flattened, non-select options are not pickers."""
    from ui.tk.agent.pickers import describe, pickers
    conv = Conversation(C)
    assert pickers(conv) == [] and run(conv, ev("agent.modes", current="ask", available=[
        {"id": "ask", "name": "Ask", "description": ""},
        {"id": "code", "name": "Code", "description": ""}])) == []
    run(conv, ev("agent.config", options=[
        {"id": "model", "name": "Model", "type": "select", "currentValue": "fast",
         "options": [{"value": "fast", "name": "Fast"},
                     {"group": "big", "name": "Big", "options": [{"value": "smart",
                                                                  "name": "Smart"}]}]},
        {"id": "think", "name": "Think", "type": "boolean", "currentValue": True}]))
    assert describe(conv) == [
        {"id": "mode", "label": "Agent mode", "current": "ask", "values": ["ask", "code"]},
        {"id": "model", "label": "Model", "current": "fast", "values": ["fast", "smart"]}]
    assert conv.blocks == []          # the header shows them, not the conversation
    run(conv, ev("agent.modes", current="code", available=[{"id": "ask"}, {"id": "code"}]))
    assert pickers(conv)[0]["current"] == "code"
    assert pickers(conv)[0]["choices"] == [("ask", "ask"), ("code", "code")]


def test_a_terminal_sign_in_shows_the_exact_command_and_an_agent_method_its_button():
    """The card's text for each kind of sign-in method: the terminal command exactly as the
    session sent it (``shell``: variables and quoting), never a list's repr."""
    from ui.tk.agent.extras import sign_in_lines
    what, command = sign_in_lines({"id": "t", "name": "Log in", "type": "terminal",
                                   "command": ["claude-agent-acp", "--cli", "auth login"],
                                   "shell": "HOME=/h claude-agent-acp --cli 'auth login'"})
    assert command == "HOME=/h claude-agent-acp --cli 'auth login'" and "terminal" in what
    assert sign_in_lines({"id": "t", "name": "Log in", "type": "terminal",
                          "command": ["a b", "--x"]})[1] == "'a b' --x"
    assert sign_in_lines({"id": "k", "name": "Key", "type": "env_var",
                          "vars": ["FAKE_API_KEY"]})[0] == \
        "Key: set FAKE_API_KEY and restart Rio"
    what, command = sign_in_lines({"id": "b", "name": "ChatGPT", "type": "agent"})
    assert command == "" and "Sign in" in what


def test_pending_from_before_the_window_is_drawn_once():
    """agent.pending's snapshot: what the model has not seen is drawn; what it saw live (or
    drew from an earlier snapshot) is not drawn twice."""
    model = AgentModel()
    snapshot = [{"topic": "agent.turn", "data": {"conversation": C, "turn": T1,
                                                  "state": "started", "text": "edit"}},
                {"topic": "agent.propose", "data": {"conversation": C, "turn": T1,
                                                     "proposal": f"{T1}.1", "path": "n.txt",
                                                     "kind": "edit", "diff": DIFF}},
                {"topic": "agent.permission", "data": {"conversation": C, "turn": T1,
                                                        "request": "r1", "title": "rm",
                                                        "options": []}},
                {"topic": "agent.delta", "data": {"conversation": C, "turn": T1,
                                                   "text": "not a waiting thing"}}]
    fresh = model.unseen(snapshot)
    assert [t for t, _ in fresh] == ["agent.turn", "agent.propose", "agent.permission"]
    for topic, data in fresh:
        model.apply(topic, data)
    conv = model.get(C)
    assert [b.kind for b in conv.blocks] == ["user", "proposal", "permission"]
    assert model.waiting_count() == 2 and model.unseen(snapshot) == []


def test_pending_snapshot_gives_the_agents_pickers_unless_a_live_update_did():
    """agent.pending also carries what a running agent offers (agent.modes/config/commands): a
    window started late gets its pickers from it; one that heard a live update keeps that."""
    model = AgentModel()
    offer = [{"topic": "agent.modes", "data": {"conversation": C, "current": "ask",
                                                "available": [{"id": "ask", "name": "Ask"}]}},
             {"topic": "agent.config", "data": {"conversation": C, "options": [
                 {"id": "model", "type": "select", "currentValue": "m1", "options": []}]}},
             {"topic": "agent.commands", "data": {"conversation": C,
                                                   "commands": [{"name": "plan"}]}}]
    fresh = model.unseen(offer)
    assert [t for t, _ in fresh] == ["agent.modes", "agent.config", "agent.commands"]
    for topic, data in fresh:
        model.apply(topic, data)
    conv = model.get(C)
    assert conv.agent_modes["current"] == "ask" and conv.agent_config[0]["id"] == "model"
    assert conv.commands == [{"name": "plan"}] and model.unseen(offer) == []


def test_the_sign_in_error_under_the_card_is_one_short_line():
    """agent.sign_in_needed after its sign-in card: the error line points at the card instead
    of repeating every method's command; without a card it keeps the whole message."""
    model = AgentModel()
    shell = "npx pkg --login"
    error = {"conversation": C, "turn": T1, "kind": "agent.sign_in_needed",
             "message": "The agent 'x' needs you to sign in (it answered session/new with "
                        "'Authentication required').",
             "next": f"Sign in: run `{shell}` in a terminal — then send the message again."}
    model.apply("agent.sign_in", {"conversation": C, "turn": T1, "state": "needed",
                                  "agent": "x", "methods": [{"id": "t", "name": "Log in",
                                                             "type": "terminal",
                                                             "shell": shell}]})
    _, changes = model.apply("agent.error", error)
    line = model.get(C).blocks[changes[0][1]]
    assert line.kind == "error" and "\n" not in line.text and shell not in line.text
    assert "card above" in line.text and line.data["next"] == error["next"]
    other = AgentModel()
    other.apply("agent.error", error)
    assert shell in other.get(C).blocks[-1].text
