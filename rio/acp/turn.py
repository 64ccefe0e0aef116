"""The turn owner's second brain: a turn driven by an ACP agent instead of a model API.

The session process (``actors/agent/session.py``) owns every turn of its conversation — busy,
Stop, interrupt, pending proposals and approvals — whichever brain answers it. An
:class:`AcpTurn` has the surface the session drives a :class:`rio.agent.turn.Turn` through
(``spec.turn``, :meth:`run`, :meth:`result`, :meth:`answer`, :meth:`interrupt`,
:meth:`pending_ids`), publishes the same ``agent.*`` events and goes through the same gate
(``gate.turn`` begin/end, ``gate.check`` for writes) and the same :class:`~rio.agent.tools.Tools`
(buffer text for reads; ``prepare``/``apply`` for writes, so a write is located again at
approval and lands as an undoable buffer edit).

It is also the :class:`rio.acp.port.AcpTurnPort` of the conversation's
:class:`~rio.acp.client.AcpClient` for its duration:

* ``fs/read_text_file`` → the open buffer's text (unsaved edits included), else the file;
* ``fs/write_text_file`` → ``propose_edit`` (or ``propose_create`` for a new file) through
  the gate: allowed, refused, or an ``agent.propose`` answered by ``agent.approve``;
* ``session/request_permission`` → ``agent.permission``, answered by
  ``agent.permission_answer`` with an option *kind*; declined after
  :data:`PERMISSION_TIMEOUT_S`.

And it serves the agent's calls to Rio's MCP tools (:attr:`AcpTurn.mcp`,
rio/agent/turn_mcp.py), forwarded by the endpoint to this turn: their proposals are this
turn's, applied by this turn's tools — so what the agent changed by any path is in the turn's
result (ADR-0034).

:class:`AcpBrain` keeps the conversation's one agent process across turns: started on the
first turn (``session/load`` of the stored session id when the agent offers it, else
``session/new``), restarted and resumed when it died (``agent.restarted``, one line for the
user), ended with the stop sequence by :meth:`AcpBrain.close`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from rio.acp.port import PermissionQuestion, WriteOutcome
from rio.agent.approval import AnswersProposals, Proposals, refusal
from rio.agent.tools import Proposal, ToolOutcome, Tools
from rio.agent.turn import TurnPort, TurnResult
from rio.agent.turn_mcp import QUESTION_TIMEOUT_S, McpCalls
from rio.protocol.errors import AgentError, RioError
from rio.providers.base import Message, ToolCall

log = logging.getLogger("rio.agent.acp")

#: Said when the agent ends the turn without a word or a deed.
EMPTY_REPLY = ("The agent ended the turn without a reply. Send your message again, or a new "
               "one; if it keeps happening, start a new conversation.")
#: Events that show the user something of the turn (an agent.delta only with text).
_SOMETHING_SHOWN = frozenset({"agent.delta", "agent.thought", "agent.tool", "agent.plan",
                              "agent.propose", "agent.permission", "agent.changed_files",
                              "agent.error"})

#: A permission question nobody answers is declined after this long (the agent is told
#: "cancelled" and carries on).
PERMISSION_TIMEOUT_S = 240.0


class AcpOwnerPort(TurnPort, Protocol):
    """The ACP turn's port: the API turn's (events, the gate), plus the core's ops and the
    gate's table for Rio's MCP tools (rio/agent/turn_mcp.py)."""

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any: ...

    async def agent_check(self, tool: str, args: Mapping[str, Any]) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class AcpTurnSpec:
    conversation: str
    turn: str
    agent: str
    text: str
    #: the agent's session id stored on the conversation (resumed with session/load)
    stored_session: str | None = None


#: Builds the conversation's client: ``make_client(port) -> AcpClient``.
ClientFactory = Callable[[Any], Any]


async def _no_servers() -> Sequence[Mapping[str, Any]]:
    return []


@dataclass
class AcpBrain:
    """One ACP agent process for one conversation, kept across turns (on the session loop)."""

    agent: str
    make_client: ClientFactory
    client: Any = None
    session_id: str | None = None
    #: set when the agent ended without being asked: the next turn says it was restarted
    died: bool = False
    #: the ``mcpServers`` entries for session/new and session/load (Rio's MCP endpoint)
    #: the ``mcpServers`` entries for session/new and session/load (Rio's MCP endpoint),
    #: given the started client (its ``initialize`` answer says whether it speaks HTTP)
    mcp_servers: Callable[[Any], Awaitable[Sequence[Mapping[str, Any]]]] = field(
        default=lambda client: _no_servers())

    @property
    def alive(self) -> bool:
        return self.client is not None and bool(self.client.alive) \
            and self.client.session_id is not None

    async def ready(self, port: Any, stored_session: str | None) -> dict[str, Any] | None:
        """Make sure an agent with a session runs, driven for ``port``'s turn. Returns the
        ``agent.restarted`` data when a dead agent was started again, else None."""
        if self.client is not None:
            self.client.port = port
        if self.alive:
            return None
        # Up with no session: its session/new wanted a sign-in. Signed in since through ACP
        # (authenticate): the same process goes on — a new one would not know it. Still
        # wanting one: it is started again, so what was fixed meanwhile applies — a sign-in
        # in a terminal, its own configuration or config.toml's [agents.NAME] (a process kept
        # from before never reads them again). Else it died, or never ran: (re)start it.
        up = self.client is not None and bool(self.client.alive)
        signed_in = up and getattr(self.client, "state", None) != "sign_in_needed"
        restarted = self.client is not None and not up
        if self.client is not None and not signed_in:
            await self.close()
        if not signed_in:
            self.client = self.make_client(port)
            await self.client.start()
        wanted = self.session_id or stored_session
        resumed = False
        if wanted and self.client.can_load:
            try:
                resumed = await self.client.load_session(
                    wanted, await self.mcp_servers(self.client))
            except RioError as err:
                if err.kind == "agent.sign_in_needed":
                    raise
                log.info("session/load %s failed (%s): a new session instead", wanted, err)
        if not resumed:
            await self.client.new_session(await self.mcp_servers(self.client))
        self.session_id = self.client.session_id
        if not restarted:
            return None
        return {"agent": self.agent, "resumed": resumed,
                "message": f"The agent {self.agent!r} had stopped; Rio started it again"
                           + (" and resumed the conversation." if resumed else
                              " with a new session (it cannot resume the old one).")}

    async def close(self) -> Any:
        client, self.client = self.client, None
        if client is None:
            return None
        try:
            return await client.close()
        except Exception:  # ending it anyway; the sweep is process control's
            log.exception("closing the agent failed")
            return None


@dataclass
class _Question:
    question: PermissionQuestion
    future: asyncio.Future[str | None] = field(default_factory=lambda: (
        asyncio.get_running_loop().create_future()))


def _exited(outcome: Any) -> bool:
    return outcome.error is not None and outcome.error.kind == "agent.agent_exited"


class AcpTurn(AnswersProposals):
    """One turn answered by an ACP agent; see the module docstring."""

    def __init__(self, spec: AcpTurnSpec, brain: AcpBrain, tools: Tools, port: AcpOwnerPort,
                 root: Path, *, permission_timeout_s: float = PERMISSION_TIMEOUT_S,
                 question_timeout_s: float = QUESTION_TIMEOUT_S,
                 snapshot: Callable[[Path], Any] | None = None,
                 diff: Callable[[Any], Mapping[str, Any]] | None = None) -> None:
        # Imported here, not at the top: it brings the workspace walk (pathspec, regex), which
        # a session process need not load before it is ready (a warm-up loads it just after).
        from rio.agent import disk_changes
        self.spec = spec
        self.brain = brain
        self.tools = tools
        self.port = port
        self.root = root
        self.permission_timeout_s = permission_timeout_s
        self._snapshot = snapshot or disk_changes.take
        self._diff = diff or disk_changes.changes
        #: the writes put to the user (rio/agent/approval.py, shared with the API turn)
        self.proposals = Proposals(spec.turn, tools, self.publish, port.remember)
        self.questions: dict[str, _Question] = {}
        self.new: list[Message] = []
        self._writes = 0
        #: the calls of Rio's MCP tools in this turn (forwarded by the endpoint)
        self.mcp = McpCalls(self, port, question_timeout_s=question_timeout_s)
        self._began = False
        #: something of the turn reached the user (text, a tool, a plan, a question …)
        self._shown = False
        self._interrupted = False
        self._outcome: TurnResult | None = None
        self._changed_files: Mapping[str, Any] = {"files": [], "more": 0}

    @property
    def turn_id(self) -> str:
        return self.spec.turn

    # --- events --------------------------------------------------------------------------
    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        if topic in _SOMETHING_SHOWN and (topic != "agent.delta" or data.get("text")):
            self._shown = True
        self.port.publish(topic, {"conversation": self.spec.conversation,
                                  "turn": self.spec.turn, **data})

    # --- the turn ------------------------------------------------------------------------
    async def run(self) -> TurnResult:
        try:
            return await self._run()
        finally:
            self.mcp.close()    # a call of Rio's tools after the end is refused

    async def _run(self) -> TurnResult:
        loop = asyncio.get_running_loop()
        snap: asyncio.Future[Any] | None = None
        try:
            await self.port.gate_turn("begin")
            self._began = True
            snap = loop.run_in_executor(None, self._snapshot, self.root)
            restarted = await self.brain.ready(self, self.spec.stored_session)
            if restarted is not None:
                self.publish("agent.restarted", restarted)
            await asyncio.shield(snap)  # the fingerprint is of the files before the prompt
            resumable = bool(self.brain.client.can_load)
            outcome = await self.brain.client.prompt(self.spec.text, resumable=True) \
                if resumable else await self.brain.client.prompt(self.spec.text)
            if _exited(outcome) and resumable:
                outcome = await self._resume_and_retry(outcome)
            if _exited(outcome):
                self.brain.died = True
            self._outcome = self._result(outcome.status, outcome.text, outcome.error,
                                         outcome.partial)
            if outcome.status == "done" and not self._shown and not outcome.text.strip():
                # claude-agent-acp 0.23.1 answers the prompt after a Stop at once with an
                # empty end_turn (its own bug, reproduced without Rio): say so, or the user
                # sees their message and nothing
                self.publish("agent.note", {"note": "empty_reply", "text": EMPTY_REPLY})
        except asyncio.CancelledError:
            self._close_for_stop()
            await self._finish(snap)
            raise
        except RioError as err:   # start, session/new, sign-in: not published by the client
            self.publish("agent.error", {"kind": err.kind, "message": err.message,
                                         "next": err.next, "partial": False,
                                         **({"details": dict(err.details)}
                                            if getattr(err, "details", None) else {})})
            self._outcome = self._result("error", "", err, False)
        await self._finish(snap)
        assert self._outcome is not None
        return self._with_extra(self._outcome)

    async def _resume_and_retry(self, crashed: Any) -> Any:
        """The agent died during this turn and offers ``session/load``: start it again, resume
        its session and send the prompt once more, with one ``agent.restarted`` line. When it
        cannot be resumed (the start or the load fails, or it is Stop or a new message that
        ended the turn), the crash's ``agent.error`` is published and the turn ends with it;
        the next message starts the agent again, as before."""
        retry = None
        if not self._interrupted and self.brain.session_id:
            try:
                restarted = await self.brain.ready(self, self.spec.stored_session)
            except RioError as err:
                log.info("turn %s: the agent could not be resumed (%s)", self.spec.turn, err)
                restarted = None
            if restarted is not None:
                self.publish("agent.restarted", restarted)
                if restarted["resumed"]:
                    retry = await self.brain.client.prompt(self.spec.text)
        if retry is not None:
            return retry
        error = crashed.error
        self.publish("agent.error", {"kind": error.kind, "message": error.message,
                                     "next": error.next, "partial": bool(crashed.partial)})
        return crashed

    def _streamed(self) -> str:
        client = self.brain.client
        return client.updates.reply_text() if client is not None else ""

    def _result(self, status: Any, text: str, error: RioError | None,
                partial: bool) -> TurnResult:
        if self._interrupted and status != "error":
            status = "stopped"
            error = AgentError("interrupted", "The turn was interrupted by a new message.",
                               "Carry on with the new message.")
        messages = (Message.assistant(text),) if text.strip() else ()
        self.new = list(messages)
        return TurnResult(status, messages, tuple(self.tools.changed.items()), error, partial)

    def result(self, status: Any = "stopped") -> TurnResult:
        if self._outcome is not None:
            return self._with_extra(self._outcome)
        return self._with_extra(self._result(status, self._streamed(), AgentError(
            "stopped", "You stopped the turn.", "Send a message to carry on."), False))

    def _with_extra(self, result: TurnResult) -> TurnResult:
        extra = {"acp_session": self.brain.session_id,
                 "changed_files": list(self._changed_files.get("files", ()))}
        return replace(result, extra=extra)

    async def _finish(self, snap: asyncio.Future[Any] | None) -> None:
        if snap is not None:
            try:
                before = await snap
                self._changed_files = await asyncio.get_running_loop().run_in_executor(
                    None, self._diff, before)
            except Exception:  # the listing is a help, not the turn
                log.exception("listing the files changed on disk failed")
            if self._changed_files.get("files"):
                self.publish("agent.changed_files", dict(self._changed_files))
        if self._began:
            try:
                await asyncio.wait_for(self.port.gate_turn("end"), 2.0)
            except (RioError, asyncio.TimeoutError):
                log.warning("gate did not take the end of turn %s", self.spec.turn)

    def close_waits(self) -> None:
        """Stop: every proposal and question of the turn is closed now ("stopped"), before
        the agent's prompt is cancelled — its calls of Rio's tools get their answers and it
        can answer the cancel."""
        self._close_for_stop()

    def _close_for_stop(self) -> None:
        self.proposals.close("stopped")
        for q in self.questions.values():
            if not q.future.done():
                q.future.set_result(None)

    # --- questions, as the session answers them (proposals: AnswersProposals) -------------
    def answer_permission(self, request: str, kind: str | None) -> bool:
        q = self.questions.get(str(request))
        if q is None or q.future.done():
            return False
        q.future.set_result(kind)
        return True

    @property
    def interrupted(self) -> bool:
        """A new message has interrupted this turn (it is ending)."""
        return self._interrupted

    def interrupt(self) -> bool:
        """A new message while a write or a question waits: both are declined, the agent's
        prompt is cancelled and the turn ends "stopped" (interrupted). False when nothing
        waits (the new message is then agent.busy)."""
        asking = [q for q in self.questions.values() if not q.future.done()]
        if not self.proposals.waiting() and not asking:
            return False
        self._interrupted = True
        self.proposals.close("interrupted")
        for q in asking:
            q.future.set_result(None)
        client = self.brain.client
        if client is not None:
            asyncio.get_running_loop().create_task(client.cancel())
        return True

    # --- AcpTurnPort -----------------------------------------------------------------------
    async def read_text(self, path: str) -> str:
        text, _where = await self.tools._current_text(path)
        return text

    async def propose_write(self, path: str, content: str) -> WriteOutcome:
        self._writes += 1
        call = ToolCall(f"{self.spec.turn}.w{self._writes}", "propose_edit", {})
        try:
            current: str | None = (await self.tools._current_text(path))[0]
        except RioError as err:
            if err.kind != "path.not_found":
                return WriteOutcome(False, err.message)
            current = None
        if current is None:
            name, args = "propose_create", {"path": path, "text": content}
        else:
            if current == content:
                return WriteOutcome(True)
            name, args = "propose_edit", {"path": path, "old_text": current,
                                          "new_text": content}
        call = ToolCall(call.id, name, args)
        self.publish("agent.tool", {"call": call.id, "name": name,
                                    "input": {"path": path, "via": "fs/write_text_file"}})
        verdict = await self.port.gate_check(name, args)
        outcome = refusal(name, verdict) or await self.proposals.write(call, verdict)
        self.publish("agent.tool_result", {"call": call.id, "name": name, "ok": outcome.ok,
                                           "summary": outcome.summary, "truncated": False})
        return WriteOutcome(outcome.ok, "" if outcome.ok else outcome.content)

    async def ask_proposal(self, call: ToolCall, proposal: Proposal,
                           verdict: Mapping[str, Any], timeout: float | None = None
                           ) -> ToolOutcome:
        """Ask the user about a proposal of Rio's MCP tools (rio/agent/turn_mcp.py) as about
        the agent's own writes: this turn's :class:`~rio.agent.approval.Proposals`."""
        return await self.proposals.ask(call, proposal, verdict, timeout)

    def pending_events(self) -> list[dict[str, Any]]:
        """The waiting proposals, then the agent's permission questions still open."""
        return super().pending_events() + [
            {"topic": "agent.permission", "data": q.question.to_event()}
            for q in self.questions.values() if not q.future.done()]

    async def ask_permission(self, question: PermissionQuestion) -> str | None:
        q = _Question(question)
        self.questions[question.request] = q
        self.publish("agent.permission", question.to_event())
        try:
            kind = await asyncio.wait_for(asyncio.shield(q.future), self.permission_timeout_s)
            how = "answered" if kind else "declined"
        except asyncio.TimeoutError:
            kind, how = None, "timed_out"
        finally:
            self.questions.pop(question.request, None)
        self.publish("agent.permission_closed", {"request": question.request, "kind": kind,
                                                 "how": how})
        return kind


__all__ = ["AcpBrain", "AcpTurn", "AcpTurnSpec", "PERMISSION_TIMEOUT_S"]
