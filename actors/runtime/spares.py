"""The supervisor's spare hosts: one pre-started ``python -m actors.runtime.host --spare`` per process
kind whose supervisor.toml entry says ``spare = true`` (the core, as shipped).

A spare has done the interpreter start and the imports of its kind's actors and waits on its
stdin. When the supervisor (re)starts a process of that kind, :meth:`Spares.assign` writes the
host's arguments to the spare instead of starting Python again; the next spare is started only
once the instance is quiet again (every started host answered its first ping), so a spare never
competes with the process it stands in for. Decided in docs/adr/0026-start-path-and-long-line-
keys.md ("d").

A spare is a child like any other (ADR-0007): started by :func:`actors.runtime.process_control.spawn`
from the monitor loop's thread (PDEATHSIG follows the forking thread), in a process group of its
own, with its own spawn cookie — which the host keeps when assigned, since a process's
environment as others read it (``/proc/<pid>/environ``, what the sweep by cookie reads) is
fixed at exec. It ends at the end of its stdin (the supervisor stopped or died) or on SIGTERM
(PDEATHSIG); one that dies is replaced, within a restart budget of its own.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

import psutil

from actors.runtime import process_control
from actors.runtime.child import Child
from actors.runtime.log_relay import Stream
from rio.config.supervisor_toml import ProcessSpec, RestartBudget, SupervisorConfig

log = logging.getLogger("rio.supervisor.spares")

#: A spare has nothing to save: a short stdin grace (it reads its stdin once imports are
#: done), then TERM.
SPARE_GRACES = {"stdin_grace": 0.5, "term_grace": 0.5, "kill_grace": 1.0}
#: How every host is started: ``-P`` keeps the working directory (the project root) off the
#: front of ``sys.path``, so a project's ``msgpack.py`` or ``json.py`` is never imported.
HOST_MODULE = ("-P", "-m", "actors.runtime.host")


class SpareOwner(Protocol):
    """What the spares need of the supervisor."""

    name: str
    root: Path
    log_dir: Path
    desktop: bool
    config: SupervisorConfig
    children: dict[str, Child]

    def _child_env(self) -> dict[str, str]: ...

    def child_stderr(self, label: str, path: Path) -> \
        AbstractContextManager[tuple[IO[bytes] | int, Stream | None]]: ...


@dataclass
class _Kind:
    budget: RestartBudget = field(default_factory=lambda: RestartBudget("always", 5, 60, 0.5, 10))
    spawned: process_control.Spawned | None = None
    #: its stderr on the supervisor's (--log-stderr), relabelled when it is assigned
    stream: Stream | None = None
    next_at: float = 0.0
    gave_up: bool = False


def _stopped(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() in (psutil.STATUS_STOPPED,
                                                psutil.STATUS_TRACING_STOP)
    except psutil.Error:
        return False


def kind_of(process_name: str) -> str:
    """``agent:<conversation>`` → ``agent``; ``core`` → ``core``."""
    return process_name.split(":", 1)[0]


class Spares:
    """The spares of one supervisor. Every method runs under the supervisor's lock."""

    def __init__(self, owner: SpareOwner) -> None:
        self.owner = owner
        self.kinds: dict[str, _Kind] = {}

    def _specs(self) -> list[ProcessSpec]:
        return [s for s in self.owner.config.to_start(desktop=self.owner.desktop)
                if s.spare and "ui" not in s.actors]

    # --- assignment -----------------------------------------------------------------------------
    def assign(self, spec: ProcessSpec, argv: list[str], log_path: Path | None) -> \
            process_control.Spawned | None:
        """Hand ``argv`` (a host's command line) to the spare of ``spec``'s kind; None when
        there is none ready to take it (the caller starts the process as before).
        ``log_path`` None: its stderr stays the relay's (--log-stderr), now under the name of
        the process it becomes."""
        kind = self.kinds.get(kind_of(spec.name))
        if not spec.spare or kind is None or kind.spawned is None \
                or tuple(argv[1:1 + len(HOST_MODULE)]) != HOST_MODULE:
            return None
        spare, kind.spawned = kind.spawned, None
        stream, kind.stream = kind.stream, None
        if spare.popen.poll() is not None or spare.popen.stdin is None or _stopped(spare.pid):
            # A stopped spare (SIGSTOP, a debugger) would read the line only when continued:
            # the process would sit "never answered a ping" for 15 s before its restart.
            process_control.sweep(spare.cookie)
            return None
        line = json.dumps({"argv": list(argv[1 + len(HOST_MODULE):]),
                           "log": None if log_path is None else str(log_path)}) + "\n"
        try:
            spare.popen.stdin.write(line.encode())
            spare.popen.stdin.flush()
        except OSError:   # it died between the poll and the write
            process_control.sweep(spare.cookie)
            return None
        if stream is not None:
            stream.label = spec.name
        log.info("process %s assigned to spare pid %d", spec.name, spare.pid)
        return spare

    # --- the monitor loop -----------------------------------------------------------------------
    def check(self, now: float) -> None:
        """Replace a spare that died; start a missing one once the instance is quiet."""
        for spec in self._specs():
            name = kind_of(spec.name)
            kind = self.kinds.setdefault(name, _Kind())
            if kind.spawned is not None:
                code = kind.spawned.popen.poll()
                if code is None:
                    continue
                process_control.sweep(kind.spawned.cookie)
                kind.spawned, kind.stream = None, None
                decision = kind.budget.record_exit(now)
                if not decision.restart:
                    kind.gave_up = True
                    log.error("the spare host for %s keeps dying (%s): restarts start Python "
                              "again; see its log in %s", name, decision.reason,
                              self.owner.log_dir)
                    continue
                log.warning("the spare host for %s exited (code %s); replacing it", name, code)
                kind.next_at = now + decision.delay_s
                continue
            if kind.gave_up or now < kind.next_at or not self._quiet():
                continue
            self._start(name, spec, kind, now)

    def _quiet(self) -> bool:
        """No host process is starting or waiting to restart: a spare started now competes
        with nobody for the CPU."""
        for child in self.owner.children.values():
            if child.state in ("restarting", "starting"):
                return False
            if child.state == "running" and not child.ready and "ui" not in child.spec.actors \
                    and child.spec.ping_interval_s > 0:
                return False
        return True

    def _start(self, name: str, spec: ProcessSpec, kind: _Kind, now: float) -> None:
        argv = [sys.executable, *HOST_MODULE, "--spare", "--preload", ",".join(spec.actors),
                "--instance", self.owner.name]     # named in `ps`, like the hosts
        log_path = self.owner.log_dir / f"{self.owner.name}.spare-{name}.log"
        try:
            with self.owner.child_stderr(f"spare-{name}", log_path) as (stderr, stream):
                kind.spawned = process_control.spawn(
                    argv, cwd=str(self.owner.root), env=self.owner._child_env(),
                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr,
                    die_with_parent=True)
                kind.stream = stream
        except OSError as exc:
            log.error("could not start a spare host for %s: %s", name, exc)
            kind.next_at = now + 1.0
            return
        log.info("spare host for %s started: pid %d", name, kind.spawned.pid)

    # --- status and stop ------------------------------------------------------------------------
    def pids(self) -> set[int]:
        return {k.spawned.pid for k in self.kinds.values() if k.spawned is not None}

    def status(self) -> list[dict[str, Any]]:
        return [{"for": name, "pid": k.spawned.pid} for name, k in self.kinds.items()
                if k.spawned is not None]

    def take_all(self) -> list[process_control.Spawned]:
        """Every spare, forgotten here (the supervisor is stopping: they are stopped)."""
        spares = [k.spawned for k in self.kinds.values() if k.spawned is not None]
        for k in self.kinds.values():
            k.spawned, k.stream = None, None
            k.gave_up = True
        return spares
