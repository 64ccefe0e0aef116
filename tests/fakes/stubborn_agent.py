"""An agent that will not go quietly: it ignores end of input and SIGTERM and sleeps forever.

Real agents do the first half of this (claude-agent-acp and codex-acp stay alive after stdin
closes: ADR-0007, ADR-0023); this fake also ignores SIGTERM so only SIGKILL ends it.
``--helpers N`` starts N children that ignore SIGTERM too (they inherit SIG_IGN across fork).

Prints ``ready <own pid> <helper pids…>`` on one line once everything is started.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time


def sleep_forever() -> None:
    while True:
        time.sleep(3600)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--helpers", type=int, default=0)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    helpers = []
    for _ in range(args.helpers):
        pid = os.fork()
        if pid == 0:
            sleep_forever()
        helpers.append(pid)
    print("ready", os.getpid(), *helpers, flush=True)
    sys.stdin.buffer.read()  # end of input changes nothing
    sleep_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
