"""The agent panel's model, without Tk: events → blocks and state, Markdown, history, prefs (an
ACP agent's own events: test_agent_model_acp.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.desktop.agent.model_events import DIFF, T1, C, ev, run
from ui.tk.agent.history import blocks_from_history
from ui.tk.agent.model import (
    AgentModel,
    Conversation,
    MarkdownStream,
    diff_line_tag,
    fold_output,
    inline_spans,
    markdown_line,
    render_markdown,
)
from ui.tk.agent.settings import PanelPrefs, load_panel_prefs, save_panel_prefs

# --- Markdown ----------------------------------------------------------------------------------

def test_inline_code_and_bold():
    assert inline_spans("a `b` **c** d") == [("a ", ()), ("b", ("md_code",)), (" ", ()),
                                             ("c", ("md_bold",)), (" d", ())]


def test_line_kinds():
    assert markdown_line("## Plan", False) == ([("Plan", ("md_h2",))], False)
    spans, _ = markdown_line("- one `x`", False)
    assert spans[0] == ("  • ", ("md_list",)) and ("x", ("md_list", "md_code")) in spans
    spans, _ = markdown_line("2. two", False)
    assert spans[0] == ("  2. ", ("md_list",))
    assert markdown_line("```python", False) == ([], True)
    assert markdown_line("# not a heading in code", True) == \
        ([("# not a heading in code", ("md_pre",))], True)
    assert markdown_line("```", True) == ([], False)


def test_the_stream_finishes_lines_once_and_keeps_the_tail():
    s = MarkdownStream()
    assert s.feed("# Ti") == ([], "# Ti")
    lines, tail = s.feed("tle\nsome `co")
    assert lines == [[("Title", ("md_h1",))]] and tail == "some `co"
    lines, tail = s.feed("de`\n```\nx = 1\n")
    assert lines == [[("some ", ()), ("code", ("md_code",))], [("x = 1", ("md_pre",))]]
    assert tail == "" and s.tail_tags() == ("md_pre",)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["# H", "- item", "1. n", "```", "x = `1`", "**b**", "plain",
                                 "", "  - sub"]), max_size=12),
       st.lists(st.integers(1, 7), min_size=1, max_size=30))
def test_streaming_in_any_chunks_renders_as_the_whole_text(lines, cuts):
    """However the text is cut into deltas, the finished lines are those of the whole text."""
    text = "\n".join(lines) + "\n"
    s = MarkdownStream()
    got, i, k = [], 0, 0
    while i < len(text):
        n = cuts[k % len(cuts)]
        k += 1
        done, _tail = s.feed(text[i:i + n])
        got += done
        i += n
    assert got == render_markdown(text)


def test_diff_lines_and_folded_output():
    assert [diff_line_tag(line) for line in DIFF.splitlines()] == \
        ["diff_file", "diff_file", "diff_hunk", "diff_ctx", "diff_del", "diff_add"]
    rows = fold_output("exit code 1\n" + "\n".join(f"l{i}" for i in range(10)))
    assert rows[0] == "… 4 earlier lines folded …" and rows[-1] == "l9" and len(rows) == 7
    assert fold_output("exit code 0\n") == ["(no output)"]


# --- a conversation from events ----------------------------------------------------------------

def test_a_turn_streams_into_one_block_and_ends_idle():
    conv = Conversation(C)
    changes = run(conv, ev("agent.turn", state="started", text="hi"),
                  ev("agent.delta", text="Hel"), ev("agent.delta", text="lo"))
    assert changes == [("block", 0), ("block", 1), ("text", 1, "lo")]
    assert conv.state == "thinking"
    run(conv, ev("agent.message", role="assistant", text="Hello"),   # already shown
        ev("agent.turn", state="done"))
    assert conv.state == "idle"
    assert conv.messages() == [{"role": "user", "text": "hi"},
                               {"role": "assistant", "text": "Hello"}]


def test_a_proposal_waits_then_is_answered_and_the_turn_end_offers_save_and_undo():
    conv = Conversation(C)
    run(conv, ev("agent.turn", state="started", text="rename"),
        ev("agent.tool", call="c1", name="propose_edit", input={"path": "notes.txt"}),
        ev("agent.propose", proposal="p1", call="c1", path="notes.txt", kind="edit",
           diff=DIFF))
    assert conv.state == "waiting"
    assert conv.pending_list() == [{"proposal": "p1", "path": "notes.txt", "turn": T1,
                                    "kind": "edit"}]
    assert conv.decided("p1", "applied") == [("update", 2)]
    assert conv.state == "thinking"
    changes = run(conv, ev("agent.tool_result", call="c1", name="propose_edit", ok=True,
                           summary="notes.txt: edited", truncated=False),
                  ev("agent.turn", state="done", buffers=["b1"]))
    assert ("update", 1) in changes and conv.blocks[1].data["status"] == "ok"
    end = conv.last_turn_end()
    assert end is not None and end.data["buffers"] == ["b1"] and end.data["undo"] == "available"
    # The user types in that buffer: the turn's step is not the latest any more.
    assert conv.buffer_changed("b1", "ui:1") and end.data["undo"] == "superseded"


def test_a_proposal_answered_elsewhere_is_closed_by_its_tool_result():
    conv = Conversation(C)
    run(conv, ev("agent.turn", state="started", text="x"),
        ev("agent.propose", proposal="p1", call="c9", path="a", kind="edit", diff=DIFF),
        ev("agent.tool_result", call="c9", name="propose_edit", ok=False,
           summary="rejected by the user", truncated=False))
    assert not conv.pending and conv.blocks[1].data["decision"] == "not applied"


def test_errors_show_once_with_their_next_action():
    conv = Conversation(C)
    err = {"kind": "agent.session_died", "message": "The agent process stopped.",
           "next": "Send your message again."}
    run(conv, ev("agent.turn", state="started", text="x"), ev("agent.delta", text="Part"),
        ev("agent.error", partial=True, **err), ev("agent.turn", state="error", error=err))
    errors = [m for m in conv.messages() if m["role"] == "error"]
    assert errors == [{"role": "error",
                       "text": "The agent process stopped. — Send your message again."}]
    assert conv.state == "error"
    run(conv, ("agent.turn", {"conversation": C, "turn": f"{C}.2", "state": "started",
                              "text": "again"}))
    assert conv.state == "thinking" and conv.error is None


def test_an_acp_agents_error_keeps_its_words_and_details_for_the_view():
    from ui.tk.agent.model import error_lines
    conv = Conversation(C)
    said = "Invalid value for 'reasoning.effort'.\n" + "y" * 300
    err = {"kind": "agent.request_rejected", "message": "The agent 'codex' failed: … It said: "
           "Invalid value…", "next": "Change its model settings.",
           "details": {"agent": "codex", "code": -32603, "said": said,
                       "details": '{"param": "reasoning.effort"}'}}
    run(conv, ev("agent.turn", state="started", text="x"), ev("agent.error", **err),
        ev("agent.turn", state="error", error=err))
    block = [b for b in conv.blocks if b.kind == "error"]
    assert len(block) == 1 and block[0].data["details"]["said"] == said
    assert error_lines(block[0].data) == [("The agent said", said),
                                          ("Details", '{"param": "reasoning.effort"}')]
    # Words the message already holds whole are not repeated; other errors show nothing more.
    assert error_lines({"message": "It said: short.", "details": {"said": "short."}}) == []
    assert error_lines({"message": "x", "details": {"exit_code": 3}}) == []
    assert error_lines({"message": "x"}) == []


def test_stop_and_interrupt_close_waiting_proposals():
    conv = Conversation(C)
    run(conv, ev("agent.turn", state="started", text="x"),
        ev("agent.propose", proposal="p1", call="c1", path="a", kind="edit", diff=DIFF))
    run(conv, ("agent.turn", {"conversation": C, "turn": f"{C}.2", "state": "started",
                              "text": "no, other"}))
    assert conv.blocks[1].data["decision"] == "interrupted" and conv.turn == f"{C}.2"
    run(conv, ("agent.propose", {"conversation": C, "turn": f"{C}.2", "proposal": "p2",
                                 "call": "c2", "path": "a", "kind": "edit", "diff": DIFF}),
        ("agent.turn", {"conversation": C, "turn": f"{C}.2", "state": "stopped"}))
    assert conv.blocks[3].data["decision"] == "stopped" and conv.state == "idle"
    assert conv.blocks[-1].kind == "note"


def test_the_model_state_puts_a_waiting_question_first():
    model = AgentModel()
    model.apply("agent.turn", {"conversation": "a", "turn": "a.1", "state": "started",
                               "text": "x"})
    assert model.state == "thinking" and model.status_text() == "Thinking…"
    model.apply("agent.propose", {"conversation": "b", "turn": "b.1", "proposal": "p",
                                  "call": "c", "path": "f", "kind": "edit", "diff": ""})
    assert model.state == "waiting" and model.status_text() == "Waiting (1)"
    model.current = "a"
    assert model.waiting_elsewhere().id == "b"


def test_history_rebuilds_user_text_tools_and_errors():
    history = {"conversation": C, "provider": "anthropic", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "read it"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "t1", "name": "fs_read", "input": {"path": "a"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "2 lines\nmore", "is_error": False}]},
        {"role": "assistant", "content": [{"type": "text", "text": "It has 2 lines."}]},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
    ], "turns": [
        {"turn": T1, "status": "done"},
        {"turn": f"{C}.2", "status": "error", "error": {
            "kind": "agent.network", "message": "Cut.", "next": "Retry."}}]}
    blocks = blocks_from_history(history)
    assert [b.kind for b in blocks] == ["user", "assistant", "tool", "assistant", "user",
                                        "error"]
    assert blocks[2].data["summary"] == "2 lines" and blocks[2].turn == T1
    assert blocks[4].turn == f"{C}.2" and blocks[5].text == "Cut. — Retry."


# --- preferences -------------------------------------------------------------------------------

def test_prefs_round_trip_keep_other_keys_and_refuse_nonsense(tmp_path):
    path = tmp_path / "ui.json"
    path.write_text(json.dumps({"theme": "dark", "agent_side": "middle", "agent_width": "x"}))
    prefs = load_panel_prefs(path)
    assert prefs == PanelPrefs()
    save_panel_prefs(path, PanelPrefs(side="left", width=500, open=True))
    data = json.loads(path.read_text())
    assert data["theme"] == "dark" and data["agent_side"] == "left"
    assert load_panel_prefs(path) == PanelPrefs(side="left", width=500, open=True)
    assert load_panel_prefs(tmp_path / "missing.json") == PanelPrefs()


# --- issue 18: what the panel says ------------------------------------------------------------

def test_code_in_bold_loses_its_backticks():
    assert inline_spans("Run **`make test`** now") == [
        ("Run ", ()), ("make test", ("md_code", "md_bold_code")), (" now", ())]
    assert inline_spans("**see `a.py` first**") == [
        ("see ", ("md_bold",)), ("a.py", ("md_code", "md_bold_code")),
        (" first", ("md_bold",))]
    assert inline_spans("`**not bold**`") == [("**not bold**", ("md_code",))]


def test_tool_output_loses_an_agents_fences_and_json_reads_as_lines():
    assert fold_output("```console\n$ make\nok\n```") == ["$ make", "ok"]
    assert fold_output('{"applied":true,"message":"Applied the edit to a.py."}') == \
        ["applied: true", "message: Applied the edit to a.py."]
    assert fold_output("{not json}") == ["{not json}"]


def test_the_last_line_of_an_ended_turn_is_finished():
    """A turn's text that does not end in a newline: its last line is drawn as Markdown once
    the turn ends (the view finishes the line on ("finish", i)), not when more text comes."""
    conv = Conversation(C)
    run(conv, ev("agent.turn", state="started", text="x"), ev("agent.delta", text="Use **b**"))
    assert run(conv, ev("agent.turn", state="done")) == [("finish", 1)]


def test_a_proposals_tool_result_says_how_it_was_answered():
    """A card answered elsewhere, or replayed from the history, says what the answer was —
    not "Not applied. propose_edit: rejected"."""
    from ui.tk.agent.model import result_decision
    assert result_decision(True, "notes.txt: edited") == ("applied", "")
    assert result_decision(False, "propose_edit: rejected") == ("rejected", "")
    assert result_decision(False, "notes.txt: interrupted") == ("interrupted", "")
    assert result_decision(False, "notes.txt: not answered") == ("timed_out", "")
    assert result_decision(False, "old text not found") == ("not applied",
                                                            "old text not found")
    conv = Conversation(C)
    run(conv, ev("agent.turn", state="started", text="x"),
        ev("agent.propose", proposal="p1", call="c1", path="a", kind="edit", diff=DIFF),
        ev("agent.tool_result", call="c1", name="propose_edit", ok=False,
           summary="propose_edit: rejected", truncated=False))
    assert conv.blocks[1].data["decision"] == "rejected" and "reason" not in conv.blocks[1].data


MCP_TITLES = [("claude", "mcp__rio__propose_edit"), ("codex", "Tool: rio/propose_edit"),
              ("opencode", "rio_propose_edit")]


def rio_mcp(call="t1.m1"):
    return ev("agent.tool", call=call, name="propose_edit", input={"path": "a.py"},
              source="mcp")


@pytest.mark.parametrize("agent,title", MCP_TITLES)
def test_an_mcp_call_is_one_tool_line_whichever_comes_first(agent, title):
    """Rio's own line for a call of its MCP tools and the agent's own tool call for it are
    one line, named and answered by Rio; the agent's result (raw JSON) is not shown."""
    agent_tool = ev("agent.tool", call="a1", name="other", input={}, title=title,
                    kind="other", status="pending")
    agent_done = ev("agent.tool_update", call="a1", status="completed")
    agent_result = ev("agent.tool_result", call="a1", name="other", ok=True,
                      summary=f"{title}: done", truncated=False,
                      output='{"applied":true,"message":"ok"}')
    rio_result = ev("agent.tool_result", call="t1.m1", name="propose_edit", ok=True,
                    summary="a.py: edited", truncated=False)
    for order in ([agent_tool, rio_mcp()], [rio_mcp(), agent_tool]):
        conv = Conversation(C)
        run(conv, ev("agent.turn", state="started", text="x"), *order, agent_done,
            rio_result, agent_result)
        lines = [b for b in conv.blocks if b.kind == "tool" and not b.data.get("hidden")]
        assert len(lines) == 1, agent
        assert lines[0].data["name"] == "propose_edit" and lines[0].data["status"] == "ok"
        assert lines[0].data["summary"] == "a.py: edited" and not lines[0].data.get("output")


