"""An agent whose helper escapes its process group: fork, setsid, fork again, parent exits.

The helper ends up in a new session, reparented to init (or to the nearest subreaper), so
neither ``killpg`` nor ``children(recursive=True)`` finds it (psutil 7, measured). Only the
environment cookie sweep does. The agent itself then behaves like ``stubborn_agent``.

Prints ``ready <own pid> <escaped helper pid>`` on one line once the helper is running.
"""

from __future__ import annotations

import os
import signal
import sys
import time


def sleep_forever() -> None:
    while True:   # ends: the test ends this process (it checks that Rio does)
        time.sleep(3600)


def _escape(report_fd: int) -> None:
    """In the first child: new session, fork the helper, report its pid, exit. The helper
    inherits the new session and SIGTERM ignored."""
    os.setsid()
    pid = os.fork()
    if pid == 0:
        os.close(report_fd)
        sleep_forever()
    os.write(report_fd, f"{pid}\n".encode())
    os._exit(0)


def main() -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    read_fd, write_fd = os.pipe()
    first = os.fork()
    if first == 0:
        os.close(read_fd)
        _escape(write_fd)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        helper = int(pipe.readline())
    os.waitpid(first, 0)  # the intermediate child exits at once; don't leave it a zombie
    print("ready", os.getpid(), helper, flush=True)
    sys.stdin.buffer.read()
    sleep_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
