"""``system.spawn`` answered when the new process is READY, not when it was forked (issue 10).

The supervisor answers ``system.*`` on the hub's thread, which must never wait. So a spawn
whose process is not ready yet keeps the request's routing envelope (the client's identity and
the request id) here and returns :data:`~actors.bus.local_ops.DEFERRED`; the answer goes out through
:meth:`~actors.bus.hub.Hub.reply_later` when the supervisor's ``system.process`` event says how
it went:

* ``ready`` (the process answered its first ``host.ping``, so it is registered on the bus):
  ``{name, pid, state: "running", ready: true}``. Any request sent after this reply is routed
  to it — no caller polls ``system.status`` or retries on ``bus.no_route``;
* it exited (crashed, or was killed as hung: never answered a ping) before that:
  ``bus.spawn_failed``, naming its exit and its log;
* it was stopped before that (``system.restart again=false``, ``host.stop``):
  ``bus.spawn_failed`` too;
* none of these within :data:`SPAWN_READY_S`: ``bus.timeout``.

A spawn while the process is being stopped (an idle stop under way) starts it again once the
stop has ended, then answers when it is ready. A process already running and ready is answered
at once. Each copy of a duplicated request waits and is answered (docs/protocol.md "request ids").
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from actors.bus.local_ops import DEFERRED, Deferred
from actors.runtime.child import Child
from rio.protocol import ops
from rio.protocol.errors import BusError, ProtocolError, RioError
from rio.protocol.frames import Reply, Request

if TYPE_CHECKING:   # for the annotation only: the hub is the supervisor's, started by it
    from actors.bus.hub import Hub

log = logging.getLogger("rio.supervisor")

#: The longest a system.spawn waits for its process to be ready (a process that never answers
#: a ping is killed as hung after 15 s, which answers sooner).
SPAWN_READY_S = 20.0
#: child.extra key: spawn it again once its stop has ended (a spawn arrived while stopping)
RESPAWN = "respawn_after_stop"


@dataclass
class _Waiter:
    client: bytes
    request: str
    deadline: float


class SpawnOwner(Protocol):
    """What the waits need of the supervisor (actors/runtime/supervisor.py)."""

    children: dict[str, Child]
    hub: Hub | None

    def spawn_on_demand(self, args: dict[str, Any]) -> dict[str, Any]: ...


class SpawnWaits:
    """The deferred ``system.spawn`` requests of one supervisor, by process name."""

    def __init__(self, supervisor: SpawnOwner) -> None:
        self.sup = supervisor
        self._lock = threading.Lock()   # not the supervisor's: _event runs under that one
        self._waiting: dict[str, list[_Waiter]] = {}

    # --- the hub's thread ------------------------------------------------------------------------
    def request(self, sender: bytes, req: Request) -> Reply | Deferred:
        try:
            args = ops.validate(req)
            served = self._served_already(f"{args['kind']}:{args['key']}")
            if served is not None:
                return Reply.success(req.id, served)
            got = self.sup.spawn_on_demand(args)
        except (ProtocolError, RioError) as err:
            return Reply.failure(req.id, err)
        name = got["name"]
        with self._lock:
            child = self.sup.children.get(name)
            if child is None:
                return Reply.failure(req.id, BusError("spawn_failed", f"{name} is gone.",
                                                      "Try again; `rio status` shows it."))
            # "ready" is set before its event: read under our lock, no event slips between
            if child.ready and child.state == "running":
                return Reply.success(req.id, self._ready(child))
            if child.state in ("failed", "stopped", "idle-stopped") \
                    and not child.extra.get(RESPAWN):    # it ended already (a quick crash)
                return Reply.failure(req.id, _ended(child))
            if child.state == "stopping":
                child.extra[RESPAWN] = True
            self._waiting.setdefault(name, []).append(
                _Waiter(sender, req.id, time.monotonic() + SPAWN_READY_S))
        return DEFERRED

    def _served_already(self, name: str) -> dict[str, Any] | None:
        """A process registered on the bus under ``name`` that the supervisor did not start (a
        test's stand-in session): it is used as it is — a second one would replace it on the
        bus. None when the supervisor owns the name or nobody serves it."""
        child = self.sup.children.get(name)
        if child is not None and child.state not in ("failed", "stopped", "idle-stopped"):
            return None
        pid = self.sup.hub.registered_pid(name) if self.sup.hub is not None else None
        return None if pid is None else {"name": name, "pid": pid, "state": "running",
                                         "ready": True}

    # --- any thread: the supervisor's process events ---------------------------------------------
    def on_event(self, child: Child, what: str) -> None:
        name = child.spec.name
        if what == "ready":
            child.extra.pop(RESPAWN, None)
            self._answer(name, lambda w: Reply.success(w.request, self._ready(child)))
        elif what in ("exited", "gave_up"):
            self._answer(name, lambda w: Reply.failure(w.request, _ended(child)))
        elif what in ("stopped", "idle-stopped") and not child.extra.get(RESPAWN):
            self._answer(name, lambda w: Reply.failure(w.request, BusError(
                "spawn_failed", f"The {name} process was stopped before it was ready.",
                "Try again.", process=name)))

    def expire(self, now: float) -> None:
        """Answer the spawns that waited :data:`SPAWN_READY_S` (the monitor loop's tick)."""
        late: list[_Waiter] = []
        with self._lock:
            for name, waiters in list(self._waiting.items()):
                late += [w for w in waiters if w.deadline <= now]
                kept = [w for w in waiters if w.deadline > now]
                if kept:
                    self._waiting[name] = kept
                else:
                    del self._waiting[name]
        for w in late:
            self._send(w, Reply.failure(w.request, BusError(
                "timeout", f"The process did not get ready in {SPAWN_READY_S:g} s.",
                "Check `rio status` and the process's log; then try again.")))

    # --- helpers ---------------------------------------------------------------------------------
    @staticmethod
    def _ready(child: Child) -> dict[str, Any]:
        return {"name": child.spec.name, "pid": child.pid, "state": "running", "ready": True}

    def _answer(self, name: str, reply_for: Callable[[_Waiter], Reply]) -> None:
        with self._lock:
            waiters = self._waiting.pop(name, [])
        for w in waiters:
            self._send(w, reply_for(w))

    def _send(self, waiter: _Waiter, reply: Reply) -> None:
        hub = self.sup.hub
        if hub is None:
            return
        try:
            hub.reply_later(waiter.client, reply)
        except Exception:  # the caller's own timeout answers it then
            log.exception("system.spawn: the deferred reply could not be sent")


def _ended(child: Child) -> BusError:
    name = child.spec.name
    # --log-stderr: no file, its lines are on the supervisor's stderr (actors/runtime/log_relay.py)
    where = child.log_path or f"the lines marked [{name}] on the instance's stderr"
    return BusError("spawn_failed", f"The {name} process ended before it was ready "
                    f"({child.last_exit or 'no exit status'}).",
                    f"Read its log ({where}) and `rio status`; then try again.",
                    process=name)
