"""The conversation store: records, persistence, torn writes, turn lifecycle."""

from __future__ import annotations

import itertools
import json
import os
import stat

import pytest

from rio.agent.conversations import (
    DEFAULT_TITLE,
    INTERRUPTED_RESULT,
    ConversationStore,
    check_conversation_id,
    conversation_of_turn,
    dangling_tool_calls,
    undo_label,
)
from rio.protocol.errors import AgentError
from rio.providers.base import Message, TextBlock, ToolResultBlock, ToolUseBlock


@pytest.fixture
def clock():
    ticks = itertools.count(1000)
    return lambda: float(next(ticks))


@pytest.fixture
def store(tmp_path, clock):
    return ConversationStore(tmp_path / "conversations", clock=clock)


def reopen(store: ConversationStore) -> ConversationStore:
    return ConversationStore(store.folder)


def test_create_is_private_and_listed(store):
    conv = store.create(provider="anthropic", model="m1")
    assert conv.title == DEFAULT_TITLE and conv.state == "idle"
    assert stat.S_IMODE(store.folder.stat().st_mode) == 0o700
    for suffix in (".json", ".jsonl"):
        assert stat.S_IMODE((store.folder / f"{conv.conversation}{suffix}").stat().st_mode) == 0o600
    listed = reopen(store).list()
    assert [c.summary() for c in listed] == [{
        "conversation": conv.conversation, "title": DEFAULT_TITLE, "provider": "anthropic",
        "turns": 0, "updated": conv.updated, "state": "idle"}]
    assert reopen(store).get(conv.conversation).model == "m1"


def test_a_turn_records_messages_in_order_and_survives_a_restart(store):
    cid = store.create().conversation
    conv, turn = store.begin_turn(cid, "Fix the bug in main.py please")
    assert turn.turn == f"{cid}.1" and turn.status == "running" and conv.state == "running"
    assert conv.title == "Fix the bug in main.py please"   # the first message names it
    tool = ToolUseBlock("call1", "fs_read", {"path": "main.py"})
    store.add_messages(turn.turn, [Message.assistant("Looking.", (tool,)),
                                   Message.tool_results((ToolResultBlock("call1", "x = 1"),)
                                                        ).to_dict(),
                                   Message.assistant("Done.")])
    ended = store.end_turn(turn.turn, "done")
    assert ended.status == "done" and ended.ended is not None

    again = reopen(store).get(cid)
    history = again.history()
    assert [m["role"] for m in history["messages"]] == ["user", "assistant", "user", "assistant"]
    assert history["messages"][1]["content"][1] == {"type": "tool_use", "id": "call1",
                                                    "name": "fs_read", "input": {"path": "main.py"}}
    assert history["turns"] == [{"turn": f"{cid}.1", "text": "Fix the bug in main.py please",
                                 "status": "done", "started": turn.started,
                                 "ended": ended.ended}]
    assert again.state == "idle"


def test_a_second_send_while_running_is_busy(store):
    cid = store.create().conversation
    store.begin_turn(cid, "one")
    with pytest.raises(AgentError) as err:
        store.begin_turn(cid, "two")
    assert err.value.kind == "agent.busy" and "Stop" in err.value.next


def test_a_torn_last_line_loses_nothing_recorded_before_it(store):
    cid = store.create().conversation
    _, turn = store.begin_turn(cid, "hello")
    store.add_messages(turn.turn, [Message.assistant("partial answer")])
    log = store.folder / f"{cid}.jsonl"
    with open(log, "ab") as fh:  # a crash in the middle of the next append
        fh.write(b'{"t":"message","turn":"' + turn.turn.encode() + b'","message":{"role":"ass')
    store2 = reopen(store)
    conv = store2.get(cid)
    assert [m.text for m in conv.messages] == ["hello", "partial answer"]
    # The turn was running when the process died: it is closed as an error, not left hanging.
    assert conv.turns[-1].status == "error"
    assert conv.turns[-1].error["kind"] == "agent.interrupted"
    # And the next records land on lines of their own, readable after another restart.
    _, turn2 = store2.begin_turn(cid, "again")
    store2.add_messages(turn2.turn, [Message.assistant("whole answer")])
    store2.end_turn(turn2.turn, "done")
    conv3 = reopen(store).get(cid)
    assert [m.text for m in conv3.messages] == ["hello", "partial answer", "again",
                                                "whole answer"]
    assert [t.status for t in conv3.turns] == ["error", "done"]


