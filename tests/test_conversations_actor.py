"""agent.* through a real `rio serve`, with a FAKE session process side.

The fake is a BusThread named "agent:<conversation>" serving ``session.*`` from this test, so
the core's behaviour (records, undo merge, interrupt, stop, a session that vanishes) is tested
without the real agent loop or a model.
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
from tests.fakes.fake_session import FakeSession, assistant
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


def test_text_streamed_before_the_session_died_is_kept_marked_interrupted(server, client,
                                                                         fakes):
    cid = new_conversation(client)
    held: list[RequestContext] = []

    def stream_then_hang(fake, ctx) -> None:
        base = {"conversation": ctx.args["conversation"], "turn": ctx.args["turn"]}
        for piece in ("Half ", "an ", "answer"):
            fake.bus.publish("agent.delta", {**base, "text": piece})
        held.append(ctx)
    first = FakeSession(server.info(), cid, stream_then_hang)
    turn = client.call("agent.send", {"conversation": cid, "text": "first"})["turn"]
    # All three pieces out before the "kill": stopping the fake's bus drops what it has not
    # sent yet, and the test is about text that was streamed.
    client.wait("agent.delta", turn=turn, text="answer")
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        time.sleep(0.02)
    assert held, "the session never got the turn"
    first.stop()   # kill -9: no answer, no messages
    client.wait("agent.turn", turn=turn, state="error")
    history = client.call("agent.history", {"conversation": cid})
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    kept = history["messages"][1]["content"][0]["text"]
    assert kept.startswith("Half an answer") and "interrupted" in kept

    # The next turn's session gets user, assistant (the kept text), user: never two users.
    fakes.append(FakeSession(server.info(), cid, lambda fake, ctx: ctx.reply(
        {"status": "done", "messages": [assistant("back")], "buffers": []})))
    turn2 = client.call("agent.send", {"conversation": cid, "text": "second"})["turn"]
    client.wait("agent.turn", turn=turn2, state="done")
    assert [m["role"] for m in fakes[-1].turns[0]["messages"]] == ["user", "assistant", "user"]


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

    assert client.call("agent.stop", {"conversation": cid}) == {"stopped": True, "turn": turn}
    client.wait("agent.turn", turn=turn, state="stopped")
    assert fake.stops == [{"conversation": cid, "turn": turn}]
    # The Stop went from the client to the session process, which owns the turn (the hub
    # routes it by conversation), not through the core.
    assert fake.answered == [("agent.stop", client.conn.identity)]
    assert client.call("agent.stop", {"conversation": cid}) == {"stopped": False}
    assert client.call("agent.history", {"conversation": cid})["turns"][0]["status"] == "stopped"


def test_a_stop_with_no_turn_in_the_session_is_answered_by_the_core(server, client, fakes):
    """The session process gets agent.stop straight from the client; when it holds no turn
    (the core's session.turn is still on its way), it asks the core, which has the turn."""
    cid = new_conversation(client)
    fake = FakeSession(server.info(), cid, lambda fake, ctx: fake.pending.append(ctx))
    fakes.append(fake)
    assert client.call("agent.stop", {"conversation": cid}) == {"stopped": False}
    assert wait_for(lambda: fake.answered, 10)   # the core's stop of an orphan, after its reply
    assert fake.answered[0][0] == "session.stop" and fake.answered[0][1] != client.conn.identity


def test_stop_when_the_session_cannot_answer_ends_the_turn_in_the_core(in_process):
    """agent.stop reaches the core when no session process is registered (else the hub sends
    it to the session): the core's session.stop fails, so the core ends the turn itself, and
    the session's late answer changes nothing."""
    asked, release = threading.Event(), threading.Event()

    def session_turn(args: dict) -> dict:
        asked.set()
        release.wait(10)
        return {"status": "done", "messages": [assistant("late")], "buffers": []}

    def session_stop(args: dict) -> dict:
        raise BusError("no_route", "gone")
    actor, bus = in_process({"session.turn": session_turn, "session.stop": session_stop})
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    turn = ask(actor, bus, "agent.send", {"conversation": cid, "text": "x"})["turn"]
    assert asked.wait(10)
    assert ask(actor, bus, "agent.stop", {"conversation": cid}) == {"stopped": True,
                                                                    "turn": turn}
    bus.wait(lambda: ("agent.turn", {"conversation": cid, "turn": turn, "state": "stopped"})
             in bus.events)
    release.set()
    pool = actor.proxy().turns.get()
    assert wait_for(lambda: pool._idle == 1, 10)   # the late answer was handed to the actor
    history = ask(actor, bus, "agent.history", {"conversation": cid})
    assert [t["status"] for t in history["turns"]] == ["stopped"]
    assert len(history["messages"]) == 1


def test_a_new_message_while_a_proposal_waits_interrupts_it(server, client, fakes):
    cid = new_conversation(client)
    call = {"type": "tool_use", "id": "call-9", "name": "propose_edit",
            "input": {"path": "notes.txt", "old_text": "beta", "new_text": "gamma"}}

    def like_the_session(fake: FakeSession, ctx: RequestContext) -> None:
        if len(fake.turns) == 1:
            fake.bus.publish("agent.propose", {"conversation": cid, "turn": ctx.args["turn"],
                                               "proposal": "p1", "call": "call-9",
                                               "path": "notes.txt", "kind": "edit",
                                               "diff": "-beta\n+gamma\n"})
            fake.pending.append(ctx)
            return
        # The new message: the waiting turn ends (here without answering its tool call, so
        # the core must close it), then the new turn runs.
        fake.pending.pop().reply({"status": "stopped", "buffers": [], "messages": [
            {"role": "assistant", "content": [{"type": "text", "text": "Proposing."}, call]}]})
        ctx.reply({"status": "done", "messages": [assistant("ok, not editing")],
                   "buffers": []})

    fake = FakeSession(server.info(), cid, like_the_session)
    fakes.append(fake)
    turn = client.call("agent.send", {"conversation": cid, "text": "edit notes"})["turn"]
    client.wait("agent.propose", turn=turn)

    # The approval goes to the session with the conversation filled in.
    assert client.call("agent.approve", {"turn": turn, "proposal": "p9",
                                         "decision": "reject"}) == {"applied": False}
    assert fake.approvals == [{"conversation": cid, "turn": turn, "proposal": "p9",
                               "decision": "reject"}]
    # ... answered by the session process itself: the client's own request reached it (the
    # hub routes a turn's answers to its owner), not a session.approve sent by the core.
    assert fake.answered == [("agent.approve", client.conn.identity)]

    # The session owns the proposal: the core asks it (session.interrupt), so the message is
    # an interrupt at once, with no race against the agent.propose event.
    turn2 = client.call("agent.send", {"conversation": cid, "text": "never mind"})["turn"]
    assert turn2 == f"{cid}.2"
    stopped = client.wait("agent.turn", turn=turn, state="stopped")
    assert stopped["error"]["kind"] == "agent.interrupted"
    client.wait("agent.turn", turn=turn2, state="done")
    assert fake.stops == []
    # The session got the new message right away (it merges the old turn's messages itself).
    assert [m["role"] for m in fake.turns[1]["messages"]] == ["user", "user"]
    assert fake.turns[1]["messages"][-1]["content"][0]["text"] == "never mind"
    # The core recorded everything in order, the dangling call closed as interrupted.
    history = client.call("agent.history", {"conversation": cid})
    msgs = history["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "user", "assistant"]
    assert msgs[2]["content"] == [{"type": "tool_result", "tool_use_id": "call-9",
                                   "content": INTERRUPTED_RESULT, "is_error": True}]
    assert msgs[3]["content"][0]["text"] == "never mind"
    assert [t["status"] for t in history["turns"]] == ["stopped", "done"]
    # A third message while the new turn has no proposal waiting is refused as busy... once
    # more it is idle, it runs.
    assert client.call("agent.list")[0]["state"] == "idle"


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
    from rio.protocol import ops
    from rio.protocol.frames import Request
    request = Request(f"r{len(bus.replies)}-{op}", op, args)
    actor.tell(RequestContext(bus, b"client", request, ops.validate(request)))
    reply = bus.wait(lambda: bus.replies.get(request.id))
    if not reply.ok:
        from rio.protocol.errors import error_from_wire
        raise error_from_wire(reply.error)
    return reply.result


@pytest.fixture
def in_process(tmp_path):
    from actors.agents.conversations import ConversationsActor
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


def test_the_interrupting_turn_finishing_first_is_still_recorded_second(in_process):
    release_first = threading.Event()
    call = {"type": "tool_use", "id": "c1", "name": "propose_edit", "input": {}}

    def session_turn(args: dict) -> dict:
        if args["turn"].endswith(".1"):
            release_first.wait(10)
            return {"status": "stopped", "buffers": [], "messages": [
                {"role": "assistant", "content": [call]}]}
        return {"status": "done", "buffers": [], "messages": [assistant("second answer")]}

    actor, bus = in_process({"session.turn": session_turn,
                             "session.interrupt": lambda args: {"interrupted": True}})
    second_answered = threading.Event()
    bus_call = bus.call

    def recorded_call(op: str, args: dict | None = None, **kw: Any) -> Any:
        out = bus_call(op, args, **kw)
        if op == "session.turn" and str((args or {}).get("turn")).endswith(".2"):
            second_answered.set()
        return out
    bus.call = recorded_call  # type: ignore[method-assign]
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    ask(actor, bus, "agent.send", {"conversation": cid, "text": "one"})
    assert ask(actor, bus, "agent.send", {"conversation": cid, "text": "two"})["turn"] == \
        f"{cid}.2"
    assert second_answered.wait(10)   # the second turn's answer is in before the first one's
    ask(actor, bus, "agent.history", {"conversation": cid})   # and the actor has had it
    assert not [e for e in bus.events if e[0] == "agent.turn" and e[1]["state"] == "done"]
    release_first.set()
    bus.wait(lambda: [e for e in bus.events if e[0] == "agent.turn"
                      and e[1]["turn"] == f"{cid}.2" and e[1]["state"] == "done"])
    ends = [(d["turn"], d["state"]) for t, d in bus.events
            if t == "agent.turn" and d["state"] != "started"]
    assert ends == [(f"{cid}.1", "stopped"), (f"{cid}.2", "done")]
    history = ask(actor, bus, "agent.history", {"conversation": cid})
    assert [(m["role"], m["content"][0]["type"]) for m in history["messages"]] == [
        ("user", "text"), ("assistant", "tool_use"), ("user", "tool_result"),
        ("user", "text"), ("assistant", "text")]


def test_a_third_message_while_an_interrupt_is_pending_is_busy(in_process):
    hold = threading.Event()
    actor, bus = in_process({"session.turn": lambda args: hold.wait(10) and {
        "status": "stopped", "messages": [], "buffers": []},
        "session.interrupt": lambda args: {"interrupted": True}})
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    ask(actor, bus, "agent.send", {"conversation": cid, "text": "one"})
    ask(actor, bus, "agent.send", {"conversation": cid, "text": "two"})
    with pytest.raises(AgentError) as err:
        ask(actor, bus, "agent.send", {"conversation": cid, "text": "three"})
    assert err.value.kind == "agent.busy"
    hold.set()


def test_no_session_process_at_all_ends_the_turn_as_unavailable(in_process):
    spawned = []
    actor, bus = in_process({"system.spawn": lambda args: spawned.append(args) or {}})
    actor.proxy().spawn_wait_s = 0.3
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    turn = ask(actor, bus, "agent.send", {"conversation": cid, "text": "hi"})["turn"]
    error = bus.wait(lambda: next((d for t, d in bus.events if t == "agent.error"), None))
    assert error["kind"] == "agent.session_unavailable" and error["turn"] == turn
    assert spawned == [{"kind": "agent", "key": cid}]   # spawned once, then waited for


def test_worker_pool_reuses_idle_threads():
    from actors.agents.conversations import WorkerPool
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
    from actors.agents.turn_workers import IdleTimers
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


def test_a_turn_goes_to_the_session_once_system_spawn_answers_and_never_polls(in_process):
    """system.spawn is answered when the process is ready (actors/spawn_waits.py): the turn
    waits for that one answer — no system.status, no session.turn before it, no retries."""
    asked: list[str] = []
    release = threading.Event()

    def spawn(args: dict) -> dict:
        asked.append("system.spawn")
        release.wait(10)
        return {"name": f"agent:{args['key']}", "state": "running", "ready": True}

    def turn(args: dict) -> dict:
        asked.append("session.turn")
        return {"status": "done", "messages": [], "buffers": []}
    actor, bus = in_process({"system.spawn": spawn, "session.turn": turn})
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    ask(actor, bus, "agent.send", {"conversation": cid, "text": "hi"})
    assert wait_for(lambda: asked, 10)
    assert asked == ["system.spawn"]          # held there until the process is ready
    release.set()
    bus.wait(lambda: [e for e in bus.events if e[0] == "agent.turn" and e[1]["state"] == "done"])
    assert asked == ["system.spawn", "session.turn"]
    # The next turn finds the session healthy: straight to it.
    ask(actor, bus, "agent.send", {"conversation": cid, "text": "again"})
    bus.wait(lambda: len([e for e in bus.events
                          if e[0] == "agent.turn" and e[1]["state"] == "done"]) == 2)
    assert asked == ["system.spawn", "session.turn", "session.turn"]


def test_a_session_process_that_exits_before_ready_fails_the_turn_classified(in_process):
    def spawn(args: dict) -> dict:
        raise BusError("spawn_failed", f"The agent:{args['key']} process ended before it was "
                       "ready (exit 3).", "Read its log.")
    actor, bus = in_process({"system.spawn": spawn})
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    turn = ask(actor, bus, "agent.send", {"conversation": cid, "text": "hi"})["turn"]
    error = bus.wait(lambda: next((d for t, d in bus.events if t == "agent.error"), None))
    assert error["kind"] == "agent.session_unavailable" and error["turn"] == turn
    assert "exit 3" in error["message"] and "rio status" in error["next"]


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


def test_pending_lists_mcp_proposals_and_what_a_running_agent_offers(in_process):
    """agent.pending (a window started late): the turn's start, the session's waiting events,
    then the MCP tools' waiting proposals of that conversation (mcp.pending, held by the mcp
    actor); and, from every running session process — even between turns — the agent's
    modes/config, so a late window shows its pickers at once."""
    hold = threading.Event()
    modes = {"topic": "agent.modes", "data": {"current": "ask",
                                              "available": [{"id": "ask", "name": "Ask"}]}}
    actor, bus = in_process({
        "session.turn": lambda args: hold.wait(10) and {
            "status": "done", "messages": [assistant("ok")], "buffers": []},
        "session.pending": lambda args: {"turn": f"{args['conversation']}.1", "events": [
            {"topic": "agent.propose", "data": {"proposal": "p1", "path": "a.txt"}}, modes]}
        if not hold.is_set() else {"turn": None, "events": [modes]},
        "mcp.pending": lambda args: {"events": [
            {"topic": "agent.propose", "data": {"conversation": cid, "turn": f"{cid}.1",
                                                "proposal": "mcp-1", "path": "b.txt"}},
            {"topic": "agent.propose", "data": {"conversation": "c-other", "turn": "c-other.1",
                                                "proposal": "mcp-2", "path": "c.txt"}}]}})
    cid = ask(actor, bus, "agent.new", {})["conversation"]
    ask(actor, bus, "agent.send", {"conversation": cid, "text": "one"})
    got = ask(actor, bus, "agent.pending", {})["events"]
    assert [(e["topic"], e["data"].get("proposal")) for e in got] == [
        ("agent.turn", None), ("agent.propose", "p1"), ("agent.modes", None),
        ("agent.propose", "mcp-1")]
    assert all(e["data"]["conversation"] == cid for e in got)
    assert got[3]["data"]["turn"] == f"{cid}.1" and got[2]["data"]["current"] == "ask"
    hold.set()
    bus.wait(lambda: [e for e in bus.events if e[0] == "agent.turn"
                      and e[1]["state"] == "done"])
    # Between turns the session process still runs: its agent's offer, nothing waiting.
    got = ask(actor, bus, "agent.pending", {"conversation": cid})["events"]
    assert [e["topic"] for e in got] == ["agent.modes"] and "turn" not in got[0]["data"]
