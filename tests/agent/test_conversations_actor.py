"""agent.* through a real `rio serve`, with a FAKE session process side.

The fake is a BusThread named "agent:<conversation>" serving ``session.*`` from this test, so
the core's behaviour — the store records what the session tells it and announces it, a session
that vanishes mid-turn, a Stop handed over — is tested without the real agent loop or a model.
The core holds no turn state of its own (ADR-0034).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from actors.bus.service import RequestContext
from rio.agent.conversations import INTERRUPTED_RESULT
from rio.protocol.errors import AgentError, BusError, ProtocolError, RioError
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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, data in self.events:
                if t == topic and all(data.get(k) == v for k, v in match.items()):
                    return data
            self.conn.wait(0.02)
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


# --- end to end: the real session process and the loopback Anthropic server ---------------------

def relax_hang_detection(env: dict) -> None:
    """A loaded test machine (2 cores, other suites) can miss 3 pings of 1 s: a session killed
    as "hung" would fail these tests for a reason they are not about."""
    folder = Path(env["RIO_CONFIG_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "supervisor.toml").write_text("[defaults]\nping_misses = 30\n")


@pytest.fixture(scope="module")
def model_server():
    from tests.fakes.model_servers import FakeModelServer
    with FakeModelServer() as server:
        yield server


@pytest.fixture
def model(model_server):
    """The module's model server with an empty script: a test that failed half-way must not
    leave replies for the next one."""
    with model_server.state.lock:
        model_server.state.script.clear()
    return model_server


@pytest.fixture(scope="module")
def real(tmp_path_factory, model_server):
    from tests.support import rio_env
    base = tmp_path_factory.mktemp("conv-e2e")
    root = base / "proj"
    root.mkdir()
    env = rio_env(base)
    env.update({"ANTHROPIC_BASE_URL": model_server.url, "ANTHROPIC_API_KEY": "test-key"})
    relax_hang_detection(env)
    srv = RioServer(root, base, env=env).start()
    yield srv
    srv.stop()


@pytest.fixture
def real_client(real):
    c = Client(real)
    yield c
    c.close()


def session_pid(server: RioServer, cid: str) -> int | None:
    for p in server.call("system.status")["processes"]:
        if p["name"] == f"agent:{cid}" and p.get("pid") and p.get("state") == "running":
            server.known_pids.add(p["pid"])
            return p["pid"]
    return None


@pytest.mark.slow
def test_e2e_kill_9_of_the_session_mid_stream(real, real_client, model):
    import os
    import signal

    from tests.fakes.model_servers import anthropic_text
    client = real_client
    cid = new_conversation(client)
    # First reply: a few words, then the stream stays open (a slow model).
    model.push(anthropic_text("Thinking", " about", " it").slow(hold_open=True))
    turn = client.call("agent.send", {"conversation": cid, "text": "first"})["turn"]
    client.wait("agent.delta", turn=turn, timeout=30)
    pid = session_pid(real, cid)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)

    err = client.wait("agent.error", turn=turn, kind="agent.session_died", timeout=20)
    assert "send your message again" in err["message"]
    client.wait("agent.turn", turn=turn, state="error")
    history = client.call("agent.history", {"conversation": cid})
    assert history["turns"][0]["status"] == "error"
    assert history["messages"][0]["content"][0]["text"] == "first"

    model.push(anthropic_text("Back again."))
    turn2 = client.call("agent.send", {"conversation": cid, "text": "second"})["turn"]
    client.wait("agent.turn", turn=turn2, state="done", timeout=30)
    assert client.wait("agent.message", turn=turn2)["text"] == "Back again."
    assert session_pid(real, cid) not in (None, pid)
    sent = model.requests[-1].json["messages"]
    assert [m["role"] for m in sent][-1] == "user" and "second" in str(sent[-1])
    # What streamed before the kill is in the history, marked: not two user messages in a row.
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert "Thinking about it" in str(sent[1]) and "interrupted" in str(sent[1])


def test_e2e_stop_mid_stream_ends_the_turn_quickly(real, real_client, model):
    from tests.fakes.model_servers import anthropic_text
    client = real_client
    cid = new_conversation(client)
    model.push(anthropic_text("Slow", " words").slow(hold_open=True))
    turn = client.call("agent.send", {"conversation": cid, "text": "go slowly"})["turn"]
    client.wait("agent.delta", turn=turn, timeout=30)
    client.call("agent.stop", {"conversation": cid})
    client.wait("agent.turn", turn=turn, state="stopped", timeout=5)
    history = client.call("agent.history", {"conversation": cid})
    assert history["turns"][0]["status"] == "stopped"


@pytest.mark.slow
def test_e2e_a_new_message_interrupts_a_waiting_proposal(real, real_client, model):
    from tests.fakes.model_servers import anthropic_text, anthropic_tool_use
    client = real_client
    (real.root / "todo.txt").write_text("one\ntwo\n")
    cid = new_conversation(client)
    model.push(anthropic_tool_use("toolu_w", "propose_edit", {
        "path": "todo.txt", "old_text": "two", "new_text": "three"}))
    turn = client.call("agent.send", {"conversation": cid, "text": "edit todo"})["turn"]
    client.wait("agent.propose", turn=turn, timeout=30)
    model.push(anthropic_text("Fine, no edit."))
    turn2 = client.call("agent.send", {"conversation": cid, "text": "forget it"})["turn"]
    assert client.wait("agent.turn", turn=turn, state="stopped")["error"]["kind"] == \
        "agent.interrupted"
    client.wait("agent.turn", turn=turn2, state="done", timeout=30)
    sent = model.requests[-1].json["messages"]
    results = [b for m in sent for b in m["content"] if isinstance(m["content"], list)
               and b.get("type") == "tool_result" and b.get("tool_use_id") == "toolu_w"]
    assert len(results) == 1, sent
    assert "interrupt" in results[0]["content"].lower()
    assert sent[-1]["role"] == "user" and "forget it" in str(sent[-1])
    assert (real.root / "todo.txt").read_text() == "one\ntwo\n"


# --- in one process: the actor with a fake bus (orderings a real instance rarely produces) --------

class FakeBus:
    """Stands in for the core's BusThread: ``call`` goes to ``handlers[op](args)``, replies
    and events are recorded."""

    def __init__(self, handlers: dict[str, Callable[[dict], Any]]):
        # system.spawn answers when the session is ready: here, at once (unless a test says)
        self.handlers = {"system.spawn": lambda args: {"state": "running", "ready": True},
                         **handlers}
        self.events: list[tuple[str, dict]] = []
        self.replies: dict[str, Any] = {}
        self.changed = threading.Condition()

    def call(self, op: str, args: dict | None = None, *, timeout: float = 10.0) -> Any:
        handler = self.handlers.get(op)
        if handler is None:
            raise BusError("no_route", f"nothing serves {op}")
        return handler(dict(args or {}))

    def publish(self, topic: str, data: dict) -> None:
        with self.changed:
            self.events.append((topic, dict(data)))
            self.changed.notify_all()

    def send_reply(self, client: bytes, reply: Any, *_: Any) -> None:   # (events after it)
        with self.changed:
            self.replies[reply.id] = reply
            self.changed.notify_all()

    def wait(self, predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout), (self.events, self.replies)
            return predicate()


def ask(actor, bus: FakeBus, op: str, args: dict) -> Any:
    import uuid

    from rio.protocol import ops
    from rio.protocol.frames import Request
    request = Request(f"r{uuid.uuid4().hex[:10]}-{op}", op, args)
    actor.tell(RequestContext(bus, b"client", request, ops.validate(request)))
    reply = bus.wait(lambda: bus.replies.get(request.id))
    if not reply.ok:
        from rio.protocol.errors import error_from_wire
        raise error_from_wire(reply.error)
    return reply.result


@pytest.fixture
def in_process(tmp_path):
    from actors.agent.conversations_actor import ConversationsActor
    from rio.agent.conversations import ConversationStore
    made = []

    def start(handlers):
        bus = FakeBus(handlers)
        ref = ConversationsActor.start(ConversationStore(tmp_path / "c"), bus,
                                       default_provider=lambda: "anthropic",
                                       known_providers=lambda: {"anthropic"})
        made.append(ref)
        return ref, bus
    yield start
    for ref in made:
        ref.stop()


def session_send(world: dict, then: Callable[[dict], None] | None = None
                 ) -> Callable[[dict], dict]:
    """An in-process stand-in for the session's session.send: the store records the message
    (conversation.begin_turn, asked of the actor like the real session asks the core), then
    ``then(began)`` runs on a thread of its own (it may record the end)."""
    def send(args: dict) -> dict:
        actor, bus = world["actor"], world["bus"]
        began = ask(actor, bus, "conversation.begin_turn", {
            "conversation": args["conversation"], "text": args["text"]})
        world.setdefault("began", []).append(began)
        if then is not None:
            threading.Thread(target=then, args=(began,), daemon=True).start()
        return {"turn": began["turn"], "conversation": args["conversation"]}
    return send


def end(world: dict, began: dict, status: str = "done", **result: Any) -> None:
    ask(world["actor"], world["bus"], "conversation.end_turn", {
        "conversation": began["turn"].rsplit(".", 1)[0], "turn": began["turn"],
        "status": status, "messages": result.pop("messages", []), **result})


def test_busy_from_the_session_is_the_answer_and_nothing_is_recorded(in_process):
    def busy(args: dict) -> dict:
        raise AgentError("busy", "The agent is still working on the last message.",
                         "Wait, or Stop the turn.")
    actor, bus = in_process({"session.send": busy})
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    with pytest.raises(AgentError) as err:
        ask(actor, bus, "agent.send", {"conversation": cid, "text": "two"})
    assert err.value.kind == "agent.busy"
    assert ask(actor, bus, "agent.history", {"conversation": cid})["messages"] == []
    assert not [e for e in bus.events if e[0] == "agent.turn"]


def test_no_session_process_at_all_fails_the_message_as_unavailable(in_process):
    spawned = []
    actor, bus = in_process({"system.spawn": lambda args: spawned.append(args) or {}})
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    with pytest.raises(AgentError) as err:
        ask(actor, bus, "agent.send", {"conversation": cid, "text": "hi"})
    assert err.value.kind == "agent.session_unavailable" and "rio status" in err.value.next
    # spawned once and waited for; nothing serves it: the message fails, nothing recorded
    assert spawned == [{"kind": "agent", "key": cid}]
    assert ask(actor, bus, "agent.history", {"conversation": cid})["messages"] == []


def test_worker_pool_reuses_idle_threads():
    from actors.agent.conversations_actor import WorkerPool
    pool = WorkerPool("t", 8)
    done = []
    for i in range(20):
        finished = threading.Event()
        pool.submit(lambda i=i, f=finished: (done.append(i), f.set()))
        assert finished.wait(5)
        assert wait_for(lambda: pool._idle == 1, 5)   # the worker counts itself idle again
    assert done == list(range(20)) and len(pool._threads) == 1
    pool.close()


# --- idle session processes are stopped, and come back on the next message (issue 9) ----------

@pytest.fixture
def idle_server(tmp_path, model_server):
    from tests.support import rio_env
    root = tmp_path / "proj"
    root.mkdir()
    env = rio_env(tmp_path)
    env.update({"ANTHROPIC_BASE_URL": model_server.url, "ANTHROPIC_API_KEY": "test-key"})
    relax_hang_detection(env)
    (Path(env["RIO_CONFIG_DIR"]) / "config.toml").write_text("[agent]\nidle_stop_s = 1\n")
    srv = RioServer(root, tmp_path, env=env).start()
    yield srv
    srv.stop()


def agent_state(server: RioServer, cid: str) -> tuple[str | None, int | None]:
    for p in server.call("system.status")["processes"]:
        if p["name"] == f"agent:{cid}":
            if p.get("pid"):
                server.known_pids.add(p["pid"])
            return p["state"], p.get("pid")
    return None, None


@pytest.mark.slow
def test_e2e_an_idle_session_process_is_stopped_and_started_again(idle_server, model):
    import psutil

    from rio.cli.main import render_status
    from tests.fakes.model_servers import anthropic_text
    from tests.support import wait_for
    client = Client(idle_server)
    try:
        cid = new_conversation(client)
        model.push(anthropic_text("One."))
        turn = client.call("agent.send", {"conversation": cid, "text": "first"})["turn"]
        client.wait("agent.turn", turn=turn, state="done", timeout=30)
        state, pid = agent_state(idle_server, cid)
        assert state == "running" and pid
        # No turn for idle_stop_s: the process goes, and `rio status` says why.
        assert wait_for(lambda: agent_state(idle_server, cid)[0] == "idle-stopped", 20)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
        shown = "\n".join(render_status(idle_server.call("system.status")))
        assert f"agent:{cid}" in shown and "idle-stopped" in shown
        # The next message starts it again; the conversation goes on.
        model.push(anthropic_text("Two."))
        turn2 = client.call("agent.send", {"conversation": cid, "text": "second"})["turn"]
        client.wait("agent.turn", turn=turn2, state="done", timeout=30)
        assert client.wait("agent.message", turn=turn2)["text"] == "Two."
        state, pid2 = agent_state(idle_server, cid)
        assert pid2 not in (None, pid) and state in ("running", "idle-stopped")
        sent = model.requests[-1].json["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    finally:
        client.close()


def test_idle_timers_fire_once_and_a_new_turn_makes_the_old_one_stale():
    from actors.agent.turn_workers import IdleTimers
    fired: list[tuple[str, int]] = []
    event = threading.Event()
    timers = IdleTimers(0.01, lambda cid, gen: (fired.append((cid, gen)), event.set()))
    try:
        timers.arm("c1")
        assert event.wait(5)
        cid, gen = fired[0]
        assert timers.due(cid, gen) and not timers.due(cid, gen)   # once
        timers.arm("c1")
        stale = timers._armed["c1"][0]
        timers.disarm("c1")                # a turn began
        assert not timers.due("c1", stale)
        never = IdleTimers(0, lambda cid, gen: fired.append((cid, gen)))
        never.arm("c2")                    # idle_stop_s = 0: nothing is armed
        assert not never._armed
    finally:
        timers.close()


def test_a_message_goes_to_the_session_once_system_spawn_answers_and_never_polls(in_process):
    """system.spawn is answered when the process is ready (actors/runtime/spawn_waits.py): the message
    waits for that one answer — no system.status, no session.send before it, no retries."""
    asked: list[str] = []
    release = threading.Event()
    world: dict = {}

    def spawn(args: dict) -> dict:
        asked.append("system.spawn")
        release.wait(10)
        return {"name": f"agent:{args['key']}", "state": "running", "ready": True}
    send = session_send(world, lambda began: end(world, began))

    def counted(args: dict) -> dict:
        asked.append("session.send")
        return send(args)
    actor, bus = world["actor"], world["bus"] = in_process({"system.spawn": spawn,
                                                            "session.send": counted})
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    box: dict = {}
    threading.Thread(target=lambda: box.update(r=ask(actor, bus, "agent.send", {
        "conversation": cid, "text": "hi"})), daemon=True).start()
    assert wait_for(lambda: asked, 10)
    assert asked == ["system.spawn"]          # held there until the process is ready
    release.set()
    bus.wait(lambda: [e for e in bus.events if e[0] == "agent.turn" and e[1]["state"] == "done"])
    assert asked == ["system.spawn", "session.send"]
    # The next message finds the session healthy: straight to it.
    ask(actor, bus, "agent.send", {"conversation": cid, "text": "again"})
    bus.wait(lambda: len([e for e in bus.events
                          if e[0] == "agent.turn" and e[1]["state"] == "done"]) == 2)
    assert asked == ["system.spawn", "session.send", "session.send"]


def test_a_session_process_that_exits_before_ready_fails_the_message_classified(in_process):
    def spawn(args: dict) -> dict:
        raise BusError("spawn_failed", f"The agent:{args['key']} process ended before it was "
                       "ready (exit 3).", "Read its log.")
    actor, bus = in_process({"system.spawn": spawn})
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    with pytest.raises(AgentError) as err:
        ask(actor, bus, "agent.send", {"conversation": cid, "text": "hi"})
    assert err.value.kind == "agent.session_unavailable"
    assert "exit 3" in err.value.message and "rio status" in err.value.next


def test_the_core_holds_no_turn_state_a_dead_session_ends_the_stores_turn(in_process):
    """What the core knows of a running turn is the store's record and the text streamed:
    a session process that goes (system.process) ends it classified, keeping that text."""
    world: dict = {}
    actor, bus = world["actor"], world["bus"] = in_process({"session.send": session_send(world)})
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    turn = ask(actor, bus, "agent.send", {"conversation": cid, "text": "go"})["turn"]
    from actors.agent.conversations_actor import AgentEvent, ProcessEvent
    actor.tell(AgentEvent("agent.delta", {"conversation": cid, "turn": turn, "text": "partly"}))
    actor.tell(ProcessEvent({"name": f"agent:{cid}", "event": "exited"}))
    ended = bus.wait(lambda: next((d for t, d in bus.events if t == "agent.turn"
                                   and d["state"] == "error"), None))
    assert ended["turn"] == turn and ended["error"]["kind"] == "agent.session_died"
    history = ask(actor, bus, "agent.history", {"conversation": cid})
    assert "partly" in history["messages"][-1]["content"][0]["text"]
    # A process event of something else, or of a conversation with no turn, changes nothing.
    actor.tell(ProcessEvent({"name": "core", "event": "exited"}))
    actor.tell(ProcessEvent({"name": f"agent:{cid}", "event": "exited"}))
    assert len([e for e in bus.events if e[0] == "agent.turn"]) == 2


@pytest.mark.timeout(30)
def test_a_bug_in_a_forward_is_answered_as_internal_not_left_hanging(in_process, caplog):
    """A forward (agent.mode → gate.mode on a worker) that fails with something other than a
    RioError still answers its request, once, as internal.unexpected — the copy of the
    try/except each forward had caught only RioError, and the caller waited for nothing."""
    def broken(args: dict) -> dict:
        raise KeyError("mode")
    actor, bus = in_process({"gate.mode": broken})
    with pytest.raises(RioError) as info:
        ask(actor, bus, "agent.mode", {"mode": "allow_all"})
    assert info.value.kind == "internal.unexpected" and "KeyError" in info.value.message
    assert any(r.exc_info and r.exc_info[0] is KeyError for r in caplog.records)
    assert ask(actor, bus, "agent.list", {}) == []     # and the actor goes on serving


def test_pending_lists_the_running_turn_and_what_its_session_holds(in_process):
    """agent.pending (a window started late): the store's running turn, then what its session
    holds — waiting proposals (Rio's MCP tools' are the turn's too) and the agent's modes —
    and, from a running session between turns, the agent's offer alone."""
    world: dict = {}
    modes = {"topic": "agent.modes", "data": {"current": "ask",
                                              "available": [{"id": "ask", "name": "Ask"}]}}
    running = threading.Event()
    running.set()

    def pending(args: dict) -> dict:
        if running.is_set():
            return {"turn": f"{args['conversation']}.1", "events": [
                {"topic": "agent.propose", "data": {"proposal": "p1", "path": "a.txt"}},
                {"topic": "agent.propose", "data": {"proposal": f"{args['conversation']}.1.2",
                                                    "path": "b.txt"}}, modes]}
        return {"turn": None, "events": [modes]}
    actor, bus = world["actor"], world["bus"] = in_process({
        "session.send": session_send(world), "session.pending": pending})
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    ask(actor, bus, "agent.send", {"conversation": cid, "text": "one"})
    got = ask(actor, bus, "agent.pending", {})["events"]
    assert [(e["topic"], e["data"].get("proposal")) for e in got] == [
        ("agent.turn", None), ("agent.propose", "p1"), ("agent.propose", f"{cid}.1.2"),
        ("agent.modes", None)]
    assert all(e["data"]["conversation"] == cid and e["data"]["turn"] == f"{cid}.1"
               for e in got)
    running.clear()
    end(world, world["began"][0])
    got = ask(actor, bus, "agent.pending", {"conversation": cid})["events"]
    assert [e["topic"] for e in got] == ["agent.modes"] and "turn" not in got[0]["data"]
