"""agent.* through a real `rio serve`, with a FAKE session process side.

The fake is a BusThread named "agent:<conversation>" serving ``session.*`` from this test, so
the core's behaviour (records, undo merge, interrupt, stop, a session that vanishes) is tested
without the real agent loop or a model.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import pytest

from actors.bus_thread import RequestContext
from rio.conversations import INTERRUPTED_RESULT
from rio.errors import AgentError, BusError, ProtocolError
from rio.protocol import thaw
from tests.fakes.fake_session import FakeSession, assistant
from tests.support import RioServer

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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, data in self.events:
                if t == topic and all(data.get(k) == v for k, v in match.items()):
                    return data
            self.conn.dealer.poll(20)
            self.conn.sub.poll(20)
            self.conn.drain()
        raise AssertionError(f"no {topic} {match} in {self.events}")

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

    def answer(fake: FakeSession, ctx: RequestContext) -> None:
        base = {"conversation": cid, "turn": ctx.args["turn"]}
        fake.bus.publish("agent.delta", {**base, "text": "Hi "})
        fake.bus.publish("agent.delta", {**base, "text": "there"})
        ctx.reply({"status": "done", "messages": [assistant("Hi there")], "buffers": []})
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

    asked = fake.turns[0]
    assert asked["provider"] == "anthropic" and asked["model"] == "m-test"
    assert asked["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    history = client.call("agent.history", {"conversation": cid})
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    assert history["turns"][0]["status"] == "done" and history["turns"][0]["text"] == "hello"
    listed = {c["conversation"]: c for c in client.call("agent.list")}
    assert listed[cid]["turns"] == 1 and listed[cid]["state"] == "idle"
    assert listed[cid]["title"] == "hello"


def test_a_turns_edits_become_one_undo_step(server, client, fakes):
    opened = client.call("buffer.open", {"path": "notes.txt"})
    buf = opened["buffer"]
    cid = new_conversation(client)

    def edit_twice(fake: FakeSession, ctx: RequestContext) -> None:
        def work() -> None:
            since = fake.bus.call("buffer.info", {"buffer": buf})["version"]
            for start, text in ((0, "ALPHA "), (0, "1 ")):
                fake.bus.call("buffer.replace", {"buffer": buf, "start": start, "end": start,
                                                 "text": text, "origin": f"agent:{cid}"})
            ctx.reply({"status": "done", "messages": [assistant("edited")],
                       "buffers": [{"buffer": buf, "since_version": since}]})
        threading.Thread(target=work, daemon=True).start()
    fakes.append(FakeSession(server.info(), cid, edit_twice))

    turn = client.call("agent.send", {"conversation": cid,
                                      "text": "Prefix the notes please"})["turn"]
    client.wait("agent.turn", turn=turn, state="done")
    assert client.call("buffer.text", {"buffer": buf})["text"].startswith("1 ALPHA alpha")
    info = client.call("buffer.info", {"buffer": buf})
    assert info["undo_label"] == "Agent: Prefix the notes please"
    client.call("buffer.undo", {"buffer": buf})
    assert client.call("buffer.text", {"buffer": buf})["text"] == "alpha\nbeta\n"
    client.call("buffer.close", {"buffer": buf, "discard": True})


def test_a_session_that_vanishes_ends_the_turn_with_a_classified_error(server, client, fakes):
    cid = new_conversation(client)
    held: list[RequestContext] = []
    first = FakeSession(server.info(), cid, lambda fake, ctx: held.append(ctx))

    turn = client.call("agent.send", {"conversation": cid, "text": "first"})["turn"]
    client.wait("agent.turn", turn=turn, state="started")
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        time.sleep(0.02)
    assert held, "the session never got the turn"
    first.stop()   # the process goes away with the turn unanswered

    err = client.wait("agent.error", turn=turn)
    assert err["kind"] == "agent.session_died" and "send your message again" in err["message"]
    assert client.wait("agent.turn", turn=turn, state="error")["error"]["kind"] == \
        "agent.session_died"
    history = client.call("agent.history", {"conversation": cid})
    assert [m["content"][0]["text"] for m in history["messages"]] == ["first"]
    assert history["turns"][0]["status"] == "error"

    # The restarted session takes the next message, with the history intact.
    fakes.append(FakeSession(server.info(), cid, lambda fake, ctx: ctx.reply(
        {"status": "done", "messages": [assistant("back")], "buffers": []})))
    turn2 = client.call("agent.send", {"conversation": cid, "text": "second"})["turn"]
    client.wait("agent.turn", turn=turn2, state="done")
    texts = [m["content"][0]["text"] for m in
             client.call("agent.history", {"conversation": cid})["messages"]]
    assert texts == ["first", "second", "back"]


def test_busy_while_running_and_stop_ends_the_turn(server, client, fakes):
    cid = new_conversation(client)
    fake = FakeSession(server.info(), cid, lambda fake, ctx: fake.pending.append(ctx))
    fakes.append(fake)
    turn = client.call("agent.send", {"conversation": cid, "text": "long job"})["turn"]
    client.wait("agent.turn", turn=turn, state="started")
    with pytest.raises(AgentError) as err:
        client.call("agent.send", {"conversation": cid, "text": "another"})
    assert err.value.kind == "agent.busy" and "Stop" in err.value.next
    assert client.call("agent.list")[0]["state"] == "running"

    assert client.call("agent.stop", {"conversation": cid})["stopped"] is True
    client.wait("agent.turn", turn=turn, state="stopped")
    assert fake.stops == [{"conversation": cid, "turn": turn}]
    assert client.call("agent.stop", {"conversation": cid}) == {"stopped": False}
    assert client.call("agent.history", {"conversation": cid})["turns"][0]["status"] == "stopped"


def test_stop_when_the_session_cannot_answer_ends_the_turn_in_the_core(server, client, fakes):
    cid = new_conversation(client)
    fake = FakeSession(server.info(), cid, lambda fake, ctx: fake.pending.append(ctx),
                       on_stop=lambda fake, ctx: ctx.fail(BusError("no_route", "gone")))
    fakes.append(fake)
    turn = client.call("agent.send", {"conversation": cid, "text": "x"})["turn"]
    client.wait("agent.turn", turn=turn, state="started")
    client.call("agent.stop", {"conversation": cid})
    client.wait("agent.turn", turn=turn, state="stopped", timeout=5)
    # The session's late answer changes nothing.
    fake.pending[0].reply({"status": "done", "messages": [assistant("late")], "buffers": []})
    time.sleep(0.3)
    history = client.call("agent.history", {"conversation": cid})
    assert [t["status"] for t in history["turns"]] == ["stopped"]
    assert len(history["messages"]) == 1


def test_a_new_message_while_a_proposal_waits_interrupts_it(server, client, fakes):
    cid = new_conversation(client)
    call = {"type": "tool_use", "id": "call-9", "name": "propose_edit",
            "input": {"path": "notes.txt", "old_text": "beta", "new_text": "gamma"}}

    def propose_then_hold(fake: FakeSession, ctx: RequestContext) -> None:
        if len(fake.turns) == 1:
            fake.bus.publish("agent.propose", {"conversation": cid, "turn": ctx.args["turn"],
                                               "proposal": "p1", "call": "call-9",
                                               "path": "notes.txt", "kind": "edit",
                                               "diff": "-beta\n+gamma\n"})
            fake.pending.append(ctx)
        else:
            ctx.reply({"status": "done", "messages": [assistant("ok, not editing")],
                       "buffers": []})

    def stop_with_the_dangling_call(fake: FakeSession, ctx: RequestContext) -> None:
        ctx.reply({"stopped": True})
        fake.pending.pop().reply({"status": "stopped", "buffers": [], "messages": [
            {"role": "assistant", "content": [{"type": "text", "text": "Proposing."}, call]}]})

    fake = FakeSession(server.info(), cid, propose_then_hold, on_stop=stop_with_the_dangling_call)
    fakes.append(fake)
    turn = client.call("agent.send", {"conversation": cid, "text": "edit notes"})["turn"]
    client.wait("agent.propose", turn=turn)
    time.sleep(0.2)  # the core sees the proposal event (it travels apart from our request)

    # The approval goes to the session with the conversation filled in.
    assert client.call("agent.approve", {"turn": turn, "proposal": "p9",
                                         "decision": "reject"}) == {"applied": False}
    assert fake.approvals == [{"conversation": cid, "turn": turn, "proposal": "p9",
                               "decision": "reject"}]

    turn2 = client.call("agent.send", {"conversation": cid, "text": "never mind"})["turn"]
    assert turn2 == f"{cid}.2"
    stopped = client.wait("agent.turn", turn=turn, state="stopped")
    assert stopped["error"]["kind"] == "agent.interrupted"
    client.wait("agent.turn", turn=turn2, state="done")
    sent = fake.turns[1]["messages"]
    assert sent[-3]["content"][1]["id"] == "call-9"
    assert sent[-2]["content"] == [{"type": "tool_result", "tool_use_id": "call-9",
                                    "content": INTERRUPTED_RESULT, "is_error": True}]
    assert sent[-1] == {"role": "user", "content": [{"type": "text", "text": "never mind"}]}


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
