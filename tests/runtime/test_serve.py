"""`rio serve` end to end: real processes, real sockets, the CLI as a user runs it."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from tests.support import RioServer, rio_env, wait_for, wait_gone

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "hello.txt").write_text("Hello world\n")
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (root / "bin.dat").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", root / "escape.txt")
    return root


@pytest.fixture
def server(project, tmp_path):
    srv = RioServer(project, tmp_path).start()
    yield srv
    srv.stop()


def test_call_prints_json_and_exit_codes(server, project):
    res = server.cli("call", "--instance", server.name, "buffer.open", '{"path": "hello.txt"}')
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["path"] == "hello.txt" and summary["version"] == 0 and not summary["dirty"]

    res = server.cli("call", "--instance", server.name, "buffer.open", '{"path": "../secret.txt"}')
    assert res.returncode == 1
    assert json.loads(res.stdout)["error"]["kind"] == "path.outside_root"

    res = server.cli("call", "--instance", server.name, "buffer.open", '{"path": "escape.txt"}')
    assert res.returncode == 1
    assert json.loads(res.stdout)["error"]["kind"] == "path.outside_root"

    res = server.cli("call", "--instance", server.name, "buffer.open", '{"path": "bin.dat"}')
    assert json.loads(res.stdout)["error"]["kind"] == "file.binary"

    res = server.cli("call", "--instance", server.name, "buffer.frobnicate")
    assert res.returncode == 1
    assert json.loads(res.stdout)["error"]["kind"] == "protocol.unknown_op"

    res = server.cli("call", "--instance", server.name, "buffer.open", "{not json")
    assert res.returncode == 3 and "JSON" in res.stderr

    res = server.cli("call", "--instance", "nobody-here", "system.ping")
    assert res.returncode == 2 and "rio serve" in res.stderr


def test_edit_undo_save_keeps_line_endings(server, project):
    conn = server.connect()
    try:
        buf = conn.call("buffer.open", {"path": "crlf.txt"})
        assert buf["format"]["newline"] == "\r\n"
        bid = buf["buffer"]
        conn.call("buffer.replace", {"buffer": bid, "start": 0, "end": 3, "text": "ONE"})
        assert conn.call("buffer.text", {"buffer": bid})["text"] == "ONE\ntwo\n"
        conn.call("buffer.undo", {"buffer": bid})
        assert conn.call("buffer.info", {"buffer": bid})["dirty"] is False
        conn.call("buffer.redo", {"buffer": bid})
        saved = conn.call("buffer.save", {"buffer": bid})
        assert saved["dirty"] is False
        assert (project / "crlf.txt").read_bytes() == b"ONE\r\ntwo\r\n"
    finally:
        conn.close()


def _events(server, *args: str) -> tuple[subprocess.Popen, queue.Queue]:
    """A `rio events` subscriber and a queue of the JSON lines it prints (a thread reads them,
    so waiting for a line never blocks the test past its timeout)."""
    proc = subprocess.Popen([sys.executable, "-m", "rio.cli", "events", "--instance",
                             server.name, *args], env=server.env, stdout=subprocess.PIPE,
                            text=True)
    lines: queue.Queue = queue.Queue()
    proc.reader = threading.Thread(  # type: ignore[attr-defined]
        target=lambda: [lines.put(json.loads(line)) for line in proc.stdout], daemon=True)
    proc.reader.start()  # type: ignore[attr-defined]
    return proc, lines


def test_events_stream_and_conflict(server, project):
    # Events published before a subscriber is live are not promised to it, so instead of
    # guessing how long connecting takes, edit a probe buffer until both subscribers show
    # they are live: `every` prints an event, `one` (--count 1) prints one and exits.
    every, lines = _events(server, "--topic", "buffer.")
    one, _ = _events(server, "--topic", "buffer.changed", "--count", "1")
    conn = server.connect()
    try:
        probe = conn.call("buffer.open", {"path": "crlf.txt"})["buffer"]
        deadline = time.monotonic() + 30
        seen: list[dict] = []
        while not (seen and one.poll() == 0):
            assert time.monotonic() < deadline, "the subscribers never went live"
            conn.call("buffer.replace", {"buffer": probe, "start": 0, "end": 0, "text": "x"})
            try:
                seen.append(lines.get(timeout=0.2))
            except queue.Empty:
                pass
        conn.call("buffer.close", {"buffer": probe, "discard": True})

        bid = conn.call("buffer.open", {"path": "hello.txt"})["buffer"]
        conn.call("buffer.replace", {"buffer": bid, "start": 0, "end": 5, "text": "Howdy"})
        (project / "hello.txt").write_text("changed behind Rio's back\n")
        mine: list[dict] = []
        while "buffer.conflict" not in [e["topic"] for e in mine]:
            event = lines.get(timeout=30)
            if event["data"].get("buffer") == bid:
                mine.append(event)
        topics = [e["topic"] for e in mine]
        assert topics[:2] == ["buffer.opened", "buffer.changed"]
        assert mine[1]["data"]["text"] == "Howdy" and mine[1]["data"]["version"] == 1
        with pytest.raises(Exception) as info:
            conn.call("buffer.save", {"buffer": bid})
        assert info.value.kind == "file.conflict"
        assert (project / "hello.txt").read_text() == "changed behind Rio's back\n"
        conn.call("buffer.save", {"buffer": bid, "force": True})
        assert (project / "hello.txt").read_text() == "Howdy world\n"
    finally:
        conn.close()
        for proc in (every, one):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.reader.join(5)
            proc.stdout.close()


def test_status_and_stop(server):
    res = server.cli("status", "--instance", server.name)
    assert res.returncode == 0, res.stderr
    assert "core" in res.stdout and "running" in res.stdout
    res = server.cli("status", "--instance", server.name, "--json")
    procs = json.loads(res.stdout)["processes"]
    assert procs[0]["name"] == "core" and procs[0]["rss"] > 0
    tree = server.tree()
    res = server.cli("stop", "--instance", server.name)
    assert res.returncode == 0, res.stderr
    assert not wait_gone(tree, 10)
    assert not (server.runtime / "instance.json").exists()


def test_live_instance_is_not_clobbered_and_stale_one_is_cleaned(server, project, tmp_path):
    second = subprocess.run([sys.executable, "-m", "rio.cli", "serve", "--root", str(project),
                             "--instance", server.name], env=server.env, capture_output=True,
                            text=True, timeout=30)
    assert second.returncode == 1 and "already running" in second.stderr
    # The two lines docs/deploy.md shows (its exit-code table says 1).
    assert second.stderr.splitlines()[1].startswith("  (bus.instance_exists) Use it")
    assert server.call("system.ping")["pong"]
    # make a stale instance: a dead pid in instance.json
    server.stop()
    stale = RioServer(project, tmp_path, name=server.name, env=server.env)
    stale.runtime.mkdir(parents=True, exist_ok=True)
    (stale.runtime / "instance.json").write_text(json.dumps(
        {"name": server.name, "root": str(project), "pid": 999999, "requests": "x",
         "events": "y", "started": 0}))
    stale.start()
    try:
        assert stale.call("system.ping")["pong"]
    finally:
        stale.stop()


def test_kill_9_of_the_core_loses_no_edit(server, project):
    conn = server.connect()
    bid = conn.call("buffer.open", {"path": "hello.txt"})["buffer"]
    untitled = conn.call("buffer.new", {"text": "scratch\n"})["buffer"]
    for word in ["alpha ", "beta ", "gamma "]:
        conn.call("buffer.replace", {"buffer": bid, "start": 0, "end": 0, "text": word})
    conn.call("buffer.replace", {"buffer": untitled, "start": 8, "end": 8, "text": "more"})
    expected = conn.call("buffer.text", {"buffer": bid})["text"]
    conn.close()
    core = server.pids()["core"]
    os.kill(core, signal.SIGKILL)
    assert wait_for(lambda: server.pids().get("core") not in (None, core), 20)
    assert wait_for(lambda: any(p["ready"] for p in server.call("system.status")["processes"]
                                if p["name"] == "core"), 20)
    buffers = server.call("buffer.list")
    texts = {b["name"]: server.call("buffer.text", {"buffer": b["buffer"]})["text"]
             for b in buffers}
    assert texts["hello.txt"] == expected == "gamma beta alpha Hello world\n"
    assert "scratch\nmore" in texts.values()
    assert all(b["dirty"] and b["recovered"] for b in buffers)
    status = server.call("system.status")["processes"][0]
    assert status["restarts"] == 1 and "SIGKILL" in status["last_exit"]
    # the disk file was never touched
    assert (project / "hello.txt").read_text() == "Hello world\n"


def test_kill_9_of_the_supervisor_takes_the_tree_and_a_restart_recovers(project, tmp_path):
    env = rio_env(tmp_path)
    srv = RioServer(project, tmp_path, env=env).start()
    try:
        conn = srv.connect()
        bid = conn.call("buffer.open", {"path": "hello.txt"})["buffer"]
        conn.call("buffer.replace", {"buffer": bid, "start": 11, "end": 11, "text": "!!"})
        conn.close()
        children = srv.tree()[1:]
        assert children
        srv.kill9()
        assert not wait_gone(children, 10), "children outlived the supervisor"
    finally:
        srv.stop()
    again = RioServer(project, tmp_path, name=srv.name, env=env).start()
    try:
        buffers = again.call("buffer.list")
        assert [b["name"] for b in buffers] == ["hello.txt"]
        assert again.call("buffer.text", {"buffer": buffers[0]["buffer"]})["text"] == \
            "Hello world!!\n"
        again.call("buffer.save", {"buffer": buffers[0]["buffer"]})
        assert (project / "hello.txt").read_text() == "Hello world!!\n"
    finally:
        again.stop()
    # after the save, nothing is left to recover
    third = RioServer(project, tmp_path, name=srv.name, env=env).start()
    try:
        assert third.call("buffer.list") == []
    finally:
        third.stop()


def test_version_and_help():
    from rio import __version__
    out = subprocess.run([sys.executable, "-m", "rio.cli", "--version"], capture_output=True,
                         text=True, timeout=30)
    assert out.stdout.strip() == f"rio {__version__}"
    out = subprocess.run([sys.executable, "-m", "rio.cli", "--help"], capture_output=True,
                         text=True, timeout=30)
    assert "rio serve" in out.stdout and "rio call" in out.stdout
    assert psutil  # the tree checks above use psutil


def test_desktop_without_a_display_says_what_to_run(tmp_path):
    env = rio_env(tmp_path)
    env.pop("DISPLAY", None)
    out = subprocess.run([sys.executable, "-m", "rio.cli", str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 3
    assert "rio serve" in out.stderr and "display" in out.stderr
