"""The supervisor's line to its service manager: sd_notify datagrams on ``NOTIFY_SOCKET``.

Standard library only (a unix datagram socket; an ``@name`` address is in the abstract
namespace). The messages and the environment are read by :mod:`rio.service.notify`; this module
only sends. Without ``NOTIFY_SOCKET`` every call is a no-op, so the desktop and a plain
``rio serve`` pay nothing. A send that fails (the manager went away, a full queue) is logged
once and never raised: telling the manager must not take the supervisor down.

What the supervisor sends when (ADR-0035): ``READY=1`` once the core answered a request,
``WATCHDOG=1`` from its monitor loop every half ``WATCHDOG_USEC`` (a frozen loop stops sending,
and the manager restarts the service), ``STATUS=…`` on a restart or a give-up, ``STOPPING=1``
when it begins to stop.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping, MutableMapping

from rio.service import notify

log = logging.getLogger("rio.supervisor.notify")


class Notifier:
    """Sends sd_notify messages to one address (None: sends nothing)."""

    def __init__(self, address: str | None, watchdog_s: float | None = None) -> None:
        self.address = address
        self.watchdog_s = watchdog_s if address else None
        self.ready_sent = False
        self._next_watchdog = 0.0
        self._warned = False
        self._sock: socket.socket | None = None
        if address:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)

    @classmethod
    def from_environment(cls, environ: MutableMapping[str, str] | None = None) -> "Notifier":
        """The notifier ``environ`` (default: this process's) asks for; the variables are
        then taken out of it, so that no child inherits them (sd_notify's
        ``unset_environment``)."""
        env = os.environ if environ is None else environ
        address = notify.socket_address(env.get(notify.NOTIFY_SOCKET))
        watchdog = notify.watchdog_interval(env, os.getpid())
        for name in notify.ENVIRONMENT:
            env.pop(name, None)
        return cls(address, watchdog)

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def send(self, *assignments: Mapping[str, str]) -> bool:
        if self._sock is None or self.address is None:
            return False
        try:
            self._sock.sendto(notify.encode(*assignments), self.address)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning("cannot tell the service manager (NOTIFY_SOCKET): %s", exc)
            return False
        return True

    def ready(self, status: str) -> None:
        """``READY=1`` (once) with a status line."""
        if not self.ready_sent:
            self.ready_sent = True
            self.send(notify.READY, notify.status(status))

    def status(self, text: str) -> None:
        self.send(notify.status(text))

    def stopping(self, text: str = "stopping") -> None:
        self.send(notify.STOPPING, notify.status(text))

    def watchdog(self, now: float) -> None:
        """From the monitor loop each turn: ``WATCHDOG=1`` when half the period has passed."""
        if self.watchdog_s is None or now < self._next_watchdog:
            return
        self._next_watchdog = now + self.watchdog_s
        self.send(notify.WATCHDOG)

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
