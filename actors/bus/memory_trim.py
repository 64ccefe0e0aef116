"""A trim of the allocator's free pages (rio/memory.py) once something large has gone: a
second after the last request for one, so a file passing in pieces is trimmed once, at its end,
when the objects are freed (an actor's thread ended, the frames were sent). For the core (a
large buffer opened or closed) and the hub (a large file passing through). In the bus layer
because the hub needs it and the bus imports nothing of the actors above it
(docs/architecture.md, "Layers"); it needs a thread, so it cannot be in rio/."""

from __future__ import annotations

import threading
import time

from rio.memory import give_back

_lock = threading.Lock()
_deadline = 0.0
_waiting = False


def trim_soon(delay: float = 1.0) -> None:
    global _deadline, _waiting
    with _lock:
        _deadline = time.monotonic() + delay
        if _waiting:
            return       # the waiting thread sees the later deadline
        _waiting = True
    threading.Thread(target=_wait_then_trim, daemon=True, name="rio-memory-trim").start()


def _wait_then_trim() -> None:
    global _waiting
    while True:
        with _lock:
            left = _deadline - time.monotonic()
            if left <= 0:
                _waiting = False
                break
        time.sleep(left)
    give_back()
