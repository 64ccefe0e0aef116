"""Issue 2's numbers: the edit round trip through Rio against the raw ZeroMQ round trip, open and
save of 100 MB against read+decode / write+fsync floors, and the core's memory per document."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import msgpack
import psutil
import zmq

from tests.bench.common import Row, percentiles
from tests.support import RioServer

SIZES = {"1 KB": 1_000, "1 MB": 1_000_000, "10 MB": 10_000_000, "100 MB": 100_000_000}

ECHO_SERVER = textwrap.dedent("""
    import sys, msgpack, zmq
    ctx = zmq.Context(); s = ctx.socket(zmq.ROUTER); s.bind(sys.argv[1])
    print("ready", flush=True)
    while True:
        ident, raw = s.recv_multipart()
        msg = msgpack.unpackb(raw)
        if msg.get("stop"): break
        s.send_multipart([ident, msgpack.packb(msg)])
""")


def raw_zmq_round_trip(tmp: Path, n: int) -> list[float]:
    endpoint = f"ipc://{tmp}/echo.sock"
    proc = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, endpoint], stdout=subprocess.PIPE)
    try:
        proc.stdout.readline()
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.connect(endpoint)
        payload = {"v": 1, "t": "req", "id": "x" * 8, "op": "buffer.replace",
                   "args": {"buffer": "b0123456789", "start": 10, "end": 10, "text": "a"}}
        out = []
        for i in range(n + 200):
            t = time.perf_counter()
            sock.send(msgpack.packb(payload))
            msgpack.unpackb(sock.recv())
            if i >= 200:
                out.append(time.perf_counter() - t)
        sock.send(msgpack.packb({"stop": True}))
        sock.close(linger=0)
        return out
    finally:
        proc.wait(5)


def make_file(path: Path, size: int) -> None:
    line = "the quick brown fox jumps over the lazy dog 0123456789\n"
    with open(path, "w") as fh:
        fh.write(line * (size // len(line)) + "x" * (size % len(line)))


def edit_round_trips(server: RioServer, buffer: str, n: int) -> list[float]:
    conn = server.connect("bench")
    got: list = []
    conn.subscribe("buffer.changed", got.append)
    info = conn.call("buffer.info", {"buffer": buffer})
    version = info["version"]
    out = []
    # let the subscription settle
    conn.call("buffer.replace", {"buffer": buffer, "start": 0, "end": 0, "text": "",
                                 "base_version": version})
    for i in range(n + 100):
        replies: list = []
        got.clear()
        offset = (i * 7919) % 1000
        t = time.perf_counter()
        conn.request("buffer.replace", {"buffer": buffer, "start": offset, "end": offset,
                                        "text": "a", "base_version": version, "origin": "bench"},
                     replies.append)
        while not (replies and any(e.data["buffer"] == buffer for e in got)):
            conn.wait(1.0)
        elapsed = time.perf_counter() - t
        version = replies[0].result["version"]
        if i >= 100:
            out.append(elapsed)
    conn.close()
    return out


def run(quick: bool = False, lean: bool = False) -> list[Row]:
    rows: list[Row] = []
    n = 500 if quick else 1000 if lean else 3000
    with tempfile.TemporaryDirectory(prefix="riob") as tmpd:
        tmp = Path(tmpd)
        root = tmp / "proj"
        root.mkdir()
        sizes = dict(list(SIZES.items())[:2]) if quick else SIZES
        if lean and not quick:      # what issue 13's table reads
            sizes = {k: v for k, v in SIZES.items() if k in ("1 MB", "100 MB")}
        for size in sizes.values():
            make_file(root / f"f{size}.txt", size)
        floor = percentiles(raw_zmq_round_trip(tmp, n))
        server = RioServer(root, tmp).start()
        try:
            core_pid = server.pids()["core"]
            core = psutil.Process(core_pid)
            for label, size in sizes.items():
                rss_before = core.memory_info().rss
                path = f"f{size}.txt"
                # open: through Rio vs read+decode in this process
                t = time.perf_counter()
                with open(root / path, "rb") as fh:
                    fh.read().decode("utf-8")
                floor_open = time.perf_counter() - t
                t = time.perf_counter()
                summary = server.call("buffer.open", {"path": path}, timeout=120)
                rio_open = time.perf_counter() - t
                rss_after = core.memory_info().rss
                stats = percentiles(edit_round_trips(server, summary["buffer"], n))
                rows.append(Row("edit", f"buffer.replace p50 @ {label}", stats["p50"] * 1e6, "µs",
                                floor["p50"] * 1e6, "p50 ≤ 3× raw",
                                stats["p50"] <= 3 * floor["p50"]))
                rows.append(Row("edit", f"buffer.replace p99 @ {label}", stats["p99"] * 1e6, "µs",
                                floor["p99"] * 1e6, "p99 ≤ 2 ms", stats["p99"] <= 0.002))
                if size >= 100_000_000 or (quick and size == max(sizes.values())):
                    rows.append(Row("file", f"open {label}", rio_open * 1e3, "ms",
                                    floor_open * 1e3, "≤ 2× read+decode",
                                    rio_open <= 2 * floor_open))
                    # save: through Rio vs write+fsync here
                    t = time.perf_counter()
                    with open(tmp / "floor.bin", "wb") as fh:
                        fh.write((root / path).read_bytes())
                        fh.flush()
                        os.fsync(fh.fileno())
                    floor_save = time.perf_counter() - t
                    t = time.perf_counter()
                    server.call("buffer.save", {"buffer": summary["buffer"]}, timeout=120)
                    rio_save = time.perf_counter() - t
                    rows.append(Row("file", f"save {label}", rio_save * 1e3, "ms",
                                    floor_save * 1e3, "(informational)"))
                    grown = (rss_after - rss_before) / 1e6
                    rows.append(Row("memory", f"core RSS growth for {label} doc", grown, "MB",
                                    size / 1e6, "≤ 1.5× file + 50 MB",
                                    grown <= 1.5 * size / 1e6 + 50))
                server.call("buffer.close", {"buffer": summary["buffer"], "discard": True})
        finally:
            server.stop()
    rows.insert(0, Row("edit", "raw ZeroMQ round trip p50 (floor)", floor["p50"] * 1e6, "µs"))
    rows.insert(1, Row("edit", "raw ZeroMQ round trip p99 (floor)", floor["p99"] * 1e6, "µs"))
    return rows
