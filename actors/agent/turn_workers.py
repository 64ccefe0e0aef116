"""Threads the conversations actor (actors/agent/conversations_actor.py) hands work to.

:class:`WorkerPool` runs a turn's long ``session.turn`` request (and quick forwards) off the
actor's mailbox; :class:`IdleTimers` says when a conversation has had no turn for
``idle_stop_s``, so its session process can be stopped (issue 9: every conversation used to
keep a ~50 MB process until the instance stopped). Both only call back: the actor's state is
touched from its own thread, never from these.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable

log = logging.getLogger("rio.agent.conversations")


class WorkerPool:
    """Long-lived daemon worker threads that grow on demand up to ``limit``; idle ones wait."""

    def __init__(self, name: str, limit: int):
        self.name = name
        self.limit = limit
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle > 0:
                self._idle -= 1            # an idle worker will take it
            elif len(self._threads) < self.limit:
                t = threading.Thread(target=self._work, daemon=True,
                                     name=f"rio-{self.name}-{len(self._threads) + 1}")
                self._threads.append(t)
                t.start()
            # else: every worker is busy and the pool is full; the job waits its turn
        self._jobs.put(job)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job()
            except Exception:  # a job's failure must not kill the worker
                log.exception("%s: a job failed", self.name)
            with self._lock:
                self._idle += 1

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)


class IdleTimers:
    """One timer per conversation whose last turn ended; ``on_due(cid, generation)`` fires
    after ``idle_s`` unless a new turn disarmed it. ``due`` tells a live timer from a stale one
    (a turn began between the timer firing and the actor reading its message)."""

    def __init__(self, idle_s: float, on_due: Callable[[str, int], None]):
        self.idle_s = idle_s
        self.on_due = on_due
        self._armed: dict[str, tuple[int, threading.Timer]] = {}
        self._generation = 0

    def arm(self, cid: str) -> None:
        self.disarm(cid)
        if self.idle_s <= 0:
            return                      # idle_stop_s = 0: never
        self._generation += 1
        generation = self._generation
        timer = threading.Timer(self.idle_s, lambda: self.on_due(cid, generation))
        timer.daemon = True
        self._armed[cid] = (generation, timer)
        timer.start()

    def disarm(self, cid: str) -> None:
        armed = self._armed.pop(cid, None)
        if armed is not None:
            armed[1].cancel()

    def due(self, cid: str, generation: int) -> bool:
        """True (once) when ``generation`` is the conversation's live timer."""
        armed = self._armed.get(cid)
        if armed is None or armed[0] != generation:
            return False
        del self._armed[cid]
        return True

    def close(self) -> None:
        for _, timer in self._armed.values():
            timer.cancel()
        self._armed.clear()

