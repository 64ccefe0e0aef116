"""agent.* through a real `rio serve`, with a FAKE session process side.

The fake is a BusThread named "agent:<conversation>" serving ``session.*`` from this test, so
the core's behaviour — the store records what the session tells it and announces it, a session
that vanishes mid-turn, a Stop handed over — is tested without the real agent loop or a model.
The core holds no turn state of its own (ADR-0034). With real session processes:
tests/agent/test_conversations_e2e.py; the actor alone on a fake bus:
tests/agent/test_conversations_in_process.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from actors.bus.service import RequestContext
from rio.agent.conversations import INTERRUPTED_RESULT
from rio.protocol.errors import AgentError, ProtocolError
from rio.protocol.frames import thaw
from tests.fakes.fake_session import FakeSession, FakeTurn, assistant
from tests.support import RioServer, wait_for

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("conv")
    root = base / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    srv = RioServer(root, base).start()
    yield srv
    srv.stop()


class Client:
    """The test's bus connection: calls, and the agent.* events it has seen."""

    def __init__(self, server: RioServer):
        self.conn = server.connect("conv-test", subscribe=("agent.",))
        self.events: list[tuple[str, dict]] = []
        self.conn.subscribe("agent.", lambda e: self.events.append((e.topic, thaw(e.data))))

    def call(self, op: str, args: dict | None = None, timeout: float = 15.0) -> Any:
        return self.conn.call(op, args or {}, timeout=timeout)

    def wait(self, topic: str, timeout: float = 15.0, **match: Any) -> dict:
        def matching() -> dict | None:
            return next((data for t, data in self.events
                         if t == topic and all(data.get(k) == v for k, v in match.items())), None)
        return wait_for(matching, timeout, 0.02, pause=self.conn.wait, what=f"{topic} {match}",
                        seen=lambda: self.events)

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def client(server):
    c = Client(server)
    yield c
    c.close()


@pytest.fixture
def fakes():
    made: list[FakeSession] = []
    yield made
    for f in made:
        f.stop()


def new_conversation(client: Client, **args: Any) -> str:
    return client.call("agent.new", args)["conversation"]


