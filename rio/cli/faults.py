"""``rio faults``: run the fault-injection harness and print its table (docs/faults.md).

The command is a thin shell: parsing, output and the exit code. The harness is
:mod:`actors.faults.harness`; the verdicts and the table are :mod:`rio.faults.report`.
Exit 0 when every invariant held and every fault was recovered from, 1 when one broke,
2 when the instance could not be reached or started.
"""

from __future__ import annotations

import argparse
from typing import Any

SCENARIO_HELP = ("kill, hang, stubborn, forking, supervisor, bus, save, journal_full, "
                 "journal_damage, recovery_kill, stale_resend, acp_crash, acp_helpers, "
                 "acp_silent, acp_stderr (default: all)")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "faults", help="inject faults into an instance and check that nothing is lost",
        description="Run a scripted workload (typing, saves, fake agents) while injecting "
                    "faults, then check: edits lost, orphan processes, corrupt files (all "
                    "must be 0). By default against a scratch instance it starts and ends.")
    p.add_argument("--instance", help="use this running instance (same machine) instead of "
                                      "a scratch one; save faults need --fault-injection on it")
    p.add_argument("--scenario", action="append", metavar="NAME",
                   help=f"run only this scenario (repeatable): {SCENARIO_HELP}")
    p.add_argument("--runs", type=int, default=1, help="runs of each scenario (default 1)")
    p.add_argument("--seed", type=int, help="random seed (printed, to replay a run)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_faults)


def cmd_faults(args: argparse.Namespace) -> int:
    from actors.faults.harness import SCENARIOS, Harness, Options
    from rio.faults.report import render_table
    from rio.protocol.errors import RioError

    scenarios = tuple(args.scenario or SCENARIOS)
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown or args.runs < 1:
        from rio.cli.main import print_error
        if unknown:
            print_error("usage", f"unknown scenario {unknown[0]!r}",
                        f"use one of: {', '.join(SCENARIOS)}")
        else:
            print_error("usage", "--runs must be at least 1", "pass --runs 1 or more")
        return 3

    def progress(line: str) -> None:
        if not args.json:
            print(line, flush=True)

    options = Options(instance=args.instance, scenarios=scenarios, runs=args.runs,
                      seed=args.seed, progress=progress)
    try:
        harness = Harness(options)
        if not args.json:
            print(f"rio faults: seed {harness.seed}, "
                  f"{'instance ' + args.instance if args.instance else 'a scratch instance'}",
                  flush=True)
        report = harness.run()
    except RioError as err:
        from rio.cli.main import print_error
        print_error(err.kind, err.message, err.next)
        return 2
    if args.json:
        print(report.to_json())
    else:
        print()
        print(render_table(report))
    if report.aborted:
        # The table is printed all the same; nothing ran at all: the instance is the problem.
        return 1 if report.results else 2
    return 0 if report.ok else 1
