"""The pure half of ``rio faults``: what one injected fault found, the invariants, the table.

The harness (actors/faults/harness.py) injects faults and gathers facts — the tokens the core
acknowledged, the text the core holds, the bytes on disk, the processes carrying the instance's
spawn cookies. This module turns those facts into verdicts, so the rules are tested without
processes:

* **edits lost** — an acknowledged token missing from the core's text; a token present twice is
  a *duplicated* edit (a resent or duplicated frame applied twice). Both must be 0.
* **orphans** — a live process whose spawn-cookie chain says it belongs to a Rio process that is
  gone (a dead supervisor, or a supervisor child that is no longer running).
* **corrupt** — a file whose bytes are neither the content before a save nor the content saved.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class FaultResult:
    """One injected fault and what the checks after it found."""

    scenario: str
    fault: str                  # e.g. "kill -9", "SIGSTOP", "bus drop", "save EIO"
    target: str                 # process name, or "client" / "disk"
    recovered: bool
    recover_s: float | None     # fault → target back and answering
    lost: int = 0
    duplicated: int = 0
    orphans: int = 0
    corrupt: int = 0
    note: str = ""

    @property
    def broken(self) -> bool:
        return bool(self.lost or self.duplicated or self.orphans or self.corrupt
                    or not self.recovered)


@dataclass(frozen=True)
class ScenarioSummary:
    scenario: str
    runs: int
    faults: int
    recovered: int
    median_s: float | None
    worst_s: float | None
    lost: int
    duplicated: int
    orphans: int
    corrupt: int
    skipped: str = ""           # why the scenario did not run (e.g. fault injection off)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.orphans or self.corrupt
                    or self.recovered < self.faults)


def summarize(scenario: str, runs: int, results: Sequence[FaultResult],
              skipped: str = "") -> ScenarioSummary:
    times = [r.recover_s for r in results if r.recovered and r.recover_s is not None]
    return ScenarioSummary(
        scenario=scenario, runs=runs, faults=len(results),
        recovered=sum(r.recovered for r in results),
        median_s=statistics.median(times) if times else None,
        worst_s=max(times) if times else None,
        lost=sum(r.lost for r in results), duplicated=sum(r.duplicated for r in results),
        orphans=sum(r.orphans for r in results), corrupt=sum(r.corrupt for r in results),
        skipped=skipped)


@dataclass(frozen=True)
class Report:
    instance: str
    seed: int
    summaries: tuple[ScenarioSummary, ...]
    results: tuple[FaultResult, ...]
    shutdown_orphans: int = 0
    elapsed_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    #: Why the run ended early ("kind: message — next"), or "" when it ran to the end.
    aborted: str = ""

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.summaries) and not self.shutdown_orphans \
            and not self.aborted

    def totals(self) -> dict[str, Any]:
        return {"faults": sum(s.faults for s in self.summaries),
                "recovered": sum(s.recovered for s in self.summaries),
                "lost": sum(s.lost for s in self.summaries),
                "duplicated": sum(s.duplicated for s in self.summaries),
                "orphans": sum(s.orphans for s in self.summaries) + self.shutdown_orphans,
                "corrupt": sum(s.corrupt for s in self.summaries)}

    def to_json(self) -> str:
        return json.dumps({"instance": self.instance, "seed": self.seed, "ok": self.ok,
                           "elapsed_s": round(self.elapsed_s, 3), "totals": self.totals(),
                           "shutdown_orphans": self.shutdown_orphans,
                           "aborted": self.aborted,
                           "scenarios": [asdict(s) | {"ok": s.ok} for s in self.summaries],
                           "faults": [asdict(r) for r in self.results], **self.extra},
                          indent=1)


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render_table(report: Report) -> str:
    head = (f"{'scenario':<14} {'runs':>4} {'faults':>6} {'recovered':>9} {'median s':>9} "
            f"{'worst s':>8} {'lost':>5} {'orphans':>7} {'corrupt':>7}")
    lines = [head, "-" * len(head)]
    for s in report.summaries:
        if s.skipped:
            lines.append(f"{s.scenario:<14} skipped: {s.skipped}")
            continue
        lost = f"{s.lost}" + (f"+{s.duplicated}d" if s.duplicated else "")
        lines.append(f"{s.scenario:<14} {s.runs:>4} {s.faults:>6} {s.recovered:>9} "
                     f"{_secs(s.median_s):>9} {_secs(s.worst_s):>8} {lost:>5} {s.orphans:>7} "
                     f"{s.corrupt:>7}")
    t = report.totals()
    lines.append("-" * len(head))
    lines.append(f"{'total':<14} {'':>4} {t['faults']:>6} {t['recovered']:>9} {'':>9} {'':>8} "
                 f"{t['lost'] + t['duplicated']:>5} {t['orphans']:>7} {t['corrupt']:>7}")
    if report.shutdown_orphans:
        lines.append(f"{report.shutdown_orphans} process(es) outlived the harness's own "
                     "instance when it stopped.")
    if report.aborted:
        lines.append(f"ABORTED: {report.aborted}")
    if report.ok:
        lines.append("all invariants held")
    elif report.aborted and all(s.ok for s in report.summaries) \
            and not report.shutdown_orphans:
        lines.append("the run was aborted: the rows above are what ran, and held")
    else:
        lines.append("INVARIANT BROKEN: see the rows above (lost edits, orphans, corrupt files "
                     "or faults not recovered)")
    return "\n".join(lines)


# ------------------------------------------------------------------------- the checks

def count_edits(text: str, acked: Iterable[str]) -> tuple[int, int]:
    """(lost, duplicated): acknowledged tokens absent from ``text`` / present more than once."""
    lost = duplicated = 0
    for token in acked:
        n = text.count(token)
        if n == 0:
            lost += 1
        elif n > 1:
            duplicated += 1
    return lost, duplicated


def disk_verdict(actual: bytes | None, allowed: Iterable[bytes | None]) -> bool:
    """True when the file on disk is exactly one of the contents it may have (None: absent)."""
    return any(actual == a for a in allowed)


@dataclass(frozen=True)
class ProcInfo:
    """A live process and its spawn-cookie chain: lineage then its own cookie."""

    pid: int
    chain: tuple[str, ...]
    name: str = ""


def orphans(procs: Iterable[ProcInfo], *, supervisor_pid: int | None,
            supervisor_chain: Sequence[str], live_children: set[str],
            dead_cookies: set[str], known_children: set[str] | None = None) -> list[ProcInfo]:
    """The processes that belong to a Rio process that is gone.

    ``supervisor_chain`` is the running supervisor's own chain (empty when it was started
    without a cookie); its children's chains begin with it, and the next cookie names the
    supervisor child that owns the process. ``live_children`` are the cookies of the children
    running now; ``dead_cookies`` those of supervisors (or children) known to be gone.

    A supervisor started without a cookie has an empty chain, which every cookie-carrying
    process on the machine matches: then pass ``known_children`` (every child cookie seen in
    this instance) and only processes owned by one of those are judged.
    """
    found = []
    n = len(supervisor_chain)
    for proc in procs:
        if proc.pid == supervisor_pid:
            continue
        if dead_cookies.intersection(proc.chain):
            found.append(proc)
            continue
        if supervisor_pid is None or tuple(proc.chain[:n]) != tuple(supervisor_chain):
            continue  # not this instance's (another Rio, or the user's own programs)
        owner = proc.chain[n] if len(proc.chain) > n else None
        if owner is None or owner in live_children:
            continue
        if known_children is None or owner in known_children:
            found.append(proc)
    return found
