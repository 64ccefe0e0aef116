"""``run.*``: the project's Run/Build commands, served by the core.

:class:`RunnerActor` starts a command through :mod:`actors.runtime.process_control` (a session and
process group of its own, a cookie, death with the core), and one :class:`RunMonitor` thread per
run reads its pipes, batches the output (:class:`rio.runs.runner.OutputBatcher`), enforces the timeout
and, when the command ends, is stopped or times out, ends the WHOLE group with the full stop
sequence (TERM the group → grace → KILL → sweep by cookie), so a helper the command left in the
background never outlives its run.

Events: ``run.output {run, stream, text}`` (batched, capped) and then exactly one
``run.exit {run, code, how, stop, survivors}``. The monitor hands both to the actor, which
publishes them from its own thread: one sender keeps them in order, and short-lived monitor
threads never open bus sockets of their own.

Threading: PR_SET_PDEATHSIG fires when the *thread* that forked ends (prctl(2)), so commands are
spawned from the actor's thread, which lives as long as the actor; :meth:`RunnerActor.on_stop`
stops every run before that thread ends.
"""

from __future__ import annotations

import logging
import os
import selectors
import threading
import time
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, NamedTuple

import pykka

from actors.bus.service import ANSWERED, BusThread, OpTable, RequestContext
from actors.runtime import process_control
from rio.files.workspace import Workspace
from rio.protocol.errors import FileError, ProtocolError
from rio.runs.runner import (
    DEFAULT_OUTPUT_CAP,
    ExitHow,
    OutputBatcher,
    OutputChunk,
    RunPlan,
    RunRecord,
    exit_code,
    plan_run,
    scrub_environment,
)

log = logging.getLogger("rio.runs.runner")

#: After the main process exits, wait this long for the pipes to reach EOF before ending the
#: group (a background helper holding stdout open would otherwise keep the run alive forever).
EXIT_DRAIN_S = 0.2
#: Finished runs remembered for run.list.
KEEP_FINISHED = 32
_TICK_S = 0.02


class Publish(NamedTuple):
    """From a monitor: publish this event (``run.output``) from the actor's thread."""
    topic: str
    data: dict[str, Any]


class RunFinished(NamedTuple):
    """From a monitor: the run ended (``final`` is ``run.exit``'s data); answer ``waiters``
    (the ``run.stop`` requests that waited for the group to be gone)."""
    final: dict[str, Any]
    waiters: list[RequestContext]


