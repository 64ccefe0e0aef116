"""The core's event barrier: a session that dies mid-stream has its reply on the request
socket and its streamed text on the event socket, in no order between them. The barrier
waits until every event published before it has been handled (actors/agents/conversations.py)."""

from __future__ import annotations

import queue
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from actors.agents.conversations import EventBarrier

pytestmark = pytest.mark.timeout(30)


class SlowHub:
    """Delivers published events to one subscriber in order, on its own thread, slowly —
    as a loaded core's bus thread does."""

    def __init__(self, delay_s: float = 0.02, deliver: bool = True):
        self.delay_s, self.deliver = delay_s, deliver
        self.handlers: list[Any] = []
        self.queue: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def subscribe(self, prefix: str, handler: Any) -> None:
        self.handlers.append((prefix, handler))

    def publish(self, topic: str, data: dict[str, Any]) -> None:
        if self.deliver or topic != EventBarrier.TOPIC:
            self.queue.put((topic, data))

    def _run(self) -> None:
        while (item := self.queue.get()) is not None:
            time.sleep(self.delay_s)
            topic, data = item
            for prefix, handler in self.handlers:
                if topic.startswith(prefix):
                    handler(SimpleNamespace(topic=topic, data=data))

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join(5)


def test_the_barrier_returns_after_every_earlier_event_was_handled():
    hub = SlowHub()
    seen: list[str] = []
    hub.subscribe("agent.delta", lambda e: seen.append(e.data["text"]))
    barrier = EventBarrier(hub, timeout_s=10)  # type: ignore[arg-type]
    hub.subscribe(EventBarrier.TOPIC, barrier.on_event)
    for piece in ("Half ", "an ", "answer"):
        hub.publish("agent.delta", {"text": piece})
    assert barrier.wait() is True
    assert seen == ["Half ", "an ", "answer"]   # without the wait, seen is still empty here
    hub.close()


def test_a_barrier_never_heard_back_gives_up_after_its_timeout():
    hub = SlowHub(deliver=False)
    barrier = EventBarrier(hub, timeout_s=0.2)  # type: ignore[arg-type]
    hub.subscribe(EventBarrier.TOPIC, barrier.on_event)
    assert barrier.wait() is False
    assert barrier._waiting == {}
    hub.close()
