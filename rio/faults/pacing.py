"""Pacing ``rio faults`` so its kills stay inside each process's restart budget.

The supervisor restarts a process at most ``max_restarts`` times in ``window_s`` seconds
(supervisor.toml, ADR-0008); one more exit and it gives up: the process is marked failed and
stays down. A harness that kills the core five times and hangs it once in a minute uses up a
default budget (5 in 60 s) by itself — against a user's running instance that is an outage the
harness caused, not a finding. So every kill or hang is counted against the target's budget,
and the next one waits until it fits, always leaving ``margin`` restarts for real failures.

The times are recorded when a target is seen back (after the supervisor has counted its
restart), so the harness's window always ends after the supervisor's: it never waits too
little. Pure logic: the caller passes the clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Waits end this much after the oldest counted fault leaves the window (clock rounding).
SAFETY_S = 0.05


@dataclass(frozen=True)
class Budget:
    """A process's restart rule as ``system.status`` reports it."""

    max_restarts: int
    window_s: float
    policy: str = "always"
    used: int = 0

    @classmethod
    def from_status(cls, data: Mapping[str, Any] | None) -> Budget | None:
        if not data:
            return None
        return cls(int(data["max_restarts"]), float(data["window_s"]),
                   str(data.get("policy", "always")), int(data.get("used", 0)))

    def allowed(self, margin: int) -> int:
        """Faults that may land in one window (at least one, or nothing could ever run)."""
        return max(1, self.max_restarts - margin)


@dataclass
class Pacer:
    margin: int = 1
    faults: dict[str, list[float]] = field(default_factory=dict)

    def wait_before(self, name: str, budget: Budget | None, now: float) -> float:
        """Seconds to wait before the next fault on ``name`` keeps it inside ``budget``."""
        if budget is None:
            return 0.0
        allowed = budget.allowed(self.margin)
        recent = [t for t in self.faults.get(name, ()) if t > now - budget.window_s]
        already = max(len(recent), budget.used)   # restarts the harness did not cause count
        if already < allowed:
            return 0.0
        if len(recent) < allowed:                 # others' restarts, times unknown: a window
            return budget.window_s
        return max(0.0, recent[-allowed] + budget.window_s - now + SAFETY_S)

    def record(self, name: str, now: float) -> None:
        self.faults.setdefault(name, []).append(now)


def plan_line(budgets: Mapping[str, Budget | None], faults_each: int, margin: int = 1) -> str:
    """Said before the first fault: how many faults each process gets, its budget, and the
    waiting that pacing will add at least."""
    parts = []
    longest = 0.0
    for name, budget in sorted(budgets.items()):
        if budget is None:
            parts.append(f"{name}: no budget reported")
            continue
        allowed = budget.allowed(margin)
        waits = max(0, math.ceil(faults_each / allowed) - 1)
        longest = max(longest, waits * budget.window_s)
        parts.append(f"{name}: {budget.max_restarts} restarts in {budget.window_s:g} s, "
                     f"{allowed} faults per window")
    head = (f"rio faults: {faults_each} kill/hang fault(s) per process; each process keeps "
            f"{margin} restart of its budget spare")
    tail = (f"; pacing adds at least {longest:.0f} s of waiting" if longest
            else "; no pacing needed")
    return head + tail + "\n  " + "\n  ".join(parts)


def refusal(budgets: Mapping[str, Budget | None]) -> str | None:
    """A reason not to inject at all: a process the supervisor would never restart."""
    never = sorted(n for n, b in budgets.items() if b is not None and b.policy == "never")
    if never:
        return (f"{', '.join(never)} {'has' if len(never) == 1 else 'have'} restart = "
                "\"never\": a kill would leave it down")
    return None
