"""A well-behaved agent: it reads stdin until end of input, then exits 0.

``--helpers N`` starts N helper children (default signal handling) that outlive it unless
someone stops the process group -- the case of an agent that quits and leaves a shell behind.

Prints ``ready <own pid> <helper pids…>`` on one line once everything is started, so a test
synchronises on that line instead of sleeping.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _helper() -> None:
    """A helper that sleeps until something signals it."""
    while True:
        time.sleep(3600)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--helpers", type=int, default=0)
    args = parser.parse_args()
    helpers = []
    for _ in range(args.helpers):
        pid = os.fork()
        if pid == 0:
            _helper()
        helpers.append(pid)
    print("ready", os.getpid(), *helpers, flush=True)
    sys.stdin.buffer.read()  # until end of input
    return 0


if __name__ == "__main__":
    sys.exit(main())
