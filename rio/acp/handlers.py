"""The agent's requests to Rio: ``fs/*``, ``session/request_permission``, ``terminal/*``.

:class:`AgentRequests` is mixed into :class:`~rio.acp.client.AcpClient` (it uses the client's
state: open questions, write proposals, the watchdog's clock); :class:`Handlers` is the object
the SDK calls. It is duck-typed on purpose: subclassing ``acp.Client`` makes every
unimplemented method answer ``result: null`` instead of "method not found", and the SDK's
``terminal/*`` routes answer ``null`` when a method is missing, so all five are defined here
and raise "method not found" (ADR-0023).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from rio.acp.port import PermissionOption, PermissionQuestion
from rio.agent.turn import shown_input
from rio.mcp.entry import AUTO_ALLOWED_NOTE, rio_tool_of_question
from rio.protocol.errors import RioError

if TYPE_CHECKING:
    from rio.acp.port import AcpTurnPort
    from rio.acp.protocol_log import ProtocolLog
    from rio.acp.updates import UpdateTranslator


def pick_option(options: Sequence[Any], kind: str | None) -> Any | None:
    """The agent's option of ``kind``. "Always" falls back to "once" (never the reverse: a
    one-off yes must not become a standing one); a rejection with no such option, or None,
    is answered "cancelled"."""
    if kind is None:
        return None
    by_kind = {o.kind: o for o in options}
    if kind in by_kind:
        return by_kind[kind]
    if kind == "allow_always":
        return by_kind.get("allow_once")
    return None


def confine(root: Path, path: str) -> str:
    """``path`` (absolute, or relative to the root) as a root-relative POSIX path, after
    resolving symlinks; raises ``RequestError`` for anything outside."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise RequestError.invalid_params({"path": path, "reason": "not a usable path"})
    real_root = os.path.realpath(root)
    full = os.path.realpath(path if os.path.isabs(path) else os.path.join(real_root, path))
    if full != real_root and os.path.commonpath([real_root, full]) != real_root:
        raise RequestError(-32602, f"Refused: {path} is outside the project folder "
                                   f"{real_root}", {"path": path})
    rel = os.path.relpath(full, real_root)
    if rel == ".":
        raise RequestError(-32602, f"Refused: {path} is the project folder, not a file",
                           {"path": path})
    return rel.replace(os.sep, "/")


class Handlers:
    """The agent → client methods, for the SDK (duck-typed: see the module docstring)."""

    def __init__(self, client: AgentRequests) -> None:   # an AcpClient (the mixin: no circle)
        self.client = client

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.client.updates.handle(update)   # synchronous: keeps the order (see updates.py)

    async def request_permission(self, session_id: str, tool_call: Any, options: Any,
                                 **kw: Any) -> RequestPermissionResponse:
        return await self.client._ask_permission(tool_call, options)

    async def read_text_file(self, session_id: str, path: str, line: int | None = None,
                             limit: int | None = None, **kw: Any) -> ReadTextFileResponse:
        return await self.client._read(path, line, limit)

    async def write_text_file(self, session_id: str, path: str, content: str,
                              **kw: Any) -> WriteTextFileResponse:
        return await self.client._write(path, content)

    # terminal/*: not offered (ADR-0023); defined so the SDK answers -32601, not null.
    async def create_terminal(self, *a: Any, **kw: Any) -> Any:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(self, *a: Any, **kw: Any) -> Any:
        raise RequestError.method_not_found("terminal/output")

    async def release_terminal(self, *a: Any, **kw: Any) -> Any:
        raise RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(self, *a: Any, **kw: Any) -> Any:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, *a: Any, **kw: Any) -> Any:
        raise RequestError.method_not_found("terminal/kill")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        if method.endswith("auth/status_update"):   # both Zed adapters send it
            self.client.port.publish("agent.auth_status", {"status": params})



class _Settings(Protocol):
    """What the requests need of :class:`~rio.acp.client.AcpSettings` (not imported: a circle)."""

    @property
    def root(self) -> Path: ...


