"""The supervisor: ``rio serve`` and ``rio`` are this process.

It owns the hub, starts one process per failure domain (supervisor.toml), restarts each alone
when it crashes or stops answering pings, and ends everything — including whatever those
processes spawned — when it stops. It makes itself a child subreaper so that helpers which escape
their process group are reparented here and reaped (ADR-0007).

Threads: the main thread runs :meth:`Supervisor.run` (the monitor loop); the hub runs in its own
thread and answers ``system.*`` through :meth:`Supervisor.handle_system` (an OpTable of
``@handles`` methods, actors/bus/local_ops.py), which only reads state that the monitor loop
publishes under a lock.

Under a service manager (``NOTIFY_SOCKET`` set: systemd ``Type=notify``) it speaks sd_notify
(actors/runtime/sd_notify.py): ``READY=1`` once the core has answered ``buffer.list``, ``WATCHDOG=1``
from the monitor loop, ``STATUS=`` on restarts and give-ups, ``STOPPING=1`` when it stops. With
``--log-stderr`` every process's log lines reach its own stderr, prefixed with the process's
name (actors/runtime/log_relay.py), instead of one file per process (ADR-0035).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterator

import psutil

from actors.bus.client import BusConnection, Endpoints, connect
from actors.bus.hub import Hub
from actors.bus.local_ops import Deferred, LocalRequest, answer
from actors.bus.peer_guard import PeerGuard
from actors.runtime import process_control
from actors.runtime.child import LIVE, Child, describe_exit
from actors.runtime.log_relay import LogRelay, Stream
from actors.runtime.sd_notify import Notifier
from actors.runtime.spares import HOST_MODULE, SPARE_GRACES, Spares
from actors.runtime.spawn_waits import RESPAWN, SpawnWaits
from actors.runtime.wake import Wake
from actors.runtime.window_first import child_env, window_argv
from actors.runtime.zygotes import Zygotes, stop_zygote
from rio.config.instance import (
    InstanceInfo,
    InstancePaths,
    default_name,
    pid_alive,
    running_instances,
    state_base,
)
from rio.config.supervisor_toml import ProcessSpec, SupervisorConfig, load_config
from rio.protocol import ops
from rio.protocol.errors import BusError, ConfigError, ProtocolError, RioError
from rio.protocol.frames import Reply, Request
from rio.protocol.op_table import OpTable
from rio.service import health, notify

if TYPE_CHECKING:   # started only with --listen: zmq.auth stays off the start path
    from actors.bus.remote import RemoteListener

log = logging.getLogger("rio.supervisor")

STARTING_PING_S = 0.05   # how often a process that has not answered yet is asked again
READY_PROBE_S = 2.0      # how long the readiness probe (buffer.list) waits for the core
#: ``RIO_LOG_STDERR=1``: every process's log on the supervisor's stderr (``--log-stderr``)
LOG_STDERR_ENV = "RIO_LOG_STDERR"


class Supervisor:
    def __init__(self, *, root: Path, instance: str | None, desktop: bool,
                 config: SupervisorConfig, listen: str | None = None,
                 fault_injection: bool = False, open_files: list[str] | None = None,
                 window: process_control.Spawned | None = None, log_stderr: bool = False,
                 notifier: Notifier | None = None):
        self.root = root
        self.name = instance or default_name(root)
        self.paths = InstancePaths.for_name(self.name)
        self.desktop = desktop
        self.config = config
        self.listen = listen
        self.fault_injection = fault_injection
        self.open_files = open_files or []
        self.window = window    # the window process `rio` started first (actors/runtime/window_first.py)
        self.children: dict[str, Child] = {}
        self.lock = threading.Lock()
        self.stop_requested = threading.Event()
        #: set to run the monitor loop's next tick at once (a system.spawn waiting to start, a
        #: starting process registered on the bus)
        self.wake = Wake()
        #: names of starting processes the hub has seen register, not pinged since
        self._registered: set[str] = set()
        self.started = time.time()
        self.hub: Hub | None = None
        self.hub_restarts = 0
        self.conn: BusConnection | None = None
        #: the CURVE tcp front (``--listen``), once started
        self.remote: RemoteListener | None = None
        self.log_dir = state_base() / "logs"
        #: system.spawn requests waiting for their process to be ready (actors/runtime/spawn_waits.py)
        self.spawn_waits = SpawnWaits(self)
        self.spares = Spares(self)
        #: the agent sessions' zygote: sessions forked, not started (actors/runtime/zygotes.py)
        self.zygotes = Zygotes(self)
        #: processes started as independent instances (system.open_folder): never swept
        self.released: set[int] = set()
        #: the service manager (sd_notify), when one asked (NOTIFY_SOCKET); else it sends nothing
        self.notifier = notifier or Notifier(None)
        #: every child's stderr to ours, prefixed with its name (--log-stderr); None: log files
        self.log_relay: LogRelay | None = LogRelay() if log_stderr else None
        #: the request id of the readiness probe in flight (buffer.list), and when to send next
        self._ready_probe: str | None = None
        self._ready_probe_at = 0.0

    # --- start ----------------------------------------------------------------------------------
    def claim_instance(self) -> None:
        existing = self.paths.read_info()
        # Our own pid there is a stale file: in a container the supervisor is PID 1 in every
        # run, and a runtime folder on a volume outlives the container that wrote it.
        if existing is not None and existing.pid != os.getpid() and pid_alive(existing.pid):
            raise BusError("instance_exists",
                           f"Rio instance {self.name!r} is already running (pid {existing.pid}, "
                           f"root {existing.root}).",
                           "Use it (`rio call`, `rio status`), stop it with `rio stop`, or start "
                           "another with --instance NAME.")
        if existing is not None or self.paths.runtime.exists():
            self.paths.remove()  # stale: its supervisor is gone
        self.paths.create()

    def start(self) -> None:
        if self.listen:  # no keys or a bad address: refuse before claiming anything
            from actors.bus.remote import check_listen
            check_listen(self.listen)
        self.claim_instance()
        process_control.become_subreaper()
        endpoints = Endpoints(self.paths.requests_endpoint, self.paths.events_endpoint)
        self.hub = Hub(endpoints.requests, endpoints.events,
                       local_handler=self.handle_system, on_registered=self.on_registered,
                       peer_guard=PeerGuard(self._peer_names, nudge=self.wake.set)).start()
        if self.listen:
            self._start_remote_listener(self.listen)
        self.paths.write_info(InstanceInfo(self.name, str(self.root), os.getpid(),
                                           endpoints.requests, endpoints.events, self.started))
        self.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.log_relay is not None:
            self.log_relay.start()
        # Under the lock: the hub already answers system.status, which iterates the children
        # (found by `rio faults`: a status during start-up killed the hub thread).
        with self.lock:
            for spec in self.config.to_start(desktop=self.desktop):
                if spec.per != "instance":   # started on demand (system.spawn)
                    continue
                child = Child(spec, self._argv_for(spec))
                self.children[spec.name] = child
                adopted = self.window if "ui" in spec.actors else None
                self.window = None if adopted else self.window
                self._spawn(child, adopted)
        if self.window is not None:   # this supervisor.toml has no window process
            process_control.stop(self.window, stdin_grace=0, term_grace=0.5, kill_grace=1.0)
            self.window = None
        self.conn = connect(endpoints, name="supervisor")

    def _start_remote_listener(self, listen: str) -> None:
        from actors.bus.remote import start_curve_proxy
        self.remote = start_curve_proxy(self, listen)

    def _argv_for(self, spec: ProcessSpec) -> list[str]:
        if "ui" in spec.actors:
            return window_argv(self.name, self.root, self.open_files)
        argv = [sys.executable, *HOST_MODULE, "--process", spec.name,
                "--actors", ",".join(spec.actors), "--root", str(self.root),
                "--requests", self.paths.requests_endpoint,
                "--events", self.paths.events_endpoint, "--instance", self.name,
                "--stdin-watchdog"]
        if self.fault_injection:
            argv.append("--fault-injection")
        return argv

    def _child_env(self) -> dict[str, str]:
        return child_env(self.name)

    @contextlib.contextmanager
    def child_stderr(self, label: str, path: Path) -> Iterator[tuple[IO[bytes] | int,
                                                                      Stream | None]]:
        """What a child's stderr is while it is spawned: its log file at ``path``, or with
        --log-stderr a pipe to the relay under ``label`` (the stream is given too, so that a
        spare's can be relabelled when it is assigned)."""
        if self.log_relay is None:
            with open(path, "ab") as log_file:
                yield log_file, None
            return
        stream = self.log_relay.open(label)
        try:
            yield stream.write_fd, stream
        finally:
            stream.close_writer()

    def _spawn(self, child: Child, adopted: process_control.Spawned | None = None) -> None:
        """Start ``child``: the process `rio` started already (``adopted``), else a spare's,
        else a fork of its kind's zygote (adopted later, :meth:`forked`), else a new one."""
        path = self.log_dir / f"{self.name}.{child.spec.name}.log"
        child.log_path = path if self.log_relay is None or adopted is not None else None
        child.spawned = adopted or self.spares.assign(child.spec, child.argv, child.log_path)
        if child.spawned is None and self.zygotes.fork(child, child.log_path, time.monotonic()):
            child.state = "starting"      # the zygote forks it; check() hands it over
            return
        if child.spawned is None:
            self._spawn_new(child)
        self._running(child)

    def _spawn_new(self, child: Child) -> None:
        path = self.log_dir / f"{self.name}.{child.spec.name}.log"
        with self.child_stderr(child.spec.name, path) as (stderr, _stream):
            child.spawned = process_control.spawn(
                child.argv, cwd=str(self.root), env=self._child_env(),
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr,
                die_with_parent=True)

    def _running(self, child: Child) -> None:
        child.state = "running"
        child.started_at = time.monotonic()
        child.missed_pings = 0
        child.ping_outstanding = None
        child.ready = False
        child.restart_at = None
        self._event(child, "started")

    def forked(self, child: Child, spawned: process_control.Spawned) -> None:
        """The zygote forked ``child`` (actors/runtime/zygotes.py; under the lock)."""
        child.spawned = spawned
        self._running(child)

    def start_fresh(self, child: Child) -> None:
        """The zygote could not fork ``child``: a new interpreter, as without one."""
        if child.state != "starting" or child.spawned is not None:
            return
        self._spawn_new(child)
        self._running(child)

    # --- the monitor loop -----------------------------------------------------------------------
    @property
    def _bus(self) -> BusConnection:
        """The supervisor's own connection to its hub: made by :meth:`start`, which the
        monitor loop follows."""
        if self.conn is None:
            raise RuntimeError("the supervisor's bus connection is used before start()")
        return self.conn

    def run(self) -> int:
        tick = 0.02
        # The loop wakes for a reply or event (a ping answered: "ready" at once), a wake-up
        # (system.spawn, a registration), or after `tick` — never later.
        try:
            while not self.stop_requested.is_set():
                self._bus.wait(tick, wake_fd=self.wake.fileno())
                self.wake.clear()
                self._check_hub()
                self._bus.drain()
                now = time.monotonic()
                self.spawn_waits.expire(now)
                with self.lock:
                    for child in list(self.children.values()):
                        self._check(child, now)
                    self.spares.check(now)
                    self.zygotes.check(now)
                process_control.reap_zombies(self._tracked_pids())
                self._check_ready(now)
                if self.hub is None or self.hub.alive():
                    # A frozen loop, or a hub that cannot be started again, stops this: the
                    # service manager then restarts the instance (WatchdogSec).
                    self.notifier.watchdog(now)
        finally:
            self.shutdown()
        return 0

    def _check_ready(self, now: float) -> None:
        """``READY=1`` for the service manager, once: when every process started with the
        instance answered its first ping, the supervisor asks the core ``buffer.list`` and
        says ready only when that is answered — ready means a client's request is served."""
        if not self.notifier.enabled or self.notifier.ready_sent or self._ready_probe \
                or now < self._ready_probe_at:
            return
        with self.lock:
            waiting = [c for c in self.children.values() if c.spec.per == "instance"
                       and "ui" not in c.spec.actors and not c.ready]
            running = sum(1 for c in self.children.values() if c.state == "running")
        if waiting:
            return

        def answered(reply: Reply) -> None:
            self._ready_probe = None
            if reply.ok:
                log.info("ready: the core answered %s", health.CORE_PROBE)
                self.notifier.ready(notify.serving_status(str(self.root), running))
            else:    # restarting again, or slow: ask again shortly
                self._ready_probe_at = time.monotonic() + 0.1

        self._ready_probe = self._bus.request(health.CORE_PROBE, {}, answered,
                                              timeout=READY_PROBE_S)

    def _check_hub(self) -> None:
        """The hub's thread guards every frame, but should it die anyway, the instance must
        not live on deaf (``rio stop`` unanswered, a new ``rio serve`` refused as "instance
        exists"): it is started again on the same endpoints, and says so."""
        if self.hub is None or self.hub.alive() or self.stop_requested.is_set():
            return
        log.error("the hub's thread died; starting it again")
        try:
            self.hub.restart()
        except Exception:  # the supervisor must outlive a failed restart
            # ZeroMQ closes the dead thread's sockets in its I/O thread, after the thread
            # ended: binding the same endpoint again can fail for a moment (EADDRINUSE).
            # The next tick tries again; exiting here would end the whole instance.
            log.exception("starting the hub again failed; trying again")
            return
        self.hub_restarts += 1
        self.hub.publish("system.process", {"name": "hub", "event": "restarted",
                                            "restarts": self.hub_restarts})

    def _peer_names(self) -> dict[int, str]:
        """Every process this supervisor started or adopted, by pid — its children by name
        (``agent:<conversation>`` …) — for the bus's peer check (actors/bus/peer_guard.py).
        Asked from the check's own thread: the lock is waited for a moment at most."""
        locked = self.lock.acquire(timeout=1.0)
        try:
            names = {s.pid: "spawned" for s in process_control.live_spawned()}
            names.update({pid: "tracked" for pid in self._tracked_pids()})
            names.update({c.pid: name for name, c in list(self.children.items()) if c.pid})
            return names
        finally:
            if locked:
                self.lock.release()

    def _tracked_pids(self) -> set[int]:
        return {c.pid for c in self.children.values() if c.pid} | self.spares.pids() \
            | self.zygotes.pids()

    def _check(self, child: Child, now: float) -> None:
        if child.state == "starting" and child.spawned is None:
            self._spawn(child)      # a system.spawn: started here, see spawn_on_demand
            return
        if child.state in ("stopped", "idle-stopped") and child.extra.pop(RESPAWN, False):
            self._spawn(child)      # a system.spawn came while it was stopping: start it again
            return
        if child.state == "restarting" and child.restart_at is not None and now >= child.restart_at:
            child.restarts += 1
            self._spawn(child)
            return
        spawned = child.spawned
        if child.state != "running" or spawned is None:
            return
        code = spawned.popen.poll()
        if code is not None:
            self._exited(child, spawned, code, now)
            return
        self._ping(child, spawned, now)

    def _ping(self, child: Child, spawned: process_control.Spawned, now: float) -> None:
        spec = child.spec
        if "ui" in spec.actors or spec.ping_interval_s <= 0:
            return
        interval = spec.ping_interval_s
        if child.ping_outstanding is not None:
            if now - child.ping_sent_at < interval:
                return
            child.ping_outstanding = None
            if child.ready:
                child.missed_pings += 1
            elif now - child.started_at > 15:     # never came up at all
                child.missed_pings = spec.ping_misses
            if child.missed_pings >= spec.ping_misses:
                child.last_exit = f"hung: {child.missed_pings} pings missed"
                self._event(child, "hung")
                process_control.stop(spawned, stdin_grace=0, term_grace=0.5, kill_grace=1.0)
                self._exited(child, spawned, None, now, hung=True)
            return
        if now - child.ping_sent_at < interval and child.ready:
            return
        if not child.ready:
            if now - child.started_at > 15:       # never came up at all
                child.missed_pings = spec.ping_misses
                child.last_exit = "hung: never answered a ping"
                self._event(child, "hung")
                process_control.stop(spawned, stdin_grace=0, term_grace=0.5, kill_grace=1.0)
                self._exited(child, spawned, None, now, hung=True)
                return
            if now - child.ping_sent_at < STARTING_PING_S and not self._just_registered(child):
                return

        def answered(reply: Reply, child: Child = child) -> None:
            if child.ping_outstanding != reply.id:
                return
            if reply.ok:
                child.ping_outstanding = None
                child.missed_pings = 0
                if not child.ready:
                    child.ready = True
                    self._event(child, "ready")
            elif not child.ready:
                # Not registered yet (bus.no_route): ask again soon rather than after a whole
                # interval, so "ready" follows the process coming up within STARTING_PING_S.
                child.ping_outstanding = None

        child.ping_sent_at = now
        child.ping_outstanding = self._bus.request("host.ping", {"process": child.spec.name},
                                                   answered, timeout=interval)

    def on_registered(self, name: str) -> None:
        """From the hub's thread: ``name`` registered on the bus. A starting process is pinged
        at once instead of at its next STARTING_PING_S, so "ready" follows it closely. Any
        other registration (a ready process again, a window, a client) is not kept."""
        child = self.children.get(name)
        if child is not None and not child.ready:
            self._registered.add(name)
            self.wake.set()

    def _just_registered(self, child: Child) -> bool:
        if child.spec.name not in self._registered:
            return False
        self._registered.discard(child.spec.name)
        return True

    def _exited(self, child: Child, spawned: process_control.Spawned, code: int | None,
                now: float, hung: bool = False) -> None:
        # Gone is not ready: until its successor answers a ping of its own, nothing may read
        # the old "ready" beside the new pid (`rio status` between the spawn and _running).
        child.ready = False
        child.ping_outstanding = None
        if self.hub is not None:
            self.hub.drop_service(child.spec.name)
        if not hung:
            child.last_exit = describe_exit(code)
        process_control.sweep(spawned.cookie)
        if self.desktop and "ui" in child.spec.actors and code == 0 and not hung:
            # The user closed the window: the desktop app ends, and everything with it.
            child.state = "stopped"
            self._event(child, "stopped", reason="the window was closed")
            self.stop_requested.set()
            return
        decision = child.budget.record_exit(now, failed=hung or code != 0)
        if not decision.restart:
            child.state = "failed" if (hung or code != 0) else "stopped"
            self._event(child, "gave_up" if child.state == "failed" else "stopped",
                        reason=decision.reason)
            return
        child.state = "restarting"
        child.restart_at = now + decision.delay_s
        self._event(child, "exited", reason=decision.reason)

    def _event(self, child: Child, what: str, **extra: Any) -> None:
        data = {"name": child.spec.name, "event": what, "pid": child.pid,
                "restarts": child.restarts, "last_exit": child.last_exit,
                "state": child.state, **extra}
        log.info("process %s", data)
        if self.hub is not None:
            self.hub.publish("system.process", data)
        said = notify.event_status(data)
        if said is not None:
            self.notifier.status(said)
        self.spawn_waits.on_event(child, what)   # system.spawn answers after this event

    # --- system.* ops (called on the hub thread: actors/bus/local_ops.py) ----------------------
    handles: OpTable[Supervisor] = OpTable()

    def handle_system(self, sender: bytes, req: Request) -> Reply | Deferred | None:
        """The hub's local handler: ``system.*`` answered here (None: not ours, routed on)."""
        if not req.op.startswith("system."):
            return None
        return answer(self.handles, self, sender, req)

    @handles("system.ping")
    def ping_op(self, req: LocalRequest) -> dict[str, Any]:
        # ``failed``: the processes Rio gave up on — the supervisor answers, but the instance
        # is not whole (`rio health` exits 1 on it).
        with self.lock:
            failed = sorted(n for n, c in self.children.items() if c.state == "failed")
        return {"pong": True, "pid": os.getpid(), "instance": self.name, "failed": failed}

    @handles("system.ops")
    def ops_op(self, req: LocalRequest) -> Any:
        return ops.describe()

    @handles("system.status")
    def status_op(self, req: LocalRequest) -> dict[str, Any]:
        return self.status(tree=bool(req.args.get("tree")))

    @handles("system.stop")
    def stop_op(self, req: LocalRequest) -> dict[str, Any]:
        self.stop_requested.set()
        return {"stopping": self.name}

    @handles("system.spawn")
    def spawn_op(self, req: LocalRequest) -> Reply | Deferred:
        """Answered once the process is ready, or is not (actors/runtime/spawn_waits.py)."""
        return self.spawn_waits.request(req.sender, req.request)

    @handles("system.open_folder")
    def open_folder_op(self, req: LocalRequest) -> Any:
        from actors.runtime.open_folder import open_folder
        from rio.protocol.roles import REMOTE_PREFIX
        started = open_folder(req.args, remote=req.sender.startswith(REMOTE_PREFIX))
        # another instance, nobody's child in Rio's sense: never ended as an escaped helper
        self.released.add(int(started["pid"]))
        return started

    @handles("system.restart")
    def restart_op(self, req: LocalRequest) -> dict[str, Any]:
        args = req.args
        return self.request_restart(args["process"], again=args["again"],
                                    reason=args.get("reason", "requested"))

    @handles("system.fault")
    def fault_op(self, req: LocalRequest) -> Any:
        if not self.fault_injection:
            raise ProtocolError(
                "fault_injection_off", "Fault injection is off on this instance.",
                "Start it with `rio serve --fault-injection` (test deployments only).")
        from actors.faults.injection import apply_fault
        return apply_fault(self, dict(req.args))

    def status(self, tree: bool = False) -> dict[str, Any]:
        """The instance's processes; ``tree``: also what each one started (an agent session's
        ACP agent and its helpers …) with their memory, what the supervisor adopted, and the
        instance's total (actors/runtime/process_tree.py; ``rio status`` asks for it)."""
        procs: list[dict[str, Any]] = []    # the reply's records, as `rio status` reads them
        with self.lock:
            for child in self.children.values():
                rss = None
                if child.pid and child.state == "running":
                    try:
                        rss = psutil.Process(child.pid).memory_info().rss
                    except psutil.Error:
                        rss = None
                budget = child.budget
                procs.append({"name": child.spec.name, "pid": child.pid, "state": child.state,
                              "actors": list(child.spec.actors), "restarts": child.restarts,
                              "last_exit": child.last_exit, "rss": rss,
                              "ready": child.ready,
                              # its spawn cookie: what it starts carries it (`rio faults`
                              # judges orphans by it); a forked process's /proc/PID/environ
                              # shows its zygote's, fixed at exec
                              "cookie": child.spawned.cookie if child.spawned else None,
                              "log": None if child.log_path is None else str(child.log_path),
                              # what `rio faults` paces its kills by (docs/faults.md)
                              "budget": {
                                  "policy": budget.policy, "max_restarts": budget.max_restarts,
                                  "window_s": budget.window_s,
                                  "used": budget.restarts_in_window(time.monotonic())}})
            spares = self.spares.status() + self.zygotes.status()
        status: dict[str, Any] = {"instance": self.name, "root": str(self.root), "pid": os.getpid(),
                                  "uptime_s": time.time() - self.started,
                                  "processes": procs, "hub_restarts": self.hub_restarts,
                                  "spares": spares, "rss": psutil.Process().memory_info().rss}
        if tree:   # outside the lock: a pass over the system's processes
            from actors.runtime import process_tree
            for spare in spares:
                try:
                    spare["rss"] = psutil.Process(spare["pid"]).memory_info().rss
                except psutil.Error:
                    spare["rss"] = None
            live = [p["pid"] for p in procs
                    if p["pid"] and p["state"] in ("starting", "running", "stopping")]
            found = process_tree.for_instance(os.getpid(), live,
                                              known=[s["pid"] for s in spares]
                                              + [p["pid"] for p in procs if p["pid"]])
            for proc in procs:
                proc["children"] = found.children.get(proc["pid"], []) \
                    if proc["pid"] in live else []
            status["adopted"] = found.adopted
            status["rss_total"] = process_tree.total_rss(status)
            process_tree.add_uss(status)    # Rio's own pages: forked sessions share theirs
        return status

    def spawn_on_demand(self, args: dict[str, Any]) -> dict[str, Any]:
        kind, key = args["kind"], args["key"]
        spec = next((p for p in self.config.processes if p.name == kind), None)
        if spec is None or spec.per == "instance":
            raise ConfigError("invalid", f"No on-demand process kind {kind!r} in supervisor.toml.")
        # per = "demand": one process of that name (Rio's MCP endpoint), whatever the key
        name = kind if spec.per == "demand" else f"{kind}:{key}"
        with self.lock:
            child = self.children.get(name)
            if child is not None and child.state in ("running", "starting", "restarting",
                                                     "stopping"):
                # "stopping" (an idle stop under way): the caller asks again once it is done.
                return {"name": name, "pid": child.pid, "state": child.state}
            live = sum(1 for n, c in self.children.items()
                       if n.startswith(kind + ":") and c.state in LIVE)
            if live >= spec.max_live:
                raise BusError("spawn_limit", f"{live} {kind} processes are running already, "
                               f"the most supervisor.toml allows ([process.{kind}] max_live = "
                               f"{spec.max_live})", "End a conversation you no longer need "
                               "(its process stops), or raise max_live in your "
                               "supervisor.toml", kind=kind, max_live=spec.max_live)
            spec = dataclasses.replace(spec, name=name)
            child = Child(spec, self._argv_for(spec))
            self.children[name] = child
        # Started by the monitor loop, not here on the hub's thread: a child's PDEATHSIG
        # follows the thread that forked it, and the hub's thread can die and be started
        # again (ADR-0021), which would have sent SIGTERM to every agent spawned from it.
        self.wake.set()
        return {"name": name, "pid": None, "state": child.state}

    def request_restart(self, name: str, *, again: bool = True,
                        reason: str = "requested") -> dict[str, Any]:
        """``system.restart``: run the stop sequence on one process, then start it again (or
        leave it stopped when ``again`` is false: an on-demand agent whose conversation ended).
        The stop runs on a thread of its own so neither the hub nor the monitor loop waits for
        the graces; the respawn stays on the monitor loop (PDEATHSIG follows the forking
        thread, ADR-0007)."""
        with self.lock:
            child = self.children.get(name)
            if child is None:
                raise ConfigError("invalid", f"No process {name!r} in this instance.",
                                  "Pick a name from `rio status`.")
            if child.state == "stopping":
                return {"name": name, "pid": child.pid, "state": child.state}
            spawned = child.spawned if child.state == "running" else None
            child.state = "stopping"

        def stop_then_restart() -> None:
            report = None
            if spawned is not None:
                report = process_control.stop(spawned, **child.spec.stop_graces())
            if self.hub is not None:
                self.hub.drop_service(name)
            with self.lock:
                idle = reason == "idle" and not again
                child.last_exit = ("stopped while idle" if idle else
                                   f"{'restarted' if again else 'ended'} on request") + \
                    (f" ({report.how})" if report is not None else "")
                child.budget.reset()
                if again and not self.stop_requested.is_set():
                    child.state = "restarting"
                    child.restart_at = time.monotonic()
                else:
                    # idle-stopped: an agent with no turn for a while; the next message
                    # starts it again (system.spawn), the conversation lives in the core.
                    child.state = "idle-stopped" if idle else "stopped"
                self._event(child, "restarting" if child.state == "restarting" else
                            child.state, reason=reason,
                            stop={"how": report.how, "elapsed_s": round(report.elapsed, 3),
                                  "survivors": report.survivors} if report else None)

        threading.Thread(target=stop_then_restart, name=f"rio-restart-{name}",
                         daemon=True).start()
        return {"name": name, "pid": child.pid, "state": "stopping"}

    # --- stop -----------------------------------------------------------------------------------
    def shutdown(self) -> None:
        self.notifier.stopping(f"stopping {self.name}")
        with self.lock:
            children = list(self.children.values())
            spares = self.spares.take_all()
            zygotes = self.zygotes.take_all()
        stopping = [threading.Thread(target=process_control.stop, args=(spare,),
                                     kwargs=SPARE_GRACES, daemon=True, name="stop-spare")
                    for spare in spares]
        stopping += [threading.Thread(target=stop_zygote, args=zygote, daemon=True,
                                      name="stop-zygote") for zygote in zygotes]
        for t in stopping:
            t.start()
        # UI first, agents next, core last: the core flushes journals while clients are gone.
        # Within a rank the stop sequences run side by side, so ten stubborn agents cost one
        # set of graces, not ten.
        def rank(c: Child) -> int:
            return 0 if "ui" in c.spec.actors else 2 if c.spec.name == "core" else 1

        def stop_one(child: Child, spawned: process_control.Spawned) -> None:
            child.state = "stopping"
            process_control.stop(spawned, **child.spec.stop_graces())
            child.state = "stopped"

        for level in (0, 1, 2):
            group = [(c, c.spawned) for c in children if rank(c) == level
                     and c.spawned is not None and c.state in ("running", "restarting", "starting")]
            threads = [threading.Thread(target=stop_one, args=(c, spawned), daemon=True,
                                        name=f"stop-{c.spec.name}") for c, spawned in group]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        for t in stopping:
            t.join()
        # Anything that escaped to us as subreaper and still carries our cookies:
        for child in children:
            if child.spawned is not None:
                process_control.sweep(child.spawned.cookie)
        process_control.reap_zombies(set())
        # ...and what escaped to us without them (a helper that cleared its environment,
        # setsid, double-forked: issue 22 point 6) — but not another instance File → Open
        # Folder started (its `rio`, and the supervisor it became, adopted by us)
        process_control.end_adopted(self.released | {i.pid for i in running_instances()})
        if self.conn is not None:
            self.conn.close()
        if self.remote is not None:
            self.remote.stop()
        if self.hub is not None:
            self.hub.stop()
        self.paths.remove()
        self.wake.close()
        if self.log_relay is not None:
            self.log_relay.stop()
        self.notifier.close()


def log_stderr_wanted(flag: bool) -> bool:
    """``--log-stderr``, or ``RIO_LOG_STDERR`` set to 1/true/yes (an image or a unit sets it
    once for every start)."""
    return flag or os.environ.get(LOG_STDERR_ENV, "").strip().lower() in ("1", "true", "yes")


def run_supervisor(*, root: Path, instance: str | None, desktop: bool,
                   listen: str | None = None, placement: str | None = None,
                   fault_injection: bool = False, open_files: list[str] | None = None,
                   window: process_control.Spawned | None = None,
                   log_stderr: bool = False) -> int:
    """Run an instance until it is stopped. ``window``: the window process `rio` started
    before importing this module (actors/runtime/window_first.py), adopted as the ``ui`` child."""
    log_stderr = log_stderr_wanted(log_stderr)
    logging.basicConfig(level=os.environ.get("RIO_LOG_LEVEL", "WARNING"),
                        format=("[supervisor] " if log_stderr else "")
                        + "%(asctime)s supervisor[%(process)d] %(name)s: %(message)s")
    # Read (and taken out of the environment, so no child inherits it) before anything starts.
    notifier = Notifier.from_environment()
    if not root.is_dir():
        print(f"rio: {root} is not a folder.\n  Pass --root with a project folder.",
              file=sys.stderr)
        return 3
    try:
        from rio.config.instance import config_base
        user = config_base() / "supervisor.toml"
        from actors.runtime.actor_registry import ON_DEMAND, known_actors
        config = load_config(None, user if user.exists() else None, placement=placement,
                             actors=known_actors(), on_demand=ON_DEMAND)
        sup = Supervisor(root=root, instance=instance, desktop=desktop, config=config,
                         listen=listen, fault_injection=fault_injection, open_files=open_files,
                         window=window, log_stderr=log_stderr, notifier=notifier)
        # Before the start: a SIGTERM while it starts ends it cleanly once the loop runs (as
        # PID 1 of a container a signal without a handler would be ignored).
        signal.signal(signal.SIGTERM, lambda *_: sup.stop_requested.set())
        signal.signal(signal.SIGINT, lambda *_: sup.stop_requested.set())
        sup.start()
    except RioError as err:
        if window is not None:   # no instance to show: the early window goes
            process_control.stop(window, stdin_grace=0, term_grace=0.5, kill_grace=1.0)
        notifier.status(f"cannot start: {err.kind}: {err.message}")
        notifier.close()
        print(f"rio: {err.message}\n  ({err.kind}) {err.next}", file=sys.stderr)
        return 1
    print(f"Rio instance {sup.name} serving {root}", flush=True)
    print(f"  stop it with: rio stop --instance {sup.name}", flush=True)
    return sup.run()