@pytest.mark.parametrize("agent,title", MCP_TITLES)
def test_an_agents_line_named_later_joins_rios_line(agent, title):
    """The agent opens its call untitled and names it in an update, after Rio's line."""
    conv = Conversation(C)
    run(conv, ev("agent.turn", state="started", text="x"),
        ev("agent.tool", call="a1", name="other", input={}, title="", status="pending"),
        rio_mcp())
    changes = run(conv, ev("agent.tool_update", call="a1", title=title))
    assert changes == [("update", 1)] and conv.blocks[1].data.get("hidden")
    assert run(conv, ev("agent.tool_update", call="a1", status="completed")) == []
    assert [b.data["name"] for b in conv.blocks if b.kind == "tool"
            and not b.data.get("hidden")] == ["propose_edit"]
    # another tool of another server keeps its own line
    run(conv, ev("agent.tool", call="a2", name="other", input={}, title="mcp__git__status"))
    assert conv.blocks[-1].kind == "tool" and not conv.blocks[-1].data.get("hidden")


def test_text_that_comes_while_a_card_waits_goes_before_the_call():
    """opencode sends a text part's first chunk after the tool call it preceded: a turn waits
    on the card's call, so its text was written before it, and is drawn there."""
    conv = Conversation(C)
    run(conv, ev("agent.turn", state="started", text="x"),
        ev("agent.tool", call="a1", name="other", input={}, title="rio_propose_edit"),
        rio_mcp(),
        ev("agent.propose", proposal="p1", call="t1.m1", path="a.py", kind="edit", diff=DIFF))
    assert run(conv, ev("agent.delta", text="I will edit ")) == [("reset",)]
    assert run(conv, ev("agent.delta", text="a.py.")) == [("update", 1)]
    assert [b.kind for b in conv.blocks] == ["user", "assistant", "tool", "proposal"]
    assert conv.blocks[1].text == "I will edit a.py."
    assert conv.pending_list()[0]["proposal"] == "p1"
    assert conv.decided("p1", "applied") == [("update", 3)]
    # once answered, the agent's next words go after it, as usual
    assert run(conv, ev("agent.delta", text="Done.")) == [("block", 4)]


