"""Blocking bus calls served at once, each on a worker thread with a connection of its own.

A :class:`~actors.bus.client.BusConnection` belongs to one thread (a ZeroMQ socket is not
thread-safe) and its ``call`` blocks. ``rio mcp`` (rio/mcp/server.py) needs many calls in
flight — a ``propose_edit`` waits minutes for the user while the agent goes on reading — so
:class:`CallPool` keeps up to ``size`` worker threads, each making its own connection with
``connect()`` when it starts (the first at once, while the agent's ``initialize`` is
answered) and using it alone. A call beyond ``size`` waits for a worker. A worker whose
connection could not be made tries again at its next call.

The workers are daemon threads: one still waiting for the user when the agent goes does not
keep the process alive. :meth:`CallPool.close` ends the idle ones, each closing its own
connection.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any

#: Calls in flight at once; proposals waiting for the user are few, reads end in milliseconds.
CALLS_AT_ONCE = 8

_Job = Callable[[Any], Any]


class CallPool:
    """``submit(op, args, timeout)`` → a future of the call's result (or its error)."""

    def __init__(self, connect: Callable[[], Any], size: int = CALLS_AT_ONCE) -> None:
        self.connect = connect
        self.size = size
        self.jobs: queue.SimpleQueue[tuple[_Job | None, Any]] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.idle = 0                  # workers waiting for a job none was promised to yet
        self.workers: list[threading.Thread] = []
        self.connections = 0           # made so far (one per worker that connected)
        self.connecting = self._submit(lambda conn: None)   # the first connection, now

    def submit(self, op: str, args: Mapping[str, Any],
               timeout: float) -> concurrent.futures.Future[Any]:
        return self._submit(lambda conn: conn.call(op, args, timeout=timeout))

    def _submit(self, job: _Job) -> concurrent.futures.Future[Any]:
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self.lock:
            self.jobs.put((job, done))
            if self.idle:
                self.idle -= 1
            elif len(self.workers) < self.size:
                worker = threading.Thread(target=self._work, daemon=True,
                                          name=f"rio-bus-call-{len(self.workers)}")
                self.workers.append(worker)
                worker.start()
        return done

    def _work(self) -> None:
        conn = None
        while True:
            job, done = self.jobs.get()
            if job is None:            # close()
                break
            if done.set_running_or_notify_cancel():
                try:
                    if conn is None:   # made on this thread, used by it alone
                        conn = self.connect()
                        with self.lock:
                            self.connections += 1
                    done.set_result(job(conn))
                except BaseException as exc:  # noqa: BLE001 -- the caller gets every failure
                    done.set_exception(exc)
            with self.lock:
                self.idle += 1
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Idle workers close their connections and end; one still waiting for a reply is
        left to end with the process."""
        with self.lock:
            workers = list(self.workers)
        for _ in workers:
            self.jobs.put((None, None))
        for worker in workers:
            worker.join(timeout=5 / len(workers))
