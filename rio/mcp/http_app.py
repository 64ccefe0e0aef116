"""Rio's MCP endpoint on the official ``mcp`` SDK: a Streamable HTTP app for 127.0.0.1.

The app (built here; the endpoint process runs it, actors/agent/mcp_endpoint.py) serves Rio's
tools (rio/mcp/tools.py) to every ACP agent of the instance, one conversation per bearer
token (ADR-0034):

* **Stateful, SSE responses** (the SDK's default): its JSON-response mode costs ~44 ms a call.
* **Host and Origin checks**: the SDK's DNS-rebinding protection for 127.0.0.1 (a web page in
  the user's browser cannot reach the endpoint through a name that resolves to loopback).
* **Bearer tokens, checked by the SDK's token verifier** (:class:`ConversationTokens`): a token
  is the 0600 token file of one conversation (rio/mcp/entry.py), written by its session
  process before ``session/new`` and removed when the conversation's agent ends, so a revoked
  token is refused at once. No OAuth metadata is offered: a wrong token is a plain 401.
* **Each call names its conversation by its own request's token**, never by what the MCP
  session was opened with, and an MCP session stays with the conversation that opened it
  (another conversation's token on it is refused).
* **The stdio fallback's calls** (``rio mcp``, in the agent's box, no bus client: ADR-0038)
  come as plain JSON on ``POST /rio/stdio`` with the same bearer tokens (:class:`StdioCalls`).
* **Every call is forwarded to the conversation's running turn** (``session.mcp_call`` to its
  session process, which runs it through the gate); a cancelled call (the agent's
  ``notifications/cancelled``, or its connection gone) sends ``session.mcp_cancel``, so its
  question to the user closes and nothing is applied.

Importing this module imports the SDK (about 580 modules, ~1 s): only the endpoint process
does, never the window, the core or an agent session (tests/runtime/test_start_path_imports.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import mcp.types as types
from mcp.server import Server
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from rio.mcp.entry import conversation_of_token, read_token, token_path
from rio.mcp.tools import TOOLS
from rio.protocol.errors import AgentError, AuthError, RioError

log = logging.getLogger("rio.mcp")

PATH = "/mcp"
INSTRUCTIONS = ("Rio's editor tools: reads see unsaved text; writes are proposals the user "
                "reviews.")
#: How long one call may take: a question to the user waits up to 4 minutes.
CALL_TIMEOUT_S = 240.0 + 120.0
#: While a call waits (for the user's answer to a proposal), a progress notification this
#: often when the agent asked for progress: opencode cuts an MCP call at 60 s unless progress
#: resets its clock (observed with opencode 1.18.33; a proposal approved after 75 s was lost).
PROGRESS_EVERY_S = float(os.environ.get("RIO_MCP_PROGRESS_S") or 15.0)


class SessionPort(Protocol):
    """The bus, as the app sees it: a request to a conversation's session process."""

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any: ...

    def tell(self, op: str, args: Mapping[str, Any]) -> None:
        """Send a request whose answer nobody waits for (a cancellation)."""
        ...


class ConversationTokens:
    """The SDK's token verifier: a bearer token is valid while it is a conversation's current
    token; the conversation is the access token's ``client_id``.

    Every request is verified (the SDK's middleware runs per HTTP request), so a token found
    once is remembered with its file's identity, and a later request costs one ``stat`` on the
    loop — a removed or rewritten file (the conversation ended, a new agent session) is a miss
    and the folder is read again, off the loop."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._known: dict[str, tuple[str, tuple[int, int]]] = {}

    async def verify_token(self, token: str) -> AccessToken | None:
        conversation = self._remembered(token)
        if conversation is None:
            conversation, identity = await asyncio.get_running_loop().run_in_executor(
                None, self._look_up, token)
            if conversation is not None and identity is not None:   # kept on the loop only
                while len(self._known) >= 256:
                    del self._known[next(iter(self._known))]
                self._known[token] = (conversation, identity)
        if conversation is None:
            log.info("a request with an unknown or revoked token was refused")
            return None
        return AccessToken(token=token, client_id=conversation, scopes=[])

    def _remembered(self, token: str) -> str | None:
        known = self._known.get(token)
        if known is None:
            return None
        conversation, identity = known
        if _identity(token_path(self.root, conversation)) != identity:
            del self._known[token]      # revoked or replaced since
            return None
        return conversation

    def _look_up(self, token: str) -> tuple[str | None, tuple[int, int] | None]:
        """Off the loop: the conversation of ``token`` and its file's identity."""
        import hmac
        conversation = conversation_of_token(self.root, token)
        if conversation is None:
            return None, None
        path = token_path(self.root, conversation)
        identity = _identity(path)          # taken before the read: a rewrite in between
        current = read_token(path)          # shows in the read, and nothing is remembered
        if current is None or not hmac.compare_digest(current.encode("ascii", "replace"),
                                                      token.encode("utf-8", "replace")):
            return conversation, None
        return conversation, identity


