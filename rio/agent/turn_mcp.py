"""Calls to Rio's MCP tools, served by the ACP turn they belong to.

An ACP agent calls Rio's tools (``read_buffer``, ``propose_edit`` …) on Rio's MCP endpoint; the
endpoint checks the conversation's token and forwards the call to the conversation's session
process, whose running turn serves it here (ADR-0034). So the turn owns everything the agent
does through Rio, whichever way it came — its own ``fs/write_text_file`` or an MCP tool:

* the gate decides (``gate.agent_check``: allowed, asked or refused per tool and mode, counted
  against the turn's limits; "always allow" keyed on the agent Rio started, never on a name the
  caller declares);
* a proposal is the turn's (:meth:`rio.agent.approval.Proposals.ask`, as for the agent's own
  writes: an ``agent.propose`` answered by ``agent.approve``, which the hub routes to this
  process), applied by the turn's own
  :class:`~rio.agent.tools.Tools` — so it is listed in the turn's result, merged into the turn's
  undo step, saved by ``--save`` and ``/save`` like the API agent's edits;
* a question not answered in the question timeout (4 minutes) is declined; Stop, a new
  message, the end of the turn or the agent's own ``notifications/cancelled``
  (:meth:`McpCalls.cancel`) close it and apply nothing.

Pure asyncio: no sockets, threads or files here; the turn's port reaches the core.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rio.protocol.errors import AgentError, RioError

if TYPE_CHECKING:
    from rio.agent.tools import Proposal, ToolOutcome, Tools
    from rio.providers.base import ToolCall

log = logging.getLogger("rio.agent.mcp")

#: How long a proposal of Rio's MCP tools waits for the user before it is declined.
QUESTION_TIMEOUT_S = 240.0


class McpTurnPort(Protocol):
    """What the calls need of the turn's port: the core and the gate."""

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any: ...

    async def agent_check(self, tool: str, args: Mapping[str, Any]) -> Mapping[str, Any]:
        """``gate.agent_check`` for the agent Rio started: ``{decision, reason, turn}``."""
        ...


class McpTurn(Protocol):
    """The turn serving the calls (:class:`rio.acp.turn.AcpTurn`)."""

    tools: Tools
    root: Path

    @property
    def turn_id(self) -> str: ...

    def publish(self, topic: str, data: Mapping[str, Any]) -> None: ...

    async def ask_proposal(self, call: ToolCall, proposal: Proposal,
                           verdict: Mapping[str, Any], timeout: float | None) -> ToolOutcome: ...


