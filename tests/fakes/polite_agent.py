"""A well-behaved agent: it reads stdin until end of input, then exits 0.

``--helpers N`` starts N helper children (default signal handling) that outlive it unless
someone stops the process group -- the case of an agent that quits and leaves a shell behind.

Prints ``ready <own pid> <helper pids…>`` on one line once everything is started, so a test
synchronises on that line instead of sleeping.
"""

from __future__ import annotations

import sys

from agent_children import start_ready  # a sibling: this runs as a script


def main() -> int:
    start_ready()            # helpers with the default signal handling
    sys.stdin.buffer.read()  # until end of input
    return 0


if __name__ == "__main__":
    sys.exit(main())
