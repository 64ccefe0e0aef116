"""Strands: many small mailboxes served by a few threads (the core's open buffers).

A pykka actor is a thread. One per open buffer made 3,300 buffers 3,300 threads, each woken
four times a second by the journal flush, and the core could no longer answer (issue 22). A
:class:`Strand` keeps what an actor per buffer gave — a buffer's messages are handled one at a
time, in the order they came, and only by whichever thread runs its strand at that moment —
but costs no thread: a :class:`StrandPool` of a few worker threads runs the strands that have
messages waiting, each for at most :data:`BATCH` messages before the next waiting strand gets a
turn. An idle strand costs a deque and a lock; an idle pool costs threads blocked on one queue.

Replies and events leave in the order the strand made them even though two of its messages may
run on two different workers: the pool's workers send through one shared link to the hub
(:meth:`actors.bus.service.BusThread.join_shared_link`), and a strand's next message starts
only after the previous one's sends returned.

Each worker holds a :class:`~actors.runtime.liveness.Stamp`: a worker stuck in one message makes the
process miss its pings (actors/runtime/liveness.py), a busy pool does not.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from actors.runtime.liveness import Liveness, Stamp

log = logging.getLogger("rio.strands")

#: Messages one strand handles in a row before the next waiting strand gets the worker.
BATCH = 16


class StrandStopped(Exception):
    """The strand was stopped: its messages are no longer handled."""


class _Stop:
    def __repr__(self) -> str:
        return "STOP"


_STOP = _Stop()


def _stopped_receive(message: Any) -> Any:
    raise StrandStopped()


class StrandPool:
    """``workers`` threads running the strands that have messages waiting."""

    def __init__(self, name: str, workers: int, *, liveness: Liveness | None = None,
                 on_thread_start: Callable[[], None] | None = None) -> None:
        self.name = name
        self._ready: queue.SimpleQueue[Strand | None] = queue.SimpleQueue()
        self._liveness = liveness
        self._on_thread_start = on_thread_start
        self.stamps: list[Stamp] = []
        self._threads: list[threading.Thread] = []
        for i in range(workers):
            stamp = liveness.stamp(f"{name} worker {i + 1}") if liveness is not None \
                else Stamp(f"{name} worker {i + 1}")
            self.stamps.append(stamp)
            thread = threading.Thread(target=self._work, args=(stamp,), daemon=True,
                                      name=f"rio-{name}-{i + 1}")
            self._threads.append(thread)
            thread.start()

    def strand(self, receive: Callable[[Any], Any], *,
               on_stop: Callable[[], None] | None = None,
               refuse: Callable[[Any], None] | None = None) -> Strand:
        """A new strand whose messages ``receive`` handles. ``on_stop`` runs on the strand
        when it stops; ``refuse`` is given each message that arrives after (or was still
        queued at) its stop, to answer it (a request) instead of dropping it."""
        return Strand(self, receive, on_stop=on_stop, refuse=refuse)

    def _schedule(self, strand: Strand) -> None:
        self._ready.put(strand)

    def _work(self, stamp: Stamp) -> None:
        if self._on_thread_start is not None:
            try:
                self._on_thread_start()
            except Exception:  # a worker without its set-up still works
                log.exception("%s: a worker's set-up failed", self.name)
        while True:
            strand = self._ready.get()
            if strand is None:
                return
            strand._run(stamp)
            del strand     # a stopped strand's memory is not held until the next one comes

    def close(self, timeout: float = 5.0) -> None:
        for _ in self._threads:
            self._ready.put(None)
        for thread in self._threads:
            thread.join(timeout / max(1, len(self._threads)))
        if self._liveness is not None:
            for stamp in self.stamps:
                self._liveness.forget(stamp)


class Strand:
    """One mailbox on a :class:`StrandPool`; see the module docstring."""

    __slots__ = ("_pool", "_receive", "_on_stop", "_refuse", "_queue", "_lock", "_scheduled",
                 "_stopping", "_stopped", "_done")

    def __init__(self, pool: StrandPool, receive: Callable[[Any], Any], *,
                 on_stop: Callable[[], None] | None,
                 refuse: Callable[[Any], None] | None) -> None:
        self._pool = pool
        self._receive = receive
        self._on_stop = on_stop
        self._refuse = refuse
        self._queue: collections.deque[tuple[Any, concurrent.futures.Future[Any] | None]] = \
            collections.deque()
        self._lock = threading.Lock()
        self._scheduled = False
        self._stopping = False   # a stop is queued: nothing more is taken
        self._stopped = False    # the stop was handled
        self._done = threading.Event()

    # --- any thread -------------------------------------------------------------------------
    def tell(self, message: Any) -> None:
        """Queue ``message``; raises :class:`StrandStopped` once the strand is stopping."""
        self._put(message, None)

    def ask(self, message: Any) -> concurrent.futures.Future[Any]:
        """Queue ``message``; the future holds what ``receive`` returned (or raised)."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._put(message, future)
        return future

    def stop(self, timeout: float | None = None, *, now: bool = False) -> None:
        """Stop after the messages already queued — or, ``now`` (from the strand's own
        message: a buffer that closed), before them: they are refused. With ``timeout``,
        wait for the stop to be handled."""
        try:
            self._put(_STOP, None, front=now)
        except StrandStopped:
            pass
        if timeout is not None:
            self._done.wait(timeout)

    def is_alive(self) -> bool:
        return not self._stopping

    def _put(self, message: Any, future: concurrent.futures.Future[Any] | None, *,
             front: bool = False) -> None:
        with self._lock:
            if self._stopping:
                raise StrandStopped()
            if message is _STOP:
                self._stopping = True
            if front:
                self._queue.appendleft((message, future))
            else:
                self._queue.append((message, future))
            if self._scheduled:
                return
            self._scheduled = True
        self._pool._schedule(self)

    # --- a worker ---------------------------------------------------------------------------
    def _run(self, stamp: Stamp) -> None:
        for _ in range(BATCH):
            with self._lock:
                if not self._queue:
                    self._scheduled = False
                    return
                message, future = self._queue.popleft()
            if message is _STOP:
                self._finish(stamp)
                return
            if self._stopped:
                self._refused(message, future)
                continue
            with stamp.busy():
                try:
                    result = self._receive(message)
                except Exception as exc:  # one message never ends the strand
                    if future is not None:
                        future.set_exception(exc)
                    else:
                        log.exception("%s: a message failed: %r", self._pool.name, message)
                    continue
            if future is not None:
                future.set_result(result)
        with self._lock:
            if not self._queue:
                self._scheduled = False
                return
        self._pool._schedule(self)     # more waiting: after the other strands' turn

    def _finish(self, stamp: Stamp) -> None:
        with stamp.busy():
            self._stopped = True
            if self._on_stop is not None:
                try:
                    self._on_stop()
                except Exception:  # stopping anyway
                    log.exception("%s: stopping a strand failed", self._pool.name)
            with self._lock:
                left = list(self._queue)
                self._queue.clear()
                self._scheduled = False
            # what it served goes now (a closed buffer's text): only the refusal is kept
            self._receive = _stopped_receive
            self._on_stop = None
        for message, future in left:
            self._refused(message, future)
        self._done.set()

    def _refused(self, message: Any, future: concurrent.futures.Future[Any] | None) -> None:
        if future is not None:
            future.set_exception(StrandStopped())
        elif self._refuse is not None:
            try:
                self._refuse(message)
            except Exception:  # a refusal that fails is only logged
                log.exception("%s: refusing a message failed", self._pool.name)