class McpCalls:
    """The MCP calls of one running turn: run each, cancel one by the caller's id."""

    def __init__(self, turn: McpTurn, port: McpTurnPort, *,
                 question_timeout_s: float = QUESTION_TIMEOUT_S) -> None:
        self.turn = turn
        self.port = port
        self.question_timeout_s = question_timeout_s
        self._running: dict[str, asyncio.Task[dict[str, Any]]] = {}
        #: ids cancelled before their call arrived (the cancel and the call travel apart)
        self._cancelled: OrderedDict[str, None] = OrderedDict()
        self._ids = itertools.count(1)
        self.closed = False

    async def run(self, caller_id: str | None, tool: str, args: Mapping[str, Any]
                  ) -> dict[str, Any]:
        """Serve one call; ``caller_id`` is the endpoint's id for it (what a cancel names).
        Raises ``agent.*``/``path.*`` errors the agent is told as a tool error."""
        if self.closed:
            raise AgentError("outside_turn", "The turn this call belonged to has ended.",
                             "Rio's tools answer only while Rio is waiting for your reply to "
                             "the user's message.")
        if caller_id is not None and caller_id in self._cancelled:
            raise AgentError("cancelled", "This call was cancelled before it ran.",
                             "Nothing was changed; call again if it is still wanted.")
        task = asyncio.ensure_future(self._serve(tool, dict(args)))
        key = caller_id or f"local-{next(self._ids)}"
        self._running[key] = task
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            if self._running.get(key) is task:
                del self._running[key]

    def cancel(self, caller_id: str) -> bool:
        """The agent cancelled the call (``notifications/cancelled``) or its endpoint went:
        its question closes and nothing is applied. False when no such call runs."""
        task = self._running.get(caller_id)
        if task is None or task.done():
            if task is None:     # not arrived yet: refused when it comes
                self._cancelled[caller_id] = None
                while len(self._cancelled) > 256:
                    self._cancelled.popitem(last=False)
            return False
        task.cancel()
        return True

    def close(self) -> None:
        """The turn ended: every call still running is cancelled, later ones are refused."""
        self.closed = True
        for task in list(self._running.values()):
            task.cancel()

    # --- one call --------------------------------------------------------------------------
    async def _serve(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        from rio.agent.turn import shown_input
        from rio.mcp.tools import BY_NAME, PROPOSE_TOOL_NAMES, McpCall
        if tool not in BY_NAME:
            raise AgentError("tool_refused", f"There is no tool named {tool!r}.",
                             f"Use one of {', '.join(BY_NAME)}.")
        runner = McpCall(self.port, self.turn.root)
        shown = {"path": _gate_path(args["path"], self.turn.root)} \
            if isinstance(args.get("path"), str) else {}
        verdict = await self.port.agent_check(tool, shown)
        if verdict.get("turn") not in (None, self.turn.turn_id):
            log.warning("gate names turn %s for a call of %s", verdict.get("turn"),
                        self.turn.turn_id)
        if verdict.get("decision") == "refuse" or verdict.get("turn") is None:
            raise AgentError("tool_refused", str(verdict.get("reason")),
                             "Do not repeat the call unchanged; tell the user what you need.")
        call_id = f"{self.turn.turn_id}.m{next(self._ids)}"
        self.turn.publish("agent.tool", {"call": call_id, "name": tool,
                                         "input": shown_input(args), "source": "mcp"})
        try:
            if tool in PROPOSE_TOOL_NAMES:
                result = await self._propose(runner, call_id, tool, args, verdict)
            else:
                result = await runner.read(tool, args)
                self._result(call_id, tool, True, tool)
        except asyncio.CancelledError:
            self._result(call_id, tool, False, f"{tool}: cancelled by the agent")
            raise
        except RioError as err:
            self._result(call_id, tool, False, err.message)
            raise
        return result

    async def _propose(self, runner: Any, call_id: str, tool: str, args: Mapping[str, Any],
                       verdict: Mapping[str, Any]) -> dict[str, Any]:
        from rio.agent.tools import Proposal
        from rio.providers.base import ToolCall
        given = runner.proposal_args(tool, args)
        prepared = await self.turn.tools.prepare(tool, given)
        if not isinstance(prepared, Proposal):
            self._result(call_id, tool, False, prepared.summary or prepared.content)
            return {"applied": False, "message": prepared.content}
        if verdict.get("decision") == "allow":
            outcome = await self.turn.tools.apply(prepared)
        else:
            outcome = await self.turn.ask_proposal(ToolCall(call_id, tool, given), prepared,
                                                   verdict, self.question_timeout_s)
        self._result(call_id, tool, outcome.ok, outcome.summary)
        return {"applied": outcome.ok, "message": outcome.content}

    def _result(self, call_id: str, tool: str, ok: bool, summary: str) -> None:
        self.turn.publish("agent.tool_result", {"call": call_id, "name": tool, "ok": ok,
                                                "summary": summary, "truncated": False})


def _gate_path(path: str, root: Path) -> str:
    """The path as the gate judges it: an absolute path inside the root made relative (the
    tool confines it again, symlinks resolved)."""
    import os
    for base in {str(root), os.path.realpath(root)}:
        if path.startswith(base.rstrip("/") + "/"):
            return path[len(base.rstrip("/")) + 1:] or "."
    return path


__all__ = ["McpCalls", "McpTurn", "McpTurnPort", "QUESTION_TIMEOUT_S"]
