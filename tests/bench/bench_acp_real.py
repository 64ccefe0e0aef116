"""Rio's MCP tools through the real ACP agents: what Rio costs on one turn with one tool call.

For each of claude-agent-acp, codex-acp and opencode (ADR-0034), with one scripted loopback
model (the agent calls ``propose_edit`` once, then ends with text):

* **rio** — ``rio chat --agent NAME --approve yes "…"`` against a running ``rio serve``: the
  CLI, the conversation's session process, the agent, Rio's MCP endpoint (HTTP, bearer token),
  the gate's proposal approved, the edit applied into a buffer, the agent stopped at the end
  (``rio chat`` waits for that);
* **bare** — a bare ACP client (raw JSON-RPC on the agent's stdio, stdlib only: the floor)
  driving the same agent (same command, same environment as Rio gives it) with a bare ``mcp``
  SDK Streamable HTTP server offering the same tool (it answers at once), answering the
  agent's own permission question "allow once", then ending the agent (stdin closed, its
  group SIGTERMed at once).

Both are timed as whole processes, interleaved (the order flips every round), after one
untimed warm-up each (Rio's endpoint starts on demand with the first conversation). Also shown:
Rio's turn (``agent.turn`` started → end, seen on the bus) and the bare client's phases.

    ACP_AGENTS_PREFIX=/tmp/acp-agents python -m tests.bench.bench_acp_real [--runs 5] [AGENT…]

An agent that is not installed is skipped with the reason; never collected by pytest
(tests/bench is ignored). Needs ``mcp`` and ``uvicorn`` (Rio's endpoint needs them too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

AGENTS = ("claude", "codex", "opencode")
TOKEN = "bench-token"
BEFORE = "alpha\nbeta\n"
FILE_RE = re.compile(r"bench-(\d+)\.txt")


def prompt_for(n: int) -> str:
    return f"Change beta to gamma in bench-{n}.txt with Rio's propose_edit."


# --- the bare client (a child process: `--bare CONFIG`) ----------------------------------------

async def bare_turn(config: dict[str, Any]) -> dict[str, Any]:
    """initialize → session/new (the bare MCP server) → session/prompt, the agent's permission
    questions answered "allow once" by kind → stop. Phases in seconds from the spawn."""
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *config["argv"], cwd=config["cwd"], env=config["env"], stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True, limit=1 << 24)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    pending: dict[Any, asyncio.Future[Any]] = {}
    asked: list[str] = []
    ids = iter(range(1, 1 << 30))

    async def send(msg: dict[str, Any]) -> None:
        stdin.write((json.dumps(msg) + "\n").encode())
        await stdin.drain()

    async def request(method: str, params: dict[str, Any]) -> Any:
        rid = next(ids)
        fut = asyncio.get_running_loop().create_future()
        pending[rid] = fut
        await send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        got = await asyncio.wait_for(fut, float(config.get("timeout_s", 120)))
        if "error" in got:
            raise RuntimeError(f"{method}: {got['error']}")
        return got["result"]

    async def reader() -> None:
        while line := await stdout.readline():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "method" in msg and "id" in msg:
                if msg["method"] == "session/request_permission":
                    params = msg["params"]
                    asked.append(str(params["toolCall"].get("title")))
                    option = next(o for o in params["options"] if o["kind"] == "allow_once")
                    result: dict[str, Any] = {"outcome": {"outcome": "selected",
                                                          "optionId": option["optionId"]}}
                    await send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
                else:
                    await send({"jsonrpc": "2.0", "id": msg["id"], "error": {
                        "code": -32601, "message": "Method not found"}})
            elif "id" in msg and msg["id"] in pending:
                pending.pop(msg["id"]).set_result(msg)

    task = asyncio.create_task(reader())
    out: dict[str, Any] = {}
    try:
        await request("initialize", {"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}})
        session = (await request("session/new", {"cwd": config["cwd"], "mcpServers": [{
            "type": "http", "name": "rio", "url": config["mcp_url"],
            "headers": [{"name": "Authorization", "value": f"Bearer {TOKEN}"}]}]}))
        out["started_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        done = await request("session/prompt", {"sessionId": session["sessionId"],
                                                "prompt": [{"type": "text",
                                                            "text": config["prompt"]}]})
        out["prompt_s"] = time.perf_counter() - t1
        out["stop_reason"] = done.get("stopReason")
        out["asked"] = asked
    finally:
        t2 = time.perf_counter()
        stdin.close()
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        task.cancel()
        out["stop_s"] = time.perf_counter() - t2
    return out


# --- the bare MCP server (in the bench's process, like Rio's endpoint: already running) -------

class BareMcp:
    """The ``mcp`` SDK's Streamable HTTP server (stateful, SSE) on 127.0.0.1 with one tool,
    ``propose_edit`` (the same title, schema and hints as Rio's), answering at once; a bearer
    check in front, as Rio's endpoint has."""

    def __init__(self) -> None:
        import uvicorn
        from mcp.server import MCPServer
        from mcp.types import ToolAnnotations

        self.calls = 0
        server = MCPServer(name="rio")

        @server.tool(title="Propose an edit",
                     annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
        def propose_edit(path: str, old_text: str, new_text: str) -> str:
            """Propose replacing old_text (which must occur exactly once) with new_text in a
            project file. The user reviews a diff."""
            self.calls += 1
            return json.dumps({"applied": True, "message": f"Applied the edit to {path}."})

        inner = server.streamable_http_app(json_response=False, stateless_http=False)

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and dict(scope["headers"]).get(
                    b"authorization") != f"Bearer {TOKEN}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"www-authenticate", b'Bearer error="invalid_token"'),
                    (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
            await inner(scope, receive, send)

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True, name="bare-mcp")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> BareMcp:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the bare MCP server did not start")
            time.sleep(0.02)
        return self

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(5)


# --- one agent: its model, its Rio instance, its bare set-up -----------------------------------

def missing(agent: str) -> str | None:
    """Why the agent cannot run here, or None."""
    from tests.acp.test_acp_real_agents import CLAUDE, CODEX, NODE, OPENCODE
    path = {"claude": CLAUDE, "codex": CODEX, "opencode": OPENCODE}[agent]
    if not path.exists():
        return f"{path} is not installed"
    if agent == "claude" and NODE is None:
        return "node is not on PATH"
    return None


class Bench:
    def __init__(self, agent: str, base: Path, bare_mcp: BareMcp) -> None:
        from tests.acp.test_acp_real_mcp import agent_setup, model_reply
        from tests.fakes.model_servers import FakeModelServer
        from tests.support import RioServer, rio_env

        def edit(request: Any) -> dict[str, str]:
            found = FILE_RE.search(request.body.decode("utf-8", "replace"))
            path = f"bench-{found.group(1)}.txt" if found else "bench-0.txt"
            return {"path": path, "old_text": "beta", "new_text": "gamma"}

        self.agent = agent
        self.bare_mcp = bare_mcp
        self.model = FakeModelServer([model_reply(agent, edit)] * 10_000).start()
        self.n = 0
        # Rio's instance
        self.root = base / "rio-proj"
        self.root.mkdir(parents=True)
        home = base / "rio-home"
        home.mkdir()
        command, args, extra = agent_setup(agent, home, self.model.url)
        env = rio_env(base)
        env.pop("IS_SANDBOX", None)     # claude-agent-acp 0.23.1 fails session/new with it
        env.update({"HOME": str(home), **extra})
        config = Path(env["RIO_CONFIG_DIR"])
        config.mkdir(parents=True, exist_ok=True)
        (config / "config.toml").write_text(
            f"[agents.{agent}]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n")
        self.server = RioServer(self.root, base, env=env).start()
        # the bare client's agent: the same command and the same environment as Rio gives it
        # (Rio's minus RIO_*: codex, for one, snapshots the login shell when SHELL is set),
        # with a home of its own
        from rio.acp.port import agent_environment
        self.bare_root = base / "bare-proj"
        self.bare_root.mkdir()
        bare_home = base / "bare-home"
        bare_home.mkdir()
        command, args, extra = agent_setup(agent, bare_home, self.model.url)
        self.bare_argv = [command, *args]
        self.bare_env = agent_environment({**env, "HOME": str(bare_home), **extra})

    def close(self) -> None:
        try:
            self.server.stop()
        finally:
            self.model.close()

    def rio_run(self) -> dict[str, Any]:
        from rio.protocol.frames import thaw
        self.n += 1
        (self.root / f"bench-{self.n}.txt").write_text(BEFORE)
        events: list[tuple[float, str, dict[str, Any]]] = []
        conn = self.server.connect("bench-watch", subscribe=("agent.",))
        conn.subscribe("agent.", lambda e: events.append((time.perf_counter(), e.topic,
                                                          thaw(e.data))))
        argv = [sys.executable, "-m", "rio.cli", "chat", "--instance", self.server.name,
                "--agent", self.agent, "--approve", "yes", prompt_for(self.n)]
        timing: dict[str, Any] = {}

        def run() -> None:
            t0 = time.perf_counter()
            done = subprocess.run(argv, env=self.server.env, cwd=str(self.root),
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=300)
            timing.update(t0=t0, t1=time.perf_counter(), done=done)

        thread = threading.Thread(target=run)
        try:
            thread.start()
            while thread.is_alive():
                conn.wait(0.01)
            thread.join()
            conn.wait(0.2)
        finally:
            conn.close()
        done = timing["done"]
        started = next((t for t, topic, d in events
                        if topic == "agent.turn" and d.get("state") == "started"), None)
        ended = next(((t, d) for t, topic, d in events
                      if topic == "agent.turn" and d.get("state") != "started"), None)
        session = next((t for t, topic, d in events if topic == "agent.session"), None)
        applied = any(topic == "agent.tool_result" and d.get("name") == "propose_edit"
                      and d.get("ok") for _, topic, d in events)
        if done.returncode != 0 or not applied or ended is None:
            raise RuntimeError(f"rio run {self.n} of {self.agent} failed: exit "
                               f"{done.returncode}\n{done.stdout}\n{done.stderr}")
        nan = float("nan")
        return {"wall_s": timing["t1"] - timing["t0"],
                "before_turn_s": started - timing["t0"] if started is not None else nan,
                "turn_s": ended[0] - started if started is not None else nan,
                "to_session_s": session - started if session and started else nan,
                "session_to_end_s": ended[0] - session if session else nan,
                "after_turn_s": timing["t1"] - ended[0]}

    def bare_run(self) -> dict[str, Any]:
        self.n += 1
        (self.bare_root / f"bench-{self.n}.txt").write_text(BEFORE)
        calls = self.bare_mcp.calls
        config = {"argv": self.bare_argv, "env": self.bare_env, "cwd": str(self.bare_root),
                  "mcp_url": self.bare_mcp.url, "prompt": prompt_for(self.n)}
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "tests.bench.bench_acp_real", "--bare",
                               json.dumps(config)], cwd=str(REPO), capture_output=True,
                              text=True, timeout=300)
        wall = time.perf_counter() - t0
        if done.returncode != 0 or self.bare_mcp.calls != calls + 1:
            raise RuntimeError(f"bare run {self.n} of {self.agent} failed: exit "
                               f"{done.returncode}, MCP calls {self.bare_mcp.calls - calls}\n"
                               f"{done.stdout}\n{done.stderr}")
        return {"wall_s": wall, **json.loads(done.stdout.strip().splitlines()[-1])}


