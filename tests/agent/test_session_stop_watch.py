"""A Stop reaches a session whose loop hangs (actors/agent/stop_watch.py): the session's bus
side hands it to the core within its deadline and the client gets the core's answer; the loop,
when it wakes, stops its turn without a second answer. A healthy loop answers itself and the
core is never asked. No processes: the real AgentSession with a stand-in for its bus thread."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from actors.agent import stop_watch
from actors.agent.session import AgentSession, _Running
from actors.bus.service import RequestContext
from rio.protocol.frames import Reply, Request

pytestmark = pytest.mark.timeout(60)

CID = "conv0stop1"


class FakeBus:
    """What the session uses of its BusThread here: ``call`` (to the core) and replies."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.replies: list[Reply] = []
        self.replied = threading.Event()

    def call(self, op: str, args: dict[str, Any], *, timeout: float = 10.0) -> Any:
        self.calls.append((op, dict(args)))
        return {"stopped": True, "turn": f"{CID}.1"}

    def send_reply(self, client: bytes, reply: Reply, events: Any = ()) -> None:
        self.replies.append(reply)
        self.replied.set()


class FakeTurn:
    def __init__(self) -> None:
        self.spec = type("Spec", (), {"turn": f"{CID}.1"})()


@pytest.fixture
def session(tmp_path: Path):
    bus = FakeBus()
    me = AgentSession(bus, tmp_path, CID)  # type: ignore[arg-type]
    me._warm_up = lambda: None            # no provider imports: not what is tested
    me.start()
    yield me, bus
    me.loop.call_soon_threadsafe(me.loop.stop)
    me.thread.join(5)


def on_loop(me: AgentSession, coro: Any) -> Any:
    return asyncio.run_coroutine_threadsafe(coro, me.loop).result(10)


def running_turn(me: AgentSession) -> _Running:
    async def make() -> _Running:
        task = me.loop.create_task(asyncio.Event().wait())   # runs until cancelled
        me.running = _Running("hi", turn_id=f"{CID}.1", turn=FakeTurn(),  # type: ignore[arg-type]
                              task=task)
        return me.running
    return on_loop(me, make())


async def settled() -> None:
    """Every other task on the loop has finished (the dispatched Stop included)."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        await asyncio.wait(others, timeout=5)


def stop_request(bus: FakeBus) -> RequestContext:
    args = {"conversation": CID}
    return RequestContext(bus, b"client", Request("r1", "agent.stop", args), args)  # type: ignore[arg-type]


def test_a_stop_to_a_hung_loop_is_answered_by_the_core_within_the_deadline(session):
    me, bus = session
    running = running_turn(me)
    release = threading.Event()
    hung = threading.Event()

    def hang() -> None:               # the loop blocks (a blocking call, a bug)
        hung.set()
        release.wait(30)
    me.loop.call_soon_threadsafe(hang)
    assert hung.wait(10)
    ctx = stop_request(bus)
    t0 = time.monotonic()
    me.handle(ctx)
    try:
        assert bus.replied.wait(stop_watch.STOP_DEADLINE_S + 5)
        answered_in = time.monotonic() - t0
    finally:
        release.set()
    assert answered_in < stop_watch.STOP_DEADLINE_S + 3
    assert bus.calls == [("agent.stop", {"conversation": CID})]   # the core was asked
    assert bus.replies[0].ok and bus.replies[0].result == {"stopped": True,
                                                           "turn": f"{CID}.1"}
    on_loop(me, settled())            # the loop woke and served the Stop it was handed
    assert running.task.cancelled()   # … stopping its turn
    assert len(bus.replies) == 1      # … without a second answer


def test_a_healthy_loop_answers_the_stop_itself_and_the_core_is_not_asked(session,
                                                                          monkeypatch):
    monkeypatch.setattr(stop_watch, "STOP_DEADLINE_S", 0.2)
    me, bus = session
    running = running_turn(me)
    ctx = stop_request(bus)
    me.handle(ctx)
    assert bus.replied.wait(10)
    for thread in threading.enumerate():   # the deadline passes
        if thread.name == "rio-agent-stop-watch":
            thread.join(5)
    on_loop(me, settled())
    assert bus.replies[0].result == {"stopped": True, "turn": f"{CID}.1"}
    assert running.task.cancelled()
    assert bus.calls == [] and len(bus.replies) == 1