def test_the_turn_end_card_follows_undo_redo_and_saves_from_anywhere():
    from ui.tk.agent.model import turn_end_text
    conv = Conversation(C)
    run(conv, ev("agent.turn", state="started", text="x"),
        ev("agent.turn", state="done", buffers=["b1", "b2"]))
    end = conv.last_turn_end()
    end.data["names"] = {"b1": "a.py", "b2": "b.py"}
    assert turn_end_text(end.data) == "Changed, not saved yet: a.py, b.py"
    assert conv.buffer_changed("b1", "ui:1", "undo", "Agent: x") == [("update", 1)]
    assert turn_end_text(end.data) == "Changed, not saved yet: a.py (undone), b.py"
    assert end.data["undo"] == "available"          # b.py's step is still the latest
    conv.buffer_changed("b2", "ui:1", "undo", "Agent: x")
    assert end.data["undo"] == "undone" and turn_end_text(end.data) == "Undone: a.py, b.py"
    conv.buffer_changed("b2", "ui:1", "redo", "Agent: x")
    assert end.data["undo"] == "available"
    assert conv.buffer_saved("b1") == [] and conv.buffer_saved("b2") == [("update", 1)]
    assert turn_end_text(end.data).startswith("Saved: ")


def test_conversation_labels_name_the_agent_first_and_are_told_apart():
    from ui.tk.agent.settings import conversation_labels
    listing = [{"conversation": "aaaaaa1", "title": "Fix it", "agent": "claude",
                "updated": 1_700_000_000},
               {"conversation": "bbbbbb2", "title": "Fix it", "agent": "claude",
                "updated": 1_700_000_600},
               {"conversation": "cccccc3", "title": "x" * 90, "provider": "anthropic"}]
    labels = conversation_labels(listing)
    assert [cid for _, cid in labels] == ["aaaaaa1", "bbbbbb2", "cccccc3"]
    assert all(label.startswith("claude (ACP) · Fix it · ") for label, _ in labels[:2])
    assert len({label for label, _ in labels}) == 3
    assert labels[2][0].startswith("anthropic · xxx") and labels[2][0].endswith("…")


