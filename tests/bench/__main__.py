"""Run every benchmark, print one table with ratios against floors measured in the same run,
then issue 13's table (tests/bench/issue13.py), and write tests/bench/results.json.

`python -m tests.bench [--quick] [--runs N] [--lean] [GROUP...]`: with ``--runs 3`` every group
runs three times and the issue table shows min / median / max with the load average noted
before each run (2 shared cores: a single run says little). ``--lean`` leaves out what the
issue table does not read (the 200-fault run, throughput, the stop benchmarks). Rio's packages
are byte-compiled first (:func:`compile_rio`)."""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import traceback

from tests.bench.common import Row, print_table, write_json
from tests.bench.issue13 import table

GROUPS = ["start", "core", "supervisor", "ui", "agent", "sessions", "scale"]


def load_average() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def compile_rio() -> None:
    """Byte-compile Rio's packages first, as an installed Rio is (pip compiles at install, and
    Python caches what it imports). Where PYTHONDONTWRITEBYTECODE is set (this environment),
    a module changed since its last cached copy was compiled again on *every* start — tens of
    milliseconds on a cold start that IDLE, whose standard library is compiled, never pays."""
    import compileall
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    for package in ("rio", "actors", "ui"):
        compileall.compile_dir(str(repo / package), quiet=1)


def run_groups(groups: list[str], quick: bool, lean: bool) -> list[Row]:
    rows: list[Row] = []
    for group in groups:
        try:
            module = importlib.import_module(f"tests.bench.bench_{group}")
        except ImportError as exc:
            print(f"[{group}] not available: {exc}")
            continue
        kwargs = {"lean": lean} if "lean" in inspect.signature(module.run).parameters else {}
        try:
            rows += module.run(quick=quick, **kwargs)
        except Exception:  # noqa: BLE001 -- one broken group must not hide the others
            traceback.print_exc()
            rows.append(Row(group, "FAILED (see traceback above)", float("nan"), ""))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    parser.add_argument("groups", nargs="*", default=GROUPS)
    parser.add_argument("--quick", action="store_true", help="fewer samples, smaller files")
    parser.add_argument("--runs", type=int, default=1, help="repeat everything N times")
    parser.add_argument("--lean", action="store_true",
                        help="only what issue 13's table reads")
    args = parser.parse_args()
    compile_rio()
    runs: list[list[Row]] = []
    loads: list[str] = []
    for i in range(args.runs):
        loads.append(load_average())
        print(f"== run {i + 1}/{args.runs}, load average {loads[-1]}", flush=True)
        rows = run_groups(args.groups, args.quick, args.lean)
        print_table(rows)
        runs.append(rows)
        # After every run, so that a long series interrupted still leaves its table.
        print()
        print("\n".join(table(runs, loads)), flush=True)
        write_json([r for rows in runs for r in rows], loads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
