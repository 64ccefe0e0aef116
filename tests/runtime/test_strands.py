"""Strands (a buffer's mailbox without a thread of its own) and the liveness check that load
cannot starve (actors/runtime/strands.py, actors/runtime/liveness.py, ADR-0040)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pykka
import pytest

import actors.runtime.liveness as liveness_module
from actors.runtime.actor_registry import Ping
from actors.runtime.liveness import Liveness, LivenessActor, Stamp, process_failed
from actors.runtime.strands import BATCH, StrandPool, StrandStopped
from tests.support import wait_for

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def pool():
    made: list[StrandPool] = []

    def make(workers: int, **kw: Any) -> StrandPool:
        made.append(StrandPool("test", workers, **kw))
        return made[-1]
    yield make
    for p in made:
        p.close()


def test_one_strands_messages_are_handled_in_order_one_at_a_time(pool) -> None:
    p = pool(4)
    seen: dict[int, list[int]] = {i: [] for i in range(20)}
    running: dict[int, int] = dict.fromkeys(range(20), 0)
    overlap: list[int] = []

    def receiver(i: int):
        def receive(n: int) -> int:
            running[i] += 1
            if running[i] > 1:
                overlap.append(i)
            seen[i].append(n)
            running[i] -= 1
            return n * 2
        return receive
    strands = [p.strand(receiver(i)) for i in range(20)]
    futures = []
    for n in range(300):
        for s in strands:
            if n % 7 == 0:
                futures.append((n, s.ask(n)))
            else:
                s.tell(n)
    for n, f in futures:
        assert f.result(timeout=30) == n * 2
    for s in strands:
        s.stop(timeout=30)
    assert not overlap
    assert all(seen[i] == list(range(300)) for i in range(20))


def test_a_failing_message_is_the_askers_and_the_strand_goes_on(pool) -> None:
    p = pool(1)

    def receive(n: int) -> int:
        if n == 1:
            raise ValueError("one")
        return n
    s = p.strand(receive)
    failed, told, fine = s.ask(1), s.tell(1), s.ask(2)
    with pytest.raises(ValueError):
        failed.result(timeout=10)
    assert told is None and fine.result(timeout=10) == 2


def test_a_busy_strand_does_not_starve_the_others(pool) -> None:
    """One worker: a strand with a long queue yields it after BATCH messages."""
    p = pool(1)
    gate = threading.Event()
    order: list[str] = []

    def slow(n: int) -> None:
        gate.wait(10)
        order.append(f"a{n}")
    a = p.strand(slow)
    b = p.strand(lambda n: order.append(f"b{n}"))
    for n in range(5 * BATCH):
        a.tell(n)
    b.tell(0)
    gate.set()
    b.stop(timeout=10)
    a.stop(timeout=30)
    assert order.index("b0") <= BATCH
    assert [x for x in order if x.startswith("a")] == [f"a{n}" for n in range(5 * BATCH)]


def test_a_stop_from_its_own_message_refuses_what_was_queued_behind(pool) -> None:
    p = pool(2)
    refused: list[Any] = []
    handled: list[Any] = []
    stopped: list[bool] = []
    gate = threading.Event()
    holder: dict[str, Any] = {}

    def receive(message: str) -> None:
        if message == "close":
            gate.wait(10)
            holder["s"].stop(now=True)
        handled.append(message)
    s = p.strand(receive, on_stop=lambda: stopped.append(True), refuse=refused.append)
    holder["s"] = s
    s.tell("close")
    s.tell("after")
    asked = s.ask("asked after")
    gate.set()
    with pytest.raises(StrandStopped):
        asked.result(timeout=10)
    assert handled == ["close"] and refused == ["after"] and stopped == [True]
    assert not s.is_alive()
    with pytest.raises(StrandStopped):
        s.tell("later")


def test_a_worker_stuck_in_one_message_stops_the_ping_answer(pool) -> None:
    live = Liveness(hung_after_s=0.2)
    p = pool(2, liveness=live)
    gate = threading.Event()
    s = p.strand(lambda _: gate.wait(10))
    assert live.stuck() is None
    s.tell("stuck")
    wait_for(live.stuck, 10)
    assert "busy with one message" in (live.stuck() or "")
    gate.set()
    s.stop(timeout=10)
    assert live.stuck() is None


def test_a_long_queue_of_short_messages_is_not_a_hang(pool) -> None:
    live = Liveness(hung_after_s=0.3)
    p = pool(1, liveness=live)
    s = p.strand(lambda _: time.sleep(0.002))
    for n in range(400):     # ~0.8 s of work queued: longer than hung_after_s in all
        s.tell(n)
    last = s.ask("last")
    worst: list[str | None] = []
    while not last.done():
        worst.append(live.stuck())
        time.sleep(0.01)
    s.stop(timeout=30)
    assert len(worst) > 10       # looked at all along the queue
    assert not [w for w in worst if w is not None]


def test_the_liveness_stamp_times_one_message() -> None:
    stamp = Stamp("w")
    live = Liveness(hung_after_s=5)
    live._stamps.append(stamp)
    with stamp.busy():
        now = time.monotonic()
        assert live.stuck(now + 1) is None
        assert "w has been busy" in (live.stuck(now + 6) or "")
    assert live.stuck(time.monotonic() + 60) is None and stamp.messages == 1


class _Ctx:
    def __init__(self) -> None:
        self.replies: list[Any] = []

    def reply(self, result: Any = None, **_: Any) -> None:
        self.replies.append(result)


class _Quits(pykka.ThreadingActor):
    def on_receive(self, message: Any) -> Any:
        self.stop()


def test_the_ping_is_answered_only_while_nothing_is_stuck_and_every_actor_lives() -> None:
    live = Liveness(hung_after_s=5)
    stamp = live.stamp("documents registry")
    other = _Quits.start()
    live.watch_actor("other", other)
    keeper = LivenessActor.start(live, "core")
    try:
        ok = _Ctx()
        keeper.ask(Ping(ok))
        assert ok.replies and ok.replies[0]["process"] == "core"
        stamp.busy_since = time.monotonic() - 10      # one message for 10 s
        stuck = _Ctx()
        keeper.ask(Ping(stuck))
        assert stuck.replies == []
        stamp.busy_since = None
        other.tell("quit")
        wait_for(lambda: not other.is_alive(), 10, 0.01)
        dead = _Ctx()
        keeper.ask(Ping(dead))
        assert dead.replies == [] and "other actor has stopped" in (live.stuck() or "")
    finally:
        keeper.stop()


def test_a_dead_actor_ends_its_process_through_the_hook(monkeypatch) -> None:
    said: list[str] = []
    monkeypatch.setattr(liveness_module, "_on_failure", None)
    process_failed("nothing hooked: only logged")
    liveness_module.on_process_failure(said.append)
    try:
        process_failed("the documents registry died")
    finally:
        liveness_module.on_process_failure(None)
    assert said == ["the documents registry died"]
