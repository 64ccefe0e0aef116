"""Fault injection inside an instance (only with ``rio serve --fault-injection``).

Three pieces live here, all on the *instance* side of ``rio faults`` (the harness itself is
:mod:`actors.faults.harness`):

* :func:`apply_fault` — the supervisor's ``system.fault`` op: signal a process by name, or arm
  a failing save in the documents process.
* :class:`SwitchableFilePort` — the documents process's file port under fault injection: the
  real disk until a save failure is armed, then a write that fails part-way (ENOSPC / EIO). The
  switch is a small JSON file in the instance's runtime folder, so the supervisor (which has no
  bus connection it may use from the hub thread) arms it without a round trip.
* :class:`SwitchableJournalStore` — the same for the journal: the next ``count`` journal
  writes fail part-way, as on a disk that fills up (``journal_fail``).
* The ``fake_agent`` actor: an on-demand process (``[process.fake]`` in supervisor.toml) that
  behaves like an agent session for the stop sequence — it streams ``fake.delta`` events and
  starts helper processes through :mod:`actors.runtime.process_control`. Its behaviour comes from the
  spawn key, ``<host>-<helpers>-<n>[-anything]``:

  - host ``polite`` ends on stdin close; ``stubborn`` ignores stdin close and SIGTERM (worse than
    claude-agent-acp and codex-acp, which ignore stdin close but obey TERM; ADR-0007) so only the KILL step ends it; ``crash`` exits 3 at once; ``wedged`` obeys
    TERM but its actor never finishes stopping (only the host's exit deadline ends it).
  - helpers ``polite`` (end on stdin close), ``stubborn`` (ignore it and TERM) or ``forking``
    (double fork + setsid: escapes the group; only the cookie sweep finds it), ``n`` of them.

  The helpers are this module run as a program: ``python -m actors.faults.injection helper KIND``. They
  mirror tests/fakes/*_agent.py but ship with Rio, so ``rio faults`` works on a deployment
  that has no test tree.
"""

from __future__ import annotations

import errno as errno_module
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import pykka

from actors.runtime import process_control
from actors.runtime.actor_registry import ActorHost, Ping, actor_factory, answer_ping
from actors.runtime.child import Child
from rio.config.instance import InstancePaths
from rio.files.files import FilePort, OsFilePort
from rio.files.write_faults import FailingSaves, WriteFault
from rio.protocol.errors import ConfigError, ProtocolError
from rio.text.journal_store import OsJournalStore

if TYPE_CHECKING:   # for the annotation only
    from actors.bus.hub import Hub

SAVE_FAIL_FILE = "fault.save_fail.json"
JOURNAL_FAIL_FILE = "fault.journal_fail.json"
HELPER_KINDS = ("polite", "stubborn", "forking")
HOST_KINDS = ("polite", "stubborn", "crash", "wedged")
DELTA_INTERVAL_S = 0.05
_ERRNOS = {"ENOSPC": errno_module.ENOSPC, "EIO": errno_module.EIO}
_SIGNALS = {"KILL": signal.SIGKILL, "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT,
            "TERM": signal.SIGTERM}


# ------------------------------------------------------------------- the supervisor's side

def save_fail_path(instance: str) -> Path:
    return InstancePaths.for_name(instance).runtime / SAVE_FAIL_FILE


def journal_fail_path(instance: str) -> Path:
    return InstancePaths.for_name(instance).runtime / JOURNAL_FAIL_FILE


class FaultedSupervisor(Protocol):
    """What a fault needs of the supervisor it is applied in (actors/runtime/supervisor.py)."""

    name: str
    lock: threading.Lock
    children: dict[str, Child]
    hub: Hub | None


def apply_fault(sup: FaultedSupervisor, args: dict[str, Any]) -> dict[str, Any]:
    """``system.fault {fault, target, params}`` on a supervisor started with --fault-injection.

    * ``signal`` {target: process name, params: {signal: KILL|STOP|CONT|TERM}}
    * ``save_fail`` {params: {errno: ENOSPC|EIO, after_bytes: N, count: 1, hang_s: 0}}: the
      next ``count`` saves of the documents process fail after writing ``after_bytes`` bytes
      of the temp file — after hanging ``hang_s`` seconds there first, when given.
    * ``journal_fail`` {params: {errno, after_bytes, count}}: the next ``count`` journal writes
      (an edit's append, a journal's first write) fail after ``after_bytes`` bytes.
    * ``hub_crash``: the hub's thread dies of the next frame it reads (the supervisor must
      start it again).
    * ``clear``: disarm any armed save or journal failure.
    """
    fault = args["fault"]
    params = dict(args.get("params") or {})
    if fault == "signal":
        name = args.get("target") or ""
        with sup.lock:
            child = sup.children.get(name)
            pid = child.pid if child is not None and child.state == "running" else None
        if pid is None:
            raise ConfigError("invalid", f"No running process {name!r} to signal.",
                              "Pick a name from `rio status`.")
        sig = _SIGNALS.get(str(params.get("signal", "KILL")).upper())
        if sig is None:
            raise ProtocolError("bad_args", f"Unknown signal {params.get('signal')!r}.",
                                f"Use one of {', '.join(_SIGNALS)}.")
        os.kill(pid, sig)
        return {"fault": fault, "target": name, "pid": pid, "signal": sig.name}
    if fault == "save_fail":
        spec = SaveFailure.from_params(params)
        write_switch(save_fail_path(sup.name), spec)
        return {"fault": fault, "armed": spec.to_dict()}
    if fault == "journal_fail":
        spec = SaveFailure.from_params(params)
        write_switch(journal_fail_path(sup.name), spec)
        return {"fault": fault, "armed": spec.to_dict()}
    if fault == "hub_crash":
        assert sup.hub is not None, "system.fault is served by the hub"
        sup.hub.crash_on_next_frame()
        return {"fault": fault, "armed": True}
    if fault == "clear":
        save_fail_path(sup.name).unlink(missing_ok=True)
        journal_fail_path(sup.name).unlink(missing_ok=True)
        return {"fault": fault}
    raise ProtocolError("bad_args", f"Unknown fault {fault!r}.",
                        "Use signal, save_fail, journal_fail, hub_crash or clear "
                        "(docs/faults.md).")


