"""``rio mcp``: the stdio MCP server an external (ACP) agent starts to use Rio's tools.

It is a thin bridge (ADR-0025): MCP over stdio on one side, a bus client of the running
instance on the other. Each ``tools/call`` becomes one ``mcp.call`` request carrying the
conversation's token, read once from its 0600 file (never from argv or the environment); the
core's ``mcp`` actor checks the token, asks the gate and runs the tool. A refusal comes back
to the agent as a tool result with ``isError`` and words it can act on.

The MCP side is the few methods a tools-only server needs, on the standard library —
``initialize`` (the protocol version negotiated as the spec says), ``ping``, ``tools/list``,
``tools/call``, notifications ignored, anything else "method not found" — one JSON-RPC message
per line on stdin/stdout. The ``mcp`` SDK is not imported: ``import mcp`` (2.x) loads its
whole client, server, HTTP and two protocol versions' types, 5.4 s of a 5.5 s start on a
loaded machine (ADR-0025 has the numbers); the SDK's own client drives this server in the
tests (tests/test_mcp_endpoint.py).

Tool calls are served at once, each its own bus request: a ``propose_edit`` waiting minutes
for the user must not hold up the agent's ``read_buffer`` meanwhile. A bus connection is
single-thread (a ZeroMQ socket belongs to one thread), so the calls run on a small pool of
worker threads, each with a connection of its own made when the worker starts — the first
while ``initialize`` is answered (actors/bus/call_pool.py; `rio mcp` passes it in). Answers go
out as each call ends, each under its JSON-RPC id.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rio.mcp.entry import QUESTION_TIMEOUT_S, read_token
from rio.mcp.tools import TOOLS
from rio.protocol.errors import AuthError, RioError

#: Protocol versions this server speaks (the tools part is the same in all of them); the
#: client's is answered when listed, else the newest (the spec's negotiation).
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
INSTRUCTIONS = ("Rio's editor tools: reads see unsaved text; writes are proposals the user "
                "reviews.")
#: The longest line read from the agent (a tools/call's arguments carry whole file texts).
LINE_LIMIT = 64 << 20

#: How long one tool call may take over the bus: a question to the user waits up to 4 minutes.
CALL_TIMEOUT_S = QUESTION_TIMEOUT_S + 120.0


class CoreLink:
    """The bus side, for the asyncio loop: each call is one future of ``calls`` — the pool of
    worker threads with a connection each (actors/bus/call_pool.py, given by `rio mcp`: rio/
    starts no threads) — so calls run at once."""

    def __init__(self, calls: Any) -> None:
        self.calls = calls

    async def call(self, op: str, args: dict[str, Any], timeout: float) -> Any:
        return await asyncio.wrap_future(self.calls.submit(op, args, timeout))

    def close(self) -> None:
        self.calls.close()


def tool_list() -> list[dict[str, Any]]:
    """``tools/list``'s tools, with the MCP annotations (read-only / destructive hints)."""
    return [{"name": t.name, "title": t.title, "description": t.description,
             "inputSchema": dict(t.input_schema),
             "annotations": {"title": t.title, "readOnlyHint": t.read_only,
                             "destructiveHint": t.destructive, "idempotentHint": t.read_only,
                             "openWorldHint": False}}
            for t in TOOLS]


class McpStdioServer:
    """The MCP methods of a tools-only server; :meth:`handle` answers one message."""

    def __init__(self, link: CoreLink, conversation: str, token: str, agent: str) -> None:
        self.link = link
        self.conversation = conversation
        self.token = token
        self.agent = agent
        self.tools = tool_list()

    async def handle(self, message: Any) -> dict[str, Any] | None:
        """The answer to one JSON-RPC message (None for a notification)."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or \
                not isinstance(message.get("method"), str):
            if isinstance(message, dict) and "method" not in message:
                return None   # a response to a request of ours: we send none
            return _error(message.get("id") if isinstance(message, dict) else None,
                          -32600, "Invalid request")
        if "id" not in message:
            return None       # notifications/initialized, cancelled, …: nothing to answer
        ident, method = message["id"], message["method"]
        raw = message.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
            return _result(ident, {"protocolVersion": version,
                                   "capabilities": {"tools": {"listChanged": False}},
                                   "serverInfo": {"name": "rio", "version": "1"},
                                   "instructions": INSTRUCTIONS})
        if method == "ping":
            return _result(ident, {})
        if method == "tools/list":
            return _result(ident, {"tools": self.tools})
        if method == "tools/call":
            if not isinstance(params.get("name"), str):
                return _error(ident, -32602, "tools/call needs a tool name")
            arguments = params.get("arguments")
            return _result(ident, await self.call_tool(
                params["name"], arguments if isinstance(arguments, dict) else {}))
        return _error(ident, -32601, f"Method not found: {method}")

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        args = {"conversation": self.conversation, "token": self.token, "tool": name,
                "args": dict(arguments), "agent": self.agent}
        try:
            got = await self.link.call("mcp.call", args, CALL_TIMEOUT_S)
        except RioError as err:
            text = f"Refused ({err.kind}): {err.message} {err.next}"
            return {"content": [{"type": "text", "text": text}], "isError": True}
        result = got.get("result") if isinstance(got, dict) else got
        out = result if isinstance(result, dict) else {"result": result}
        return {"content": [{"type": "text", "text": json.dumps(out, ensure_ascii=False)}],
                "structuredContent": out, "isError": False}


def _result(ident: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


async def run_stdio(server: McpStdioServer) -> None:
    """Serve stdin/stdout until stdin ends; requests run concurrently (a tools/call may wait
    minutes for the user while the agent pings), answers are written whole, one per line."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer
    tasks: set[asyncio.Task[None]] = set()

    def send(answer: dict[str, Any]) -> None:
        out.write(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
                  + b"\n")
        out.flush()

    async def answer(message: Any) -> None:
        try:
            reply = await server.handle(message)
        except Exception as exc:  # noqa: BLE001 -- every request gets an answer
            reply = _error(message.get("id") if isinstance(message, dict) else None,
                           -32603, f"Internal error: {exc}")
        if reply is not None:
            send(reply)

    while True:
        try:
            line = await reader.readline()
        except (ValueError, asyncio.LimitOverrunError):
            send(_error(None, -32700, f"Parse error: a line longer than {LINE_LIMIT} bytes"))
            break
        if not line:
            break
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            send(_error(None, -32700, "Parse error"))
            continue
        task = asyncio.ensure_future(answer(message))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:   # stdin closed: the calls already made still answer (if anyone reads)
        await asyncio.wait(tasks, timeout=5)


def serve(conversation: str, token_file: Path, make_calls: Callable[[], Any],
          agent: str = "acp") -> int:
    """Serve one agent; ``make_calls()`` gives the pool the bus calls run on (it starts
    connecting at once, so it is made only once the token is read)."""
    token = read_token(token_file)
    if token is None:
        raise AuthError("bad_token", f"There is no token file {token_file} (or it is empty).",
                        "Start the agent from Rio (agent panel or `rio chat --agent`); Rio "
                        "writes the token when it starts the agent's session.")
    link = CoreLink(make_calls())
    try:
        asyncio.run(run_stdio(McpStdioServer(link, conversation, token, agent)))
    finally:
        link.close()
    return 0
