"""Shared bits of the benchmark suite: timing statistics, the results table, JSON output."""

from __future__ import annotations

import json
import platform
import statistics
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from tests.support import RioServer

RESULTS = Path(__file__).with_name("results.json")


@dataclass
class Row:
    group: str
    name: str
    value: float              # the headline number (unit below)
    unit: str
    floor: float | None = None  # the floor measured in the same run, same unit
    goal: str = ""
    ok: bool | None = None
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        return None if not self.floor else self.value / self.floor


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    return {"p50": statistics.median(ordered), "p90": pick(0.90), "p99": pick(0.99),
            "max": ordered[-1], "n": len(ordered)}


def timed(fn: Callable[[], object], n: int, warmup: int = 50) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def print_table(rows: list[Row]) -> None:
    header = f"{'group':<10} {'benchmark':<44} {'value':>12} {'floor':>12} {'ratio':>7}  goal"
    print(header)
    print("-" * len(header))
    for r in rows:
        floor = f"{r.floor:.4g} {r.unit}" if r.floor is not None else "-"
        ratio = f"{r.ratio:.2f}x" if r.ratio is not None else "-"
        mark = "" if r.ok is None else (" ✔" if r.ok else " ✘")
        print(f"{r.group:<10} {r.name:<44} {r.value:>9.4g} {r.unit:<2} {floor:>12} {ratio:>7}  "
              f"{r.goal}{mark}")


def write_json(rows: list[Row], loads: list[str] | None = None) -> None:
    RESULTS.write_text(json.dumps({"machine": platform.platform(), "time": time.time(),
                                   "load_averages": loads or [],
                                   "rows": [asdict(r) | {"ratio": r.ratio} for r in rows]},
                                  indent=1))


BARE_IMPORTS = "import zmq, msgpack, pykka"


def bare_import_floor(n: int) -> list[float]:
    """Seconds to run ``python -c "import zmq, msgpack, pykka"``: no Rio process can start (or
    come back after a crash) faster than the interpreter and the libraries every one imports."""
    import subprocess
    import sys
    out = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", BARE_IMPORTS], check=True)
        out.append(time.perf_counter() - t)
    return out


def session_start(server: RioServer, name: str = "bench-session-start") -> float:
    """Seconds from ``system.spawn`` of an agent session to ``session.status`` answered by it
    (NaN after 30 s); the session is ended after, so repeated samples do not pile up."""
    key = f"b{uuid.uuid4().hex[:10]}"
    conn = server.connect(name)
    try:
        t = time.perf_counter()
        conn.call("system.spawn", {"kind": "agent", "key": key}, timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                conn.call("session.status", {"conversation": key}, timeout=1)
                return time.perf_counter() - t
            except Exception:  # noqa: BLE001 -- not registered yet
                time.sleep(0.002)
        return float("nan")
    finally:
        try:
            conn.call("system.restart", {"process": f"agent:{key}", "again": False}, timeout=10)
        except Exception:  # noqa: BLE001 -- gone already
            pass
        conn.close()
