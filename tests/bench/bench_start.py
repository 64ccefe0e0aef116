"""Issue 13's start-up numbers: `rio serve` → the core answering, `rio chat "hi"` as a whole
command against a loopback model that answers at once (no instance running / attached to one),
and an agent session process from spawn to ready for a turn.

Floors measured in the same run: a bare ``python -c "import zmq, msgpack, pykka"`` (what any
Rio process must pay before it can answer) and, for `rio serve`, the moment the supervisor
answers ``system.status``. Never a real key: the model is tests/fakes/model_servers.py.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tests.bench.common import Row, bare_import_floor, session_start
from tests.fakes.model_servers import FakeModelServer, anthropic_text
from tests.support import RioServer, rio_env


def _connect(info_path: Path):
    import json

    from actors.bus.client import Endpoints, connect
    info = json.loads(info_path.read_text())
    return connect(Endpoints(info["requests"], info["events"]), name="bench-start")


def serve_to_answer(tmp: Path) -> tuple[float, float]:
    """(seconds to system.status answered, seconds to buffer.list answered) after Popen."""
    root = tmp / f"serve{uuid.uuid4().hex[:6]}"
    root.mkdir()
    env = rio_env(tmp)
    name = f"b{uuid.uuid4().hex[:8]}"
    info_path = Path(env["RIO_RUNTIME_DIR"]) / name / "instance.json"
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rio.cli", "serve", "--root", str(root),
                             "--instance", name], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(root))
    status = listed = float("nan")
    conn = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if conn is None:
                if not info_path.exists():
                    time.sleep(0.002)
                    continue
                try:
                    conn = _connect(info_path)
                except Exception:  # noqa: BLE001 -- written but not yet bound
                    time.sleep(0.002)
                    continue
            try:
                if status != status:       # nan: not yet
                    conn.call("system.status", {}, timeout=1)
                    status = time.perf_counter() - t0
                conn.call("buffer.list", {}, timeout=0.5)
                listed = time.perf_counter() - t0
                break
            except Exception:  # noqa: BLE001 -- the core is not up yet
                time.sleep(0.002)
    finally:
        if conn is not None:
            conn.close()
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return status, listed


def chat_once(root: Path, env: dict, model: FakeModelServer) -> float:
    model.push(anthropic_text("hello ", "there"))
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rio.cli", "chat", "--root", str(root),
                           "--approve", "yes", "hi"], env=env, capture_output=True, text=True,
                          timeout=120, cwd=str(root))
    took = time.perf_counter() - t
    if done.returncode != 0 or "hello there" not in done.stdout:
        raise RuntimeError(f"rio chat exited {done.returncode}: {done.stderr[-1500:]}")
    return took


def _med(xs: list[float]) -> float:
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def run(quick: bool = False, lean: bool = False) -> list[Row]:
    n = 2 if quick else 3
    floor = _med(bare_import_floor(n + 2))
    rows: list[Row] = [Row("start", "bare python -c 'import zmq, msgpack, pykka' (floor)",
                           floor * 1e3, "ms")]
    with tempfile.TemporaryDirectory(prefix="riost") as tmpd, FakeModelServer() as model:
        tmp = Path(tmpd)
        served = [serve_to_answer(tmp) for _ in range(n)]
        status, listed = _med([s for s, _ in served]), _med([b for _, b in served])
        rows.append(Row("start", "rio serve → system.status answered", status * 1e3, "ms",
                        floor * 1e3))
        rows.append(Row("start", "rio serve → core answers buffer.list", listed * 1e3, "ms",
                        floor * 1e3, "≤ 0.5 s", listed <= 0.5))
        env = rio_env(tmp)
        env.update({"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "test-key"})
        cold_root = tmp / "chat-cold"
        cold_root.mkdir()
        cold = _med([chat_once(cold_root, env, model) for _ in range(n)])
        rows.append(Row("start", 'rio chat "hi", no instance running', cold * 1e3, "ms",
                        floor * 1e3, "≤ 1.5 s", cold <= 1.5))
        warm_root = tmp / "chat-warm"
        warm_root.mkdir()
        srv = RioServer(warm_root, tmp, env=env).start()
        try:
            warm = _med([chat_once(warm_root, srv.env, model) for _ in range(n + 2)])
            rows.append(Row("start", 'rio chat "hi", attached to a running one', warm * 1e3,
                            "ms", floor * 1e3, "≤ 0.6 s", warm <= 0.6))
            sess = _med([session_start(srv, "bench-start") for _ in range(n)])
            rows.append(Row("start", "agent session: spawn → answers session.status",
                            sess * 1e3, "ms", floor * 1e3, "≤ 0.3 s", sess <= 0.3))
        finally:
            srv.stop()
    return rows


if __name__ == "__main__":
    from tests.bench.common import print_table
    print_table(run(quick=True))
