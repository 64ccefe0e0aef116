"""A Rio process that hosts actors: ``python -m actors.runtime.host --process core --actors documents,...``.

The supervisor starts one per failure domain (supervisor.toml). The host connects its bus thread
to the hub, starts the actors it was given, registers their op prefixes and then waits. It ends
cleanly (journals flushed) on SIGTERM, on SIGINT, or when its stdin reaches end of file — the
supervisor holds the other end of that pipe, so the pipe closing is also how a host notices that
the supervisor died (with PR_SET_PDEATHSIG as the second line, ADR-0007).

``python -m actors.runtime.host --spare --preload documents,...`` is a *spare*: started ahead by the
supervisor, it imports what those actors need and then blocks reading one JSON line on its
stdin, ``{"argv": [the arguments above], "log": path}``: its assignment. It then sends its
stderr to that log and runs as if started with those arguments, so a restart costs no
interpreter start and no imports (docs/adr/0026-start-path-and-long-line-keys.md, d). End of
file instead of a line (the supervisor stopped it, or died) ends it at once.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import pykka

from actors.bus.client import Endpoints
from actors.bus.service import ANSWERED, BusThread, OpTable, RequestContext
from actors.runtime.actor_registry import Ping, factory_for
from actors.runtime.liveness import Liveness, LivenessActor, on_process_failure
from rio.protocol.errors import BusError

log = logging.getLogger("rio.host")

class Host:
    handles: OpTable[Host] = OpTable()

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.name = args.process
        self.root = Path(args.root).resolve()
        self.endpoints = Endpoints(args.requests, args.events)
        self.stopping = threading.Event()
        self.refs: list[pykka.ActorRef[Any]] = []
        self.ping_targets: list[pykka.ActorRef[Any]] = []
        self.bus = BusThread(self.endpoints, name=self.name)
        self.fault_injection = bool(args.fault_injection)
        self.after_ready: list[Callable[[], object]] = []
        self.liveness = Liveness()
        #: the process's exit status: 0, or EX_SOFTWARE once an actor it needs died
        self.exit_code = 0

    def run(self) -> int:
        handlers: dict[str, Callable[[RequestContext], None]] = {}
        for actor in [a for a in self.args.actors.split(",") if a]:
            factory = factory_for(actor)
            if factory is None:
                log.warning("no actor named %r in this build; skipped", actor)
                continue
            handlers.update(factory(self))
        if self.liveness.watching:
            # the ping is answered by a thread of its own, which load cannot starve, after
            # looking at what the serving threads do (actors/runtime/liveness.py)
            keeper = LivenessActor.start(self.liveness, self.name)
            self.refs.insert(0, keeper)       # stopped last
            self.ping_targets.insert(0, keeper)
        on_process_failure(self.fail)
        handlers["host"] = lambda ctx: self.handles.serve(self, ctx)   # on the bus thread
        self.bus.handlers.update(handlers)
        self.bus.start()
        print(f"ready {self.name} {os.getpid()}", flush=True)
        if self.after_ready:
            threading.Thread(target=self._after_ready, name="after-ready", daemon=True).start()
        self.stopping.wait()
        self.shutdown()
        return self.exit_code

    def fail(self, why: str) -> None:
        """An actor the process needs died (actors/runtime/liveness.py ``process_failed``): end with a
        failure status, so the supervisor restarts the process (``on-failure`` included)."""
        self.exit_code = 70     # EX_SOFTWARE
        self.stopping.set()
        _arm_exit_deadline()

    def _after_ready(self) -> None:
        for step in self.after_ready:
            try:
                step()
            except Exception:  # a warm-up that fails is done on first use
                log.exception("%s: a step after the start failed", self.name)

    @handles("host.ping")
    def host_ping(self, ctx: RequestContext) -> Any:
        # Answered by an actor, not the bus thread: a hung actor must miss the ping.
        if not self.ping_targets:
            return {"process": self.name, "pid": os.getpid()}
        try:
            self.ping_targets[0].tell(Ping(ctx))
        except pykka.ActorDeadError:
            # not an answer: the supervisor counts it as a missed ping, and restarts us
            raise BusError("actor_dead", f"{self.name}: the actor answering pings has stopped.",
                           "The supervisor restarts the process.") from None
        return ANSWERED

    @handles("host.stop")
    def host_stop(self, ctx: RequestContext) -> Any:
        ctx.reply({"stopping": self.name})     # before the host starts ending
        self.stopping.set()
        return ANSWERED

    def shutdown(self) -> None:
        for ref in reversed(self.refs):
            try:
                ref.stop(timeout=10)
            except (pykka.ActorDeadError, pykka.Timeout):
                pass
        self.bus.stop()


def _watch_stdin(stopping: threading.Event) -> None:
    """Stop when the supervisor's end of our stdin closes. Reads the raw descriptor: a daemon
    thread blocked in ``sys.stdin.buffer`` holds its lock, and the interpreter's shutdown then
    aborts the process (``_enter_buffered_busy``: SIGABRT) when it flushes stdin — which made
    every ``host.stop`` look like a crash and earn a restart."""
    try:
        while os.read(sys.stdin.fileno(), 4096):
            pass
    except (OSError, ValueError):
        pass
    stopping.set()


#: How long a host that was told to end (SIGTERM, or its parent gone) may take before it exits
#: regardless: an actor stuck in its ``on_stop`` or a helper's stop that hangs must not leave
#: a process behind its dead supervisor. Edits are journaled before they are acknowledged, so
#: exiting here loses nothing acknowledged.
EXIT_DEADLINE_S = 5.0
_deadline_armed = threading.Lock()


def _arm_exit_deadline(seconds: float = EXIT_DEADLINE_S) -> None:
    """Once per process: after ``seconds``, SIGKILL the groups of everything this process
    spawned and ``os._exit(1)``. A daemon timer: it fires while the main thread waits for
    stuck threads at interpreter shutdown too."""
    if not _deadline_armed.acquire(blocking=False):
        return
    from actors.runtime import process_control

    def last_resort() -> None:
        log.error("still running %.0f s after being told to end: exiting now", seconds)
        process_control.kill_all_now()
        # Helpers that left their group (setsid) carry the cookie: sweep for them, on a
        # thread of its own so that a slow /proc scan cannot hold the exit up past 1 s.
        sweeper = threading.Thread(target=process_control.sweep_all_spawned, daemon=True,
                                   name="last-sweep")
        sweeper.start()
        sweeper.join(1.0)
        os._exit(1)

    timer = threading.Timer(seconds, last_resort)
    timer.daemon = True
    timer.start()


def _on_term(host: "Host") -> None:
    """SIGTERM: the supervisor's stop sequence, or PR_SET_PDEATHSIG when it died. End cleanly,
    within :data:`EXIT_DEADLINE_S`."""
    host.stopping.set()
    _arm_exit_deadline()


def _parent_gone(host: "Host") -> None:
    """The supervisor vanished: nobody else will stop what this process spawned, so stop it
    first (agents, helpers, run commands: no orphans), then end cleanly (journals flushed) —
    and never linger: after :data:`EXIT_DEADLINE_S`, exit whatever the actors are doing."""
    from actors.runtime import process_control

    def stop_children() -> None:
        process_control.stop_all(**process_control.ORPHAN_GRACES)

    threading.Thread(target=stop_children, name="orphan-stop", daemon=True).start()
    host.stopping.set()
    _arm_exit_deadline()


#: Modules an actor's factory imports only when it runs (actors.runtime.factories keeps them lazy): a
#: spare imports them too, so that nothing is left to import at assignment.
STARTED_MODULES: dict[str, tuple[str, ...]] = {
    "documents": ("actors.core.documents_actor",),
    "workspace": ("actors.core.workspace_actor",),
    "runner": ("actors.core.runner_actor",),
}


def read_assignment(fd: int = 0) -> dict[str, Any] | None:
    """One JSON line from ``fd`` (raw reads: see :func:`_watch_stdin`); None at end of file.
    Reads byte by byte so that nothing after the line is taken from the stdin watchdog."""
    line = bytearray()
    while not line.endswith(b"\n"):
        try:
            byte = os.read(fd, 1)
        except InterruptedError:
            continue
        if not byte:
            return None
        line += byte
    value = json.loads(line)
    if not isinstance(value, dict) or not isinstance(value.get("argv"), list):
        raise ValueError(f"a spare's assignment must be {{'argv': [...]}}, not {value!r:.200}")
    return value


def spare_main(argv: list[str]) -> int:
    """Wait as a spare (see the module's docstring), then run as assigned. Until assigned it
    has no signal handler of its own: the supervisor's SIGTERM (or PDEATHSIG) ends it."""
    parser = argparse.ArgumentParser(prog="python -m actors.runtime.host --spare")
    parser.add_argument("--spare", action="store_true")
    parser.add_argument("--preload", default="")
    parser.add_argument("--instance", default="")
    args = parser.parse_args(argv)
    for name in [a for a in args.preload.split(",") if a]:
        factory_for(name)
        for module in STARTED_MODULES.get(name, ()):
            importlib.import_module(module)
    assignment = read_assignment()
    if assignment is None:
        return 0
    log_path = assignment.get("log")
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    return main([str(a) for a in assignment["argv"]])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--spare" in argv:
        return spare_main(argv)
    if "--zygote" in argv:    # the agent sessions' zygote (actors/runtime/zygote.py, ADR-0039)
        from actors.runtime.zygote import zygote_main
        return zygote_main(argv, main, STARTED_MODULES)
    parser = argparse.ArgumentParser(prog="python -m actors.runtime.host")
    parser.add_argument("--process", required=True)
    parser.add_argument("--actors", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--requests", required=True)
    parser.add_argument("--events", required=True)
    parser.add_argument("--instance", default="")
    parser.add_argument("--fault-injection", action="store_true")
    parser.add_argument("--stdin-watchdog", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("RIO_LOG_LEVEL", "WARNING"),
                        format=f"%(asctime)s {args.process}[%(process)d] %(name)s: %(message)s")
    from actors.runtime import process_control

    host = Host(args)
    signal.signal(signal.SIGTERM, lambda *_: _on_term(host))
    signal.signal(signal.SIGINT, lambda *_: host.stopping.set())
    if args.stdin_watchdog:
        threading.Thread(target=_watch_stdin, args=(host.stopping,), daemon=True,
                         name="stdin-watchdog").start()
    # PR_SET_PDEATHSIG (set at spawn) sends SIGTERM; the lifeline pipe catches the rest.
    process_control.watchdog_from_parent(lambda: _parent_gone(host))
    try:
        return host.run()
    finally:
        pykka.ActorRegistry.stop_all(timeout=5)
        process_control.stop_all(**process_control.ORPHAN_GRACES)  # agents, run commands


if __name__ == "__main__":
    # Run the canonical module's main: the factories register into actors.runtime.host, not __main__.
    from actors.runtime.host import main as canonical_main
    sys.exit(canonical_main())
