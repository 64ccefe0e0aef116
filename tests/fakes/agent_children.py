"""What the fake agents that test process control share (tests/fakes/polite_agent.py,
stubborn_agent.py): ``--helpers N`` children forked before the agent says it is ready, and the
``ready <own pid> <helper pids…>`` line a test synchronises on instead of sleeping.

The fakes run as scripts (``python tests/fakes/polite_agent.py``), so they import this module
as a sibling (``from agent_children import …``: the script's folder is first on sys.path).
"""

from __future__ import annotations

import argparse
import os
import time


def sleep_forever() -> None:
    """Sleep until something signals this process."""
    while True:   # ends: signalled by the test or by Rio's stop
        time.sleep(3600)


def start_ready(argv: list[str] | None = None) -> list[int]:
    """Fork the ``--helpers N`` children (each sleeps forever, with the signal handling the
    caller set up before: they inherit it), print the ready line, and return their pids."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--helpers", type=int, default=0)
    args = parser.parse_args(argv)
    helpers = []
    for _ in range(args.helpers):
        pid = os.fork()
        if pid == 0:
            sleep_forever()
        helpers.append(pid)
    print("ready", os.getpid(), *helpers, flush=True)
    return helpers
