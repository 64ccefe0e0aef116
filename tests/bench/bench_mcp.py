"""Issue 17's numbers for Rio's MCP endpoint (ADR-0034), with the fake ACP agent of the tests:

* a tool call through the endpoint (HTTP → token check → the conversation's running turn →
  the gate → the core's buffers → back), p50 / p99, against a bare `mcp` SDK Streamable HTTP
  server answering the same tool from memory, measured the same way in the same run;
* the first message of a new ACP conversation → its agent's first call of Rio's tools
  answered (session process, agent start, ``session/new`` with the endpoint, the call), with
  the endpoint process not started yet (cold) and already running (warm);
* RSS of Rio's own processes (the agents' excluded) with 1 and 5 idle ACP conversations, and
  what each added conversation costs: the endpoint is one process, not one per agent.

``python -m tests.bench mcp [--quick]``.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from rio.protocol.frames import thaw
from tests.agent_processes import fake_agent_entry
from tests.bench.common import Row, percentiles
from tests.support import RioServer, rio_env, wait_for

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

BARE_SERVER = textwrap.dedent('''
    import sys, uvicorn, mcp.types as types
    from mcp.server import Server
    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name="list_buffers",
                                                       input_schema={"type": "object"})])
    async def call_tool(ctx, params):
        out = {"buffers": []}
        return types.CallToolResult(content=[types.TextContent(type="text", text="{}")],
                                    structured_content=out)
    app = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool) \\
        .streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
''')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class McpClient:
    """A bare HTTP MCP client on one connection: initialize once, then timed tools/call."""

    def __init__(self, url: str, bearer: str | None = None) -> None:
        self.url = url
        self.http = httpx.Client(timeout=30, trust_env=False)
        self.headers = dict(HEADERS)
        if bearer:
            self.headers["Authorization"] = f"Bearer {bearer}"
        reply = self.http.post(url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}})
        reply.raise_for_status()
        self.headers["mcp-session-id"] = reply.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = "2025-06-18"
        self.http.post(url, headers=self.headers,
                       json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.ids = 0

    def call(self, tool: str = "list_buffers") -> str:
        self.ids += 1
        reply = self.http.post(self.url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": self.ids, "method": "tools/call",
            "params": {"name": tool, "arguments": {}}})
        if '"isError":true' in reply.text or reply.status_code != 200:
            raise RuntimeError(f"the call failed: {reply.status_code} {reply.text[:300]}")
        return reply.text

    def close(self) -> None:
        self.http.close()


def rio_rss(server: RioServer) -> int:
    """RSS of Rio's own processes: the supervisor and everything under it but the agents'
    process trees (the fake agent and what it starts)."""
    top = psutil.Process(server.proc.pid)
    total = 0
    for p in [top, *top.children(recursive=True)]:
        try:
            if any("acp_agent.py" in part for part in p.cmdline()) or any(
                    "acp_agent.py" in part for a in p.parents() for part in a.cmdline()):
                continue
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total


class Conversations:
    """The instance's conversations with the fake agent; events seen on one connection."""

    def __init__(self, server: RioServer, script: Path) -> None:
        self.server = server
        self.script = script
        self.conn = server.connect("bench-mcp", subscribe=("agent.",))
        self.events: list[tuple[float, str, dict]] = []
        self.conn.subscribe("agent.", lambda e: self.events.append(
            (time.perf_counter(), e.topic, thaw(e.data))))

    def turn(self, actions: list[dict]) -> tuple[str, str, float]:
        """A new conversation's first message: (conversation, turn, when it was sent)."""
        self.script.write_text(json.dumps({"mcp_http": True, "turns": [actions]}))
        cid = self.conn.call("agent.new", {"agent": "fake"})["conversation"]
        sent = time.perf_counter()
        turn = self.conn.call("agent.send", {"conversation": cid, "text": "go"},
                              timeout=60)["turn"]
        return cid, turn, sent

    def first(self, topic: str, turn: str, timeout: float = 60, **match: Any) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for when, t, data in self.events:
                if t == topic and data.get("turn") == turn and all(
                        data.get(k) == v for k, v in match.items()):
                    return when
            self.conn.wait(0.002)
        raise RuntimeError(f"no {topic} for {turn}")


