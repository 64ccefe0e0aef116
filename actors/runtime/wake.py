"""The monitor loop's wake-up: a pipe it polls beside its bus sockets.

The supervisor's loop sleeps in a poll on its bus connection for at most a tick; a
``system.spawn`` waiting to start or a starting process that registered on the bus should
not wait for that tick, and they happen on the hub's thread, which must never block. A
pipe is the one thing both a ZeroMQ poll and any thread can share without a lock: one
byte written (never blocking; a full pipe already holds a wake-up) ends the poll at once.
"""

from __future__ import annotations

import os


class Wake:
    """A wake-up the monitor loop polls beside its bus sockets: :meth:`set` from any thread
    (a pipe: one byte, never blocking) ends its wait at once."""

    def __init__(self) -> None:
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)

    def fileno(self) -> int:
        return self._r

    def set(self) -> None:
        if self._w < 0:
            return        # closed: its number may belong to another file by now
        try:
            os.write(self._w, b"\0")
        except OSError:   # full (a wake-up is pending already), or closed at shutdown
            pass

    def clear(self) -> None:
        try:
            while os.read(self._r, 4096):
                pass
        except OSError:   # empty
            pass

    def close(self) -> None:
        fds, self._r, self._w = (self._r, self._w), -1, -1
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
