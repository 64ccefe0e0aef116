"""Drain the bus from Tk's event loop: the UI's one thread owns the connection.

ZeroMQ's FD is edge-triggered (libzmq's ZMQ_FD): readable means "something changed", not "a message is
waiting", so every wake-up drains fully, we drain once right after registering (messages that
arrived before would otherwise never raise an edge), and a slow ``after`` tick drains too — it
also fires request timeouts when nothing else wakes us.
"""

from __future__ import annotations

import logging
import tkinter as tk
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from actors.bus.client import BusConnection

log = logging.getLogger("rio.ui.bus")

TICK_MS = 50


class BusPump:
    def __init__(self, root: tk.Misc, conn: BusConnection, *, tick_ms: int = TICK_MS):
        self.root = root
        self.conn = conn
        self.tick_ms = tick_ms
        self.fds: tuple[int, ...] = ()
        self._job: str | None = None
        self.running = False
        self.drains = 0

    def start(self) -> "BusPump":
        self.fds = tuple(self.conn.fds())
        for fd in self.fds:
            self.root.tk.createfilehandler(fd, tk.READABLE, self._readable)
        self.running = True
        self.drain()
        self._job = self.root.after(self.tick_ms, self._tick)
        return self

    def stop(self) -> None:
        self.running = False
        for fd in self.fds:
            try:
                self.root.tk.deletefilehandler(fd)
            except tk.TclError:
                pass
        if self._job is not None:
            try:
                self.root.after_cancel(self._job)
            except tk.TclError:
                pass
            self._job = None

    def drain(self) -> None:
        if not self.running or self.conn.closed:
            return
        try:
            self.conn.drain()
        except Exception:  # a handler's bug must not stop the pump
            log.exception("error while handling bus messages")
        self.drains += 1

    def _readable(self, _fd: int, _mask: int) -> None:
        self.drain()

    def _tick(self) -> None:
        self._job = None
        self.drain()
        if self.running:
            self._job = self.root.after(self.tick_ms, self._tick)