def run(quick: bool = False) -> list[Row]:
    calls = 200 if quick else 1000
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="riom") as tmpd:
        tmp = Path(tmpd)
        root = tmp / "proj"
        root.mkdir()
        (root / "a.txt").write_text("alpha\n")
        script = tmp / "script.json"
        env = rio_env(tmp)
        config = Path(env["RIO_CONFIG_DIR"])
        config.mkdir(parents=True, exist_ok=True)
        (config / "config.toml").write_text(
            fake_agent_entry(script) + "[agent]\nidle_stop_s = 0\n")
        server = RioServer(root, tmp, env=env).start()
        bare = None
        try:
            convs = Conversations(server, script)
            idle_rss = rio_rss(server)
            # the first ACP conversation: the endpoint starts beside the agent (cold) …
            one_call = [{"mcp": {"tool": "list_buffers"}}, {"text": "ok"}]
            firsts: dict[str, list[float]] = {"cold": [], "warm": []}
            cid, turn, sent = convs.turn(one_call)
            firsts["cold"].append(convs.first("agent.tool_result", turn) - sent)
            convs.first("agent.turn", turn, state="done")
            one_rss = rio_rss(server)
            # … then four more (warm): 5 idle conversations, their agents alive
            for _ in range(4):
                cid, turn, sent = convs.turn(one_call)
                firsts["warm"].append(convs.first("agent.tool_result", turn) - sent)
                convs.first("agent.turn", turn, state="done")
            time.sleep(1.0)       # let the last turn's processes settle before reading RSS
            five_rss = rio_rss(server)
            # a tool call through the endpoint, while a turn waits: the bench is the client
            marker = tmp / "done"
            cid, turn, _ = convs.turn([{"wait_for": str(marker)}, {"text": "ok"}])
            convs.first("agent.turn", turn, state="started")
            os.environ["RIO_STATE_DIR"] = env["RIO_STATE_DIR"]
            from rio.mcp.entry import read_token, token_path
            assert wait_for(lambda: token_path(server.root, cid).exists(), 30)
            token = read_token(token_path(server.root, cid))
            url = server.call("mcp.address")["url"]
            port = free_port()
            bare = subprocess.Popen([sys.executable, "-c", BARE_SERVER, str(port)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            bare_url = f"http://127.0.0.1:{port}/mcp"

            def up() -> bool:
                try:
                    return httpx.get(bare_url, timeout=1).status_code > 0
                except httpx.HTTPError:
                    return False
            assert wait_for(up, 30), "the bare SDK server did not start"
            rio_client, bare_client = McpClient(url, token), McpClient(bare_url)
            rio_times: list[float] = []
            bare_times: list[float] = []
            for client in (rio_client, bare_client):     # warm-up
                for _ in range(20):
                    client.call()
            for _ in range(calls):          # interleaved: the box's drift hits both alike
                for client, times in ((rio_client, rio_times), (bare_client, bare_times)):
                    t0 = time.perf_counter()
                    client.call()
                    times.append(time.perf_counter() - t0)
            rio_client.close()
            bare_client.close()
            marker.write_text("")
            convs.first("agent.turn", turn, state="done")
            convs.conn.close()
        finally:
            if bare is not None:
                bare.terminate()
                bare.wait(10)
            server.stop()
    r, b = percentiles(rio_times), percentiles(bare_times)
    rows.append(Row("mcp", "tool call through Rio's endpoint, p50", r["p50"] * 1e3, "ms",
                    b["p50"] * 1e3, "", None, {"p90": r["p90"] * 1e3}))
    rows.append(Row("mcp", "tool call through Rio's endpoint, p99", r["p99"] * 1e3, "ms",
                    b["p99"] * 1e3, "", None, {"n": r["n"]}))
    rows.append(Row("mcp", "first message → first Rio tool call (cold)",
                    firsts["cold"][0] * 1e3, "ms", None, "", None))
    rows.append(Row("mcp", "first message → first Rio tool call (warm)",
                    statistics.median(firsts["warm"]) * 1e3, "ms", None, "", None,
                    {"all_ms": [round(x * 1e3, 1) for x in firsts["warm"]]}))
    mb = 1 / (1 << 20)
    rows.append(Row("mcp", "RSS of Rio's processes, idle, no conversation", idle_rss * mb,
                    "MB", None, "≤ 150 MB", idle_rss * mb <= 150))
    rows.append(Row("mcp", "RSS of Rio's processes, 1 idle ACP conversation", one_rss * mb,
                    "MB", None))
    rows.append(Row("mcp", "RSS of Rio's processes, 5 idle ACP conversations", five_rss * mb,
                    "MB", None, "", None,
                    {"per_added_conversation_mb": (five_rss - one_rss) * mb / 4}))
    return rows


if __name__ == "__main__":
    from tests.bench.common import print_table
    print_table(run(quick=True))