@dataclass(frozen=True)
class SaveFailure:
    errno: int
    after_bytes: int
    count: int = 1
    #: a save that hangs: after ``after_bytes`` it waits this long before failing (a stuck
    #: disk or NFS server: the liveness check must catch it, and a kill then leaves the temp
    #: file that the next start sweeps)
    hang_s: float = 0.0

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> "SaveFailure":
        code = params.get("errno", "ENOSPC")
        if isinstance(code, str):
            if code.upper() not in _ERRNOS:
                raise ProtocolError("bad_args", f"errno {code!r} is not one the harness fakes.",
                                    f"Use one of {', '.join(_ERRNOS)}.")
            code = _ERRNOS[code.upper()]
        after, count = params.get("after_bytes", 0), params.get("count", 1)
        hang = params.get("hang_s", 0)
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                   for v in (code, after, count)) or isinstance(hang, bool) \
                or not isinstance(hang, (int, float)) or hang < 0:
            raise ProtocolError("bad_args", "errno, after_bytes and count must be integers ≥ 0 "
                                "(hang_s a number ≥ 0).",
                                "Example: {\"errno\": \"EIO\", \"after_bytes\": 10}.")
        return cls(int(code), int(after), int(count), float(hang))

    def to_dict(self) -> dict[str, Any]:
        return {"errno": self.errno, "after_bytes": self.after_bytes, "count": self.count,
                "hang_s": self.hang_s}


def write_switch(path: Path, spec: SaveFailure) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(spec.to_dict()))
    os.replace(tmp, path)  # the port never reads half a switch


# -------------------------------------------------------------- the documents process's side

class SwitchableFilePort(FailingSaves):
    """The real disk, except for saves while a failure is armed (see :func:`apply_fault`):
    the forwarding and the part-way failure are rio/files/write_faults.py's, shared with the
    tests' FaultyFilePort; only where the fault comes from is this module's."""

    def __init__(self, switch: Path, inner: FilePort | None = None) -> None:
        super().__init__(inner or OsFilePort())
        self.switch = switch
        self._lock = threading.Lock()

    @classmethod
    def install(cls, host: ActorHost) -> "SwitchableFilePort":
        return cls(save_fail_path(host.args.instance or "default"))

    def fault(self) -> WriteFault | None:
        """Consume one armed failure, if any (one stat per save when none is armed); the
        disk "fills" at the end of a save that fits in its budget too."""
        spec = take_armed(self.switch, self._lock)
        if spec is None:
            return None
        return WriteFault(spec.errno, spec.after_bytes, spec.hang_s, at_end=True)


def take_armed(switch: Path, lock: threading.Lock) -> SaveFailure | None:
    """Consume one armed failure from ``switch``, if any (one failed stat when none is)."""
    with lock:
        try:
            data = json.loads(switch.read_text())
            spec = SaveFailure(int(data["errno"]), int(data["after_bytes"]),
                               int(data.get("count", 1)), float(data.get("hang_s", 0)))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if spec.count <= 1:
            switch.unlink(missing_ok=True)
        else:
            write_switch(switch, SaveFailure(spec.errno, spec.after_bytes, spec.count - 1,
                                             spec.hang_s))
        return spec


class SwitchableJournalStore(OsJournalStore):
    """The real journal folder, except for the writes a ``journal_fail`` fault armed: those
    land ``after_bytes`` bytes and then fail, like a disk that fills up mid-record."""

    def __init__(self, directory: Path, switch: Path) -> None:
        super().__init__(directory)
        self.switch = switch
        self.failed = 0
        self._lock = threading.Lock()

    @classmethod
    def install(cls, host: ActorHost, directory: Path) -> "SwitchableJournalStore":
        return cls(directory, journal_fail_path(host.args.instance or "default"))

    def _fail(self, spec: SaveFailure) -> OSError:
        self.failed += 1
        return OSError(spec.errno, os.strerror(spec.errno))

    def append_bytes(self, name: str, data: bytes) -> None:
        spec = take_armed(self.switch, self._lock)
        if spec is None:
            return super().append_bytes(name, data)
        if spec.after_bytes:
            super().append_bytes(name, data[:spec.after_bytes])
        raise self._fail(spec)

    def replace_atomically(self, name: str, data: bytes) -> None:
        spec = take_armed(self.switch, self._lock)
        if spec is not None:   # the temp copy fails; the journal in place stays as it was
            raise self._fail(spec)
        super().replace_atomically(name, data)