def _identity(path: Path) -> tuple[int, int] | None:
    """(inode, mtime_ns) of a token file, None when it is gone: a rewrite changes it."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def tool_list() -> list[types.Tool]:
    """Rio's tools with their MCP annotations (read-only / destructive hints)."""
    return [types.Tool(name=t.name, title=t.title, description=t.description,
                       input_schema=dict(t.input_schema),
                       annotations=types.ToolAnnotations(
                           title=t.title, read_only_hint=t.read_only,
                           destructive_hint=t.destructive, idempotent_hint=t.read_only,
                           open_world_hint=False))
            for t in TOOLS]


def _text_result(out: Mapping[str, Any], error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(out, ensure_ascii=False))],
        structured_content=None if error else dict(out), is_error=error)


def _refusal(err: RioError) -> types.CallToolResult:
    text = f"Refused ({err.kind}): {err.message} {err.next}".strip()
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=True)


class RioTools:
    """The handlers: ``tools/list`` and ``tools/call`` (forwarded to the conversation)."""

    def __init__(self, port: SessionPort) -> None:
        self.port = port
        self.tools = tool_list()
        #: MCP session id → the conversation that opened it
        self.sessions: dict[str, str] = {}
        self._ids = 0

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    def conversation_of(self, ctx: Any) -> str | None:
        """The conversation this request's own bearer token names (the SDK's middleware put
        its access token on the request), held to the MCP session it came on."""
        request = getattr(ctx, "request", None)
        user = getattr(request, "user", None) if request is not None else None
        token = getattr(user, "access_token", None)
        conversation = getattr(token, "client_id", None)
        if not isinstance(conversation, str):
            return None
        session = request.headers.get("mcp-session-id") if request is not None else None
        if session:
            owner = self.sessions.setdefault(session, conversation)
            while len(self.sessions) > 1024:
                del self.sessions[next(iter(self.sessions))]
            if owner != conversation:
                log.warning("an MCP session of one conversation was used with another's token")
                return None
        return conversation

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams
                        ) -> types.CallToolResult:
        conversation = self.conversation_of(ctx)
        if conversation is None:
            return _refusal(AuthError("bad_token", "This request carries no valid token for "
                                      "its conversation.", "Rio's tools work only for an agent "
                                      "Rio started."))
        self._ids += 1
        call = f"http-{os.getpid()}-{self._ids}"
        args = {"conversation": conversation, "tool": params.name,
                "args": dict(params.arguments or {}), "call": call}
        forward = asyncio.ensure_future(self.port.call("session.mcp_call", args,
                                                       timeout=CALL_TIMEOUT_S))
        try:
            got = await _with_progress(forward, ctx)
        except asyncio.CancelledError:
            # notifications/cancelled, or the agent went: close the call's question
            forward.cancel()
            self.port.tell("session.mcp_cancel", {"conversation": conversation, "call": call})
            raise
        except RioError as err:
            if err.kind == "bus.no_route":
                err = AgentError("outside_turn", "No turn is running in this "
                                 "conversation.", "Rio's tools answer only while Rio is "
                                 "waiting for your reply to the user's message.")
            return _refusal(err)
        result = got.get("result") if isinstance(got, Mapping) else got
        return _text_result(result if isinstance(result, Mapping) else {"result": result})


async def _with_progress(forward: asyncio.Future[Any], ctx: Any) -> Any:
    """``forward``'s result; while it waits, ``notifications/progress`` every
    :data:`PROGRESS_EVERY_S` (a no-op when the agent gave no progress token)."""
    beats = 0
    while True:
        done, _ = await asyncio.wait({forward}, timeout=PROGRESS_EVERY_S)
        if done:
            return forward.result()
        beats += 1
        try:
            await ctx.session.report_progress(beats, None,
                                              "waiting for the user's answer in Rio")
        except Exception:  # progress is a courtesy; the call goes on
            log.debug("progress notification failed", exc_info=True)


