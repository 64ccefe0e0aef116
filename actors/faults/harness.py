"""``rio faults``: a scripted workload against a headless instance while faults are injected.

The harness is a client like any other: it uses only public surfaces — processes (pids from
``system.status``, signals, psutil), the bus (``buffer.*``, ``system.*``) and the disk of the
project — so it runs against a user's own deployment (``--instance NAME``) as well as against
the scratch instance it starts by default (``rio serve --fault-injection --placement isolated``
on a temp project, with its own RIO_*_DIR folders and a fast supervisor.toml; ended afterwards).

Workload: a typist inserts unique token lines into one file through ``buffer.replace`` (its own
mirror of the text picks the positions; it is the only writer), saves now and then, and fake
agents (``[process.fake]``, actors/faults/injection.py) stream ``fake.delta`` events and keep helpers
running. Each fault is injected at a random moment of that workload; afterwards the harness
waits for the target to be back and answering, then checks the invariants (rio/faults/report.py):
edits lost, orphan processes, corrupt files.

An edit whose reply never came (the core died, the frame was dropped) is resolved by looking at
the core's text: present means applied (journalled before the reply, so a kill loses nothing);
absent means it is sent again. A *dropped* frame is resent with the same request id, and a
duplicated frame is sent twice — the service de-duplicates by id, and a token applied twice is
counted as a broken invariant.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.faults.instances import SETTLE_S, AttachedInstance, OwnInstance, carrying, read_chain
from actors.faults.workload import RECOVER_TIMEOUT_S, TRANSIENT, Client, Typist
from actors.runtime import process_control
from rio.faults.pacing import Budget, Pacer, plan_line
from rio.faults.report import FaultResult, ProcInfo, Report, orphans, summarize
from rio.protocol.errors import BusError, ConfigError, ProtocolError, RioError

SCENARIOS = ("kill", "hang", "stubborn", "forking", "supervisor", "bus", "save",
             "journal_full", "journal_damage", "recovery_kill", "scale", "stale_resend",
             "acp_crash", "acp_helpers", "acp_silent", "acp_stderr", "acp_flood")
#: The fake agents every run keeps alive: a polite one, a stubborn one (ignores stdin close and
#: TERM), one whose helpers double-fork and setsid.
FAKES = ("polite-polite-1", "stubborn-stubborn-1", "stubborn-forking-2")
TEST_HOOK_ENV = "RIO_FAULTS_TEST_HOOK"   # lose_edit / orphan: the checks must catch these


@dataclass
class Options:
    instance: str | None = None
    scenarios: tuple[str, ...] = SCENARIOS
    runs: int = 1
    seed: int | None = None
    progress: Callable[[str], None] = lambda line: None


# ------------------------------------------------------------------------------ the harness

@dataclass
class Target:
    name: str
    pid: int
    budget: Budget | None = None


class Harness:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.seed = options.seed if options.seed is not None else random.randrange(1 << 30)
        self.rng = random.Random(self.seed)
        self.tag = f"f{self.seed % 100000}"
        self.instance: OwnInstance | AttachedInstance = (
            AttachedInstance(options.instance) if options.instance else OwnInstance())
        #: the connection to the instance: made by :meth:`_connect`, read through :attr:`client`
        self._client: Client | None = None
        self.typist: Typist | None = None
        self.known_children: set[str] = set()
        self.fault_injection = True
        self.results: list[FaultResult] = []
        self._planted: subprocess.Popen[bytes] | None = None
        #: Kills and hangs stay inside each target's restart budget (rio/faults/pacing.py).
        self.pacer = Pacer()
        self.budgets: dict[str, Budget | None] = {}
        #: The error that ended the run early (the table is printed all the same).
        self.aborted: RioError | None = None
        self._scratch_file: Path | None = None

    # --- set-up ---------------------------------------------------------------------------------
    @property
    def client(self) -> Client:
        """The harness's connection to the instance, once :meth:`start` made it."""
        if self._client is None:
            raise RuntimeError("the fault harness is not connected yet: start() first")
        return self._client

    def _connect(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = Client(self.instance.endpoints())

    def status(self) -> dict[str, dict[str, Any]]:
        procs = self.client.call("system.status", timeout=5)["processes"]
        return {p["name"]: p for p in procs}

    def _wait_ready(self, names: list[str], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                status = self.status()
            except BusError:
                status = {}
            if all(status.get(n, {}).get("ready") for n in names):
                return
            time.sleep(0.05)
        raise BusError("timeout", f"Processes {', '.join(names)} did not become ready.",
                       "Check `rio status` and the logs it names.")

    def _buffer_process(self) -> str:
        for name, p in self.status().items():
            if "documents" in p["actors"]:
                return name
        raise ConfigError("invalid", "No process hosts the documents actor.",
                          "Check supervisor.toml.")

    def start(self) -> None:
        if isinstance(self.instance, OwnInstance):
            self.instance.start()
        self._connect()
        self._wait_ready([])
        self._wait_ready([self._buffer_process()])
        for key in FAKES:    # system.spawn answers once the process is ready
            self._spawn_fake(key)
        rel = f".rio-faults-{self.tag}.txt"
        path = self.instance.root / rel
        if not path.exists():
            path.write_text("".join(f"line {i}\n" for i in range(20)))
            self._scratch_file = path        # ours: removed at the end, whatever happens
        self.typist = Typist(self, rel)
        self.typist.open()
        try:
            self.client.call("system.fault", {"fault": "clear"})
        except ProtocolError:
            self.fault_injection = False
        self._remember_children()
        self._plan()

    def _plan(self) -> None:
        """Say up front how many faults each process gets and what its budget allows."""
        self.budgets = {t.name: t.budget for t in self._targets()}
        chosen = set(self.options.scenarios)
        each = self.options.runs * (("kill" in chosen) + ("hang" in chosen))
        if each:
            self.options.progress(plan_line(self.budgets, each, self.pacer.margin))

    def _pace(self, target: Target) -> None:
        """Wait until one more fault on ``target`` fits its restart budget."""
        wait = self.pacer.wait_before(target.name, target.budget, time.monotonic())
        if wait <= 0:
            return
        if wait >= 0.5:                   # a moment's wait is not worth a line
            self.options.progress(f"pacing: waiting {wait:.0f} s for {target.name}'s restart "
                                  "budget")
        until = time.monotonic() + wait
        while time.monotonic() < until:
            self.client.pump()            # keep up with the fake agents' events meanwhile
            time.sleep(min(0.2, max(0.0, until - time.monotonic())))

    def _spawn_fake(self, key: str) -> None:
        """Start one of :data:`FAKES` (answered once it is ready), riding out a restart."""
        self._retry_bus(lambda: self.client.call(
            "system.spawn", {"kind": "fake", "key": key}, timeout=30))

    def _retry_bus(self, fn: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + RECOVER_TIMEOUT_S
        while True:
            try:
                return fn()
            except BusError as err:
                if err.kind not in TRANSIENT or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _supervisor_gone(self) -> bool:
        inst = self.instance
        return isinstance(inst, OwnInstance) and (inst.spawned is None
                                                  or inst.spawned.popen.poll() is not None)

    def _remember_children(self) -> set[str]:
        """Cookies of the supervisor's children running now (and remember them)."""
        live: set[str] = set()
        if self._supervisor_gone():
            return live   # nobody to ask, and nothing of the dead one may live on
        status = self.client.call("system.status", timeout=5)
        # A spare host (ADR-0026 d) is a child of the supervisor as much as the processes are.
        for p in [*status["processes"], *({"pid": s["pid"], "state": "running"}
                                          for s in status.get("spares", ()))]:
            if p.get("pid") and p["state"] == "running":
                chain = read_chain(p["pid"])
                if chain:
                    live.add(chain[-1])
                # A session forked from the zygote (ADR-0039) shows the zygote's environment
                # in /proc (fixed at exec): what it starts carries its own cookie, which only
                # the status gives.
                if p.get("cookie"):
                    live.add(str(p["cookie"]))
        self.known_children |= live
        self.instance.all_cookies |= live
        return live

    # --- invariants -----------------------------------------------------------------------------
    def count_orphans(self) -> int:
        """Wait up to SETTLE_S for leftovers of dead owners to end; count what remains."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            found = self._orphans_now()
            if not found or time.monotonic() > deadline:
                return len(found)
            time.sleep(0.1)

    def _orphans_now(self) -> list[ProcInfo]:
        sup = None if self._supervisor_gone() else self.instance.supervisor_pid
        sup_chain = read_chain(sup) if sup else ()
        live = self._remember_children()
        scope = set(self.instance.all_cookies) | set(self.known_children)
        if sup_chain:
            scope.add(sup_chain[-1])
        procs = carrying(scope)
        return orphans(procs, supervisor_pid=sup, supervisor_chain=sup_chain,
                       live_children=live, dead_cookies=self.instance.dead_cookies,
                       known_children=None if sup_chain else self.known_children)

    def _check(self, scenario: str, fault: str, target: str, recovered: bool,
               recover_s: float | None, note: str = "") -> FaultResult:
        assert self.typist is not None
        lost, duplicated, corrupt = self.typist.check()
        result = FaultResult(scenario, fault, target, recovered, recover_s, lost, duplicated,
                             self.count_orphans(), corrupt, note)
        self.results.append(result)
        mark = "ok" if not result.broken else "BROKEN"
        self.options.progress(f"{scenario:<14} {fault:<21} {target:<28} "
                              f"{'-' if recover_s is None else f'{recover_s:.3f} s':>9} {mark}")
        return result

    # --- waiting for recovery -------------------------------------------------------------------
    def _wait_back(self, name: str, old_pid: int, started: float) -> tuple[bool, float | None]:
        deadline = started + RECOVER_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                p = self.status().get(name, {})
            except BusError:
                p = {}
            if p.get("pid") not in (None, old_pid) and p.get("ready"):
                if "documents" in p.get("actors", ()):
                    assert self.typist is not None
                    self.typist.fetch()   # answering buffer ops, not only pings
                return True, time.monotonic() - started
            time.sleep(0.01)
        return False, None

    def _targets(self) -> list[Target]:
        """Processes to kill or hang: not the window, not a user's agent sessions, and not
        one the supervisor would never restart (restart = "never")."""
        found = []
        for n, p in self.status().items():
            budget = Budget.from_status(p.get("budget"))
            if (p.get("pid") and p["state"] == "running" and "ui" not in p["actors"]
                    and (":" not in n or n.startswith("fake:"))
                    and (budget is None or budget.policy != "never")):
                found.append(Target(n, p["pid"], budget))
        return found

    def _workload(self, edits: int) -> None:
        assert self.typist is not None
        for _ in range(edits):
            self.typist.type_one()
        self.client.pump()

    # --- scenarios ------------------------------------------------------------------------------
    def _signal_fault(self, scenario: str, sig: signal.Signals, label: str) -> None:
        for target in self._targets():
            self._workload(self.rng.randint(1, 4))
            if self.rng.random() < 0.3:
                self.typist.save()  # type: ignore[union-attr]
            self._pace(target)
            time.sleep(self.rng.uniform(0, 0.05))   # a random moment
            started = time.monotonic()
            try:
                os.kill(target.pid, sig)
            except ProcessLookupError:
                continue
            self._workload(2)   # typing goes on (edits to a dead core wait and retry)
            ok, took = self._wait_back(target.name, target.pid, started)
            self.pacer.record(target.name, time.monotonic())
            self._check(scenario, label, target.name, ok, took)

    def scenario_kill(self) -> None:
        self._signal_fault("kill", signal.SIGKILL, "kill -9")

    def scenario_hang(self) -> None:
        self._signal_fault("hang", signal.SIGSTOP, "SIGSTOP")

    def _restart(self, scenario: str, name: str, label: str) -> None:
        old = self.status()[name]["pid"]
        self._workload(self.rng.randint(1, 3))
        started = time.monotonic()
        self.client.call("system.restart", {"process": name})
        self._workload(1)
        ok, took = self._wait_back(name, old, started)
        self._check(scenario, label, name, ok, took)

    def scenario_stubborn(self) -> None:
        # ignores stdin close and TERM: only the KILL step of the stop sequence ends it
        self._restart("stubborn", "fake:stubborn-stubborn-1", "stop stubborn")

    def scenario_forking(self) -> None:
        name = "fake:stubborn-forking-2"
        self._restart("forking", name, "stop forking")
        proc = self.status()[name]
        old = proc["pid"]
        self._workload(1)
        self._pace(Target(name, old, Budget.from_status(proc.get("budget"))))
        started = time.monotonic()
        os.kill(old, signal.SIGKILL)   # no stop sequence at all: only the sweep finds them
        ok, took = self._wait_back(name, old, started)
        self.pacer.record(name, time.monotonic())
        self._check("forking", "kill -9 forking", name, ok, took)

    def scenario_supervisor(self) -> None:
        assert isinstance(self.instance, OwnInstance) and self.typist is not None
        self._workload(self.rng.randint(1, 4))
        started = time.monotonic()
        self.instance.kill9()
        # Its children must end by themselves (lifeline / PDEATHSIG), with their helpers.
        left = self.count_orphans()
        self.instance.start()
        self._connect()
        buf = self._buffer_process_when_up()
        self._wait_ready([buf])
        self.typist.open()
        took = time.monotonic() - started   # the fakes' start is not the core's recovery
        for key in FAKES:    # answered once ready
            self._spawn_fake(key)
        result = self._check("supervisor", "kill -9", "supervisor", True, took)
        if left:
            self.results[-1] = FaultResult(**{**result.__dict__, "orphans": result.orphans
                                              + left})

    def _buffer_process_when_up(self) -> str:
        deadline = time.monotonic() + RECOVER_TIMEOUT_S
        while True:
            try:
                return self._buffer_process()
            except (BusError, ConfigError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def scenario_bus(self) -> None:
        assert self.typist is not None
        for kind in ("drop", "dup", "delay"):
            for _ in range(3):
                self._workload(1)
                took = self.typist.type_one(frame_fault=kind)
                self._check("bus", f"bus {kind}", "client", True, took)

    def scenario_save(self) -> None:
        assert self.typist is not None
        for errno_name in ("ENOSPC", "EIO"):
            self._workload(self.rng.randint(1, 3))
            size = len(self.typist.fetch().encode())
            started = time.monotonic()
            failed = not self.typist.save(fail={"errno": errno_name,
                                                "after_bytes": self.rng.randint(1, size - 1)})
            lost, dup, corrupt = self.typist.check()   # the old file, intact
            saved = self.typist.save()                 # and the next save works
            took = time.monotonic() - started
            result = self._check("save", f"save {errno_name}", "disk", failed and saved, took,
                                 note="" if failed else "the armed save did not fail")
            if corrupt or lost or dup:
                self.results[-1] = FaultResult(**{**result.__dict__,
                                                  "corrupt": result.corrupt + corrupt,
                                                  "lost": result.lost + lost,
                                                  "duplicated": result.duplicated + dup})

    # The journal's scenarios live in actors/faults/journal_scenarios.py.
    def scenario_journal_full(self) -> None:
        from actors.faults.journal_scenarios import scenario_journal_full
        scenario_journal_full(self)

    def scenario_journal_damage(self) -> None:
        from actors.faults.journal_scenarios import scenario_journal_damage
        scenario_journal_damage(self)

    def scenario_recovery_kill(self) -> None:
        from actors.faults.journal_scenarios import scenario_recovery_kill
        scenario_recovery_kill(self)

    def scenario_scale(self) -> None:
        from actors.faults.journal_scenarios import scenario_scale
        scenario_scale(self)

    def scenario_stale_resend(self) -> None:
        from actors.faults.resend import scenario_stale_resend
        scenario_stale_resend(self)

    # The ACP family (a misbehaving external agent) lives in actors/faults/acp_family.py.
    def scenario_acp_crash(self) -> None:
        from actors.faults import acp_family as acp
        acp.run(self, "acp_crash")

    def scenario_acp_helpers(self) -> None:
        from actors.faults import acp_family as acp
        acp.run(self, "acp_helpers")

    def scenario_acp_silent(self) -> None:
        from actors.faults import acp_family as acp
        acp.run(self, "acp_silent")

    def scenario_acp_stderr(self) -> None:
        from actors.faults import acp_family as acp
        acp.run(self, "acp_stderr")

    def scenario_acp_flood(self) -> None:
        from actors.faults import acp_family as acp
        acp.run(self, "acp_flood")

    # --- the whole run --------------------------------------------------------------------------
    def run(self) -> Report:
        began = time.monotonic()
        summaries = []
        shutdown_orphans = 0
        failed = True
        try:
            try:
                self.start()
                hook = os.environ.get(TEST_HOOK_ENV)
                if hook == "lose_edit":
                    assert self.typist is not None
                    self.typist.acked.append("<never-sent>")   # the checker must catch this
                elif hook == "orphan":
                    self._plant_orphan()
                for scenario in self.options.scenarios:
                    skipped = self._skip_reason(scenario)
                    first = len(self.results)
                    try:
                        if not skipped:
                            for _ in range(self.options.runs):
                                getattr(self, f"scenario_{scenario}")()
                    finally:
                        summaries.append(summarize(scenario, 0 if skipped else
                                                   self.options.runs, self.results[first:],
                                                   skipped))
            except RioError as err:
                # The run cannot go on (the instance gave up on a process, or went away):
                # the table of what ran is still printed, and everything is cleaned up.
                self.aborted = err
                done = {s.scenario for s in summaries}
                summaries += [summarize(s, 0, (), "not run: the run was aborted")
                              for s in self.options.scenarios if s not in done]
            failed = self.aborted is not None or any(r.broken for r in self.results)
        finally:
            if self._planted is not None:
                self._planted.kill()
                self._planted.wait(10)
            if isinstance(self.instance, OwnInstance):
                shutdown_orphans = self.instance.stop(
                    self._client.conn if self._client else None)
            else:
                self._tidy_attached()
            if self._scratch_file is not None:
                self._scratch_file.unlink(missing_ok=True)
            if self._client is not None:
                self._client.close()
            # A scratch instance that broke is kept (logs, journal, project) for inspection.
            kept = self.instance.cleanup(keep=failed)
            if kept:
                self.options.progress(f"kept the scratch instance's files in {kept}")
                sys.stderr.write(f"rio faults: the scratch instance's files are in {kept}\n")
        aborted = "" if self.aborted is None else \
            f"{self.aborted.kind}: {self.aborted.message} — {self.aborted.next}"
        return Report(self.instance.name, self.seed, tuple(summaries), tuple(self.results),
                      shutdown_orphans, time.monotonic() - began,
                      {"deltas_seen": self._client.deltas if self._client else 0,
                       "edits_acked": len(self.typist.acked) if self.typist else 0},
                      aborted=aborted)

    def _plant_orphan(self) -> None:
        """Test hook: a process that claims to belong to a supervisor child that does not
        exist, as an escaped helper of a dead agent would; the orphan check must count it."""
        sup = self.instance.supervisor_pid
        chain = read_chain(sup) if sup else ()
        env = dict(os.environ)
        env[process_control.LINEAGE_ENV] = ":".join(chain + ("gone-child",))
        env[process_control.COOKIE_ENV] = "planted"
        self._planted = subprocess.Popen(  # a fixed argv, no shell
            [sys.executable, "-c", "import time; time.sleep(300)"], env=env,
            stdin=subprocess.DEVNULL)

    def _skip_reason(self, scenario: str) -> str:
        if scenario == "supervisor" and not self.instance.own:
            return "only against the harness's own instance"
        if scenario in ("save", "journal_full") and not self.fault_injection:
            return "the instance runs without --fault-injection"
        if scenario.startswith("acp_") and not self.instance.own:
            return "only against the harness's own instance (it configures its fault agent)"
        if scenario == "journal_damage" and not self.instance.own:
            return "only against the harness's own instance (it writes into the journal)"
        if scenario == "scale" and not self.instance.own:
            return "only against the harness's own instance (it opens thousands of buffers)"
        return ""

    def _tidy_attached(self) -> None:
        """Leave a user's instance as we found it: no scratch buffer, file or fake agent.
        Each step on its own: a core that is down must not keep the fakes running."""
        if self._client is None:
            return
        steps: list[tuple[str, dict[str, Any]]] = []
        if self.typist is not None and self.typist.bid:
            steps.append(("buffer.close", {"buffer": self.typist.bid, "discard": True}))
        steps += [("system.restart", {"process": f"fake:{key}", "again": False})
                  for key in FAKES]
        for op, args in steps:
            try:
                self.client.call(op, args, timeout=10)
            except RioError as err:
                self.options.progress(f"cleanup: {op} {args.get('process', '')} failed "
                                      f"({err.kind})")
        if self.typist is not None:
            self.typist.path.unlink(missing_ok=True)
        # The stop sequences run in the supervisor (stubborn fakes need their KILL step):
        # return only once they are over, so nothing of ours runs when the command ends.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                left = [n for n, p in self.status().items() if n.startswith("fake:")
                        and p["state"] in ("starting", "running", "restarting", "stopping")]
            except RioError:
                return
            if not left:
                return
            time.sleep(0.1)
        self.options.progress(f"cleanup: {', '.join(left)} still stopping")

