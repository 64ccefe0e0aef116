"""The conversations actor in one process, on a fake bus: orderings a real instance rarely
produces (a session busy, absent, exiting before it is ready, a bug in a forward), the idle
timers and the worker pool.

The store through a real ``rio serve`` is tests/agent/test_conversations_actor.py; with real
session processes, tests/agent/test_conversations_e2e.py.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest

from actors.bus.service import RequestContext
from rio.protocol.errors import AgentError, BusError, RioError
from tests.support import wait_for

pytestmark = pytest.mark.timeout(90)


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