class StdioCalls:
    """``POST /rio/stdio``: the calls of ``rio mcp``, the stdio fallback (rio/mcp/stdio_link.py),
    which runs in the agent's box and so is no bus client. A JSON body ``{op, args}``:
    ``mcp.call {tool, args, call}`` or ``mcp.cancel {call}``; the conversation is the one the
    bearer token names (checked as the MCP route's are), the answer ``{result}`` or
    ``{error}`` (a RioError's wire form). Host and Origin are checked like the SDK's
    DNS-rebinding protection does: only ``127.0.0.1``/``localhost`` at the endpoint's port,
    and no browser (an ``Origin``)."""

    def __init__(self, tokens: ConversationTokens, port: SessionPort, url: str) -> None:
        from urllib.parse import urlsplit
        self.tokens = tokens
        self.port = port
        at = urlsplit(url).port
        self.hosts = {f"127.0.0.1:{at}", f"localhost:{at}"}

    async def handle(self, request: Any) -> Any:
        from starlette.responses import JSONResponse
        if request.headers.get("host") not in self.hosts or "origin" in request.headers:
            return JSONResponse({"error": {"kind": "auth.forbidden", "message": "Not from "
                                           "this machine's Rio."}}, status_code=403)
        auth = request.headers.get("authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        access = await self.tokens.verify_token(token) if token else None
        if access is None:
            return JSONResponse({"error": AuthError(
                "bad_token", "This request carries no valid token for its conversation.",
                "Rio's tools work only for an agent Rio started.").to_wire()},
                status_code=401)
        conversation = access.client_id
        try:
            body = await request.json()
        except ValueError:
            body = None
        op = body.get("op") if isinstance(body, dict) else None
        args = body.get("args") if isinstance(body, dict) else None
        if op not in ("mcp.call", "mcp.cancel") or not isinstance(args, dict):
            return JSONResponse({"error": {"kind": "protocol.bad_args", "message":
                                           "Expected {op: mcp.call|mcp.cancel, args}."}},
                                status_code=400)
        named = args.get("conversation")
        if named is not None and named != conversation:
            log.warning("a stdio call named another conversation than its token's")
            return JSONResponse({"error": AuthError(
                "bad_token", "This token belongs to another conversation.",
                "Rio's tools work only for an agent Rio started.").to_wire()},
                status_code=401)
        try:
            result = await (self._call(conversation, args) if op == "mcp.call" else
                            self._cancel(conversation, args))
        except RioError as err:
            return JSONResponse({"error": err.to_wire()})
        return JSONResponse({"result": result})

    async def _call(self, conversation: str, args: Mapping[str, Any]) -> Any:
        tool = args.get("tool")
        if not isinstance(tool, str) or not tool:
            raise AgentError("tool_refused", "A call names no tool.", "Name one of Rio's tools.")
        forward: dict[str, Any] = {"conversation": conversation, "tool": tool,
                                   "args": dict(args.get("args") or {})}
        if args.get("call"):
            forward["call"] = f"stdio-{conversation}-{args['call']}"
        try:
            return await self.port.call("session.mcp_call", forward, timeout=CALL_TIMEOUT_S)
        except RioError as err:
            if err.kind != "bus.no_route":
                raise
            raise AgentError("outside_turn", "No turn is running in this conversation.",
                             "Rio's tools answer only while Rio is waiting for your reply to "
                             "the user's message.") from None

    async def _cancel(self, conversation: str, args: Mapping[str, Any]) -> Any:
        try:
            return await self.port.call("session.mcp_cancel", {
                "conversation": conversation,
                "call": f"stdio-{conversation}-{args.get('call')}"}, timeout=5.0)
        except RioError:
            return {"cancelled": False}


def build_app(root: Path, port: SessionPort, url: str) -> Any:
    """The Starlette app of the endpoint (``url``: where it listens, for the SDK's settings):
    the MCP route, and the stdio fallback's (:class:`StdioCalls`)."""
    from starlette.routing import Route

    from rio.mcp.stdio_link import STDIO_PATH
    handlers = RioTools(port)
    tokens = ConversationTokens(root)
    server: Server[Any] = Server("rio", version="1", instructions=INSTRUCTIONS,
                                 on_list_tools=handlers.list_tools,
                                 on_call_tool=handlers.call_tool)
    app = server.streamable_http_app(
        streamable_http_path=PATH, host="127.0.0.1",
        auth=AuthSettings(issuer_url=url, resource_server_url=None),  # type: ignore[arg-type]
        token_verifier=tokens)
    app.router.routes.append(Route(STDIO_PATH, StdioCalls(tokens, port, url).handle,
                                   methods=["POST"]))
    return app


__all__ = ["CALL_TIMEOUT_S", "ConversationTokens", "PATH", "RioTools", "build_app", "tool_list"]