def test_an_agent_that_offers_its_mode_twice_gets_one_picker():
    """claude-agent-acp and codex-acp offer their mode as modes AND as a config option of
    category mode: one picker ("Agent mode: Mode:" was shown); codex's three are named as it
    names them."""
    from ui.tk.agent.pickers import describe, pickers
    modes = [{"id": "default", "name": "Default", "description": ""},
             {"id": "plan", "name": "Plan", "description": ""}]
    claude = Conversation(C)
    run(claude, ev("agent.modes", current="default", available=modes),
        ev("agent.config", options=[
            {"id": "mode", "name": "Mode", "category": "mode", "type": "select",
             "currentValue": "default", "options": [{"value": "default", "name": "Default"},
                                                    {"value": "plan", "name": "Plan"}]},
            {"id": "model", "name": "Model", "category": "model", "type": "select",
             "currentValue": "sonnet", "options": [{"value": "sonnet", "name": "Sonnet"}]}]))
    assert [(p["id"], p["label"]) for p in describe(claude)] == [("mode", "Agent mode"),
                                                                 ("model", "Model")]
    assert pickers(claude)[0]["config"] is True       # set through set_config_option
    codex = Conversation(C)
    presets = [{"value": v, "name": v.title()} for v in ("read-only", "auto", "full-access")]
    run(codex, ev("agent.modes", current="auto", available=[
        {"id": p["value"], "name": p["name"], "description": ""} for p in presets]),
        ev("agent.config", options=[
            {"id": "mode", "name": "Approval Preset", "type": "select",
             "currentValue": "auto", "options": presets},
            {"id": "model", "name": "Model", "type": "select", "currentValue": "gpt-5",
             "options": [{"value": "gpt-5", "name": "gpt-5"}]},
            {"id": "reasoning_effort", "name": "Reasoning Effort", "category": "thought_level",
             "type": "select", "currentValue": "medium",
             "options": [{"value": "medium", "name": "Medium"}]}]))
    assert [p["label"] for p in describe(codex)] == ["Approval Preset", "Model",
                                                     "Reasoning Effort"]


