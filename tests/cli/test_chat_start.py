"""``rio chat`` starting its own instance waits on the bus, not on files (ADR-0009 "Revised").

A stand-in hub plays the instance on the socket paths ``rio chat`` chose, and a stand-in child
plays ``rio serve``: the hub's answers decide what ``start_headless`` sees.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from actors.bus.hub import Hub
from rio.cli import agent as cli_agent
from rio.config.instance import InstancePaths, default_name
from rio.protocol.errors import BusError
from rio.protocol.frames import Reply

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def stage(tmp_path, monkeypatch):
    """(root, paths, children, start_hub): ``start_hub(status)`` serves ``system.status``
    with ``status(child_pid)`` on the instance's sockets; children are ended afterwards."""
    runtime = Path("/tmp") / f"rio-cs-{uuid.uuid4().hex[:8]}"   # short: ipc path limit
    monkeypatch.setenv("RIO_RUNTIME_DIR", str(runtime))
    monkeypatch.setattr(cli_agent, "START_TIMEOUT_S", 15.0)
    root = tmp_path / "proj"
    root.mkdir()
    paths = InstancePaths.for_name(default_name(root))
    children: list[subprocess.Popen] = []
    real_popen = subprocess.Popen

    def fake_serve(argv, **kw):
        assert argv[-2:] == ["--instance", paths.name]   # the name it connects to is the one
        child = real_popen([sys.executable, "-c", "import time; time.sleep(60)"],
                           stdin=subprocess.DEVNULL, stdout=kw.get("stdout"),
                           stderr=subprocess.STDOUT)
        children.append(child)
        return child

    monkeypatch.setattr(cli_agent.subprocess, "Popen", fake_serve)
    hubs: list[Hub] = []

    def start_hub(status):
        def handle(sender, req):
            if req.op == "system.status":
                return Reply.success(req.id, status(children[-1].pid))
            return Reply.success(req.id, {})
        paths.create()
        hubs.append(Hub(paths.requests_endpoint, paths.events_endpoint,
                        local_handler=handle).start())
        return hubs[-1]

    yield root, paths, children, start_hub
    for hub in hubs:
        hub.stop()
    for child in children:
        child.kill()
        child.wait(10)
    shutil.rmtree(runtime, ignore_errors=True)


def _not_ready(pid: int) -> dict:
    return {"pid": pid, "processes": [{"name": "core", "ready": False}]}


def test_it_is_woken_by_the_cores_ready_event(stage):
    root, paths, children, start_hub = stage
    hub_box: list[Hub] = []
    # the hub comes up after start_headless has connected: it must find it without polling
    late = threading.Timer(0.3, lambda: hub_box.append(start_hub(_not_ready)))
    late.start()
    ready = threading.Timer(1.0, lambda: hub_box[0].publish(
        "system.process", {"name": "core", "event": "ready"}))
    ready.start()
    t0 = time.monotonic()
    try:
        attached = cli_agent.start_headless(root, timeout=5.0)
    finally:
        late.join()
        ready.join()
    try:
        # status never says ready: only the event can have ended the wait (else 15 s)
        assert time.monotonic() - t0 < 10
        assert attached.started is children[-1] and attached.name == paths.name
        assert attached.conn.call("system.status", {}, timeout=5)["pid"] == children[-1].pid
    finally:
        attached.conn.close()
        attached.log.close()


def test_it_sends_nothing_to_an_instance_it_did_not_start(stage):
    root, _, children, start_hub = stage
    seen: list[str] = []
    start_hub(lambda pid: seen.append("status") or {"pid": pid + 100_000, "processes": []})
    with pytest.raises(BusError) as info:
        cli_agent.start_headless(root, timeout=5.0)
    assert info.value.kind == "bus.unreachable"
    assert "Another process answers" in info.value.message
    assert seen == ["status"]
    assert children[-1].poll() is not None    # the child it started was ended
