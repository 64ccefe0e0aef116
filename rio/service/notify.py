"""The sd_notify protocol's messages (sd_notify(3), systemd.service(5) ``Type=notify``).

A service manager that wants to hear from its service sets ``NOTIFY_SOCKET`` (a unix datagram
socket: a path, or ``@name`` in the abstract namespace) and, with ``WatchdogSec=``,
``WATCHDOG_USEC`` (and ``WATCHDOG_PID``, the process it is meant for). The service sends
newline-separated ``KEY=value`` assignments in one datagram each time: ``READY=1`` once it
serves, ``WATCHDOG=1`` at least every ``WATCHDOG_USEC`` (systemd recommends half of it),
``STOPPING=1`` when it begins to stop, ``STATUS=…`` a one-line text ``systemctl status`` shows.

Here: reading the environment and building the datagrams — no socket (``rio/`` has none). The
supervisor sends them through ``actors/runtime/sd_notify.py``; what it sends when is in ADR-0035.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NOTIFY_SOCKET = "NOTIFY_SOCKET"
WATCHDOG_USEC = "WATCHDOG_USEC"
WATCHDOG_PID = "WATCHDOG_PID"
#: What the supervisor takes out of its environment once read, so that no process it starts
#: (a host, an agent, a command the user runs) talks to the service manager as if it were Rio.
ENVIRONMENT = (NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID)

READY = {"READY": "1"}
STOPPING = {"STOPPING": "1"}
WATCHDOG = {"WATCHDOG": "1"}
#: A STATUS longer than this is cut: it is one line in `systemctl status`.
STATUS_MAX = 400


def socket_address(value: str | None) -> str | None:
    """The address to send to, from ``NOTIFY_SOCKET``: an absolute path as it is, ``@name``
    as the abstract name (a leading NUL byte); None when unset or of a kind not spoken here
    (``vsock:``, a relative path)."""
    if not value:
        return None
    if value.startswith("@") and len(value) > 1:
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None


def watchdog_interval(environ: Mapping[str, str], pid: int) -> float | None:
    """Seconds between two ``WATCHDOG=1``: half of ``WATCHDOG_USEC``; None when there is no
    watchdog, or it is meant for another process (``WATCHDOG_PID``)."""
    raw = environ.get(WATCHDOG_USEC, "")
    try:
        usec = int(raw)
    except ValueError:
        return None
    if usec <= 0:
        return None
    meant_for = environ.get(WATCHDOG_PID, "")
    if meant_for:
        try:
            if int(meant_for) != pid:
                return None
        except ValueError:
            return None
    return usec / 2 / 1_000_000


def one_line(text: str, limit: int = STATUS_MAX) -> str:
    """A value on one line (an assignment ends at a newline), at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def encode(*assignments: Mapping[str, str]) -> bytes:
    """One datagram: every ``KEY=value`` of ``assignments``, a line each (values flattened to
    one line)."""
    lines = [f"{key}={one_line(value)}" for fields in assignments for key, value in fields.items()]
    return ("\n".join(lines) + "\n").encode("utf-8")


def status(text: str) -> dict[str, str]:
    return {"STATUS": one_line(text)}


def serving_status(root: str, running: int) -> str:
    return f"serving {root}: {running} process{'es' if running != 1 else ''} running, " \
        "the core answering"


def event_status(event: Mapping[str, Any]) -> str | None:
    """The STATUS for a ``system.process`` event worth telling the service manager: a process
    that ended and is restarted, one found hung, one given up, one back after a restart, the
    hub started again. None for the rest (a start, an agent's idle stop)."""
    name = event.get("name", "?")
    what = event.get("event")
    last = event.get("last_exit") or "ended"
    reason = event.get("reason") or ""
    restarts = event.get("restarts") or 0
    if what == "exited":
        return f"{name} exited ({last}); restarting: {reason}"
    if what == "hung":
        return f"{name} stopped answering ({last}); restarting it"
    if what == "gave_up":
        return f"{name} failed ({last}); {reason} — see `rio health` and its log"
    if what == "ready" and restarts:
        return f"{name} is back after {restarts} restart{'s' if restarts != 1 else ''}"
    if what == "restarted" and name == "hub":
        return f"the hub's thread was started again ({restarts} time{'s' if restarts != 1 else ''})"
    return None