def test_a_text_turn_is_recorded_and_announced(server, client, fakes):
    cid = new_conversation(client, provider="anthropic", model="m-test")

    def answer(fake: FakeSession, turn: FakeTurn) -> None:
        base = {"conversation": cid, "turn": turn.args["turn"]}
        fake.bus.publish("agent.delta", {**base, "text": "Hi "})
        fake.bus.publish("agent.delta", {**base, "text": "there"})
        turn.reply({"status": "done", "messages": [assistant("Hi there")]})
    fake = FakeSession(server.info(), cid, answer)
    fakes.append(fake)

    sent = client.call("agent.send", {"conversation": cid, "text": "hello"})
    turn = sent["turn"]
    assert turn == f"{cid}.1"
    done = client.wait("agent.turn", turn=turn, state="done")
    assert "error" not in done
    assert client.wait("agent.message", turn=turn)["text"] == "Hi there"
    started = client.wait("agent.turn", turn=turn, state="started")
    assert started["text"] == "hello"

    # The store's answer to begin_turn gives the session what the turn needs.
    asked = fake.turns[0]
    assert asked["provider"] == "anthropic" and asked["model"] == "m-test"
    assert asked["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    history = client.call("agent.history", {"conversation": cid})
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    assert history["turns"][0]["status"] == "done" and history["turns"][0]["text"] == "hello"
    listed = {c["conversation"]: c for c in client.call("agent.list")}
    assert listed[cid]["turns"] == 1 and listed[cid]["state"] == "idle"
    assert listed[cid]["title"] == "hello"


def test_what_a_turn_changed_is_announced_with_its_end(server, client, fakes):
    """The session reports the buffers the turn left unsaved (by any path) and the files an
    agent changed on disk; the core records and announces them with the turn's end."""
    cid = new_conversation(client)
    changed = [{"path": "notes.txt", "change": "modified", "diff": "-a\n+b\n"}]

    def answer(fake: FakeSession, turn: FakeTurn) -> None:
        turn.reply({"status": "done", "messages": [assistant("edited")],
                    "buffers": [{"buffer": "b7", "since_version": 3}],
                    "changed_files": changed, "acp_session": "sess-1"})
    fakes.append(FakeSession(server.info(), cid, answer))
    turn = client.call("agent.send", {"conversation": cid, "text": "edit"})["turn"]
    done = client.wait("agent.turn", turn=turn, state="done")
    assert done["buffers"] == ["b7"] and done["changed_files"] == changed
    # the agent's session id is kept for the next start (session/load)
    fakes[-1].bus.stop()
    fakes.append(FakeSession(server.info(), cid, lambda fake, t: t.reply(
        {"status": "done", "messages": [assistant("again")]})))
    turn2 = client.call("agent.send", {"conversation": cid, "text": "next"})["turn"]
    client.wait("agent.turn", turn=turn2, state="done")
    assert fakes[-1].turns[0]["acp_session"] == "sess-1"


def test_text_streamed_before_the_session_died_is_kept_marked_interrupted(server, client,
                                                                         fakes):
    cid = new_conversation(client)

    def stream_then_hang(fake: FakeSession, turn: FakeTurn) -> None:
        base = {"conversation": cid, "turn": turn.args["turn"]}
        for piece in ("Half ", "an ", "answer"):
            fake.bus.publish("agent.delta", {**base, "text": piece})
    first = FakeSession(server.info(), cid, stream_then_hang)
    turn = client.call("agent.send", {"conversation": cid, "text": "first"})["turn"]
    client.wait("agent.delta", turn=turn, text="answer")
    first.died()   # kill -9: no end recorded; the supervisor says the process exited
    err = client.wait("agent.error", turn=turn)
    assert err["kind"] == "agent.session_died" and "send your message again" in err["message"]
    assert client.wait("agent.turn", turn=turn, state="error")["error"]["kind"] == \
        "agent.session_died"
    history = client.call("agent.history", {"conversation": cid})
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    kept = history["messages"][1]["content"][0]["text"]
    assert kept.startswith("Half an answer") and "interrupted" in kept

    # The next turn's session gets user, assistant (the kept text), user: never two users.
    fakes.append(FakeSession(server.info(), cid, lambda fake, t: t.reply(
        {"status": "done", "messages": [assistant("back")]})))
    turn2 = client.call("agent.send", {"conversation": cid, "text": "second"})["turn"]
    client.wait("agent.turn", turn=turn2, state="done")
    assert [m["role"] for m in fakes[-1].turns[0]["messages"]] == ["user", "assistant", "user"]


def test_what_a_turn_showed_is_recorded_with_it(server, client, fakes):
    """Issue 18: the core keeps a running turn's events and, once its end is back on the
    event stream (after every event the session published before the end), records them
    with the turn, compacted: a reload draws the text split by the tool call, the tool's
    result, the plan — not the turn's one glued message. A session that dies keeps what it
    showed too."""
    cid = new_conversation(client)

    def answer(fake: FakeSession, turn: FakeTurn) -> None:
        base = {"conversation": cid, "turn": turn.args["turn"]}
        pub = fake.bus.publish
        pub("agent.delta", {**base, "text": "c_to_f"})
        pub("agent.delta", {**base, "text": "."})
        pub("agent.tool", {**base, "call": "c1", "name": "fs_read", "input": {"path": "t"}})
        pub("agent.tool_result", {**base, "call": "c1", "name": "fs_read", "ok": True,
                                  "summary": "t: 2 lines", "truncated": False})
        pub("agent.plan", {**base, "entries": [{"content": "a", "priority": "high",
                                                "status": "pending"}]})
        pub("agent.usage", {**base, "used": 1, "size": 9})
        pub("agent.delta", {**base, "text": "Now one for f_to_c."})
        turn.reply({"status": "done", "messages": [assistant("c_to_f.Now one for f_to_c.")]})
    fakes.append(FakeSession(server.info(), cid, answer))
    turn = client.call("agent.send", {"conversation": cid, "text": "two functions"})["turn"]
    client.wait("agent.turn", turn=turn, state="done")
    assert wait_for(lambda: "shown" in client.call("agent.history", {
        "conversation": cid})["turns"][0], 10)
    shown = client.call("agent.history", {"conversation": cid})["turns"][0]["shown"]
    assert [(e["topic"], e["data"].get("text")) for e in shown] == [
        ("agent.turn", "two functions"), ("agent.delta", "c_to_f."), ("agent.tool", None),
        ("agent.tool_result", None), ("agent.plan", None),
        ("agent.delta", "Now one for f_to_c."), ("agent.turn", None)]
    assert shown[0]["data"] == {"state": "started", "text": "two functions"}
    assert shown[-1]["data"]["state"] == "done"

    def stream_then_die(fake: FakeSession, t: FakeTurn) -> None:
        fake.bus.publish("agent.delta", {"conversation": cid, "turn": t.args["turn"],
                                         "text": "Half"})
    fakes[-1].bus.stop()
    dying = FakeSession(server.info(), cid, stream_then_die)
    turn2 = client.call("agent.send", {"conversation": cid, "text": "more"})["turn"]
    client.wait("agent.delta", turn=turn2, text="Half")
    dying.died()
    client.wait("agent.turn", turn=turn2, state="error")
    assert wait_for(lambda: "shown" in client.call("agent.history", {
        "conversation": cid})["turns"][1], 10)
    shown = client.call("agent.history", {"conversation": cid})["turns"][1]["shown"]
    assert [e["topic"] for e in shown] == ["agent.turn", "agent.delta", "agent.error",
                                           "agent.turn"]


def test_a_session_that_vanishes_silently_ends_the_turn_classified(server, client, fakes):
    cid = new_conversation(client)
    first = FakeSession(server.info(), cid, lambda fake, t: None)
    turn = client.call("agent.send", {"conversation": cid, "text": "first"})["turn"]
    client.wait("agent.turn", turn=turn, state="started")
    first.died()
    assert client.wait("agent.turn", turn=turn, state="error")["error"]["kind"] == \
        "agent.session_died"
    history = client.call("agent.history", {"conversation": cid})
    assert [m["content"][0]["text"] for m in history["messages"]] == ["first"]
    assert history["turns"][0]["status"] == "error"
    # The restarted session takes the next message, with the history intact.
    fakes.append(FakeSession(server.info(), cid, lambda fake, t: t.reply(
        {"status": "done", "messages": [assistant("back")]})))
    turn2 = client.call("agent.send", {"conversation": cid, "text": "second"})["turn"]
    client.wait("agent.turn", turn=turn2, state="done")
    texts = [m["content"][0]["text"] for m in
             client.call("agent.history", {"conversation": cid})["messages"]]
    assert texts == ["first", "second", "back"]


def test_busy_is_the_sessions_word_and_stop_goes_to_the_session(server, client, fakes):
    cid = new_conversation(client)
    fake = FakeSession(server.info(), cid, lambda fake, t: None)
    fakes.append(fake)
    turn = client.call("agent.send", {"conversation": cid, "text": "long job"})["turn"]
    client.wait("agent.turn", turn=turn, state="started")
    with pytest.raises(AgentError) as err:
        client.call("agent.send", {"conversation": cid, "text": "another"})
    assert err.value.kind == "agent.busy" and "Stop" in err.value.next
    assert client.call("agent.list")[0]["state"] == "running"

    assert client.call("agent.stop", {"conversation": cid}) == {"stopped": True, "turn": turn}
    client.wait("agent.turn", turn=turn, state="stopped")
    assert fake.stops == [{"conversation": cid, "turn": turn}]
    # The Stop went from the client to the session process, which owns the turn (the hub
    # routes it by conversation), not through the core.
    assert fake.answered == [("agent.stop", client.conn.identity)]
    assert client.call("agent.stop", {"conversation": cid}) == {"stopped": False}
    assert client.call("agent.history", {"conversation": cid})["turns"][0]["status"] == "stopped"


def test_a_stop_the_session_hands_over_ends_the_turn_in_the_store(server, client, fakes):
    """A session whose loop hung hands the client's Stop to the core (stop_watch.py): the
    store's running turn ends stopped at once, its streamed text kept; the session's late end
    of the same turn is recorded over it."""
    cid = new_conversation(client)
    held: list[FakeTurn] = []

    def stream(fake: FakeSession, turn: FakeTurn) -> None:
        fake.bus.publish("agent.delta", {"conversation": cid, "turn": turn.args["turn"],
                                         "text": "so far"})
        held.append(turn)

    def hand_to_core(fake: FakeSession, ctx: RequestContext) -> None:
        ctx.reply(fake.bus.call("agent.stop", {"conversation": cid}))
    fake = FakeSession(server.info(), cid, stream, on_stop=hand_to_core)
    fakes.append(fake)
    turn = client.call("agent.send", {"conversation": cid, "text": "go"})["turn"]
    client.wait("agent.delta", turn=turn)
    assert client.call("agent.stop", {"conversation": cid}) == {"stopped": True, "turn": turn}
    client.wait("agent.turn", turn=turn, state="stopped")
    history = client.call("agent.history", {"conversation": cid})
    assert history["messages"][-1]["content"][0]["text"].startswith("so far")
    held[0].reply({"status": "stopped", "messages": [assistant("so far, and more")]})
    again = client.wait("agent.turn", turn=turn, again=True)
    assert again["state"] == "stopped"
    assert [t["status"] for t in client.call("agent.history", {"conversation": cid})["turns"]] \
        == ["stopped"]


def test_a_new_message_while_a_proposal_waits_is_the_sessions_to_interrupt(server, client,
                                                                            fakes):
    cid = new_conversation(client)
    call = {"type": "tool_use", "id": "call-9", "name": "propose_edit",
            "input": {"path": "notes.txt", "old_text": "beta", "new_text": "gamma"}}

    def like_the_session(fake: FakeSession, turn: FakeTurn) -> None:
        if len(fake.turns) == 1:
            fake.bus.publish("agent.propose", {"conversation": cid, "turn": turn.args["turn"],
                                               "proposal": "p1", "call": "call-9",
                                               "path": "notes.txt", "kind": "edit",
                                               "diff": "-beta\n+gamma\n"})
            return
        turn.reply({"status": "done", "messages": [assistant("ok, not editing")]})

    fake = FakeSession(server.info(), cid, like_the_session)
    # the waiting turn ends without answering its tool call: the store must close it
    fake.interrupt = lambda old: old.reply({"status": "stopped", "messages": [
        {"role": "assistant", "content": [{"type": "text", "text": "Proposing."}, call]}],
        "error": {"kind": "agent.interrupted", "message": "A new message interrupted this "
                  "turn.", "next": "The agent carries on with the new message."}})
    fakes.append(fake)
    turn = client.call("agent.send", {"conversation": cid, "text": "edit notes"})["turn"]
    client.wait("agent.propose", turn=turn)

    # The approval goes to the session process itself: the client's own request reached it
    # (the hub routes a turn's answers to its owner), never through the core.
    assert client.call("agent.approve", {"turn": turn, "proposal": "p9",
                                         "decision": "reject"}) == {"applied": False}
    assert fake.approvals == [{"conversation": cid, "turn": turn, "proposal": "p9",
                               "decision": "reject"}]
    assert fake.answered == [("agent.approve", client.conn.identity)]

    turn2 = client.call("agent.send", {"conversation": cid, "text": "never mind"})["turn"]
    assert turn2 == f"{cid}.2"
    stopped = client.wait("agent.turn", turn=turn, state="stopped")
    assert stopped["error"]["kind"] == "agent.interrupted"
    client.wait("agent.turn", turn=turn2, state="done")
    # The store recorded everything in order, the dangling call closed as interrupted, and
    # the new turn's history (from begin_turn) already has the old turn's messages.
    assert [m["role"] for m in fake.turns[1]["messages"]] == ["user", "assistant", "user",
                                                              "user"]
    history = client.call("agent.history", {"conversation": cid})
    msgs = history["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "user", "assistant"]
    assert msgs[2]["content"] == [{"type": "tool_result", "tool_use_id": "call-9",
                                   "content": INTERRUPTED_RESULT, "is_error": True}]
    assert msgs[3]["content"][0]["text"] == "never mind"
    assert [t["status"] for t in history["turns"]] == ["stopped", "done"]
    assert client.call("agent.list")[0]["state"] == "idle"


def test_a_turns_end_is_recorded_once_and_only_for_a_turn_the_store_began(server, client,
                                                                           fakes):
    cid = new_conversation(client)
    fakes.append(FakeSession(server.info(), cid, lambda fake, t: t.reply(
        {"status": "done", "messages": [assistant("one")]})))
    turn = client.call("agent.send", {"conversation": cid, "text": "hi"})["turn"]
    client.wait("agent.turn", turn=turn, state="done")
    fake = fakes[-1]
    again = fake.bus.call("conversation.end_turn", {"conversation": cid, "turn": turn,
                                                    "status": "error", "messages": []})
    assert again == {"recorded": False}
    with pytest.raises(AgentError) as err:
        fake.bus.call("conversation.end_turn", {"conversation": cid, "turn": f"{cid}.9",
                                                "status": "done", "messages": []})
    assert err.value.kind == "agent.unknown_turn"
    with pytest.raises(ProtocolError):
        fake.bus.call("conversation.end_turn", {"conversation": "abcdef012345",
                                                "turn": turn, "status": "done"})
    history = client.call("agent.history", {"conversation": cid})
    assert [t["status"] for t in history["turns"]] == ["done"]
    assert len(history["messages"]) == 2


def test_bad_requests_are_refused_with_their_kind(client):
    with pytest.raises(AgentError) as err:
        client.call("agent.history", {"conversation": "../../etc"})
    assert err.value.kind == "agent.unknown_conversation"
    with pytest.raises(AgentError) as err:
        client.call("agent.send", {"conversation": "abcdef012345", "text": "hi"})
    assert err.value.kind == "agent.unknown_conversation"
    with pytest.raises(AgentError) as err:
        client.call("agent.approve", {"turn": "abcdef012345.1", "proposal": "p",
                                      "decision": "approve"})
    assert err.value.kind in ("agent.unknown_turn", "agent.unknown_conversation")
    with pytest.raises(ProtocolError):
        client.call("agent.approve", {"turn": "t", "proposal": "p", "decision": "maybe"})
    with pytest.raises(AgentError) as err:
        client.call("agent.new", {"provider": "no-such-provider"})
    assert err.value.kind == "agent.not_configured" and "anthropic" in err.value.message
    # `rio chat --endpoint notaurl`: a configuration mistake said at once, not "plain http".
    with pytest.raises(AgentError) as err:
        client.call("agent.new", {"endpoint": "notaurl"})
    assert err.value.kind == "agent.not_configured" and "not a usable URL" in err.value.message
    assert "plain http" not in err.value.message
