"""Blocking calls served at once, each on a worker thread with a connection of its own.

A :class:`~actors.bus.client.BusConnection` belongs to one thread (a ZeroMQ socket is not
thread-safe) and its ``call`` blocks; so does ``rio mcp``'s HTTP connection to Rio's MCP
endpoint (rio/mcp/stdio_link.py: any object with ``call(op, args, timeout)`` and
``close()``). ``rio mcp`` (rio/mcp/server.py) needs many calls in flight — a
``propose_edit`` waits minutes for the user while the agent goes on reading — so
:class:`CallPool` keeps up to ``size`` worker threads, each making its own connection with
``connect()`` when it starts (the first at once, while the agent's ``initialize`` is
answered) and using it alone. A call beyond ``size`` waits for a worker: the next one to end
its call takes it and is not counted idle meanwhile (it was, and a later call was then
promised a worker that was busy). A worker whose connection could not be made tries again at
its next call.

A call that must not wait behind the others — ``mcp.cancel``, sent while every worker may be
held by a proposal waiting for the user, and sent precisely to end one of those waits — is
:meth:`CallPool.submit_now`: an idle worker if there is one, else a thread and connection of
its own for that call alone. Queued behind eight waiting proposals, it would wait for one of
them to end (up to the 360 s call timeout) and cancel nothing.

Nothing here keeps the process alive: the threads are daemon threads (one still waiting for
the user when the agent goes is left to end with the process; its call's timeout is 360 s),
and :meth:`CallPool.close` waits a bounded time, ``wait`` seconds in all (it once waited 5 s
for a busy worker that would never end in time), for the idle workers to close their
connections and end.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

#: Calls in flight at once; proposals waiting for the user are few, reads end in milliseconds.
CALLS_AT_ONCE = 8
#: How long :meth:`CallPool.close` waits for its idle workers to end: an idle worker takes its
#: stop at once; a busy one may wait minutes for the user and is not waited for at all.
CLOSE_WAIT_S = 0.25

_Job = Callable[[Any], Any]


class CallPool:
    """``submit(op, args, timeout)`` → a future of the call's result (or its error)."""

    def __init__(self, connect: Callable[[], Any], size: int = CALLS_AT_ONCE) -> None:
        self.connect = connect
        self.size = size
        self.jobs: queue.SimpleQueue[tuple[_Job | None, Any]] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.idle = 0                  # workers waiting for a job none was promised to yet
        self.waiting = 0               # jobs queued that no worker was promised to yet
        self.workers: list[threading.Thread] = []
        self.busy: set[threading.Thread] = set()   # workers running a job now
        self.extra = 0                 # one-call threads started by submit_now
        self.connections = 0           # made so far (one per worker that connected)
        self.connecting = self._submit(lambda conn: None)   # the first connection, now

    def submit(self, op: str, args: Mapping[str, Any],
               timeout: float) -> concurrent.futures.Future[Any]:
        return self._submit(lambda conn: conn.call(op, args, timeout=timeout))

    def submit_now(self, op: str, args: Mapping[str, Any],
                   timeout: float) -> concurrent.futures.Future[Any]:
        """Like :meth:`submit`, but never queued behind calls in flight: an idle worker takes
        it, else a thread of its own with a connection made for it and closed after."""
        return self._submit(lambda conn: conn.call(op, args, timeout=timeout), at_once=True)

    def _submit(self, job: _Job, *, at_once: bool = False) -> concurrent.futures.Future[Any]:
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self.lock:
            if self.idle:
                self.idle -= 1
            elif len(self.workers) < self.size:
                self._start(self._work, f"rio-bus-call-{len(self.workers)}", self.workers)
            elif at_once:
                self.extra += 1
                self._start(lambda: self._once(job, done), f"rio-bus-now-{self.extra}", None)
                return done
            else:                      # the next worker to end its call takes it
                self.waiting += 1
            self.jobs.put((job, done))
        return done

    @staticmethod
    def _start(target: Callable[[], None], name: str,
               into: list[threading.Thread] | None) -> None:
        worker = threading.Thread(target=target, daemon=True, name=name)
        if into is not None:
            into.append(worker)
        worker.start()

    def _run(self, job: _Job, done: concurrent.futures.Future[Any], conn: Any) -> Any:
        """Run ``job`` for ``done`` on ``conn`` (connecting first when it is None); returns
        the connection, None when none could be made."""
        if not done.set_running_or_notify_cancel():
            return conn                # cancelled while queued: never sent
        try:
            if conn is None:           # made on this thread, used by it alone
                conn = self.connect()
                with self.lock:
                    self.connections += 1
            done.set_result(job(conn))
        except BaseException as exc:  # noqa: BLE001 -- the caller gets every failure
            done.set_exception(exc)
        return conn

    def _work(self) -> None:
        conn = None
        while True:
            job, done = self.jobs.get()
            if job is None:            # close()
                break
            with self.lock:
                self.busy.add(threading.current_thread())
            conn = self._run(job, done, conn)
            with self.lock:
                self.busy.discard(threading.current_thread())
                if self.waiting:       # a queued job is this worker's next: not idle
                    self.waiting -= 1
                else:
                    self.idle += 1
        if conn is not None:
            conn.close()

    def _once(self, job: _Job, done: concurrent.futures.Future[Any]) -> None:
        conn = self._run(job, done, None)
        if conn is not None:
            conn.close()

    def close(self, wait: float = CLOSE_WAIT_S) -> None:
        """Idle workers close their connections and end, waited for ``wait`` seconds in all;
        one still waiting for a reply is not waited for: it takes its stop when its call
        ends, or ends with the process (a daemon thread: it never holds the process open)."""
        with self.lock:
            workers = list(self.workers)
            idle = [w for w in workers if w not in self.busy]
        for _ in workers:
            self.jobs.put((None, None))
        deadline = time.monotonic() + wait
        for worker in idle:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
