"""The supervisor's session zygotes (actors/runtime/zygote.py is the zygote itself; ADR-0039).

For a process kind whose supervisor.toml entry says ``zygote = true`` (agent sessions, as
shipped), a start is a fork of a preloaded interpreter instead of a new one: :meth:`Zygotes.fork`
sends the host's command line to the kind's zygote, and :meth:`Zygotes.check` (the monitor
loop) adopts the session it forked — the supervisor's own child, since the zygote forks twice
and the supervisor is a child subreaper — as if :func:`actors.runtime.process_control.spawn` had
started it (``process_control.ForkedChild``/``adopt``, the prior art of the window `rio`
forks, actors/runtime/window_first.py). Nothing waits on the zygote: the monitor loop sends and reads
without blocking, so a zygote busy importing (or hung) holds up no ping.

* **Started with the first session of its kind**, not with the instance: an idle desktop never
  pays for it (the ≤ 150 MB budget). That first session waits for it (a zygote is ready about
  as fast as a session started fresh, the same imports); later ones are forks.
* **Stopped when no session of its kind has run for** :data:`IDLE_STOP_S`: its pages go back.
  Sessions forked from it live on; what they share stays shared among them.
* **A zygote that dies or does not answer** (:data:`ANSWER_S`) is stopped; what it had not
  forked yet is started fresh. It is started again for the next session, within a budget of
  its own (5 in 60 s, like a spare); past it, sessions are started fresh, and the log says so.
* **Never swept by cookie**: every session forked from it shows the zygote's environment in
  ``/proc/PID/environ`` (fixed at exec), so a sweep of the zygote's cookie would end them all.
  Its stop is: end of its socket → grace → TERM → grace → KILL of its own group (a session has
  a session and group of its own from its first steps).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from actors.runtime import process_control
from actors.runtime.child import Child
from actors.runtime.spares import HOST_MODULE, SpareOwner, kind_of
from actors.runtime.spawn_env import COOKIE_ENV, LINEAGE_ENV, PARENT_ENV, own_lineage
from actors.runtime.zygote import GO
from rio.config.supervisor_toml import ProcessSpec, RestartBudget

log = logging.getLogger("rio.supervisor.zygotes")

#: No session of the kind for this long: the zygote is stopped (started again by the next).
IDLE_STOP_S = 120.0
#: A fork request, or the zygote's start, not answered within this: the zygote is stopped and
#: what waited on it is started fresh.
ANSWER_S = 15.0
#: The zygote's stop: end of its socket, then TERM, then KILL, each after this grace.
STOP_GRACE_S = 0.5
#: States in which a process of the kind counts as live (as for max_live).
_LIVE = ("starting", "running", "restarting", "stopping")
MAX_MESSAGE = 1 << 16


class ZygoteOwner(SpareOwner, Protocol):
    """What the zygotes need of the supervisor, besides what the spares need."""

    def forked(self, child: Child, spawned: process_control.Spawned) -> None: ...

    def start_fresh(self, child: Child) -> None: ...


@dataclass
class _Pending:
    child: Child
    log_path: Path | None
    cookie: str = ""
    stdin: int = -1                 # the write end of the session's stdin, once sent
    since: float = 0.0


@dataclass
class _Zygote:
    budget: RestartBudget = field(default_factory=lambda: RestartBudget("always", 5, 60, 0.5, 10))
    spawned: process_control.Spawned | None = None
    sock: socket.socket | None = None
    ready: bool = False
    started_at: float = 0.0
    pending: dict[str, _Pending] = field(default_factory=dict)
    idle_since: float | None = None
    gave_up: bool = False


class Zygotes:
    """The zygotes of one supervisor. Every method runs under the supervisor's lock, on the
    monitor loop's thread (the zygote's PDEATHSIG follows the thread that spawned it)."""

    def __init__(self, owner: ZygoteOwner, python: str = sys.executable) -> None:
        self.owner = owner
        #: the interpreter a zygote runs (the supervisor's own, as for every host)
        self.python = python
        self.kinds: dict[str, _Zygote] = {}

    # --- a start ---------------------------------------------------------------------------------
    def fork(self, child: Child, log_path: Path | None, now: float) -> bool:
        """Have ``child`` (a host of a ``zygote = true`` kind) forked by its kind's zygote,
        starting the zygote first when there is none. True: it will be (or is being) forked,
        and :meth:`check` hands it to the owner (``forked``, or ``start_fresh`` when that
        fails). False: start it as before."""
        spec = child.spec
        if not getattr(spec, "zygote", False) or "ui" in spec.actors \
                or tuple(child.argv[1:1 + len(HOST_MODULE)]) != HOST_MODULE \
                or not _reparents_to_us():
            return False
        kind_name = kind_of(spec.name)
        kind = self.kinds.setdefault(kind_name, _Zygote())
        if spec.name in kind.pending:
            return True
        if kind.gave_up:
            return False
        if kind.spawned is None and not self._start(kind_name, spec, kind, now):
            return False
        pending = _Pending(child, log_path, since=now)
        kind.pending[spec.name] = pending
        if kind.ready and not self._send(kind, spec.name, pending):
            kind.pending.pop(spec.name, None)
            return False
        return True

    def _start(self, name: str, spec: ProcessSpec, kind: _Zygote, now: float) -> bool:
        owner = self.owner
        argv = [self.python, *HOST_MODULE, "--zygote", "--preload", ",".join(spec.actors),
                "--instance", owner.name]
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        log_path = owner.log_dir / f"{owner.name}.zygote-{name}.log"
        try:
            with owner.child_stderr(f"zygote-{name}", log_path) as (stderr, _stream):
                kind.spawned = process_control.spawn(
                    argv, cwd=str(owner.root), env=owner._child_env(), stdin=theirs.fileno(),
                    stdout=subprocess.DEVNULL, stderr=stderr, die_with_parent=True)
        except OSError as exc:
            log.error("could not start the %s zygote: %s", name, exc)
            ours.close()
            return False
        finally:
            theirs.close()
        ours.setblocking(False)
        kind.sock, kind.ready, kind.started_at, kind.idle_since = ours, False, now, None
        log.info("%s zygote started: pid %d", name, kind.spawned.pid)
        return True

    def _send(self, kind: _Zygote, name: str, pending: _Pending) -> bool:
        """The fork request, with the session's stdin (read end) and stderr attached."""
        owner = self.owner
        child = pending.child
        assert kind.sock is not None
        cookie = process_control.new_cookie()
        env = dict(owner._child_env())
        env[COOKIE_ENV] = cookie
        env[LINEAGE_ENV] = ":".join(own_lineage())
        env[PARENT_ENV] = str(os.getpid())
        request = {"name": name, "argv": list(child.argv[1 + len(HOST_MODULE):]), "env": env,
                   "cwd": str(owner.root), "parent": os.getpid(), "cookie": cookie}
        read_end, write_end = os.pipe()
        label = child.spec.name
        try:
            with owner.child_stderr(label, pending.log_path or
                                    owner.log_dir / f"{owner.name}.{label}.log") as (stderr, _):
                err_fd = stderr if isinstance(stderr, int) else stderr.fileno()
                socket.send_fds(kind.sock, [json.dumps(request).encode()], [read_end, err_fd])
        except OSError as exc:
            log.warning("the zygote did not take %s's fork (%s): started fresh", name, exc)
            os.close(write_end)
            return False
        finally:
            os.close(read_end)
        pending.cookie, pending.stdin, pending.since = cookie, write_end, time.monotonic()
        return True

    # --- the monitor loop ------------------------------------------------------------------------
    def check(self, now: float) -> None:
        for name, kind in self.kinds.items():
            if kind.spawned is None:
                continue
            if kind.spawned.popen.poll() is not None:
                self._lost(name, kind, now, f"exited ({kind.spawned.popen.returncode})")
                continue
            self._read(name, kind)    # never ends the zygote: its exit is seen by poll()
            late = [p for p in kind.pending.values()
                    if now - (p.since if p.stdin >= 0 else kind.started_at) > ANSWER_S]
            if late:
                self._lost(name, kind, now, f"no answer in {ANSWER_S:g} s")
                continue
            self._idle_stop(name, kind, now)

    def _read(self, name: str, kind: _Zygote) -> None:
        sock = kind.sock
        while sock is not None and select.select([sock], [], [], 0)[0]:
            try:
                data = sock.recv(MAX_MESSAGE)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                return            # end of file: the exit is seen by poll() next time
            try:
                message = json.loads(data)
            except ValueError:
                log.warning("the %s zygote said %r", name, data[:200])
                continue
            if "ready" in message:
                kind.ready = True
                for key, pending in list(kind.pending.items()):
                    if pending.stdin < 0 and not self._send(kind, key, pending):
                        kind.pending.pop(key, None)
                        self.owner.start_fresh(pending.child)
                continue
            self._answered(kind, message)

    def _answered(self, kind: _Zygote, message: dict[str, Any]) -> None:
        pending = kind.pending.pop(str(message.get("name", "")), None)
        if pending is None:
            return
        child = pending.child
        pid = message.get("pid")
        if not isinstance(pid, int):
            log.warning("the zygote could not fork %s (%s): started fresh", child.spec.name,
                        message.get("error"))
            os.close(pending.stdin)
            self.owner.start_fresh(child)
            return
        forked = process_control.ForkedChild(pid, child.argv, os.fdopen(pending.stdin, "wb"),
                                             None)
        spawned = process_control.adopt(forked, cookie=pending.cookie, argv=child.argv)
        if child.state == "starting" and child.spawned is None:
            self.owner.forked(child, spawned)
            try:                  # adopted: it may go on (actors/runtime/zygote.py _wait_adopted)
                assert forked.stdin is not None
                forked.stdin.write(GO)
                forked.stdin.flush()
            except OSError:
                pass              # it died already: the monitor loop sees its exit
        else:   # stopped or restarted while it was being forked: this one is not wanted
            threading.Thread(target=process_control.stop, args=(spawned,),
                             kwargs=child.spec.stop_graces(), daemon=True,
                             name=f"rio-stop-{pid}").start()

    def _lost(self, name: str, kind: _Zygote, now: float, why: str) -> None:
        """The zygote is gone or not answering: stop it, start fresh what waited on it."""
        waiting = list(kind.pending.values())
        kind.pending.clear()
        spawned, sock = kind.spawned, kind.sock
        kind.spawned, kind.sock, kind.ready = None, None, False
        if spawned is not None:
            threading.Thread(target=stop_zygote, args=(spawned, sock), daemon=True,
                             name="rio-stop-zygote").start()
        decision = kind.budget.record_exit(now)
        if not decision.restart:
            kind.gave_up = True
            log.error("the %s zygote keeps failing (%s; last: %s): sessions start fresh; see "
                      "its log in %s", name, decision.reason, why, self.owner.log_dir)
        else:
            log.warning("the %s zygote %s; what waited on it starts fresh", name, why)
        for pending in waiting:
            if pending.stdin >= 0:
                with contextlib.suppress(OSError):
                    os.close(pending.stdin)
            self.owner.start_fresh(pending.child)

    def _idle_stop(self, name: str, kind: _Zygote, now: float) -> None:
        live = kind.pending or any(kind_of(n) == name and c.state in _LIVE
                                   for n, c in self.owner.children.items())
        if live:
            kind.idle_since = None
            return
        if kind.idle_since is None:
            kind.idle_since = now
            return
        if now - kind.idle_since >= IDLE_STOP_S:
            spawned, sock = kind.spawned, kind.sock
            kind.spawned, kind.sock, kind.ready, kind.idle_since = None, None, False, None
            log.info("the %s zygote is stopped: no session for %.0f s", name, IDLE_STOP_S)
            threading.Thread(target=stop_zygote, args=(spawned, sock), daemon=True,
                             name="rio-stop-zygote").start()

    # --- status and stop ------------------------------------------------------------------------
    def pids(self) -> set[int]:
        return {k.spawned.pid for k in self.kinds.values() if k.spawned is not None}

    def status(self) -> list[dict[str, Any]]:
        return [{"for": name, "pid": k.spawned.pid, "zygote": True}
                for name, k in self.kinds.items() if k.spawned is not None]

    def take_all(self) -> list[tuple[process_control.Spawned, socket.socket | None]]:
        """Every zygote, forgotten here (the supervisor is stopping: they are stopped); what
        was being forked is dropped (a session forked now dies with the supervisor)."""
        out = []
        for kind in self.kinds.values():
            for pending in kind.pending.values():
                if pending.stdin >= 0:
                    with contextlib.suppress(OSError):
                        os.close(pending.stdin)
            kind.pending.clear()
            if kind.spawned is not None:
                out.append((kind.spawned, kind.sock))
            kind.spawned, kind.sock, kind.ready, kind.gave_up = None, None, False, True
        return out


def _reparents_to_us() -> bool:
    """A forked session becomes our child only if we are a child subreaper (the supervisor
    makes itself one at start; on a system without it, sessions start fresh)."""
    from actors.runtime.spawn_env import load_prctl
    prctl = load_prctl()
    if prctl is None:
        return False
    import ctypes
    value = ctypes.c_int(0)
    PR_GET_CHILD_SUBREAPER = 37
    return prctl(PR_GET_CHILD_SUBREAPER, ctypes.addressof(value), 0, 0, 0) == 0 and \
        value.value == 1


def stop_zygote(spawned: process_control.Spawned, sock: socket.socket | None,
                grace: float = STOP_GRACE_S) -> int | None:
    """End of its socket → grace → TERM its group → grace → KILL → reap. No sweep by cookie
    (the module's docstring). Returns its exit code (None: it could not be reaped)."""
    popen = spawned.popen
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.close()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None and popen.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(spawned.pgid, sig)
        try:
            return popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
    return None
