"""The instance ``rio faults`` works on: its own scratch one, or a running one by name.

:class:`OwnInstance` starts ``rio serve --fault-injection --placement isolated`` on a temp
project with its own RIO_*_DIR folders (through process control, so the supervisor and all it
starts carry one cookie), can kill -9 it and start it again, and on stop reports any process
that outlived it. :class:`AttachedInstance` is a running instance named by ``--instance``: it
is never killed or restarted as a whole. Both expose the endpoints, the supervisor's pid and the
spawn cookies seen, for the orphan check (rio/faults/report.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

from actors.bus.client import BusConnection, Endpoints
from actors.runtime import process_control
from rio.faults.report import ProcInfo
from rio.protocol.errors import BusError, RioError

SETTLE_S = 10.0          # how long processes of a dead owner may take to end by themselves

#: The scratch instance's supervisor.toml: quick pings, short graces, a budget for 200+ faults.
FAST_CONFIG = """\
[defaults]
max_restarts = 1000
restart_window_s = 60
backoff_initial_ms = 20
backoff_max_ms = 200
stdin_grace_ms = 300
term_grace_ms = 300
kill_grace_ms = 1000
ping_interval_ms = 250
ping_misses = 3
"""



def read_chain(pid: int) -> tuple[str, ...]:
    try:
        env = psutil.Process(pid).environ()
    except psutil.Error:
        return ()
    return _chain(env)


def _chain(env: dict[str, str] | None) -> tuple[str, ...]:
    if not env:
        return ()
    chain = [c for c in env.get(process_control.LINEAGE_ENV, "").split(":") if c]
    own = env.get(process_control.COOKIE_ENV)
    if own:
        chain.append(own)
    return tuple(chain)


class OwnInstance:
    """The scratch instance the harness starts, kills and restarts by itself."""

    own = True

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="rio-faults-"))
        self.root = self.base / "project"
        self.root.mkdir()
        self.name = f"faults-{uuid.uuid4().hex[:8]}"
        self.runtime = Path("/tmp") / f"rio-f-{uuid.uuid4().hex[:8]}"  # ipc paths are short
        config = self.base / "config"
        config.mkdir()
        (config / "supervisor.toml").write_text(FAST_CONFIG)
        self.env = dict(os.environ)
        self.env.update({"RIO_RUNTIME_DIR": str(self.runtime),
                         "RIO_STATE_DIR": str(self.base / "state"),
                         "RIO_CONFIG_DIR": str(config),
                         "PYTHONPATH": os.pathsep.join(
                             [str(Path(__file__).resolve().parent.parent)]
                             + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                if p])})
        self.spawned: process_control.Spawned | None = None
        self.dead_cookies: set[str] = set()
        self.all_cookies: set[str] = set()

    def start(self) -> None:
        log = open(self.base / "serve.log", "ab")
        try:
            self.spawned = process_control.spawn(
                [sys.executable, "-m", "rio.cli", "serve", "--root", str(self.root),
                 "--instance", self.name, "--fault-injection", "--placement", "isolated"],
                env=self.env, cwd=str(self.root), stdin=process_control.DEVNULL,
                stdout=process_control.DEVNULL, stderr=log)
        finally:
            log.close()
        self.all_cookies.add(self.spawned.cookie)

    @property
    def supervisor_pid(self) -> int | None:
        return self.spawned.pid if self.spawned is not None else None

    def endpoints(self, timeout: float = 30.0) -> Endpoints:
        info = self.runtime / self.name / "instance.json"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.spawned is not None and self.spawned.popen.poll() is not None:
                raise BusError("unreachable", "The scratch `rio serve` exited at start "
                               f"({self.spawned.popen.returncode}).",
                               f"See {self.base / 'serve.log'}.")
            try:
                data = json.loads(info.read_text())
                if data.get("pid") == self.supervisor_pid:
                    return Endpoints(data["requests"], data["events"])
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        raise BusError("unreachable", "The scratch `rio serve` did not come up.",
                       f"See {self.base / 'serve.log'}.")

    def kill9(self) -> None:
        assert self.spawned is not None
        os.kill(self.spawned.pid, signal.SIGKILL)
        self.spawned.popen.wait(10)
        self.dead_cookies.add(self.spawned.cookie)

    def stop(self, conn: BusConnection | None) -> int:
        """End the instance; returns how many of its processes outlived it (must be 0)."""
        if self.spawned is not None and self.spawned.popen.poll() is None:
            try:
                if conn is not None:
                    conn.call("system.stop", {}, timeout=5)
                self.spawned.popen.wait(30)
            except (RioError, subprocess.TimeoutExpired):
                pass
            process_control.stop(self.spawned, stdin_grace=0, term_grace=5, kill_grace=2)
        if self.spawned is not None:
            self.dead_cookies.add(self.spawned.cookie)
        deadline = time.monotonic() + SETTLE_S
        left = carrying(self.all_cookies)
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = carrying(self.all_cookies)
        for proc in left:  # report them, and do not leave them behind either
            process_control.sweep(proc.chain[-1])
        return len(left)

    def cleanup(self, keep: bool = False) -> Path | None:
        shutil.rmtree(self.runtime, ignore_errors=True)
        if keep:
            return self.base
        shutil.rmtree(self.base, ignore_errors=True)
        return None


class AttachedInstance:
    """A running instance named by --instance: never restarted, never killed as a whole."""

    own = False

    def __init__(self, name: str) -> None:
        from rio.config.instance import find_instance
        self.info = find_instance(name)
        self.name = self.info.name
        self.root = Path(self.info.root)
        self.dead_cookies: set[str] = set()
        self.all_cookies: set[str] = set()

    @property
    def supervisor_pid(self) -> int | None:
        return self.info.pid

    def endpoints(self, timeout: float = 30.0) -> Endpoints:
        return Endpoints(self.info.requests, self.info.events)

    def cleanup(self, keep: bool = False) -> Path | None:
        return None


def carrying(cookies: set[str]) -> list[ProcInfo]:
    if not cookies:
        return []
    me = os.getpid()
    found = []
    for proc in psutil.process_iter(["environ"], ad_value=None):
        chain = _chain(proc.info.get("environ"))
        if proc.pid != me and cookies.intersection(chain) and _alive(proc):
            found.append(ProcInfo(proc.pid, chain))
    return found


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
