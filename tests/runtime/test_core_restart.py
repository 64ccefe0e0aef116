"""Request ids and versions across a core restart (ADR-0020): a duplicate is answered, never
applied twice, and an edit based on a version from before a recovery is refused."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from actors.bus.client import Endpoints, connect
from actors.bus.hub import Hub
from actors.bus.service import BusThread
from rio.protocol.frames import Reply, Request, encode
from tests.support import RioServer, wait_for

pytestmark = pytest.mark.timeout(90)


def wait_replies(conn, box: list, count: int, timeout: float = 10.0) -> list:
    wait_for(lambda: len(box) >= count, timeout, 0.1, pause=conn.wait)
    return box


# --- copies of a request still running (in process, real sockets) -----------------------------

@pytest.fixture
def bus(tmp_path):
    sock_dir = tmp_path / "s"
    sock_dir.mkdir()
    endpoints = Endpoints(f"ipc://{sock_dir}/r", f"ipc://{sock_dir}/e")
    hub = Hub(endpoints.requests, endpoints.events).start()
    release = threading.Event()
    calls: list[str] = []

    def handler(ctx):
        calls.append(ctx.op)
        if ctx.op == "system.status":   # answered later, from another thread (like an actor)
            threading.Thread(target=lambda: (release.wait(10), ctx.reply({"n": len(calls)})),
                             daemon=True).start()
        else:
            ctx.reply({"n": len(calls)})
    service = BusThread(endpoints, name="slow", handlers={"system": handler}).start()
    client = connect(endpoints, name="test")
    client.hub = hub
    yield client, release, calls
    release.set()
    client.close()
    service.stop()
    hub.stop()


@pytest.mark.slow
def test_copies_that_arrive_while_the_first_runs_each_get_its_reply(bus):
    client, release, calls = bus
    replies: list[Reply] = []
    client.request("system.status", {}, replies.append, request_id="slow-1")
    assert wait_for(lambda: calls == ["system.status"], 10)
    payload = encode(Request("slow-1", "system.status", {}))
    client.send_raw(payload)          # two more copies while the first is still running
    client.send_raw(payload)
    # A request sent after them is answered after they were seen (one connection, in order).
    client.call("system.ping", {}, timeout=10)
    raw: list[bytes] = []
    original = client._on_reply
    client._on_reply = lambda p: (raw.append(p), original(p))
    release.set()
    wait_replies(client, raw, 3)
    assert len(raw) == 3 and len(set(raw)) == 1          # three copies, one reply, the same
    assert replies[0].ok and replies[0].result == {"n": 2}
    assert calls == ["system.status", "system.ping"]     # run once


def test_copies_of_a_request_whose_service_dies_each_get_actor_dead(bus):
    client, _release, calls = bus
    raw: list[bytes] = []
    original = client._on_reply
    client._on_reply = lambda p: (raw.append(p), original(p))
    client.request("system.status", {}, lambda reply: None, request_id="slow-2")
    assert wait_for(lambda: calls == ["system.status"], 10)
    client.send_raw(encode(Request("slow-2", "system.status", {})))
    client.call("system.ping", {}, timeout=10)   # the copy has reached the service
    raw.clear()
    client.hub.drop_service("slow")
    wait_replies(client, raw, 2)
    assert len(raw) == 2 and b"bus.actor_dead" in raw[0] and raw[0] == raw[1]


# --- a real core killed with SIGKILL ------------------------------------------------------------

@pytest.fixture
def server(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("first line\nsecond line\nthird line\n")
    srv = RioServer(root, tmp_path).start()
    yield srv
    srv.stop()


def kill_core(server: RioServer) -> None:
    core = server.pids()["core"]
    os.kill(core, signal.SIGKILL)
    assert wait_for(lambda: server.pids().get("core") not in (None, core), 20)
    assert wait_for(lambda: any(p["ready"] for p in server.call("system.status")["processes"]
                                if p["name"] == "core"), 20)


def call_with_id(conn, rid: str, op: str, args: dict) -> Reply:
    box: list[Reply] = []
    conn.request(op, args, box.append, request_id=rid, timeout=10)
    wait_replies(conn, box, 1)
    assert box, f"no reply to {op} {rid}"
    return box[0]


@pytest.mark.slow
def test_a_pre_crash_base_version_is_refused_after_kill_9(server):
    conn = server.connect()
    try:
        bid = conn.call("buffer.open", {"path": "notes.txt"})["buffer"]
        conn.call("buffer.replace", {"buffer": bid, "start": 0, "end": 5, "text": "FIRST",
                                     "base_version": 0})
        conn.call("buffer.replace", {"buffer": bid, "start": 11, "end": 17, "text": "SECOND",
                                     "base_version": 1})
        kill_core(server)
        info = conn.call("buffer.info", {"buffer": bid})
        assert info["recovered"] and info["epoch"] == 1 and info["version"] > 2
        # "third" at version 2 is 23..28; over the recovery step it would overwrite other lines.
        reply = call_with_id(conn, "stale-1", "buffer.replace",
                             {"buffer": bid, "start": 23, "end": 28, "text": "THIRD",
                              "base_version": 2})
        assert not reply.ok and reply.error["kind"] == "buffer.stale_base"
        assert "buffer.text" in reply.error["next"]
        got = conn.call("buffer.text", {"buffer": bid})
        assert got["text"] == "FIRST line\nSECOND line\nthird line\n"
        conn.call("buffer.replace", {"buffer": bid, "start": 23, "end": 28, "text": "THIRD",
                                     "base_version": got["version"]})
        assert conn.call("buffer.text", {"buffer": bid})["text"] == \
            "FIRST line\nSECOND line\nTHIRD line\n"
    finally:
        conn.close()


@pytest.mark.slow
def test_the_same_request_id_after_a_core_restart_is_not_applied_twice(server):
    conn = server.connect()
    try:
        bid = conn.call("buffer.open", {"path": "notes.txt"})["buffer"]
        edit = {"buffer": bid, "start": 0, "end": 0, "text": "> ", "base_version": 0}
        first = call_with_id(conn, "edit-1", "buffer.replace", edit)
        assert first.ok and first.result["version"] == 1
        undo = call_with_id(conn, "undo-1", "buffer.undo", {"buffer": bid})
        redo = call_with_id(conn, "redo-1", "buffer.redo", {"buffer": bid})
        assert undo.ok and redo.ok
        kill_core(server)
        # The client never saw the replies (say): it sends every request again, same ids.
        for rid, op, args in (("edit-1", "buffer.replace", edit),
                              ("undo-1", "buffer.undo", {"buffer": bid}),
                              ("redo-1", "buffer.redo", {"buffer": bid})):
            again = call_with_id(conn, rid, op, args)
            assert again.ok and again.result["already_applied"] is True, (rid, again)
        text = conn.call("buffer.text", {"buffer": bid})["text"]
        assert text == "> first line\nsecond line\nthird line\n"
    finally:
        conn.close()