# --- issue 18: a conversation reloaded from history shows what it showed ------------------------

def acp_turn_events(turn: str) -> list[tuple[str, dict]]:
    """A turn as an ACP agent's session publishes it: text split by tool calls, a plan that
    changes, a permission question answered, a proposal of Rio's MCP tools rejected, files
    changed on disk, buffers left unsaved."""
    def e(topic, **data):
        return topic, {"conversation": C, "turn": turn, **data}
    plan = [{"content": "write c_to_f", "priority": "high", "status": "in_progress"}]
    done_plan = [{**plan[0], "status": "completed"}]
    return [
        e("agent.turn", state="started", text="temperatures"),
        e("agent.thought", text="Two functions."),
        e("agent.plan", entries=plan),
        e("agent.delta", text="Writing "), e("agent.delta", text="c_to_f."),
        e("agent.tool", call="a1", name="edit", input={}, title="Write temp.py", kind="edit",
          status="pending"),
        e("agent.tool_update", call="a1", input={"path": "temp.py"}),
        e("agent.permission", request="r1", call="a1", title="Write temp.py",
          tool_kind="edit", input={"path": "temp.py"},
          options=[{"id": "yes", "name": "Yes", "kind": "allow_once"}]),
        e("agent.permission_closed", request="r1", kind="allow_once", how="answered"),
        e("agent.tool_result", call="a1", name="edit", ok=True, summary="Write temp.py: done",
          truncated=False, output="```console\nwrote 2 lines\n```"),
        e("agent.delta", text="Now one for f_to_c."),
        e("agent.tool", call="a2", name="other", input={}, title="mcp__rio__propose_edit"),
        e("agent.tool", call=f"{turn}.m1", name="propose_edit", input={"path": "temp.py"},
          source="mcp"),
        e("agent.propose", proposal=f"{turn}.1", call=f"{turn}.m1", path="temp.py",
          kind="edit", diff=DIFF),
        e("agent.tool_result", call=f"{turn}.m1", name="propose_edit", ok=False,
          summary="propose_edit: rejected", truncated=False),
        e("agent.tool_result", call="a2", name="other", ok=True, summary="done",
          truncated=False, output='{"applied":false}'),
        e("agent.plan", entries=done_plan),
        e("agent.delta", text="Both are there."),
        e("agent.usage", used=10, size=100),
        e("agent.changed_files", files=[{"path": "temp.py", "change": "created",
                                         "diff": "+x\n"}], more=0),
        e("agent.message", role="assistant",
          text="Writing c_to_f.Now one for f_to_c.Both are there."),
        e("agent.turn", state="done", buffers=["b1"],
          changed_files=[{"path": "temp.py", "change": "created"}]),
    ]


