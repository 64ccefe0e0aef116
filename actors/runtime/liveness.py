"""Liveness: the supervisor's ``host.ping`` answered by a thread that load cannot starve, which
still misses it when the process is really stuck (ADR-0013, revised by ADR-0040).

The ping used to be answered by an actor that also did the process's work (the core's documents
registry), so a busy mailbox — thousands of buffers' journal flushes, a client pipelining
``buffer.new`` — looked exactly like a hung one, and the supervisor killed a core that was only
busy, again after every restart. Here the answer comes from a :class:`LivenessActor` whose
mailbox holds nothing but pings, after it has looked at what the process's serving threads are
doing:

* every thread that serves requests (an actor, a pool worker) holds a :class:`Stamp` and marks
  each message it works on (:meth:`Stamp.busy`);
* a ping is answered only when no stamp has been busy on one message for longer than
  :data:`HUNG_AFTER_S`, and every watched actor is alive.

So a process that is stopped (SIGSTOP), whose bus thread is stuck, or whose interpreter never
gets to run the liveness thread still misses its pings at once, as before; a deadlocked actor or
a worker stuck in one message misses them once it has been stuck for ``HUNG_AFTER_S`` (not
three pings, as before: no message Rio sends takes that long, and a busy queue is not a hang);
an actor that died misses them at once. And an actor that dies of an unhandled exception ends
its process (:func:`process_failed`), so the supervisor restarts it rather than leaving a
process that answers pings but serves nothing.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import pykka

from actors.bus.service import RequestContext

log = logging.getLogger("rio.liveness")


class Ping(NamedTuple):
    """``host.ping``, handed by the host to an actor of its process (a ping target), so a hung
    actor misses it and the supervisor restarts the process."""
    ctx: RequestContext


def answer_ping(ping: Ping, process: str) -> None:
    """A ping target's answer to :class:`Ping`."""
    ping.ctx.reply({"process": process, "pid": os.getpid()})


def _hung_after() -> float:
    try:
        return max(0.1, float(os.environ.get("RIO_HUNG_AFTER_S", "20")))
    except ValueError:
        return 20.0


#: One message taking longer than this means the thread serving it is stuck: the process stops
#: answering pings and the supervisor restarts it. Far above any message Rio sends (the slowest,
#: a 100 MB save or open, takes a few seconds on a loaded machine); ``RIO_HUNG_AFTER_S`` sets
#: it (the tests make it short).
HUNG_AFTER_S = _hung_after()


class Stamp:
    """What one serving thread is doing: since when it works on its current message."""

    __slots__ = ("name", "busy_since", "messages")

    def __init__(self, name: str) -> None:
        self.name = name
        self.busy_since: float | None = None
        self.messages = 0

    @contextmanager
    def busy(self) -> Iterator[None]:
        self.busy_since = time.monotonic()
        try:
            yield
        finally:
            self.busy_since = None
            self.messages += 1


class Liveness:
    """The stamps and actors of one process that its liveness answer depends on."""

    def __init__(self, hung_after_s: float | None = None) -> None:
        self.hung_after_s = HUNG_AFTER_S if hung_after_s is None else hung_after_s
        self._stamps: list[Stamp] = []
        self._actors: list[tuple[str, pykka.ActorRef[Any]]] = []
        self._lock = threading.Lock()

    @property
    def watching(self) -> bool:
        return bool(self._stamps or self._actors)

    def stamp(self, name: str) -> Stamp:
        stamp = Stamp(name)
        with self._lock:
            self._stamps.append(stamp)
        return stamp

    def forget(self, stamp: Stamp) -> None:
        with self._lock:
            if stamp in self._stamps:
                self._stamps.remove(stamp)

    def watch_actor(self, name: str, ref: pykka.ActorRef[Any]) -> None:
        with self._lock:
            self._actors.append((name, ref))

    def stuck(self, now: float | None = None) -> str | None:
        """Why the process must not answer its ping now, or None when it may."""
        now = time.monotonic() if now is None else now
        with self._lock:
            stamps, actors = list(self._stamps), list(self._actors)
        for stamp in stamps:
            since = stamp.busy_since
            if since is not None and now - since > self.hung_after_s:
                return f"{stamp.name} has been busy with one message for {now - since:.1f} s"
        for name, ref in actors:
            if not ref.is_alive():
                return f"the {name} actor has stopped"
        return None


class LivenessActor(pykka.ThreadingActor):
    """Answers ``host.ping`` (see the module docstring); its mailbox holds only pings."""

    def __init__(self, liveness: Liveness, process: str) -> None:
        super().__init__()
        self.liveness = liveness
        self.process = process
        self._said: str | None = None

    def on_receive(self, message: Any) -> Any:
        match message:
            case Ping():
                why = self.liveness.stuck()
                if why is None:
                    self._said = None
                    answer_ping(message, self.process)
                elif why != self._said:     # once per episode: the log is not a ping log
                    self._said = why
                    log.error("%s: not answering pings: %s", self.process, why)
        return None


#: What :func:`process_failed` calls: the host sets it to end the process with a failure
#: (the supervisor restarts it); None outside a host (in-process tests): only logged.
_on_failure: Callable[[str], None] | None = None


def on_process_failure(hook: Callable[[str], None] | None) -> None:
    global _on_failure
    _on_failure = hook


def process_failed(why: str) -> None:
    """An actor this process cannot do without died: end the process, so the supervisor
    restarts it (a process whose actor is gone would answer nothing but look alive)."""
    log.critical("ending the process: %s", why)
    hook = _on_failure
    if hook is not None:
        hook(why)
