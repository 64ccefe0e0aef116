"""The journal scenarios of ``rio faults``: a full journal disk, a damaged journal, a kill of the
core while it recovers (ADR-0006; the harness is actors/faults/harness.py).

* ``journal_full`` — the next journal write fails part-way with ENOSPC (``system.fault
  {fault: "journal_fail"}``); the edit must be refused with ``file.journal_write_failed`` and
  not applied, the edits after it acknowledged, and a ``kill -9`` of the core afterwards must
  bring every acknowledged edit back.
* ``journal_damage`` — a torn record (a frame that promises more bytes than follow) is written
  into the buffer's journal, as a crash in the middle of an append leaves it; typing goes on,
  then the core is killed. Recovery must replay every acknowledged edit (the versions after the
  torn bytes follow on, so replaying past them is safe) and report the damage, with the damaged
  journal kept (``file.journal_damaged`` in ``buffer.recover``'s failures).
* ``recovery_kill`` — an unsaved 4 MB buffer is added, the core is killed, and its successor is
  killed again as soon as it has a pid (while it starts and recovers). The third core must bring
  back both buffers exactly.
* ``scale`` — :data:`SCALE_BUFFERS` unsaved buffers opened one at a time (a thread each once
  made ~3,300 of them a core that could not start again, issue 22), then ``kill -9`` of the
  core: the restarted core answers its pings, and every one of them is back with its text
  (ADR-0040). They are closed afterwards.
"""

from __future__ import annotations

import hashlib
import os
import signal
import struct
import time
from pathlib import Path
from typing import Any, Protocol

from actors.faults.workload import RECOVER_TIMEOUT_S, Client, Typist
from rio.faults.report import FaultResult
from rio.protocol.errors import FileError, RioError

BIG_BUFFER_CHARS = 4 * 1024 * 1024
#: How many buffers the ``scale`` scenario opens (past the ~3,300 that once broke the core).
SCALE_BUFFERS = 4_000


class JournalBench(Protocol):
    """What these scenarios use of the harness."""

    @property
    def client(self) -> Client: ...      # read only: the harness's is a property
    typist: Typist | None
    instance: Any
    rng: Any
    pacer: Any
    results: list[FaultResult]

    def status(self) -> dict[str, dict[str, Any]]: ...
    def _buffer_process(self) -> str: ...
    def _workload(self, edits: int) -> None: ...
    def _pace(self, target: Any) -> None: ...
    def _targets(self) -> list[Any]: ...
    def _wait_back(self, name: str, old_pid: int, started: float
                   ) -> tuple[bool, float | None]: ...
    def _check(self, scenario: str, fault: str, target: str, recovered: bool,
               recover_s: float | None, note: str = "") -> FaultResult: ...


def journal_folder(instance: Any) -> Path | None:
    """The instance's journal folder, if this process can know it (the harness's own instance:
    same state folder; rio/config/instance.py journal_dir)."""
    env = getattr(instance, "env", None)
    if not env or not env.get("RIO_STATE_DIR"):
        return None
    digest = hashlib.sha256(str(Path(instance.root).resolve()).encode()).hexdigest()[:16]
    return Path(env["RIO_STATE_DIR"]) / "projects" / digest / "journal"


def _core(h: JournalBench) -> Any:
    name = h._buffer_process()
    return next(t for t in h._targets() if t.name == name)


def _kill_core(h: JournalBench, kills: int = 1) -> tuple[str, int, float]:
    """SIGKILL the core once the restart budget has room for ``kills`` faults (and a spare)."""
    target = _core(h)
    h.pacer.margin += kills - 1
    try:
        h._pace(target)
    finally:
        h.pacer.margin -= kills - 1
    started = time.monotonic()
    os.kill(target.pid, signal.SIGKILL)
    h.pacer.record(target.name, time.monotonic())
    return target.name, target.pid, started


def _recovery_failures(h: JournalBench) -> list[dict[str, Any]]:
    return list(h.client.call("buffer.recover", timeout=10).get("failures") or [])


def scenario_journal_full(h: JournalBench) -> None:
    assert h.typist is not None
    typist = h.typist
    h._workload(h.rng.randint(1, 3))
    typist.fetch()
    before = typist.text
    h.client.call("system.fault", {"fault": "journal_fail",
                                   "params": {"errno": "ENOSPC",
                                              "after_bytes": h.rng.randint(1, 12)}})
    note = ""
    try:
        h.client.call("buffer.replace", {"buffer": typist.bid, "start": 0, "end": 0,
                                         "text": "<refused>\n", "origin": "faults"},
                      timeout=10)
        note = "the edit was applied although its journal write failed"
    except FileError as err:
        if err.kind != "file.journal_write_failed":
            raise
    finally:
        h.client.call("system.fault", {"fault": "clear"})
    if typist.fetch() != before:
        note = note or "the refused edit changed the text"
    h._workload(h.rng.randint(2, 4))            # space is back: these are acknowledged
    name, pid, started = _kill_core(h)
    ok, took = h._wait_back(name, pid, started)
    failures = _recovery_failures(h)
    if failures:
        note = note or f"recovery reported {failures[0].get('kind')}"
    h._check("journal_full", "ENOSPC + kill -9", name, ok and not note, took, note)