def shown_of(blocks):
    return [(b.kind, b.text, {k: v for k, v in b.data.items() if k not in ("undo",)})
            for b in blocks if not b.data.get("hidden")]


def test_a_reloaded_conversation_shows_the_blocks_it_showed():
    from rio.agent.shown import ShownRecorder
    events = acp_turn_events(T1)
    live = Conversation(C)
    recorder = ShownRecorder()
    for topic, data in events:
        live.apply(topic, data)
        recorder.add(topic, data)
    record = recorder.record()
    assert not record["cut"]
    # compacted: the deltas of one text segment are one event; updates and plans folded
    topics = [e["topic"] for e in record["events"]]
    assert topics.count("agent.delta") == 3 and "agent.tool_update" not in topics
    assert "agent.usage" not in topics and "agent.message" not in topics
    history = {"conversation": C, "agent": "claude", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "temperatures"}]},
        {"role": "assistant", "content": [{"type": "text", "text":
                                           "Writing c_to_f.Now one for f_to_c.Both are there."}]}],
        "turns": [{"turn": T1, "text": "temperatures", "status": "done",
                   "changes": {"paths": ["temp.py"]}, "shown": record["events"]}]}
    reloaded = blocks_from_history(history)
    assert [b.kind for b in reloaded if not b.data.get("hidden")] == [
        "user", "thought", "plan", "assistant", "tool", "permission", "assistant", "tool",
        "proposal", "assistant", "note", "turn_end"]
    texts = [b.text for b in reloaded if b.kind == "assistant"]
    assert texts == ["Writing c_to_f.", "Now one for f_to_c.", "Both are there."]
    assert shown_of(reloaded)[:-1] == shown_of(live.blocks)[:-1]
    by_kind = {b.kind: b for b in reloaded}
    assert by_kind["permission"].data["decision"] == "allow_once"
    assert by_kind["proposal"].data["decision"] == "rejected"
    assert by_kind["plan"].data["entries"][0]["status"] == "completed"
    assert by_kind["turn_end"].data["paths"] == ["temp.py"]
    assert by_kind["turn_end"].data["undo"] == "check"     # the panel asks the buffers


