"""What the supervisor holds for each process it runs: a :class:`Child`.

One per process name (``core``, ``agent:<conversation>`` …), kept across restarts: the spec it
is started from, the process running now (``spawned``), where it is in its life (``state``),
its restart budget and its ping bookkeeping. The monitor loop (actors/runtime/supervisor.py)
changes it under the supervisor's lock; the spares, the zygotes and the waiting
``system.spawn`` requests (actors/runtime/spares.py, zygotes.py, spawn_waits.py) read it.
Kept apart from the supervisor so that those can name its type without importing the
supervisor (which imports them).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path

from actors.runtime.process_control import Spawned
from rio.config.supervisor_toml import ProcessSpec, RestartBudget

#: States in which an on-demand process counts against its kind's max_live.
LIVE = ("starting", "running", "restarting", "stopping")


@dataclass
class Child:
    spec: ProcessSpec
    argv: list[str]
    spawned: Spawned | None = None
    state: str = "starting"   # starting | running | restarting | stopping | stopped | idle-stopped | failed
    restarts: int = 0
    last_exit: str | None = None
    #: how often it may be restarted (supervisor.toml's policy for its kind)
    budget: RestartBudget = field(init=False)
    restart_at: float | None = None
    missed_pings: int = 0
    ping_outstanding: str | None = None
    ping_sent_at: float = 0.0
    started_at: float = 0.0
    ready: bool = False
    log_path: Path | None = None
    #: flags the supervisor's helpers keep on it (actors/runtime/spawn_waits.py: RESPAWN)
    extra: dict[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.budget = self.spec.budget()

    @property
    def pid(self) -> int | None:
        return self.spawned.pid if self.spawned is not None else None


def describe_exit(code: int | None) -> str:
    """How a process ended, for ``last_exit``: ``exit 3``, ``killed by SIGKILL`` …"""
    if code is None:
        return "unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"
