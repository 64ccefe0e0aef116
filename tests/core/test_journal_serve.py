"""A full journal disk on a real ``rio serve``, then kill -9 of the core (Rio issue 8)."""

from __future__ import annotations

import os
import signal

import pytest

from rio.protocol.errors import RioError
from tests.support import RioServer, wait_for

pytestmark = [pytest.mark.timeout(90), pytest.mark.slow]


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "hello.txt").write_text("Hello world\n")
    srv = RioServer(root, tmp_path, extra_args=["--fault-injection"]).start()
    yield srv
    srv.stop()


def core_ready(server: RioServer, old_pid: int) -> bool:
    procs = {p["name"]: p for p in server.call("system.status")["processes"]}
    core = procs.get("core", {})
    return core.get("ready") and core.get("pid") not in (None, old_pid)


def test_a_full_journal_disk_then_kill_9_loses_no_acknowledged_edit(server):
    events: list[tuple[str, dict]] = []
    conn = server.connect(subscribe=("buffer.journal",))
    conn.subscribe("buffer.journal", lambda event: events.append((event.topic, event.data)))
    assert conn.wait_live()
    try:
        bid = conn.call("buffer.open", {"path": "hello.txt"})["buffer"]
        for word in ["a ", "b ", "c "]:
            conn.call("buffer.replace", {"buffer": bid, "start": 0, "end": 0, "text": word})
        before = conn.call("buffer.text", {"buffer": bid})
        # The disk fills up in the middle of the next record, once.
        server.call("system.fault", {"fault": "journal_fail",
                                     "params": {"errno": "ENOSPC", "after_bytes": 6}})
        with pytest.raises(RioError) as caught:
            conn.call("buffer.replace", {"buffer": bid, "start": 0, "end": 0, "text": "lost "})
        assert caught.value.kind == "file.journal_write_failed"
        assert "hello.txt" in caught.value.message and "Free disk space" in caught.value.next
        after = conn.call("buffer.text", {"buffer": bid})
        assert (after["text"], after["version"]) == (before["text"], before["version"])
        for word in ["v ", "w ", "x ", "y ", "z "]:            # space is back: acknowledged
            conn.call("buffer.replace", {"buffer": bid, "start": 0, "end": 0, "text": word})
        expected = conn.call("buffer.text", {"buffer": bid})["text"]
        assert wait_for(lambda: conn.drain() >= 0 and [t for t, _ in events] == [
            "buffer.journal_failed", "buffer.journal_restored"], 10)
        assert events[0][1]["name"] == "hello.txt"
    finally:
        conn.close()
    assert expected == "z y x w v c b a Hello world\n"
    core = server.pids()["core"]
    os.kill(core, signal.SIGKILL)
    assert wait_for(lambda: core_ready(server, core), 30)
    report = server.call("buffer.recover")
    assert report["failures"] == []
    [buf] = server.call("buffer.list")
    assert server.call("buffer.text", {"buffer": buf["buffer"]})["text"] == expected
