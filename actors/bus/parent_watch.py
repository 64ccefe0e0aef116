"""The watch a Rio child keeps on the process that started it (ADR-0007): a daemon thread that
reads the inherited lifeline pipe to its end (the parent is gone, however it died) or, without
one, polls ``getppid()`` against the parent recorded at spawn.

In the bus layer, below process control, because the desktop keeps this watch too and may
import only the bus client (docs/architecture.md, "Layers"): the desktop spawns nothing
through process control, so for it losing the parent means exiting at once
(:func:`exit_with_parent`), without psutil. A process that has children to stop first reacts
with :func:`actors.runtime.process_control.exit_with_parent`, built on :func:`watch_parent`.
"""

from __future__ import annotations

import os
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

PARENT_ENV = "RIO_PARENT_PID"       # the pid that spawned us: lets a child notice reparenting
LIFELINE_ENV = "RIO_LIFELINE_FD"    # "<parent pid>:<fd>": read end of the parent's lifeline pipe
EXIT_PARENT_GONE = 1
PARENT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)   # PDEATHSIG's, and a closed terminal's


@dataclass(frozen=True)
class Watchdog:
    """A running parent watchdog. ``method`` is "lifeline" (blocking read of the inherited
    pipe) or "ppid" (polling getppid against RIO_PARENT_PID)."""

    thread: threading.Thread
    method: Literal["lifeline", "ppid"]


def lifeline_from_env() -> int | None:
    value = os.environ.get(LIFELINE_ENV, "")
    owner, _, fd_text = value.partition(":")
    # The variable is inherited by grandchildren too, where the fd number may mean anything:
    # trust it only when the pid that wrote it is the one that spawned us.
    if not fd_text.isdigit() or owner != os.environ.get(PARENT_ENV):
        return None
    fd = int(fd_text)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
    except OSError:
        return None
    return fd


def expected_parent() -> int:
    text = os.environ.get(PARENT_ENV, "")
    return int(text) if text.isdigit() else os.getppid()


def watch_parent(on_parent_gone: Callable[[], None], *, lifeline_fd: int | None = None,
                 poll_interval: float = 0.2) -> Watchdog:
    """Start a daemon thread that runs ``on_parent_gone`` when the parent process vanishes.

    It blocks reading the lifeline pipe inherited from the parent (EOF = parent gone, however
    it died); without one it polls ``getppid()`` against the parent recorded at spawn. Pair
    with PDEATHSIG, which only reaches processes that do not ignore SIGTERM.
    """
    fd = lifeline_fd if lifeline_fd is not None else lifeline_from_env()
    if fd is not None:
        lifeline = fd

        def watch_pipe() -> None:
            while True:
                try:
                    if not os.read(lifeline, 1):
                        break
                except InterruptedError:
                    continue
                except OSError:
                    break
            on_parent_gone()

        thread = threading.Thread(target=watch_pipe, name="rio-watchdog-lifeline", daemon=True)
        thread.start()
        return Watchdog(thread, "lifeline")

    parent = expected_parent()

    def watch_ppid() -> None:
        while os.getppid() == parent:
            time.sleep(poll_interval)
        on_parent_gone()

    thread = threading.Thread(target=watch_ppid, name="rio-watchdog-ppid", daemon=True)
    thread.start()
    return Watchdog(thread, "ppid")


def on_parent_signals(react: Callable[[int], None],
                      signums: Iterable[int] = PARENT_SIGNALS) -> None:
    """Install handlers (main thread only) that call ``react(128 + signal)``."""
    def handler(num: int, _frame: object) -> None:
        react(128 + num)

    for signum in signums:
        signal.signal(signum, handler)


def exit_with_parent() -> Watchdog:
    """For a child with nothing of its own to stop (the desktop): exit at once on the parent's
    signals (when on the main thread) or when the watch sees the parent gone."""
    if threading.current_thread() is threading.main_thread():
        on_parent_signals(os._exit)
    return watch_parent(lambda: os._exit(EXIT_PARENT_GONE))
