"""The desktop's first calls wait for the core on the bus (ADR-0009 "Revised"): a ``no_route``
while the core starts is followed by a wait for the supervisor's ``system.process`` "ready"
event, not by a sleep loop."""

from __future__ import annotations

import threading
import time

import pytest

from actors.bus.client import Endpoints, connect
from actors.bus.hub import Hub
from actors.bus.service import BusThread

pytestmark = pytest.mark.timeout(60)


def test_the_first_call_waits_for_the_core_to_come_up(tmp_path, monkeypatch):
    from ui.tk.app.core_events import call_when_up
    sock = tmp_path / "s"
    sock.mkdir()
    endpoints = Endpoints(f"ipc://{sock}/r", f"ipc://{sock}/e")
    hub = Hub(endpoints.requests, endpoints.events).start()
    conn = connect(endpoints, name="desktop")
    started: list[BusThread] = []

    def core_comes_up() -> None:
        started.append(BusThread(endpoints, name="core",
                                 handlers={"buffer": lambda ctx: ctx.reply([])}).start())
        hub.publish("system.process", {"name": "core", "event": "ready"})

    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)   # a sleep loop would spin, not wait
    later = threading.Timer(0.5, core_comes_up)
    later.start()
    t0 = time.monotonic()
    try:
        assert call_when_up(conn, "buffer.list", wait_s=20) == []
        assert time.monotonic() - t0 < 10
        assert slept == []
        assert conn._handlers == []          # its subscription is gone again
    finally:
        later.join()
        for bus in started:
            bus.stop()
        conn.close()
        hub.stop()