def test_history_mixes_old_turns_from_messages_and_new_ones_from_what_they_showed():
    from rio.agent.shown import ShownRecorder
    T2 = f"{C}.2"
    recorder = ShownRecorder()
    for topic, data in acp_turn_events(T2):
        recorder.add(topic, data)
    history = {"conversation": C, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "old"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Old answer."}]},
        {"role": "user", "content": [{"type": "text", "text": "temperatures"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "glued"}]}],
        "turns": [{"turn": T1, "text": "old", "status": "done"},
                  {"turn": T2, "text": "temperatures", "status": "done",
                   "shown": recorder.record()["events"]}]}
    blocks = blocks_from_history(history)
    assert [(b.kind, b.text) for b in blocks[:2]] == [("user", "old"),
                                                      ("assistant", "Old answer.")]
    assert "glued" not in [b.text for b in blocks]
    assert [b.text for b in blocks if b.kind == "assistant"][1:] == [
        "Writing c_to_f.", "Now one for f_to_c.", "Both are there."]


def test_what_a_turn_shows_is_bounded_and_says_when_it_was_cut():
    from rio.agent.shown import ShownRecorder
    recorder = ShownRecorder(max_chars=2000, max_events=50)

    def e(topic, **data):
        return topic, {"conversation": C, "turn": T1, **data}
    recorder.add(*e("agent.turn", state="started", text="big"))
    for i in range(200):
        recorder.add(*e("agent.tool", call=f"c{i}", name="read", input={"path": "x" * 50}))
        recorder.add(*e("agent.delta", text="y" * 100))
    recorder.add(*e("agent.turn", state="done"))
    record = recorder.record()
    assert record["cut"] and record["events"][-1]["topic"] == "agent.turn"
    import json as _json
    assert len(_json.dumps(record["events"])) < 2000 * 1.5
    blocks = blocks_from_history({"conversation": C, "messages": [], "turns": [
        {"turn": T1, "text": "big", "status": "done", "shown": record["events"],
         "shown_cut": True}]})
    assert blocks[-1].kind == "note" and "too long" in blocks[-1].text


def test_a_shell_command_titled_like_an_mcp_tool_keeps_its_own_line():
    """Only the agents' own shape names one of Rio's tools: a command a model titled
    ``mcp__rio__propose_edit`` (claude titles a command with its text, kind execute) is not
    hidden behind Rio's line."""
    from ui.tk.agent.model import mcp_tool_of
    assert mcp_tool_of("mcp__rio__propose_edit", "other") == "propose_edit"
    assert mcp_tool_of("Tool: rio/read_buffer") == "read_buffer"
    assert mcp_tool_of("mcp__rio__propose_edit", "execute") is None
    assert mcp_tool_of("mcp__rio__propose_edit; rm -rf x", "other") is None
    assert mcp_tool_of("rio_no_such_tool", "other") is None
    conv = Conversation(C)
    run(conv, ev("agent.turn", state="started", text="x"), rio_mcp(),
        ev("agent.tool", call="a1", name="execute", input={}, title="mcp__rio__propose_edit",
           kind="execute"))
    assert [b.kind for b in conv.blocks if not b.data.get("hidden")] == ["user", "tool", "tool"]