def scenario_journal_damage(h: JournalBench) -> None:
    assert h.typist is not None
    typist = h.typist
    folder = journal_folder(h.instance)
    h._workload(h.rng.randint(1, 3))
    journal = folder / typist.bid if folder else None
    if journal is None or not journal.exists():
        h._check("journal_damage", "torn record", "journal", False, None,
                 f"no journal for the typist's buffer in {folder}")
        return
    # A frame promising more bytes than follow: what a crash in the middle of a write leaves.
    torn = struct.pack(">II", 1000, 0) + b"\x94\x00\x00"[: h.rng.randint(1, 3)]
    with open(journal, "ab") as f:
        f.write(torn)
    h._workload(h.rng.randint(1, 3))            # typing goes on after the torn bytes
    name, pid, started = _kill_core(h)
    ok, took = h._wait_back(name, pid, started)
    damaged = [f for f in _recovery_failures(h) if f.get("kind") == "file.journal_damaged"]
    kept = Path(damaged[0].get("details", {}).get("kept", "")) if damaged else None
    note = ""
    if not damaged:
        note = "the damage was not reported"
    elif kept is None or not kept.exists() or torn not in kept.read_bytes():
        note = "the damaged journal was not kept"
    elif damaged[0]["details"].get("skipped"):
        note = "edits after the torn record were not replayed"
    if kept is not None and kept.exists():
        kept.unlink()                           # ours; the harness leaves no files behind
    h._check("journal_damage", "torn record + kill -9", name, ok and not note, took, note)


def scenario_recovery_kill(h: JournalBench) -> None:
    assert h.typist is not None
    h._workload(h.rng.randint(1, 3))
    body = "".join(f"big line {i:07d}\n" for i in range(BIG_BUFFER_CHARS // 18))
    big = h.client.call("buffer.new", {"text": body}, timeout=30)["buffer"]
    note = ""
    try:
        name, pid, started = _kill_core(h, kills=2)
        successor = _wait_new_pid(h, name, pid)
        if successor is None:
            note = "the core was not restarted"
        else:
            time.sleep(h.rng.uniform(0, 0.2))  # a random moment of its start and recovery
            try:
                os.kill(successor, signal.SIGKILL)
            except ProcessLookupError:
                pass
            h.pacer.record(name, time.monotonic())
            pid = successor
        ok, took = h._wait_back(name, pid, started)
        texts = {b["buffer"]: b for b in h.client.call("buffer.list", timeout=10)}
        if big not in texts:
            note = note or "the unsaved 4 MB buffer was not recovered"
        elif h.client.call("buffer.text", {"buffer": big}, timeout=30)["text"] != body:
            note = note or "the unsaved 4 MB buffer came back different"
        h._check("recovery_kill", "kill -9 x2", name, ok and not note, took, note)
    finally:
        try:
            h.client.call("buffer.close", {"buffer": big, "discard": True}, timeout=10)
        except RioError:
            pass


def _wait_new_pid(h: JournalBench, name: str, old_pid: int) -> int | None:
    deadline = time.monotonic() + RECOVER_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            pid = h.status().get(name, {}).get("pid")
        except RioError:
            pid = None
        if pid not in (None, old_pid):
            return int(pid)
        time.sleep(0.005)
    return None



def scenario_scale(h: JournalBench) -> None:
    assert h.typist is not None
    h._workload(h.rng.randint(1, 3))
    made: dict[str, str] = {}
    note = ""
    try:
        for i in range(SCALE_BUFFERS):
            text = f"scale {i} {h.rng.random()}\n"
            made[h.client.call("buffer.new", {"text": text}, timeout=30)["buffer"]] = text
        name, pid, started = _kill_core(h)
        ok, took = h._wait_back(name, pid, started)
        if not ok:
            note = "the core with the buffers did not come back"
        else:
            listed = {b["buffer"] for b in h.client.call("buffer.list", timeout=60)}
            missing = [b for b in made if b not in listed]
            if missing:
                note = f"{len(missing)} of {len(made)} unsaved buffers were not recovered"
            else:
                sample = h.rng.sample(sorted(made), 50)
                wrong = [b for b in sample if h.client.call(
                    "buffer.text", {"buffer": b}, timeout=30)["text"] != made[b]]
                if wrong:
                    note = f"{len(wrong)} of 50 recovered buffers came back different"
        h._check("scale", f"kill -9 with {SCALE_BUFFERS} buffers", name, ok and not note, took,
                 note)
    finally:
        for bid in made:
            try:
                h.client.call("buffer.close", {"buffer": bid, "discard": True}, timeout=10)
            except RioError:
                pass
