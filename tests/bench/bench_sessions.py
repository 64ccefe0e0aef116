"""What one agent conversation costs (issue 20): the memory of Rio's own processes with 0, 1, 5
and 10 idle conversations — API (a loopback Anthropic model) and ACP (the fake agent of the
tests, tests/fakes/acp_agent.py) — and how fast a conversation's session process starts.

*Rio's processes* are the supervisor and its children (the core and its spare, the MCP
endpoint, the session zygote, every session); what those start — an ACP agent and its helpers,
a run command — is not Rio's and is left out. Each is read from ``/proc/PID/smaps_rollup``:

* **USS** — pages only that process maps (what killing it gives back);
* **PSS** — each page divided by the number of processes mapping it: summed over Rio's
  processes it counts every page they share among themselves once, so the *added* PSS of one
  more conversation is what that conversation really costs the machine, whatever forked from
  what (a session forked from the zygote shares its pages, and they are in no one's USS);
* **RSS** — every page a process maps, shared ones counted again in each (the budget the
  idle-desktop row uses).

The start rows time ``system.spawn {kind: agent}`` → the session answers ``session.status``
against two floors measured in the same run: a bare ``python -c "import zmq, msgpack, pykka"``
(a session started as a new interpreter can be no faster) and a bare ``os.fork()`` of a
preloaded interpreter that exits at once (a session forked from the zygote can be no faster).

``python -m tests.bench sessions [--quick]``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from rio.protocol.frames import thaw
from tests.agent_processes import fake_agent_entry
from tests.bench.common import Row, bare_import_floor, session_start
from tests.fakes.model_servers import FakeModelServer, anthropic_text
from tests.support import RioServer, rio_env

MB = 1 / (1 << 20)
COUNTS = (0, 1, 5, 10)


def smaps(pid: int) -> dict[str, int]:
    """rss, pss, uss (private clean + dirty) in bytes, from smaps_rollup."""
    out = {"rss": 0, "pss": 0, "uss": 0}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                kb = rest.split()
                if not kb or not kb[0].isdigit():
                    continue
                value = int(kb[0]) * 1024
                if key == "Rss":
                    out["rss"] = value
                elif key == "Pss":
                    out["pss"] = value
                elif key in ("Private_Clean", "Private_Dirty"):
                    out["uss"] += value
    except OSError:
        pass
    return out


def rio_processes(server: RioServer) -> dict[int, str]:
    """pid → what it is: the supervisor and its children (Rio's own processes)."""
    names = {server.proc.pid: "supervisor"}
    status = server.call("system.status")
    by_pid = {p["pid"]: p["name"] for p in status["processes"] if p.get("pid")}
    for s in status.get("spares", ()):
        by_pid[s["pid"]] = f"spare-{s['for']}"
    for child in psutil.Process(server.proc.pid).children():
        names[child.pid] = by_pid.get(child.pid, child.name())
    return names


def memory(server: RioServer) -> dict[str, Any]:
    """Totals over Rio's processes, and per process."""
    per = {}
    for pid, name in rio_processes(server).items():
        per[pid] = {"name": name, **smaps(pid)}
    total = {k: sum(p[k] for p in per.values()) for k in ("rss", "pss", "uss")}
    return {"total": total, "per": per}


class Conversations:
    """Idle conversations of one kind, each with one turn done (its session is up)."""

    def __init__(self, server: RioServer, kind: str, model: FakeModelServer | None) -> None:
        self.server = server
        self.kind = kind
        self.model = model
        self.conn = server.connect("bench-sessions", subscribe=("agent.turn",))
        self.ended: set[str] = set()
        self.conn.subscribe("agent.turn", self._on_turn)
        self.ids: list[str] = []

    def _on_turn(self, event: Any) -> None:
        data = thaw(event.data)
        if data.get("state") in ("done", "failed", "stopped"):
            self.ended.add(str(data.get("turn")))

    def add(self) -> float:
        """One more conversation with one turn; returns seconds from the message to its
        turn's end."""
        args: dict[str, Any] = {"title": "bench"}
        if self.kind == "acp":
            args["agent"] = "fake"
        elif self.model is not None:
            self.model.push(anthropic_text("hello ", "there"))
        cid = self.conn.call("agent.new", args)["conversation"]
        t = time.perf_counter()
        turn = self.conn.call("agent.send", {"conversation": cid, "text": "hi"},
                              timeout=60)["turn"]
        if not self.conn.wait_for(lambda: turn in self.ended, 60):
            raise RuntimeError(f"turn {turn} did not end")
        self.ids.append(cid)
        return time.perf_counter() - t

    def close(self) -> None:
        self.conn.close()


def _settle(server: RioServer) -> None:
    """Let the sessions' after-ready steps and the agents' starts finish before reading."""
    time.sleep(1.5)


def measure_kind(kind: str, tmp: Path, zygote: bool = True) -> dict[str, Any]:
    """``zygote`` False: sessions started as new interpreters (``[process.agent] zygote =
    false``), the way before ADR-0039, for comparison."""
    root = tmp / f"proj-{kind}-{'zygote' if zygote else 'fresh'}"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    env = rio_env(tmp)
    model = None
    script = tmp / f"script-{kind}.json"
    script.write_text(json.dumps({"mcp_http": True, "default_turn": [{"text": "ok"}]}))
    config = Path(env["RIO_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(
        fake_agent_entry(script) + "[agent]\nidle_stop_s = 0\n")
    (config / "supervisor.toml").write_text(
        f"[process.agent]\nzygote = {'true' if zygote else 'false'}\n")
    if kind == "api":
        model = FakeModelServer().__enter__()
        env.update({"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "test-key"})
    server = RioServer(root, tmp, env=env).start()
    out: dict[str, Any] = {"kind": kind, "at": {}, "turns": [], "sessions": []}
    convs = None
    try:
        _settle(server)
        out["at"][0] = memory(server)
        convs = Conversations(server, kind, model)
        for count in COUNTS[1:]:
            while len(convs.ids) < count:
                out["turns"].append(convs.add())
            _settle(server)
            out["at"][count] = memory(server)
        last = out["at"][COUNTS[-1]]["per"]
        out["sessions"] = [p for p in last.values() if p["name"].startswith("agent:")]
    finally:
        if convs is not None:
            convs.close()
        server.stop()
        if model is not None:
            model.__exit__(None, None, None)
    return out


FORK_FLOOR = """
import os, sys, time
import zmq, msgpack, pykka
out = []
for _ in range(int(sys.argv[1])):
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    out.append(time.perf_counter() - t)
print(sorted(out)[len(out) // 2])
"""


def bare_fork_floor(n: int) -> float:
    """Median seconds of ``os.fork()`` + the child's exit + ``waitpid``, in an interpreter
    with the libraries every Rio process imports loaded."""
    import subprocess
    done = subprocess.run([sys.executable, "-c", FORK_FLOOR, str(n)], capture_output=True,
                          text=True, check=True)
    return float(done.stdout.strip())


def _mb(x: float) -> float:
    return x * MB


def run(quick: bool = False) -> list[Row]:
    rows: list[Row] = []
    n = 3 if quick else 5
    import_floor = statistics.median(bare_import_floor(n))
    fork_floor = bare_fork_floor(20)
    rows.append(Row("sessions", "bare python -c 'import zmq, msgpack, pykka' (floor)",
                    import_floor * 1e3, "ms"))
    rows.append(Row("sessions", "bare os.fork() + exit + waitpid (floor)", fork_floor * 1e3,
                    "ms"))
    with tempfile.TemporaryDirectory(prefix="riose") as tmpd:
        tmp = Path(tmpd)
        env = rio_env(tmp)
        root = tmp / "start"
        root.mkdir()
        server = RioServer(root, tmp, env=env).start()
        try:
            name = "bench-sessions-start"
            session_start(server, name)       # the first may start the zygote: timed on its own
            starts = [session_start(server, name) for _ in range(n)]
        finally:
            server.stop()
        start = statistics.median(starts)
        rows.append(Row("sessions", "session start: spawn → session.status (vs bare import)",
                        start * 1e3, "ms", import_floor * 1e3, "≤ 0.3 s", start <= 0.3,
                        {"all_ms": [round(s * 1e3, 1) for s in starts]}))
        rows.append(Row("sessions", "session start: spawn → session.status (vs bare fork)",
                        start * 1e3, "ms", fork_floor * 1e3))
        for kind in ("api", "acp"):
            result = measure_kind(kind, tmp)
            at = result["at"]
            for count in COUNTS:
                t = at[count]["total"]
                rows.append(Row("sessions", f"{kind}: Rio's USS / PSS / RSS, {count} idle",
                                _mb(t["uss"]), "MB", None, "", None,
                                {"pss_mb": round(_mb(t["pss"]), 1),
                                 "rss_mb": round(_mb(t["rss"]), 1),
                                 "per": {str(pid): {"name": p["name"],
                                                    "uss_mb": round(_mb(p["uss"]), 1),
                                                    "pss_mb": round(_mb(p["pss"]), 1),
                                                    "rss_mb": round(_mb(p["rss"]), 1)}
                                         for pid, p in at[count]["per"].items()}}))
            first = {k: _mb(at[1]["total"][k] - at[0]["total"][k]) for k in ("uss", "pss", "rss")}
            added = {k: _mb(at[COUNTS[-1]]["total"][k] - at[1]["total"][k]) / (COUNTS[-1] - 1)
                     for k in ("uss", "pss", "rss")}
            uss = [_mb(s["uss"]) for s in result["sessions"]]
            rows.append(Row("sessions", f"{kind}: the first conversation adds (PSS)",
                            first["pss"], "MB", None, "", None,
                            {"uss_mb": round(first["uss"], 1), "rss_mb": round(first["rss"], 1)}))
            # The goal (issue 20): what one more idle conversation adds to the USS summed over
            # Rio's processes (its session's own pages, and whatever the core keeps for it);
            # PSS, which also charges it its share of the zygote's pages, beside it.
            rows.append(Row("sessions", f"{kind}: each added conversation (USS, 1 → 10)",
                            added["uss"], "MB", None, "≤ 15 MB", added["uss"] <= 15,
                            {"pss_mb": round(added["pss"], 1), "rss_mb": round(added["rss"], 1)}))
            rows.append(Row("sessions", f"{kind}: a session's own USS (median of 10)",
                            statistics.median(uss) if uss else float("nan"), "MB", None,
                            "≤ 15 MB", bool(uss) and statistics.median(uss) <= 15,
                            {"min": min(uss, default=0), "max": max(uss, default=0)}))
            rows.append(Row("sessions", f"{kind}: first message → turn ended (median of 10)",
                            statistics.median(result["turns"]) * 1e3, "ms", None, "", None,
                            {"first_ms": round(result["turns"][0] * 1e3, 1),
                             "all_ms": [round(x * 1e3, 1) for x in result["turns"]]}))
            # The same without the zygote (each session a new interpreter): what it saves.
            fresh = measure_kind(kind, tmp, zygote=False)["at"]
            was = {k: _mb(fresh[COUNTS[-1]]["total"][k] - fresh[1]["total"][k]) /
                   (COUNTS[-1] - 1) for k in ("uss", "pss", "rss")}
            rows.append(Row("sessions", f"{kind}: each added conversation, zygote = false "
                            "(USS; info)", was["uss"], "MB", None, "", None,
                            {"pss_mb": round(was["pss"], 1), "rss_mb": round(was["rss"], 1)}))
    return rows


if __name__ == "__main__":
    from tests.bench.common import print_table
    print_table(run(quick=True))
