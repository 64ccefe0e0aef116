"""Who may connect to the local bus: not an agent's processes (issue 22 point 5, ADR-0038).

The hub's ipc sockets live in a 0700 folder, so only the user's own processes reach them, and
every local client is an owner (rio/protocol/roles.py). An ACP agent runs as the user too. In
its box (rio/acp/sandbox.py) it cannot see the folder; without one — no bubblewrap, no user
namespaces, ``[sandbox] mode = "off"`` — it could read ``instance.json``, connect, and as an
owner switch the gate to ``allow_all``, add "always allow" entries, run commands through
``run.start`` or approve its own proposals.

So the hub asks, through ZeroMQ's authentication protocol (ZAP), who is at the other end of
each new local connection: for an ipc socket libzmq passes the peer's credentials (its pid,
from ``SO_PEERCRED``) in the ZAP request. :class:`PeerGuard` refuses the connection when that
process descends from an agent session's process (the agent, its helpers, a ``rio call`` an
agent runs) or from an orphan the supervisor adopted as subreaper (a helper that double-forked
out of its parent's tree); the user's own commands (a terminal, a service manager, the
desktop, a Run command of the core) connect as before. A refused client gets no connection at
all — its requests time out — and the supervisor's log names the pid and why. The check runs
once per connection, in a thread of its own (about a millisecond: the process's ancestors
read from /proc); the hub's frames are not touched.

What it cannot do, honestly: without a box an agent is the user. A helper that has *another*
program start it — ``systemd-run --user``, ``at``, a tmux server, ``ssh localhost`` — is not
Rio's descendant and connects as the user's own; an agent can also edit Rio's files directly
(config.toml, the gate's state file). The guard closes the door Rio itself opened (the
socket), not the user's account. The box closes the rest.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping

import psutil
import zmq

log = logging.getLogger("rio.hub.peers")

ZAP_ENDPOINT = "inproc://zeromq.zap.01"
#: The ZAP domain the hub's local sockets are put in (the handler answers only for it).
DOMAIN = b"rio-local"
#: The prefix of a conversation's session process ("agent:<conversation>").
SESSION_PREFIX = "agent:"
#: How long a child of the supervisor it cannot name yet is given to be named (a session a
#: zygote forked connects as soon as it is reparented; the supervisor reads its pid a tick
#: later). An orphan refused once is refused at once after that.
SETTLE_S = 1.5


class PeerGuard:
    """A ZAP handler for the hub's local sockets. ``processes()`` names the supervisor's
    children by pid (tracked children, spares …: whatever it spawned or adopted)."""

    def __init__(self, processes: Callable[[], Mapping[int, str]],
                 me: int | None = None, nudge: Callable[[], None] | None = None,
                 settle_s: float = SETTLE_S) -> None:
        self.processes = processes
        self.me = me if me is not None else os.getpid()
        self.nudge = nudge
        self.settle_s = settle_s
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.refused = 0
        #: orphans refused once, by (pid, start time): refused again at once
        self._orphans: set[tuple[int, float]] = set()

    # --- the verdict ----------------------------------------------------------------------
    def verdict(self, pid: int) -> str | None:
        """Why the process ``pid`` may not connect, or None when it may."""
        if pid == self.me:
            return None
        if pid == 0:
            # SO_PEERCRED says 0 for a peer outside this PID namespace: Rio in a container (as
            # PID 1) reached through a shared runtime folder by the host's own `rio`. Every
            # process Rio starts lives in its namespace or one below it, where its pid shows —
            # a boxed agent included — so a peer with no pid here is never one of Rio's.
            return None
        try:
            proc = psutil.Process(pid)
            chain = [proc, *proc.parents()]
        except psutil.NoSuchProcess:
            return "it ended before it could be asked who it is"
        except psutil.Error as exc:
            return f"its ancestry cannot be read ({type(exc).__name__})"
        pids = [p.pid for p in chain]
        if self.me not in pids:
            return None                      # not started under Rio: the user's own
        below = chain[:pids.index(self.me)]  # the peer … the supervisor's child
        top = below[-1]
        known = self._known_with(top)
        if top.pid not in known:
            return (f"it descends from pid {top.pid}, a process that left its parent and was "
                    "adopted by Rio's supervisor (an agent's helper double-forks that way)")
        for ancestor in below[1:]:
            name = known.get(ancestor.pid, "")
            if name.startswith(SESSION_PREFIX):
                return f"it was started by the agent of {name}"
        return None

    def _known_with(self, top: psutil.Process) -> Mapping[int, str]:
        """The supervisor's processes, once they name ``top`` or :attr:`settle_s` passed: a
        session forked by a zygote (actors/runtime/zygote.py) is reparented to the supervisor, and
        may connect a moment before the supervisor has read its pid from the zygote."""
        known = self.processes()
        if top.pid in known:
            return known
        try:
            key = (top.pid, top.create_time())
        except psutil.Error:
            return known
        if key in self._orphans:
            return known
        if self.nudge is not None:
            self.nudge()
        deadline = time.monotonic() + self.settle_s
        while top.pid not in known and time.monotonic() < deadline:
            time.sleep(0.01)
            known = self.processes()
        if top.pid not in known:
            self._orphans.add(key)
        return known

    # --- the ZAP handler ------------------------------------------------------------------
    def start(self, ctx: zmq.SyncContext) -> PeerGuard:
        """Bind the ZAP endpoint in the hub's context and answer on a thread of its own;
        once (a restarted hub thread finds it running)."""
        if self._thread is not None and self._thread.is_alive():
            return self
        sock = ctx.socket(zmq.REP)
        sock.setsockopt(zmq.LINGER, 0)
        sock.bind(ZAP_ENDPOINT)
        self._stop.clear()
        self._thread = threading.Thread(target=self._serve, args=(sock,), daemon=True,
                                        name="rio-hub-peers")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
            self._thread = None

    def _serve(self, sock: zmq.SyncSocket) -> None:
        try:
            while not self._stop.is_set():
                if not sock.poll(200):
                    continue
                try:
                    request = sock.recv_multipart()
                except zmq.ZMQError:
                    break
                try:
                    reply = self._answer(request)
                except Exception:  # every request gets an answer: refused
                    log.exception("the bus's peer check failed; the connection is refused")
                    reply = [request[0] if request else b"1.0",
                             request[1] if len(request) > 1 else b"",
                             b"500", b"peer check failed", b"", b""]
                sock.send_multipart(reply)
        finally:
            sock.close(0)

    def _answer(self, request: list[bytes]) -> list[bytes]:
        """One ZAP request: ``[version, id, domain, address, identity, mechanism, …]``; the
        address of an ipc peer is ``<host>:<uid>:<gid>:<pid>``."""
        version, ident, domain, address = request[:4]
        if domain != DOMAIN:
            return [version, ident, b"200", b"OK", b"", b""]
        pid = _pid_of(address)
        # No pid: a libzmq without SO_PEERCRED (not Linux) — nothing to go by, as before.
        why = None if pid is None else self.verdict(pid)
        if why is None:
            return [version, ident, b"200", b"OK", b"", b""]
        self.refused += 1
        log.warning("the bus refused a connection from pid %s: %s", pid, why)
        return [version, ident, b"400", b"an agent's process may not use Rio's bus", b"", b""]


def _pid_of(address: bytes) -> int | None:
    """The pid in an ipc peer's ZAP address (``localhost:0:0:1701``), None when there is
    none (a libzmq without ``SO_PEERCRED``, or not an ipc peer)."""
    tail = address.rsplit(b":", 1)[-1]
    return int(tail) if tail.isdigit() and b":" in address else None
