"""``rio mcp``: the stdio MCP server an external (ACP) agent starts to use Rio's tools.

It is a thin bridge (ADR-0025): MCP over stdio on one side (the ``mcp`` SDK's low-level
server, imported only here — ``import mcp`` costs about half a second), a bus client of the
running instance on the other. Each ``tools/call`` becomes one ``mcp.call`` request carrying
the conversation's token, read once from its 0600 file (never from argv or the environment);
the core's ``mcp`` actor checks the token, asks the gate and runs the tool. A refusal comes
back to the agent as a tool result with ``isError`` and words it can act on.

The bus connection is used from one worker thread only (a ZeroMQ socket belongs to one
thread); the MCP loop awaits it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from pathlib import Path
from typing import Any

from rio.mcp.entry import QUESTION_TIMEOUT_S, read_token
from rio.mcp.tools import TOOLS
from rio.protocol.errors import AuthError, RioError

#: How long one tool call may take over the bus: a question to the user waits up to 4 minutes.
CALL_TIMEOUT_S = QUESTION_TIMEOUT_S + 120.0


class CoreLink:
    """The bus connection, on a thread of its own."""

    def __init__(self, connect: Any) -> None:
        self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rio-mcp-bus")
        self.conn = self.pool.submit(connect).result()

    async def call(self, op: str, args: dict[str, Any], timeout: float) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.pool, lambda: self.conn.call(op, args, timeout=timeout))

    def close(self) -> None:
        self.pool.submit(self.conn.close).result(timeout=5)
        self.pool.shutdown()


def build_server(link: CoreLink, conversation: str, token: str, agent: str) -> Any:
    import mcp.types as types
    from mcp.server import Server

    tools = [types.Tool(name=t.name, title=t.title, description=t.description,
                        input_schema=dict(t.input_schema),
                        annotations=types.ToolAnnotations(
                            title=t.title, read_only_hint=t.read_only,
                            destructive_hint=t.destructive, idempotent_hint=t.read_only,
                            open_world_hint=False))
             for t in TOOLS]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        args = {"conversation": conversation, "token": token, "tool": params.name,
                "args": dict(params.arguments or {}), "agent": agent}
        try:
            got = await link.call("mcp.call", args, CALL_TIMEOUT_S)
        except RioError as err:
            text = f"Refused ({err.kind}): {err.message} {err.next}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                        is_error=True)
        result = got.get("result") if isinstance(got, dict) else got
        out = result if isinstance(result, dict) else {"result": result}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(out, ensure_ascii=False))],
            structured_content=out)

    return Server("rio", version="1", instructions="Rio's editor tools: reads see unsaved "
                  "text; writes are proposals the user reviews.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


def serve(conversation: str, token_file: Path, connect: Any, agent: str = "acp") -> int:
    token = read_token(token_file)
    if token is None:
        raise AuthError("bad_token", f"There is no token file {token_file} (or it is empty).",
                        "Start the agent from Rio (agent panel or `rio chat --agent`); Rio "
                        "writes the token when it starts the agent's session.")
    link = CoreLink(connect)

    async def main() -> None:
        from mcp.server.stdio import stdio_server
        server = build_server(link, conversation, token, agent)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        asyncio.run(main())
    finally:
        link.close()
    return 0