# ------------------------------------------------------------------------ the fake agent

@dataclass(frozen=True)
class FakeKey:
    host: str = "polite"
    helpers: str = "polite"
    n: int = 0

    @classmethod
    def parse(cls, process_name: str) -> "FakeKey":
        """``fake:stubborn-forking-2-run7`` → FakeKey("stubborn", "forking", 2)."""
        key = process_name.split(":", 1)[1] if ":" in process_name else ""
        parts = key.split("-")
        host = parts[0] if parts and parts[0] in HOST_KINDS else "polite"
        helpers = parts[1] if len(parts) > 1 and parts[1] in HELPER_KINDS else "polite"
        n = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 0
        return cls(host, helpers, min(n, 16))


def helper_argv(kind: str) -> list[str]:
    return [sys.executable, "-m", "actors.faults.injection", "helper", kind]


class FakeAgentActor(pykka.ThreadingActor):
    """Streams ``fake.delta`` events and owns the helper processes of one fake agent."""

    def __init__(self, host: ActorHost, key: FakeKey) -> None:
        super().__init__()
        self.host = host
        self.key = key
        self.seq = 0
        self.helpers: list[process_control.Spawned] = []

    def on_start(self) -> None:
        for _ in range(self.key.n):
            self.helpers.append(process_control.spawn(
                helper_argv(self.key.helpers), stdin=process_control.PIPE,
                stdout=process_control.DEVNULL, cwd=str(self.host.root)))
        self.host.bus.publish("fake.helpers", {"process": self.host.name,
                                               "pids": [h.pid for h in self.helpers]})

    def on_stop(self) -> None:
        if self.key.host == "wedged":
            threading.Event().wait()    # stuck for good: the host must still exit

    def on_receive(self, message: Any) -> Any:
        match message:
            case Ping():
                answer_ping(message, self.host.name)
            case Tick():
                self.seq += 1
                self.host.bus.publish("fake.delta", {"process": self.host.name, "seq": self.seq,
                                                     "text": f"token {self.seq} "})
        return None


class Tick(NamedTuple):
    """From the ticker: stream the next ``fake.delta``."""


def _ticker(ref: pykka.ActorRef[FakeAgentActor], stop: threading.Event) -> None:
    while not stop.wait(DELTA_INTERVAL_S):
        try:
            ref.tell(Tick())
        except pykka.ActorDeadError:
            return


@actor_factory("fake_agent")
def start_fake_agent(host: ActorHost) -> dict[str, Callable[..., None]]:
    key = FakeKey.parse(host.name)
    if key.host == "crash":
        os._exit(3)  # a process that dies at once: the restart budget's test subject
    if key.host == "stubborn":
        # Ignore SIGTERM, and swap the event the stdin watchdog and the TERM handler set, so
        # neither step of the stop sequence ends us: only SIGKILL does. The lifeline watchdog
        # (_parent_gone) reads host.stopping afresh and still ends us when the supervisor dies.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        host.stopping = threading.Event()
    ref = FakeAgentActor.start(host, key)
    host.refs.append(ref)
    host.ping_targets.append(ref)
    stop = threading.Event()
    threading.Thread(target=_ticker, args=(ref, stop), daemon=True, name="fake-delta").start()
    return {}  # no ops: several fake processes run at once and a prefix has one owner


# ------------------------------------------------------------------ helpers (a program)

def _sleep_forever() -> None:
    while True:
        time.sleep(3600)


def helper_main(kind: str) -> int:
    """One helper process; prints ``ready <pid> [escaped pid]`` when set up."""
    if kind == "polite":
        print("ready", os.getpid(), flush=True)
        sys.stdin.buffer.read()
        return 0
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if kind == "forking":
        read_fd, write_fd = os.pipe()
        first = os.fork()
        if first == 0:
            os.close(read_fd)
            os.setsid()
            if os.fork() == 0:
                os.close(write_fd)
                _sleep_forever()
            os.write(write_fd, b"ok\n")
            os._exit(0)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            pipe.readline()
        os.waitpid(first, 0)
    print("ready", os.getpid(), flush=True)
    try:
        sys.stdin.buffer.read()
    except OSError:
        pass
    _sleep_forever()
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "helper" and sys.argv[2] in HELPER_KINDS:
        sys.exit(helper_main(sys.argv[2]))
    print("usage: python -m actors.faults.injection helper polite|stubborn|forking", file=sys.stderr)
    sys.exit(2)