def median(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_acp_real")
    parser.add_argument("agents", nargs="*", metavar="AGENT",
                        help=f"some of {', '.join(AGENTS)} (default: all)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bare", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bare:
        print(json.dumps(asyncio.run(bare_turn(json.loads(args.bare)))))
        return 0
    unknown = set(args.agents) - set(AGENTS)
    if unknown:
        parser.error(f"unknown agent(s) {', '.join(sorted(unknown))}: pick from "
                     f"{', '.join(AGENTS)}")
    agents = []
    for agent in args.agents or AGENTS:
        why = missing(agent)
        if why:
            print(f"[{agent}] skipped: {why} (npm i --prefix /tmp/acp-agents "
                  "@zed-industries/claude-agent-acp @zed-industries/codex-acp opencode-ai, "
                  "or set ACP_AGENTS_PREFIX)")
        else:
            agents.append(agent)
    if not agents:
        return 0
    from tests.support import remove_runtime_dirs
    loads = ["/".join(f"{x:.2f}" for x in os.getloadavg())]
    base = Path(tempfile.mkdtemp(prefix="rio-bench-acp-real-"))
    import logging
    logging.getLogger("mcp").setLevel(logging.WARNING)   # one line per MCP session otherwise
    bare_mcp = BareMcp().start()
    benches: dict[str, Bench] = {}
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        for agent in agents:
            benches[agent] = Bench(agent, base / agent, bare_mcp)
            warm_rio, warm_bare = benches[agent].rio_run(), benches[agent].bare_run()
            print(f"[{agent}] warm-up: rio {warm_rio['wall_s']:.2f} s, "
                  f"bare {warm_bare['wall_s']:.2f} s", flush=True)
            results[agent] = {"rio": [], "bare": []}
        for i in range(args.runs):
            for agent in agents:
                order = ("rio", "bare") if i % 2 == 0 else ("bare", "rio")
                for kind in order:
                    bench = benches[agent]
                    got = bench.rio_run() if kind == "rio" else bench.bare_run()
                    results[agent][kind].append(got)
                    print(f"[{agent}] run {i + 1} {kind}: {got['wall_s']:.2f} s", flush=True)
    finally:
        for bench in benches.values():
            bench.close()
        bare_mcp.close()
        remove_runtime_dirs()
        import shutil
        shutil.rmtree(base, ignore_errors=True)
    loads.append("/".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"\nmedians of {args.runs} runs, seconds (load average before / after: "
          f"{' / '.join(loads)})")
    header = (f"{'agent':<9} {'rio chat':>9} {'bare':>6} {'ratio':>6} {'+Rio':>5} | "
              f"{'rio: before':>11} {'start':>6} {'prompt':>6} {'after':>6} | "
              f"{'bare: start':>11} {'prompt':>6} {'stop':>5}")
    print(header)
    print("-" * len(header))
    for agent, got in results.items():
        rio, bare = got["rio"], got["bare"]
        rw, bw = median(rio, "wall_s"), median(bare, "wall_s")
        print(f"{agent:<9} {rw:>9.2f} {bw:>6.2f} {rw / bw:>5.2f}x {rw - bw:>5.2f} | "
              f"{median(rio, 'before_turn_s'):>11.2f} {median(rio, 'to_session_s'):>6.2f} "
              f"{median(rio, 'session_to_end_s'):>6.2f} {median(rio, 'after_turn_s'):>6.2f} | "
              f"{median(bare, 'started_s'):>11.2f} {median(bare, 'prompt_s'):>6.2f} "
              f"{median(bare, 'stop_s'):>5.2f}")
    print("\nrio: before = `rio chat` started → agent.turn started on the bus; start = → "
          "agent.session (the session process and the agent up, session/new answered); "
          "prompt = → the turn's end (the prompt, Rio's tool through the gate, applied); "
          "after = → `rio chat` exited.\nbare: start = spawn → session/new answered; prompt = "
          "session/prompt → its answer; stop = stdin closed + SIGTERM → exited.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