class RunMonitor:
    """One run's pipes, timeout and end. Runs on its own thread; talks to the actor by ``post``
    (:class:`Publish`, then one :class:`RunFinished`)."""

    def __init__(self, run_id: str, plan: RunPlan, spawned: process_control.Spawned,
                 post: Callable[[Publish | RunFinished], None], *, cap: int,
                 graces: dict[str, float]):
        self.run_id = run_id
        self.plan = plan
        self.spawned = spawned
        self.post = post
        self.batcher = OutputBatcher(cap=cap)
        self.graces = graces
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[RequestContext] = []
        self._final: dict[str, Any] | None = None
        self.thread = threading.Thread(target=self._run, name=f"rio-run-{run_id}", daemon=True)

    # --- any thread ------------------------------------------------------------------------------
    def request_stop(self, ctx: RequestContext | None) -> dict[str, Any] | None:
        """Ask the run to stop; ``ctx`` is answered once the whole group is gone. Returns the
        final result instead when the run has already ended."""
        with self._lock:
            if self._final is not None:
                return self._final
            if ctx is not None:
                self._waiters.append(ctx)
        self._stop.set()
        return None

    # --- the monitor thread ----------------------------------------------------------------------
    def _publish(self, chunks: list[OutputChunk]) -> None:
        for c in chunks:
            self.post(Publish("run.output",
                              {"run": self.run_id, "stream": c.stream, "text": c.text}))

    def _main_exited(self) -> bool:
        # WNOWAIT: look without reaping, so the group id stays ours until stop() reaps it.
        try:
            return os.waitid(os.P_PID, self.spawned.pid,
                             os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def _run(self) -> None:
        how: ExitHow = "failed"
        report = None
        try:
            sel = selectors.DefaultSelector()
            popen = self.spawned.popen
            for stream, pipe in (("stdout", popen.stdout), ("stderr", popen.stderr)):
                if pipe is not None:
                    sel.register(pipe.fileno(), selectors.EVENT_READ, stream)
            deadline = (time.monotonic() + self.plan.timeout_s
                        if self.plan.timeout_s is not None else None)
            exited_at: float | None = None
            while True:
                now = time.monotonic()
                if self._stop.is_set():
                    how = "stopped"
                    break
                if deadline is not None and now >= deadline:
                    how = "timeout"
                    break
                if exited_at is None and self._main_exited():
                    exited_at = now
                if exited_at is not None and (not sel.get_map() or now - exited_at >= EXIT_DRAIN_S):
                    how = "exited"
                    break
                if sel.get_map():
                    self._read_ready(sel, _TICK_S)
                else:
                    time.sleep(_TICK_S)
                self._publish(self.batcher.due(time.monotonic()))
            report = process_control.stop(self.spawned, **self.graces)
            # Every writer is gone now: read what is left in the pipes, up to EOF.
            while sel.get_map():
                if not self._read_ready(sel, 0.05):
                    break
            sel.close()
            self._publish(self.batcher.close())
        except Exception:  # the run must still end and be answered
            log.exception("run %s: monitor failed", self.run_id)
            report = process_control.stop(self.spawned, **self.graces)
        finally:
            for pipe in (self.spawned.popen.stdout, self.spawned.popen.stderr):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:
                        pass
        returncode = report.returncode if report is not None else self.spawned.popen.poll()
        final = {"run": self.run_id, "code": exit_code(returncode), "how": how,
                 "stop": report.how if report is not None else None,
                 "survivors": list(report.survivors) if report is not None else [],
                 "output_chars": self.batcher.published, "dropped_chars": self.batcher.dropped}
        with self._lock:
            self._final = final
            waiters, self._waiters = self._waiters, []
        self.post(RunFinished(final, waiters))

    def _read_ready(self, sel: selectors.BaseSelector, timeout: float) -> bool:
        """Read whatever is ready; False when nothing was (a timeout)."""
        ready = sel.select(timeout)
        for key, _ in ready:
            try:
                data = os.read(key.fd, 65536)
            except OSError:
                data = b""
            if not data:
                sel.unregister(key.fd)
                continue
            self._publish(self.batcher.feed(key.data, data, time.monotonic()))
        return bool(ready)


class RunnerActor(pykka.ThreadingActor):
    """Serves ``run.start``, ``run.stop`` and ``run.list``; see the module docstring."""

    handles: OpTable[RunnerActor] = OpTable()

    def __init__(self, root: Path, bus: BusThread, *, cap: int = DEFAULT_OUTPUT_CAP,
                 graces: dict[str, float] | None = None,
                 environ: dict[str, str] | None = None):
        super().__init__()
        self.workspace = Workspace(root)
        self.bus = bus
        self.cap = cap
        # stdin is /dev/null: there is no stdin step; TERM the group, then KILL it.
        self.graces = graces or {"stdin_grace": 0.0, "term_grace": 1.0, "kill_grace": 1.0}
        self.environ = environ
        self.records: OrderedDict[str, RunRecord] = OrderedDict()
        self.monitors: dict[str, RunMonitor] = {}

    def on_receive(self, message: Any) -> Any:
        match message:
            case RequestContext():
                self.handles.serve(self, message)
            case Publish(topic, data):
                self.bus.publish(topic, data)
            case RunFinished(final, waiters):
                self._finished(final, waiters)
        return None

    @handles("run.list")
    def run_list(self, ctx: RequestContext) -> Any:
        return [r.to_wire() for r in self.records.values()]

    @handles("run.start")
    def run_start(self, ctx: RequestContext) -> Any:
        cwd = self.workspace.resolve(ctx.args.get("cwd") or ".", kind="dir")
        plan = plan_run(ctx.args["command"], str(cwd), ctx.args.get("timeout_s"))
        env = scrub_environment(self.environ if self.environ is not None else os.environ)
        try:
            spawned = process_control.spawn(list(plan.argv), cwd=plan.cwd, env=env,
                                            stdin=process_control.DEVNULL,
                                            stdout=process_control.PIPE,
                                            stderr=process_control.PIPE)
        except OSError as exc:
            raise FileError("file.exec_failed", f"Cannot start {plan.argv[0]}: "
                            f"{exc.strerror or exc}.",
                            "Check the command: the program must exist and be executable.",
                            command=plan.command) from None
        run_id = "run-" + uuid.uuid4().hex[:10]
        record = RunRecord(run_id, plan.command, plan.argv, self.workspace.relative(cwd) or ".",
                           spawned.pid, spawned.started_at)
        self.records[run_id] = record
        monitor = RunMonitor(run_id, plan, spawned, self._post, cap=self.cap,
                             graces=self.graces)
        self.monitors[run_id] = monitor
        ctx.reply(record.to_wire())     # before the run's first output event
        monitor.thread.start()
        return ANSWERED

    def _post(self, message: Publish | RunFinished) -> None:
        """From a monitor thread: hand a message to this actor. Once the actor is stopping,
        events are dropped (the core is ending) and pending stop requests answered here."""
        try:
            self.actor_ref.tell(message)
        except pykka.ActorDeadError:
            if isinstance(message, RunFinished):
                for ctx in message.waiters:
                    ctx.reply(message.final)

    @handles("run.stop")
    def run_stop(self, ctx: RequestContext) -> Any:
        """Answered once the run's whole group is gone (by :meth:`_finished`)."""
        run_id = ctx.args["run"]
        monitor = self.monitors.get(run_id)
        if monitor is None:
            record = self.records.get(run_id)
            if record is None:
                raise ProtocolError("unknown_run", f"No run {run_id!r}.",
                                  "List the runs with run.list.", run=run_id)
            return {"run": run_id, "code": record.code, "how": record.how, "stop": None,
                    "survivors": [], "output_chars": record.output_chars,
                    "dropped_chars": record.dropped_chars}
        final = monitor.request_stop(ctx)
        return ANSWERED if final is None else final

    def _finished(self, final: dict[str, Any], waiters: list[RequestContext]) -> None:
        run_id = final["run"]
        self.monitors.pop(run_id, None)
        record = self.records.get(run_id)
        if record is not None:
            self.records[run_id] = record.finished(final["code"], final["how"],
                                                   final["output_chars"], final["dropped_chars"])
        self.bus.publish("run.exit", final)
        for ctx in waiters:
            ctx.reply(final)
        finished = [k for k, r in self.records.items() if r.state == "exited"]
        for k in finished[:max(0, len(finished) - KEEP_FINISHED)]:
            del self.records[k]

    def on_stop(self) -> None:
        """Stop every run (in parallel) before this thread, their PDEATHSIG parent, ends."""
        monitors = list(self.monitors.values())
        for m in monitors:
            m.request_stop(None)
        for m in monitors:
            m.thread.join(timeout=sum(self.graces.values()) + 5)
