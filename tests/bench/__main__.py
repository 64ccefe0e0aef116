"""Run every benchmark, print one table with ratios against floors measured in the same run,
and write tests/bench/results.json. `python -m tests.bench [--quick] [GROUP...]`."""

from __future__ import annotations

import argparse
import importlib
import traceback

from tests.bench.common import Row, print_table, write_json

GROUPS = ["core", "supervisor", "ui", "agent"]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    parser.add_argument("groups", nargs="*", default=GROUPS)
    parser.add_argument("--quick", action="store_true", help="fewer samples, smaller files")
    args = parser.parse_args()
    rows: list[Row] = []
    for group in args.groups:
        try:
            module = importlib.import_module(f"tests.bench.bench_{group}")
        except ImportError as exc:
            print(f"[{group}] not available: {exc}")
            continue
        try:
            rows += module.run(quick=args.quick)
        except Exception:  # noqa: BLE001 -- one broken group must not hide the others
            traceback.print_exc()
            rows.append(Row(group, "FAILED (see traceback above)", float("nan"), ""))
    print_table(rows)
    write_json(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
