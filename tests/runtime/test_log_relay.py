"""Every process's log on the supervisor's stderr (`rio serve --log-stderr`, issue 19): lines
prefixed with the process's name, a spare's relabelled when it becomes the core, a child never
held up by a stderr nobody reads, and no per-process files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actors.runtime.log_relay import LogRelay
from tests.support import RioServer, rio_env, wait_for


def read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    return b"".join(chunks)


def child(stream_fd: int, code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stderr=stream_fd,
                            stdout=subprocess.DEVNULL)


@pytest.mark.timeout(30)
def test_lines_are_prefixed_cut_and_a_last_partial_line_is_kept():
    out_r, out_w = os.pipe()
    relay = LogRelay(out_w).start()
    try:
        one = relay.open("core")
        two = relay.open("agent:7")
        p1 = child(one.write_fd, "import sys; sys.stderr.write('first\\nsecond\\r\\nno newline')")
        p2 = child(two.write_fd, "import sys; sys.stderr.write('x' * 40000 + '\\n')")
        one.close_writer()
        two.close_writer()
        assert p1.wait(10) == 0 and p2.wait(10) == 0
    finally:
        relay.stop()
        os.close(out_w)
    lines = read_all(out_r).split(b"\n")
    os.close(out_r)
    assert b"[core] first" in lines and b"[core] second" in lines
    assert b"[core] no newline" in lines          # said at its end of file
    long = [line for line in lines if line.startswith(b"[agent:7] ")]
    assert sum(len(line) - len(b"[agent:7] ") for line in long) == 40000
    assert max(len(line) for line in long) <= 16 * 1024 + len(b"[agent:7] ")


@pytest.mark.timeout(30)
def test_a_relabelled_stream_speaks_under_its_new_name():
    out_r, out_w = os.pipe()
    relay = LogRelay(out_w).start()
    seen = bytearray()

    def saw(text: bytes) -> bool:
        seen.extend(read_all(out_r))
        return text in seen

    try:
        stream = relay.open("spare-core")
        proc = subprocess.Popen([sys.executable, "-c",
                                 "import sys\nfor line in sys.stdin:\n"
                                 "    sys.stderr.write(line); sys.stderr.flush()"],
                                stdin=subprocess.PIPE, stderr=stream.write_fd, text=True)
        stream.close_writer()
        proc.stdin.write("waiting\n")
        proc.stdin.flush()
        assert wait_for(lambda: saw(b"[spare-core] waiting"), 10)
        stream.label = "core"                      # the spare was assigned
        proc.stdin.write("serving\n")
        proc.stdin.close()
        assert proc.wait(10) == 0
    finally:
        relay.stop()
        os.close(out_w)
    saw(b"")
    os.close(out_r)
    assert b"[core] serving" in seen and b"[spare-core] serving" not in seen


@pytest.mark.timeout(60)
def test_a_stderr_nobody_reads_never_holds_a_child_up():
    """The relay's own stderr is a pipe this test never reads (64 KiB fill it): the child's
    2 MB of lines still go through at once, the excess is dropped and the drop is said."""
    out_r, out_w = os.pipe()
    relay = LogRelay(out_w, backlog_bytes=256 * 1024).start()
    try:
        stream = relay.open("noisy")
        started = time.monotonic()
        proc = child(stream.write_fd, "import sys\nfor i in range(40000):\n"
                                      "    sys.stderr.write('%05d ' % i + 'y' * 44 + '\\n')")
        stream.close_writer()
        assert proc.wait(20) == 0
        took = time.monotonic() - started
        assert took < 15, took
        # Now read: the writer drains its backlog, then says how much was dropped.
        seen = b""
        deadline = time.monotonic() + 10
        while b"dropped" not in seen and time.monotonic() < deadline:
            seen += read_all(out_r)
            time.sleep(0.01)
    finally:
        relay.stop()
        os.close(out_w)
    seen += read_all(out_r)
    os.close(out_r)
    assert b"[noisy] 00000 " in seen
    assert b"log line(s) dropped: stderr was not read fast enough" in seen


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_serve_with_log_stderr_prefixes_every_process_and_writes_no_log_files(tmp_path: Path):
    root = tmp_path / "proj"
    root.mkdir()
    env = rio_env(tmp_path)
    env["RIO_LOG_LEVEL"] = "DEBUG"     # pykka says when each actor starts: lines to look for
    errors = tmp_path / "serve.stderr"
    with open(errors, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "rio.cli", "serve", "--root", str(root),
                                 "--instance", "logs", "--log-stderr"], env=env,
                                stdout=subprocess.PIPE, stderr=sink)
    srv = RioServer(root, tmp_path, name="logs", env=env)
    srv.proc = proc
    srv.known_pids.add(proc.pid)
    try:
        assert wait_for(lambda: b"[core] " in errors.read_bytes(), 30)
        assert wait_for(lambda: srv.call("system.status")["spares"], 30)
        status = srv.call("system.status")
        assert [p["log"] for p in status["processes"]] == [None]
        spare = status["spares"][0]["pid"]
        srv.known_pids.add(spare)
        first = srv.pids()["core"]
        os.kill(first, signal.SIGKILL)   # the spare becomes the core: its lines say [core]
        assert wait_for(lambda: srv.pids().get("core") not in (None, first) and next(
            p for p in srv.call("system.status")["processes"] if p["name"] == "core")["ready"],
            30)
        assert srv.pids()["core"] == spare
        # The spare's stream, started as [spare-core], relabelled at its assignment:
        assert wait_for(lambda: f" core[{spare}] ".encode() in errors.read_bytes(), 10)
        mine = [line for line in errors.read_bytes().splitlines()
                if f" core[{spare}] ".encode() in line]
        assert mine and all(line.startswith(b"[core] ") for line in mine), mine[:3]
    finally:
        srv.stop()
    text = errors.read_bytes().decode("utf-8", "replace")
    assert srv.bad_events(text) == []        # the events check, as RioServer.stop does it
    said = text.splitlines()
    assert any(line.startswith("[supervisor] ") for line in said)
    assert all(line.startswith("[") for line in said if line), [
        line for line in said if line and not line.startswith("[")][:5]
    logs = list((Path(env["RIO_STATE_DIR"]) / "logs").glob("logs.*.log"))
    assert logs == [], logs