class AgentRequests:
    """The client's answers to the agent's requests (mixed into AcpClient)."""

    # The state of the client this is mixed into (set in AcpClient.__init__).
    settings: _Settings
    port: AcpTurnPort
    log: ProtocolLog
    updates: UpdateTranslator
    last_activity: float
    _ids: Iterator[int]
    _questions: dict[str, asyncio.Future[str | None]]
    _writes: set[asyncio.Task[Any]]
    _answering: set[asyncio.Task[Any]]
    _user_waits: int
    _cancelling: bool

    async def _ask_permission(self, tool_call: Any, options: Any) -> RequestPermissionResponse:
        state = self.updates.tools.get(tool_call.tool_call_id)
        question = PermissionQuestion(
            f"q{next(self._ids)}", tool_call.tool_call_id,
            tool_call.title or (state.title if state else "") or "a tool call",
            tool_call.kind or (state.kind if state else "other"),
            shown_input(tool_call.raw_input if tool_call.raw_input not in (None, {})
                        else (state.input if state else None)),
            tuple(PermissionOption(o.option_id, o.name, o.kind) for o in options))
        if self._cancelling:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        auto = self._auto_allow(question, tool_call)
        if auto is not None:
            return auto
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._questions[question.request] = answer
        me = asyncio.current_task()
        if me is not None:
            self._answering.add(me)
            me.add_done_callback(self._answering.discard)

        async def ask() -> None:
            try:
                kind = await self.port.ask_permission(question)
            except Exception:  # noqa: BLE001 -- an owner failure declines the question
                kind = None
            if not answer.done():
                answer.set_result(kind)

        asker = asyncio.ensure_future(ask())
        self._user_waits += 1
        try:
            kind = await answer
        finally:
            self._user_waits -= 1
            self.last_activity = time.monotonic()
            self._questions.pop(question.request, None)
            if not asker.done():
                asker.cancel()
        option = pick_option(options, kind)
        self.log.note("·", f"permission {question.request} answered "
                           f"{option.kind + ' ' + option.option_id if option else 'cancelled'}")
        if option is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id))

    def _auto_allow(self, question: PermissionQuestion, tool_call: Any
                    ) -> RequestPermissionResponse | None:
        """A question provably about a call to Rio's own MCP endpoint (by the fields the
        agent's adapter sets, never by text a model wrote: rio.mcp.entry.rio_tool_of_question)
        is answered "allow once" at once (by the option's kind, never its id), with an
        ``agent.note`` saying so: Rio's gate decides on the call itself when it reaches the
        endpoint, so asking the user here too would ask twice. None for anything else, or
        when the agent offers no "allow once"."""
        tool = rio_tool_of_question(tool_call.tool_call_id, tool_call.kind, tool_call.title,
                                    tool_call.raw_input, tool_call.locations)
        if tool is None:
            return None
        option = next((o for o in question.options if o.kind == "allow_once"), None)
        if option is None:
            return None
        self.log.note("·", f"permission {question.request} auto-allowed "
                           f"allow_once {option.id} ({question.title})")
        self.port.publish("agent.note", {"note": "auto_allowed", "call": question.call,
                                         "title": question.title, "tool": tool,
                                         "text": f"{tool}: {AUTO_ALLOWED_NOTE}"})
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.id))

    def open_questions(self) -> list[str]:
        return [q for q, f in self._questions.items() if not f.done()]

    async def _read(self, path: str, line: int | None, limit: int | None
                    ) -> ReadTextFileResponse:
        rel = confine(self.settings.root, path)
        try:
            text = await self.port.read_text(rel)
        except RioError as err:
            raise RequestError(-32002, f"{err.message} ({err.kind})", {"path": path}) from None
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max(0, (line or 1) - 1)
            end = len(lines) if limit is None else start + max(0, limit)
            text = "".join(lines[start:end])
        return ReadTextFileResponse(content=text)

    async def _write(self, path: str, content: str) -> WriteTextFileResponse:
        rel = confine(self.settings.root, path)
        if self._cancelling:
            raise RequestError(-32603, f"Rio did not write {rel}: the turn was stopped.")
        task = asyncio.ensure_future(self.port.propose_write(rel, content))
        self._writes.add(task)
        me = asyncio.current_task()
        if me is not None:
            self._answering.add(me)
            me.add_done_callback(self._answering.discard)
        self._user_waits += 1
        try:
            outcome = await task
        except asyncio.CancelledError:
            if not self._cancelling:
                raise
            raise RequestError(-32603, f"Rio did not write {rel}: the turn was stopped.") \
                from None
        except RioError as err:
            raise RequestError(-32603, f"Rio did not write {rel}: {err.message}") from None
        finally:
            self._writes.discard(task)
            self._user_waits -= 1
            self.last_activity = time.monotonic()
        if not outcome.applied:
            raise RequestError(-32603, f"Rio did not write {rel}: {outcome.reason or 'declined'}"
                               ". Do not repeat it unchanged; ask the user what they want.")
        return WriteTextFileResponse()

