"""What an agent streams is bounded everywhere it passes (issue 22, ADR-0041): the session's
ACP updates and API turn, the core's store and conversations actor. The whole path with a real
instance and a fake agent streaming 100 MiB is tests/agent/test_agent_output_flood.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from rio.acp.updates import UpdateTranslator
from rio.agent.conversations import ConversationStore
from rio.agent.failures import RetryPolicy
from rio.agent.output_limits import (
    HISTORY_CHARS,
    MESSAGE_CHARS,
    TURN_CHARS,
    StreamBudget,
    bounded_history,
    bounded_message,
    cut_text,
)
from rio.protocol.frames import MAX_FRAME_BYTES
from rio.providers.base import Delta, Done, Message, stream_with_retries


class Chunk:
    """An ACP ``agent_message_chunk`` update, as the SDK hands it over."""

    session_update = "agent_message_chunk"

    def __init__(self, text: str) -> None:
        self.content = type("Text", (), {"text": text})()


def test_cut_text_marks_what_it_cut() -> None:
    assert cut_text("abc", 5) == "abc"
    cut = cut_text("x" * 20, 5)
    assert cut.startswith("xxxxx\n\n[… cut by Rio: 15 more characters")


def test_a_message_keeps_at_most_its_bound() -> None:
    big = Message.assistant("y" * (MESSAGE_CHARS + 10))
    bounded = bounded_message(big)
    assert len(bounded.text) < MESSAGE_CHARS + 200 and "10 more characters" in bounded.text
    small = Message.assistant("fine")
    assert bounded_message(small) is small


def test_a_history_keeps_the_newest_messages_whole() -> None:
    messages = [Message.user("q"), Message.assistant("a" * (HISTORY_CHARS // 2)),
                Message.user("q2"), Message.assistant("b" * (HISTORY_CHARS // 2)),
                Message.user("q3"), Message.assistant("c" * 1000)]
    out = bounded_history(messages)
    assert [m.role for m in out] == [m.role for m in messages]
    assert out[-1].text == "c" * 1000 and out[-3].text == "b" * (HISTORY_CHARS // 2)
    assert out[1].text.startswith("[left out of this history:")


def test_the_stream_budget_keeps_one_message_and_stops_the_turn() -> None:
    budget = StreamBudget(turn_chars=100, message_chars=30)
    kept = "".join(budget.keep("0123456789") for _ in range(5) if budget.take(10))
    assert kept == "0123456789" * 3 and budget.dropped == 20
    assert not budget.take(60)
    assert budget.exceeded


def test_acp_updates_publish_a_bounded_reply_and_say_the_turn_is_over_once() -> None:
    published: list[tuple[str, dict[str, Any]]] = []
    exceeded: list[bool] = []
    updates = UpdateTranslator(lambda t, d: published.append((t, dict(d))),
                               on_exceeded=lambda: exceeded.append(True))
    updates.start_turn()
    chunk = "z" * 65536
    for _ in range((TURN_CHARS // len(chunk)) + 20):
        updates.handle(Chunk(chunk))
    shown = "".join(d["text"] for t, d in published if t == "agent.delta")
    assert len(shown) == MESSAGE_CHARS
    assert exceeded == [True]
    reply = updates.reply_text()
    assert len(reply) < MESSAGE_CHARS + 200 and "cut by Rio" in reply


def test_an_api_turn_that_streams_too_much_ends_with_output_limit() -> None:
    from tests.agent.test_agent_turn import FakeProvider, make, run

    class Flooding(FakeProvider):
        async def stream(self, request, post) -> None:
            async def attempt(p) -> None:
                for _ in range(TURN_CHARS // 65536 + 10):
                    p(Delta("w" * 65536))
                    await asyncio.sleep(0)
                p(Done("end_turn"))
            await stream_with_retries(attempt, post, policy=RetryPolicy(),
                                      sleep=asyncio.sleep)

    turn, port, _ = make(Flooding())
    result = run(turn.run())
    assert result.status == "error" and result.error is not None
    assert result.error.kind == "agent.output_limit"
    shown = "".join(d["text"] for d in port.of("agent.delta"))
    assert len(shown) == MESSAGE_CHARS
    [message] = result.messages
    assert len(message.text) < MESSAGE_CHARS + 200 and "cut by Rio" in message.text


def test_a_huge_message_an_older_rio_wrote_still_loads_bounded(tmp_path: Path) -> None:
    """The 70 MB message on disk made the history fail for good: it is cut as it is read."""
    store = ConversationStore(tmp_path)
    conv = store.create(title="t", agent="fake")
    _, record = store.begin_turn(conv.conversation, "go")
    huge = Message.assistant("h" * (70 * 1024 * 1024)).to_dict()
    log = tmp_path / f"{conv.conversation}.jsonl"
    with open(log, "a", encoding="utf-8") as fh:   # as an older Rio appended it, unbounded
        fh.write(json.dumps({"t": "message", "turn": record.turn, "message": huge}) + "\n")
    del huge
    history = ConversationStore(tmp_path).get(conv.conversation).history()
    wire = json.dumps(history)
    assert len(wire) < MAX_FRAME_BYTES // 8
    assert "cut by Rio" in history["messages"][-1]["content"][0]["text"]


def test_the_store_writes_no_message_longer_than_its_bound(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path)
    conv = store.create(title="t", agent="fake")
    _, record = store.begin_turn(conv.conversation, "go")
    store.add_messages(record.turn, [Message.assistant("m" * (3 * MESSAGE_CHARS))])
    lines = (tmp_path / f"{conv.conversation}.jsonl").read_text().splitlines()
    assert max(len(line) for line in lines) < MESSAGE_CHARS + 1000


class _Bus:
    """Publishes like the bus thread: an event over the frame limit raises."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def publish(self, topic: str, data: dict) -> None:
        from rio.protocol.frames import Event, encode_checked
        encode_checked(Event(topic, dict(data)))
        self.events.append((topic, data))


@pytest.mark.parametrize("text_mib", [70])
def test_an_event_too_big_to_publish_never_ends_the_conversations_actor(tmp_path: Path,
                                                                       text_mib: int) -> None:
    """The core ends a turn whose session died with the text it kept; whatever that text, the
    actor's publish never raises (before: oversize_frame, uncaught, and the actor was dead)."""
    from actors.agent.conversations_actor import ConversationsActor
    bus = _Bus()
    store = ConversationStore(tmp_path)
    actor = ConversationsActor(store, bus, idle_stop_s=0)  # type: ignore[arg-type]
    try:
        actor._publish("agent.message", {"conversation": "c0ffee00", "turn": "c0ffee00.1",
                                         "role": "assistant",
                                         "text": "x" * (text_mib * 1024 * 1024)})
        [(topic, data)] = bus.events
        assert topic == "agent.message" and len(data["text"]) < 8192
        # the running turn's kept text stops at the message bound
        conv = store.create(title="t", agent="fake")
        actor.streamed[conv.conversation] = []
        actor.streamed_chars[conv.conversation] = 0
        for _ in range(40):
            actor._on_delta({"conversation": conv.conversation, "text": "d" * 100_000})
        assert sum(map(len, actor.streamed[conv.conversation])) == MESSAGE_CHARS
    finally:
        actor.on_stop()
