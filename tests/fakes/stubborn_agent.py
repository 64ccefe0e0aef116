"""An agent that will not go quietly: it ignores end of input and SIGTERM and sleeps forever.

Real agents do the first half of this (claude-agent-acp and codex-acp stay alive after stdin
closes: ADR-0007, ADR-0023); this fake also ignores SIGTERM so only SIGKILL ends it.
``--helpers N`` starts N children that ignore SIGTERM too (they inherit SIG_IGN across fork).

Prints ``ready <own pid> <helper pids…>`` on one line once everything is started.
"""

from __future__ import annotations

import signal
import sys

from agent_children import sleep_forever, start_ready  # a sibling: this runs as a script


def main() -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    start_ready()            # the helpers inherit SIG_IGN for SIGTERM
    sys.stdin.buffer.read()  # end of input changes nothing
    sleep_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
