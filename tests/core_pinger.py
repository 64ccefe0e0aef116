"""A core answering while it works: ``host.ping`` of the core every 50 ms from a thread of its
own, each answer timed — used by tests/core/test_scale_buffers.py (the core keeps answering
while buffers pile up) and by the benchmark that measures it (tests/bench/bench_scale.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

from rio.protocol.errors import RioError
from tests.support import RioServer


class Pinger:
    """``with Pinger(server) as pinger:`` pings while the block runs; then ``times`` holds the
    seconds each answer took and ``missed`` counts the pings that failed (a timeout: the core
    did not answer within 5 s)."""

    def __init__(self, server: RioServer, name: str = "pinger") -> None:
        self.server = server
        self.name = name
        self.times: list[float] = []
        self.missed = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Pinger:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)

    def _run(self) -> None:
        conn = self.server.connect(self.name)
        try:
            while not self.stop.wait(0.05):
                started = time.perf_counter()
                try:
                    conn.call("host.ping", {"process": "core"}, timeout=5)
                except RioError:
                    self.missed += 1
                    continue
                self.times.append(time.perf_counter() - started)
        finally:
            conn.close()


def core_process(server: RioServer) -> dict[str, Any]:
    """The core's entry in ``system.status`` (its pid, whether it is ready)."""
    found: dict[str, Any] = next(p for p in server.call("system.status")["processes"]
                                 if p["name"] == "core")
    return found
