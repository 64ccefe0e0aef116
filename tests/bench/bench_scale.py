"""Issue 22's numbers for open buffers at scale (ADR-0040): ``buffer.new`` one at a time up to
10,000 buffers with the core pinged every 50 ms meanwhile, then ``kill -9`` of the core and
``rio stop`` + ``rio serve`` on the journals.

Floors measured in the same run: the first 200 ``buffer.new`` (an almost empty core) for the
cost of the last 500, the pings before the first buffer for the pings meanwhile, and the same
kill → listed with one buffer for the restart with all of them. Before (a thread per buffer,
the ping answered by the documents registry) ~3,300 buffers made a core that was killed as hung
after every restart.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import psutil

from rio.protocol.errors import RioError
from tests.bench.common import Row, percentiles
from tests.core_pinger import Pinger, core_process
from tests.support import RioServer, rio_env


def _listed(srv: RioServer, count: int, started: float, timeout: float = 120) -> float:
    """Seconds from ``started`` until buffer.list answers with ``count`` buffers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if len(srv.call("buffer.list", timeout=10)) == count:
                return time.monotonic() - started
        except RioError:
            pass
        time.sleep(0.02)
    return float("nan")


def _kill_to_listed(srv: RioServer, count: int) -> float:
    old = core_process(srv)["pid"]
    started = time.monotonic()
    psutil.Process(old).kill()
    deadline = started + 120
    while time.monotonic() < deadline:
        try:
            p = core_process(srv)
            if p["pid"] not in (None, old) and p.get("ready"):
                break
        except RioError:
            pass
        time.sleep(0.01)
    return _listed(srv, count, started)


def run(quick: bool = False) -> list[Row]:
    count = 2_000 if quick else 10_000
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="riobsc") as tmpd:
        tmp = Path(tmpd)
        root = tmp / "proj"
        root.mkdir()
        env = rio_env(tmp)
        srv = RioServer(root, tmp, env=env).start()
        try:
            with Pinger(srv, "bench-pinger") as idle:
                time.sleep(3)
            conn = srv.connect("bench-scale")
            srv.call("buffer.new", {"text": "one\n"})
            one = _kill_to_listed(srv, 1)
            costs: list[float] = []
            with Pinger(srv, "bench-pinger") as busy:
                for i in range(count - 1):
                    t = time.perf_counter()
                    conn.call("buffer.new", {"text": f"buffer {i}\n"}, timeout=30)
                    costs.append(time.perf_counter() - t)
            conn.close()
            first, last = percentiles(costs[:200]), percentiles(costs[-500:])
            rows.append(Row("scale", f"buffer.new at {count} buffers p50", last["p50"] * 1e3,
                            "ms", first["p50"] * 1e3, "≤ 2× the first 200",
                            last["p50"] <= 2 * first["p50"], {"p99_ms": last["p99"] * 1e3}))
            ping, floor = percentiles(busy.times), percentiles(idle.times)
            rows.append(Row("scale", f"ping p99 while opening {count}", ping["p99"] * 1e3, "ms",
                            floor["p99"] * 1e3, "none missed", busy.missed == 0,
                            {"missed": busy.missed, "max_ms": ping["max"] * 1e3}))
            proc = psutil.Process(core_process(srv)["pid"])
            rows.append(Row("scale", f"core threads with {count} buffers",
                            float(proc.num_threads()), "", None, "< 64",
                            proc.num_threads() < 64,
                            {"rss_mib": proc.memory_info().rss >> 20}))
            back = _kill_to_listed(srv, count)
            rows.append(Row("scale", f"kill -9 → {count} listed", back * 1e3, "ms", one * 1e3,
                            "≤ 10 s", back <= 10.0))
        finally:
            srv.stop()
        srv = RioServer(root, tmp, env=env)
        started = time.monotonic()
        try:
            srv.start(timeout=60)
            served = _listed(srv, count, started)
            rows.append(Row("scale", f"rio serve on {count} journals → listed", served * 1e3,
                            "ms", one * 1e3, "≤ 10 s", served <= 10.0))
        finally:
            srv.stop()
    return rows
