"""``rio mcp``: the stdio MCP server an external (ACP) agent starts to use Rio's tools.

It is a thin bridge (ADR-0025): MCP over stdio on one side, Rio's MCP endpoint over HTTP on
127.0.0.1 on the other (rio/mcp/stdio_link.py: ``rio mcp`` runs in the agent's box, where there
is no bus to reach, ADR-0038). Each ``tools/call`` becomes one ``mcp.call {conversation,
token, tool, args, call}`` carrying the conversation's token (handed to this process in its
environment by the agent, from the ``mcpServers`` entry) and an id for the call unique to this
process (``call``, ``stdio-<pid>-<n>``); the endpoint checks the token and forwards the call
to the conversation's running turn, which asks the gate and runs the tool. A refusal comes back to the agent as a tool result with ``isError`` and words it can act
on. No ``agent`` name is sent: the core keys "always allow" on the agent Rio started for the
conversation, never on a name its caller gives (rio/protocol/ops.py, ``mcp.call``).

The MCP side is the few methods a tools-only server needs, on the standard library —
``initialize`` (the protocol version negotiated as the spec says), ``ping``, ``tools/list``,
``tools/call``, anything else "method not found" — one JSON-RPC message per line on
stdin/stdout, held to the spec (2025-06-18 / 2025-11-25) where a client can tell:

* a request's id is a string or a number; one with ``"id": null`` (or a bool, a list, an
  object) is refused with -32600 Invalid Request, id null, and never served;
* there is one page of tools: ``tools/list`` with any ``cursor`` is -32602 "unknown cursor"
  (the pagination rules: an unknown cursor is invalid params);
* ``notifications/cancelled {requestId}`` cancels the request with that id if it is still being
  served: its task is cancelled, it is never answered (the receiver should not answer a
  cancelled request), and the instance is told with ``mcp.cancel {conversation, token, call}``,
  which closes the call's open question to the user and applies nothing (before, a cancelled
  ``propose_edit`` stayed open up to 240 s). An unknown or finished id is ignored; other
  notifications are not answered;
* stdin's end is the client going away (the stdio transport's shutdown): every request still
  served is cancelled as above — an ``mcp.cancel`` for each call in flight, waited for
  :data:`CLOSE_GRACE_S` at most since the endpoint may be unreachable — and the process ends within
  a second (it took ~10 s, and cancelled nothing, waiting for calls no one would read).

The ``mcp`` SDK is not imported: ``import mcp`` (2.x) loads its whole client, server, HTTP and
two protocol versions' types, 5.4 s of a 5.5 s start on a loaded machine (ADR-0025 has the
numbers); the SDK's own client drives this server in the tests (tests/mcp/test_mcp_endpoint.py).

Tool calls are served at once, each its own request to the endpoint: a ``propose_edit``
waiting minutes for the user must not hold up the agent's ``read_buffer`` meanwhile. A call
blocks its HTTP connection, so the calls run on a small pool of worker threads, each with a
connection of its own made when the worker starts — the first while ``initialize`` is
answered (actors/bus/call_pool.py; `rio mcp` passes it in; rio/ starts
no threads). An ``mcp.cancel`` never waits behind the calls in flight (``submit_now``): it is
sent to end one of them. Answers go out as each call ends, each under its JSON-RPC id.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from rio.mcp.entry import QUESTION_TIMEOUT_S
from rio.mcp.tools import TOOLS
from rio.protocol.errors import RioError

#: Protocol versions this server speaks (the tools part is the same in all of them); the
#: client's is answered when listed, else the newest (the spec's negotiation).
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
INSTRUCTIONS = ("Rio's editor tools: reads see unsaved text; writes are proposals the user "
                "reviews.")
#: The longest line read from the agent (a tools/call's arguments carry whole file texts).
LINE_LIMIT = 64 << 20

#: How long one tool call may take at the endpoint: a question to the user waits up to 4 minutes.
CALL_TIMEOUT_S = QUESTION_TIMEOUT_S + 120.0
#: How long one ``mcp.cancel`` may take (the session answers it at once).
CANCEL_TIMEOUT_S = 5.0
#: At stdin's end, how long the ``mcp.cancel`` of the calls in flight are waited for: the
#: process must end within a second of its client going, reachable endpoint or not.
CLOSE_GRACE_S = 0.5

Send = Callable[[dict[str, Any]], None]


class CoreLink:
    """The endpoint's side, for the asyncio loop: each call is one future of ``calls`` — the pool of
    worker threads with a connection each (actors/bus/call_pool.py, given by `rio mcp`: rio/
    starts no threads) — so calls run at once. A cancelled ``call`` cancels its job if it is
    still queued (asyncio.wrap_future passes the cancel on); one already sent is the caller's
    to cancel in the core (``mcp.cancel``)."""

    def __init__(self, calls: Any) -> None:
        self.calls = calls

    async def call(self, op: str, args: dict[str, Any], timeout: float) -> Any:
        return await asyncio.wrap_future(self.calls.submit(op, args, timeout))

    async def call_now(self, op: str, args: dict[str, Any], timeout: float) -> Any:
        """A call that must not wait behind the calls in flight (it is sent to end one)."""
        return await asyncio.wrap_future(self.calls.submit_now(op, args, timeout))

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


def valid_id(ident: Any) -> bool:
    """MCP's ``RequestId`` is a string or a number and, unlike base JSON-RPC, never null
    (spec 2025-06-18, "Requests"); a JSON ``true`` is a bool here, not a number."""
    return isinstance(ident, str) or (isinstance(ident, (int, float))
                                      and not isinstance(ident, bool))


class McpStdioServer:
    """The MCP methods of a tools-only server. :meth:`receive` takes each message off the wire
    (a request is served in a task of its own, which ``notifications/cancelled`` may cancel);
    :meth:`handle` is the answer to one message; :meth:`close` is stdin's end."""

    def __init__(self, link: CoreLink, conversation: str, token: str) -> None:
        self.link = link
        self.conversation = conversation
        self.token = token
        self.tools = tool_list()
        self.serving: dict[Any, asyncio.Task[None]] = {}   # JSON-RPC id → its task
        self.tasks: set[asyncio.Task[Any]] = set()          # held: asyncio keeps weak refs
        self.cancels: set[asyncio.Task[Any]] = set()        # mcp.cancel requests under way
        self.call_ids = (f"stdio-{os.getpid()}-{n}" for n in itertools.count(1))

    # --- the wire -------------------------------------------------------------------------------
    def receive(self, message: Any, send: Send) -> None:
        """Serve one message read off stdin in a task of its own (the answer goes out with
        ``send`` when it ends); a request's task is kept under its id for
        ``notifications/cancelled``."""
        task = self._keep(asyncio.ensure_future(self._answer(message, send)))
        ident = message.get("id") if isinstance(message, dict) else None
        if _is_request(message) and valid_id(ident):
            self.serving[ident] = task
            task.add_done_callback(lambda done: self._served(ident, done))

    def cancel(self, ident: Any) -> None:
        """The client's ``notifications/cancelled``: the request ``ident`` still served is
        cancelled and never answered; an unknown or finished id is ignored (the spec: the
        request may have ended, or the notice crossed its answer)."""
        task = self.serving.pop(ident, None) if valid_id(ident) else None
        if task is not None:
            task.cancel()

    async def close(self, grace: float = CLOSE_GRACE_S) -> None:
        """stdin ended: the client is gone. Requests answered without the endpoint go out first (one
        turn of the loop: e.g. ``initialize`` written just before the end); every one still
        served is then cancelled, its ``mcp.call`` with an ``mcp.cancel``, and those are waited
        for ``grace`` seconds in all at most (the endpoint may be unreachable; each is best effort)."""
        await asyncio.sleep(0)
        deadline = asyncio.get_running_loop().time() + grace
        served = list(self.serving.values())
        for task in served:
            task.cancel()
        if served:   # each runs its except-clause (which starts its mcp.cancel) and ends
            await asyncio.wait(served, timeout=grace)
        left = deadline - asyncio.get_running_loop().time()
        if self.cancels and left > 0:
            await asyncio.wait(set(self.cancels), timeout=left)

    def _served(self, ident: Any, task: asyncio.Task[None]) -> None:
        if self.serving.get(ident) is task:
            del self.serving[ident]

    def _keep(self, task: asyncio.Task[Any]) -> asyncio.Task[Any]:
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _answer(self, message: Any, send: Send) -> None:
        """Answer one message; a cancelled request (CancelledError passes) is not answered."""
        try:
            reply = await self.handle(message)
        except Exception as exc:  # noqa: BLE001 -- every request gets an answer
            ident = message.get("id") if isinstance(message, dict) else None
            reply = _error(ident if valid_id(ident) else None, -32603, f"Internal error: {exc}")
        if reply is not None:
            send(reply)

    # --- the methods ----------------------------------------------------------------------------
    async def handle(self, message: Any) -> dict[str, Any] | None:
        """The answer to one JSON-RPC message (None for a notification or a response)."""
        if not _is_request(message):
            if isinstance(message, dict) and "method" not in message:
                return None   # a response to a request of ours: we send none
            ident = message.get("id") if isinstance(message, dict) else None
            return _error(ident if valid_id(ident) else None, -32600, "Invalid request")
        raw = message.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if "id" not in message:
            if message["method"] == "notifications/cancelled":
                self.cancel(params.get("requestId"))
            return None       # notifications/initialized, cancelled, …: nothing to answer
        if not valid_id(message["id"]):
            return _error(None, -32600, "Invalid request: an id is a string or a number, "
                          "never null")
        return await self.method(message["id"], message["method"], params)

    async def method(self, ident: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The answer to the request ``ident`` (its envelope checked by :meth:`handle`)."""
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
            if "cursor" in params:   # one page, no nextCursor: no cursor is ours
                return _error(ident, -32602, "Invalid params: unknown cursor")
            return _result(ident, {"tools": self.tools})
        if method == "tools/call":
            if not isinstance(params.get("name"), str):
                return _error(ident, -32602, "tools/call needs a tool name")
            arguments = params.get("arguments")
            return _result(ident, await self.call_tool(
                params["name"], arguments if isinstance(arguments, dict) else {}))
        return _error(ident, -32601, f"Method not found: {method}")

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        call = next(self.call_ids)
        args = {"conversation": self.conversation, "token": self.token, "tool": name,
                "args": dict(arguments), "call": call}
        try:
            got = await self.link.call("mcp.call", args, CALL_TIMEOUT_S)
        except asyncio.CancelledError:
            self._cancel_in_core(call)
            raise
        except RioError as err:
            text = f"Refused ({err.kind}): {err.message} {err.next}"
            return {"content": [{"type": "text", "text": text}], "isError": True}
        result = got.get("result") if isinstance(got, dict) else got
        out = result if isinstance(result, dict) else {"result": result}
        return {"content": [{"type": "text", "text": json.dumps(out, ensure_ascii=False)}],
                "structuredContent": out, "isError": False}

    def _cancel_in_core(self, call: str) -> None:
        """Tell the instance the call ``call`` is cancelled (its question closes, nothing is
        applied), in a task of its own: the cancelled request's task is ending. Best effort:
        an unreachable bus or a core that no longer knows the call changes nothing here."""
        task = self._keep(asyncio.ensure_future(self.link.call_now(
            "mcp.cancel", {"conversation": self.conversation, "token": self.token,
                           "call": call}, CANCEL_TIMEOUT_S)))
        self.cancels.add(task)
        task.add_done_callback(_ignore_outcome)
        task.add_done_callback(self.cancels.discard)


def _ignore_outcome(task: asyncio.Task[Any]) -> None:
    """Retrieve a best-effort task's failure, so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


def _is_request(message: Any) -> bool:
    """A JSON-RPC 2.0 request or notification (the id is checked apart)."""
    return isinstance(message, dict) and message.get("jsonrpc") == "2.0" and \
        isinstance(message.get("method"), str)


def _result(ident: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _writer(out: BinaryIO) -> Send:
    """Write each answer whole, one per line; a client that has gone (a closed pipe) is no
    reason to fail the request's task."""
    def send(answer: dict[str, Any]) -> None:
        try:
            out.write(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
                      + b"\n")
            out.flush()
        except (OSError, ValueError):   # BrokenPipeError; ValueError: the file is closed
            pass
    return send


async def run_stdio(server: McpStdioServer) -> None:
    """Serve stdin/stdout until stdin ends; requests run concurrently (a tools/call may wait
    minutes for the user while the agent pings); at the end, :meth:`McpStdioServer.close`."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    send = _writer(sys.stdout.buffer)
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
        server.receive(message, send)
    await server.close()


def serve(conversation: str, token: str, make_calls: Callable[[], Any]) -> int:
    """Serve one agent with the conversation's ``token``; ``make_calls()`` gives the pool the
    endpoint's calls run on (it starts connecting at once)."""
    link = CoreLink(make_calls())
    try:
        asyncio.run(run_stdio(McpStdioServer(link, conversation, token)))
    finally:
        link.close()
    return 0
