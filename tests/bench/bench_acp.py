"""Issue 11's numbers for the ACP client: a one-line turn through :class:`AcpClient` against a
bare SDK client driving the same agent and model server in the same run (goal ≤ 1.1×), and
Stop → the agent and its helpers gone (goal ≤ the graces + 0.5 s).

``python -m tests.bench acp [--quick]``. The agent is claude-agent-acp when it is installed
(``ACP_AGENTS_PREFIX``, default /tmp/acp-agents; a loopback Anthropic server answers), else the
fake ACP agent of the tests. Turns of the two clients are interleaved, so the box's drift
(other processes, CPU frequency) hits both alike.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, connect_to_agent, text_block
from acp.schema import ClientCapabilities

from actors.agent.acp_process import AGENT_GRACES, ProcessControlPort
from rio.acp.client import AcpClient, AcpSettings
from tests.bench.common import Row, percentiles
from tests.fakes.model_servers import FakeModelServer, anthropic_text

PREFIX = Path(os.environ.get("ACP_AGENTS_PREFIX", "/tmp/acp-agents")) / "node_modules"
CLAUDE = PREFIX / "@zed-industries" / "claude-agent-acp" / "dist" / "index.js"
FAKE = Path(__file__).resolve().parent.parent / "fakes" / "acp_agent.py"


class _Quiet:
    """The bare client: takes updates, asks nothing."""

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        pass


class _Owner:
    def publish(self, topic: str, data: Any) -> None:
        pass

    async def read_text(self, path: str) -> str:
        return ""

    async def propose_write(self, path: str, content: str) -> Any:
        raise NotImplementedError

    async def ask_permission(self, question: Any) -> str | None:
        return None


async def _measure(argv: tuple[str, ...], env: dict[str, str], root: str,
                   turns: int) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env, cwd=root, start_new_session=True,
        limit=16 << 20)
    client = AcpClient(AcpSettings(argv, Path(root), env), _Owner(), ProcessControlPort())
    try:
        bare = connect_to_agent(_Quiet(), proc.stdin, proc.stdout)
        await bare.initialize(protocol_version=PROTOCOL_VERSION,
                              client_capabilities=ClientCapabilities())
        session = (await bare.new_session(cwd=root, mcp_servers=[])).session_id
        await client.start()
        await client.new_session()
        bare_s, rio_s = [], []
        for i in range(turns):
            pair = [("bare", bare_s), ("rio", rio_s)]
            for name, samples in (pair if i % 2 == 0 else pair[::-1]):
                t0 = time.perf_counter()
                if name == "bare":
                    await bare.prompt(session_id=session, prompt=[text_block("hi")])
                else:
                    out = await client.prompt("hi")
                    assert out.status == "done", out
                samples.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        stop = await client.close()
        return {"bare": bare_s, "rio": rio_s, "stop_s": time.perf_counter() - t0,
                "stop": stop}
    finally:
        await client.close()
        if proc.returncode is None:
            proc.terminate()
            await proc.wait()


def run(quick: bool = False) -> list[Row]:
    turns = 10 if quick else 40
    home = tempfile.mkdtemp(prefix="rio-bench-acp-")
    root = tempfile.mkdtemp(prefix="rio-bench-acp-root-")
    server = None
    try:
        if CLAUDE.exists() and shutil.which("node"):
            server = FakeModelServer([lambda r: anthropic_text("Hello ", "there")]
                                     * (4 * turns + 20)).start()
            argv: tuple[str, ...] = ("node", str(CLAUDE))
            env = {"HOME": home, "PATH": os.environ.get("PATH", ""),
                   "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test"}
            agent = "claude-agent-acp"
        else:
            script = json.dumps({"on_eof": "stay", "default_turn": [{"text": "Hello there"}]})
            argv = (sys.executable, str(FAKE), script)
            env = {"HOME": home, "PATH": os.environ.get("PATH", "")}
            agent = "fake agent"
        got = asyncio.run(_measure(argv, env, root, turns))
    finally:
        if server is not None:
            server.close()
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
    bare, rio = percentiles(got["bare"]), percentiles(got["rio"])
    ratio = rio["p50"] / bare["p50"]
    graces = AGENT_GRACES["stdin_grace"] + AGENT_GRACES["term_grace"]
    stop = got["stop"]
    return [
        Row("acp", f"one-line turn through AcpClient ({agent})", rio["p50"] * 1e3, "ms",
            floor=bare["p50"] * 1e3, goal="≤ 1.1× a bare SDK client", ok=ratio <= 1.1,
            extra={"rio": rio, "bare": bare}),
        Row("acp", f"Stop → agent and helpers gone ({agent}, {stop.how})",
            got["stop_s"] * 1e3, "ms", goal=f"≤ graces (to TERM {graces} s) + 0.5 s",
            ok=got["stop_s"] <= graces + 0.5 and not stop.survivors,
            extra={"survivors": list(stop.survivors)}),
    ]


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