def test_dangling_tool_call_is_closed_as_interrupted_before_the_next_message(store):
    cid = store.create().conversation
    _, turn = store.begin_turn(cid, "edit it")
    ask = ToolUseBlock("c7", "propose_edit", {"path": "a.txt", "old_text": "a",
                                               "new_text": "b"})
    store.add_messages(turn.turn, [Message.assistant("Proposing.", (ask,))])
    store.end_turn(turn.turn, "stopped", {"kind": "agent.interrupted", "message": "m",
                                          "next": "n"})
    assert dangling_tool_calls(store.get(cid).messages) == ("c7",)
    conv, _ = store.begin_turn(cid, "no, do something else")
    closing, user = conv.messages[-2:]
    assert closing.role == "user" and user.text == "no, do something else"
    assert closing.content == (ToolResultBlock("c7", INTERRUPTED_RESULT, True),)
    assert dangling_tool_calls(conv.messages) == ()
    assert reopen(store).get(cid).messages == conv.messages


def test_unknown_and_hostile_ids_are_refused(store, tmp_path):
    (tmp_path / "secret.json").write_text("{}")
    for bad in ("../secret", "", "ABC/../x", "a" * 64, 7):
        with pytest.raises(AgentError) as err:
            store.get(bad)
        assert err.value.kind == "agent.unknown_conversation"
    with pytest.raises(AgentError):
        store.get("abcdef123456")
    assert conversation_of_turn("abcdef123456.3") == "abcdef123456"
    for bad in ("abcdef123456", "x.y", None, "../x.1"):
        with pytest.raises(AgentError):
            conversation_of_turn(bad)
    assert check_conversation_id("abcdef123456") == "abcdef123456"


def test_messages_that_are_not_messages_are_refused(store):
    cid = store.create().conversation
    _, turn = store.begin_turn(cid, "hi")
    with pytest.raises(AgentError) as err:
        store.add_messages(turn.turn, [{"role": "system", "content": "x"}])
    assert err.value.kind == "agent.unexpected_response"
    assert [m.text for m in store.get(cid).messages] == ["hi"]


def test_list_is_most_recent_first_and_skips_unreadable(store):
    a = store.create(title="first").conversation
    b = store.create(title="second").conversation
    store.begin_turn(a, "touch a")
    (store.folder / "deadbeef0000.json").write_text("{not json")
    assert [c.conversation for c in reopen(store).list()] == [a, b]


def test_end_turn_refuses_running_and_unknown(store):
    cid = store.create().conversation
    _, turn = store.begin_turn(cid, "x")
    with pytest.raises(ValueError):
        store.end_turn(turn.turn, "running")
    with pytest.raises(AgentError) as err:
        store.end_turn(f"{cid}.9", "done")
    assert err.value.kind == "agent.unknown_turn"


def test_undo_label_uses_the_first_60_characters():
    assert undo_label("fix   the\nbug") == "Agent: fix the bug"
    assert undo_label("x" * 100) == "Agent: " + "x" * 60


def test_log_is_one_json_object_per_line(store):
    cid = store.create().conversation
    _, turn = store.begin_turn(cid, "line\nbreaks\ninside")
    store.end_turn(turn.turn, "done")
    lines = (store.folder / f"{cid}.jsonl").read_bytes().splitlines()
    assert [json.loads(x)["t"] for x in lines] == ["turn", "message", "end"]
    assert not [p for p in os.listdir(store.folder) if p.endswith(".tmp")]
    assert isinstance(store.get(cid).messages[0].content[0], TextBlock)


def test_what_a_turn_showed_is_kept_after_its_end_and_old_logs_still_load(store):
    """Issue 18: ``shown`` lines (rio/agent/shown.py) are appended after a turn's end and come
    back with the history; a log written before them (no such line) loads as it did, and a
    line of a kind the reader does not know is skipped."""
    conv = store.create()
    cid = conv.conversation
    _, first = store.begin_turn(cid, "old turn")
    store.end_turn(first.turn, "done")
    _, second = store.begin_turn(cid, "new turn")
    store.end_turn(second.turn, "done")
    events = [{"topic": "agent.delta", "data": {"text": "Part one."}},
              {"topic": "agent.tool", "data": {"call": "c1", "name": "fs_read", "input": {}}},
              {"topic": "agent.delta", "data": {"text": "Part two."}}]
    store.record_shown(second.turn, events, cut=True)
    store.record_shown(second.turn, [{"topic": "agent.delta", "data": {"text": "again"}}])
    log = store.folder / f"{cid}.jsonl"
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"t": "from_a_later_rio", "turn": second.turn}) + "\n")
    again = reopen(store).get(cid)
    turns = again.history()["turns"]
    assert "shown" not in turns[0]                   # recorded before: its messages draw it
    assert turns[1]["shown"] == events and turns[1]["shown_cut"] is True
    assert [t["status"] for t in turns] == ["done", "done"]
    kinds = [json.loads(line)["t"] for line in log.read_text().splitlines()]
    assert kinds.count("shown") == 1                 # a turn keeps its first record
