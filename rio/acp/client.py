"""Rio's side of the Agent Client Protocol: one agent process, one session, prompts.

The SDK (``agent-client-protocol`` 0.12) carries the JSON-RPC; this module owns everything
around it (ADR-0023):

* the agent is started through a :class:`~rio.acp.port.ProcessPort` (argv list, own process
  group, the user's environment minus Rio's variables) and stopped with the supervisor's
  sequence — stdin close, grace, TERM to the group, KILL — because claude-agent-acp and
  codex-acp ignore the end of their input;
* its stdout is read here line by line before the SDK sees it: every line goes to the
  :class:`~rio.acp.protocol_log.ProtocolLog`, a malformed one is logged and dropped, and any
  line counts as a sign of life for the silence watchdog; stderr is drained all the time
  (an undrained pipe freezes the agent at 64 KiB) and its tail kept for error messages;
* its exit is watched from the start, not only the end of its stdout: a helper that
  inherited the pipe keeps stdout open after the agent died, and the prompt must still end;
* the agent's requests become calls on the :class:`~rio.acp.port.AcpTurnPort` —
  ``fs/read_text_file`` (confined to the project root, symlinks resolved) reads the editor's
  text, ``fs/write_text_file`` is a proposal, ``session/request_permission`` is answered by
  option *kind*; the five ``terminal/*`` methods answer "method not found" (ADR-0023);
* every failure ends as a classified :class:`~rio.protocol.errors.AgentError` leaf.

The agent's requests are answered in :mod:`rio.acp.handlers`; its stdio is read in
:mod:`rio.acp.wire`.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.schema import (
    AuthCapabilities,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
)

from rio.acp.auth import AUTH_REQUIRED, SignInMethod, sign_in_methods
from rio.acp.handlers import AgentRequests, Handlers, confine, pick_option
from rio.acp.port import AcpTurnPort, AgentProcess, ProcessPort, StopResult
from rio.acp.protocol_log import ProtocolLog, StderrTail
from rio.acp.settings import AcpSettings, settings_for
from rio.acp.updates import UpdateTranslator
from rio.acp.wire import LINE_LIMIT, AgentWire
from rio.agent.failures import classify_agent_error
from rio.agent.output_limits import OUTPUT_CUT, TURN_CHARS, output_limit
from rio.protocol.errors import AgentError, RioError

State = Literal["new", "starting", "ready", "sign_in_needed", "prompting", "exited", "stopped"]
#: An agent that died with a prompt pending while its stdout stays open (a helper inherited
#: the pipe) has this long for its last lines to arrive before the prompt ends as an exit.
EXIT_GRACE_S = 1.0


@dataclass(frozen=True)
class PromptOutcome:
    """How a prompt ended — the material for the owner's ``TurnResult``."""

    status: Literal["done", "stopped", "error"]
    stop_reason: str = ""
    text: str = ""
    error: RioError | None = None
    partial: bool = False
    usage: Mapping[str, Any] = field(default_factory=dict)


class AcpClient(AgentRequests, AgentWire):
    """One agent process and its session. All methods run on one asyncio loop."""

    def __init__(self, settings: AcpSettings, port: AcpTurnPort, processes: ProcessPort,
                 log: ProtocolLog | None = None, *,
                 process: AgentProcess | None = None) -> None:
        self.settings: AcpSettings = settings
        self.port = port
        self.processes = processes
        self.log = log or ProtocolLog()
        self.stderr = StderrTail()
        self.updates = UpdateTranslator(self._publish, on_exceeded=self._output_limit)
        self.state: State = "new"
        #: the agent's process; one given here was started ahead (while this module's SDK
        #: was imported: rio/acp/settings.py) and :meth:`start` takes it instead of spawning
        self.process: AgentProcess | None = process
        self.conn: Any = None
        self.init: Any = None
        self.session_id: str | None = None
        self.sign_in: list[SignInMethod] = []
        self.malformed_lines = 0
        self.last_activity = time.monotonic()
        self._tasks: list[asyncio.Task[Any]] = []
        self._questions: dict[str, asyncio.Future[str | None]] = {}
        self._writes: set[asyncio.Task[Any]] = set()
        #: the SDK's tasks answering a permission question (they send the answer)
        self._answering: set[asyncio.Task[Any]] = set()
        self._ids = itertools.count(1)
        self._user_waits = 0
        self._cancelling = False
        self._cancel_at: float | None = None
        #: the agent process's exit, watched from its start (see :meth:`_watch`)
        self._exit: asyncio.Future[int] | None = None

    # --- events --------------------------------------------------------------------------
    def _publish(self, topic: str, data: Mapping[str, Any]) -> None:
        self.port.publish(topic, data)

    # --- start -----------------------------------------------------------------------------
    async def start(self) -> Any:
        """Spawn the agent and ``initialize``; returns the agent's InitializeResponse."""
        self.state = "starting"
        s = self.settings
        try:
            if self.process is None:
                self.process = await self.processes.start(s.argv, cwd=str(s.root), env=s.env)
        except (OSError, ValueError, TypeError) as exc:
            self.state = "exited"
            raise AgentError("agent_start_failed", f"Rio could not start the agent "
                             f"{s.name!r} ({' '.join(s.argv)}): {exc}.",
                             "Check the agent's command with `rio agents`, or fix "
                             f"[agents.{s.name}] in config.toml.") from None
        boxed = getattr(self.process, "sandbox", None)
        self.log.note("·", f"started pid {self.process.pid}: {list(s.argv)}"
                      + (f", {boxed}" if boxed else ", without a sandbox"))
        self._exit = asyncio.ensure_future(self.process.wait())
        self._tasks.append(self._exit)
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        self._tasks += [asyncio.create_task(self._pump_stdout(reader)),
                        asyncio.create_task(self._drain_stderr())]
        # Handlers is duck-typed on purpose (ADR-0023): it leaves out the elicitation methods
        # and on_connect of acp.Client, which the SDK looks up with getattr.
        self.conn = connect_to_agent(Handlers(self), self.process.stdin,  # type: ignore[arg-type]
                                     reader, observers=[self._observe])
        capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
            terminal=False, auth=AuthCapabilities(terminal=True))
        try:
            self.init = await self._request("initialize", self.conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities,
                client_info=Implementation(name="rio", title="Rio", version=s.version),
                # older adapters look for the terminal-login opt-in here (claude-agent-acp)
                **{"terminal-auth": True}))
        except RioError:
            # An agent without an answer to initialize is no use, and must not be left
            # running (issue 22): ended with the stop sequence before the error goes up.
            if self.alive:
                await self.close()
            raise
        self.sign_in = sign_in_methods(self.init.auth_methods or (), self._program())
        self.state = "ready"
        return self.init

    def _program(self) -> tuple[str, ...]:
        return self.settings.program or self.settings.argv

    @property
    def can_load(self) -> bool:
        caps = getattr(self.init, "agent_capabilities", None)
        return bool(caps and caps.load_session)

    # --- sessions --------------------------------------------------------------------------
    async def new_session(self, mcp_servers: Sequence[Mapping[str, Any]] = ()) -> str:
        """``session/new`` in the project root; raises ``agent.sign_in_needed`` when the agent
        wants a sign-in first (codex-acp does, here). ``mcp_servers``: Rio's own MCP
        endpoint, ``{type: "http", name, url, headers}`` or stdio ``{name, command, args,
        env}`` (rio/acp/mcp_servers.py)."""
        answer = await self._request("session/new", self.conn.new_session(
            cwd=str(self.settings.root), mcp_servers=_mcp_schema(mcp_servers)))
        self.session_id = answer.session_id
        self.updates.set_modes(answer.modes)
        self.updates.set_config(answer.config_options)
        self._publish("agent.session", {"session": self.session_id, "resumed": False})
        return self.session_id

    async def load_session(self, session_id: str,
                           mcp_servers: Sequence[Mapping[str, Any]] = ()) -> bool:
        """Resume ``session_id`` (after a crash or a restart) where the agent offers it;
        False when it does not. The history it replays is not published again."""
        if not self.can_load:
            return False
        self.updates.replaying = True
        try:
            answer = await self._request("session/load", self.conn.load_session(
                cwd=str(self.settings.root), session_id=session_id,
                mcp_servers=_mcp_schema(mcp_servers)))
        finally:
            self.updates.replaying = False
        self.session_id = session_id
        if answer is not None:
            self.updates.set_modes(answer.modes)
            self.updates.set_config(answer.config_options)
        self._publish("agent.session", {"session": session_id, "resumed": True})
        return True

    async def authenticate(self, method_id: str) -> None:
        """Run an *agent* sign-in method (the agent opens the browser itself)."""
        await self._request("authenticate", self.conn.authenticate(method_id=method_id),
                            timeout=self.settings.authenticate_timeout_s)
        self.state = "ready"
        self._publish("agent.sign_in", {"state": "signed_in", "method": method_id})

    @property
    def can_logout(self) -> bool:
        """The agent advertises ``logout`` (``agentCapabilities.auth.logout``, an unstable
        method in ACP 0.12: the SDK has the schema but no call for it)."""
        caps = getattr(self.init, "agent_capabilities", None)
        auth = getattr(caps, "auth", None)
        return getattr(auth, "logout", None) is not None

    async def logout(self) -> None:
        """Sign the agent out of its own account (its credentials; Rio holds none). Raises
        ``agent.logout_not_offered`` when the agent does not advertise it."""
        if not self.can_logout:
            raise AgentError("logout_not_offered", f"The agent {self.settings.name!r} does not "
                             "offer to sign out through ACP.", "Sign out with the agent's own "
                             "command or settings (docs/agent-chat.md, section 4).")
        # The SDK's connection has no logout(): the request goes through its JSON-RPC layer.
        await self._request("logout", self.conn._conn.send_request("logout", {}))
        self.state = "sign_in_needed"
        self._publish("agent.note", {"note": "signed_out",
                                     "text": f"Signed out of {self.settings.name}."})

    async def set_mode(self, mode_id: str) -> None:
        await self._request("session/set_mode", self.conn.set_session_mode(
            session_id=self._session(), mode_id=mode_id))
        self.updates.modes = {**self.updates.modes, "current": mode_id}
        self._publish("agent.modes", self.updates.modes)

    async def set_config_option(self, config_id: str, value: str | bool) -> None:
        answer = await self._request("session/set_config_option", self.conn.set_config_option(
            config_id=config_id, session_id=self._session(), value=value))
        if answer is not None and getattr(answer, "config_options", None) is not None:
            self.updates.set_config(answer.config_options)

    def _session(self) -> str:
        if self.session_id is None:
            raise AgentError("agent_failed", "The agent has no session yet.",
                             "Start a session first (send a message).")
        return self.session_id

    # --- prompts ---------------------------------------------------------------------------
    async def prompt(self, text: str, *, resumable: bool = False) -> PromptOutcome:
        """One turn. Never raises for the agent's failures: they come back as an outcome with
        a classified error, already published as ``agent.error`` (as the API path does) —
        except, when ``resumable``, the agent's exit: the caller resumes it and sends the
        prompt again (``AcpTurn``), and publishes the error itself if it cannot.
        Cancelling the calling task cancels the prompt (session/cancel first)."""
        session = self._session()
        self.state = "prompting"
        self.updates.start_turn()
        self._cancelling = False
        self._cancel_at = None
        self.last_activity = time.monotonic()
        task = asyncio.ensure_future(self.conn.prompt(session_id=session,
                                                      prompt=[text_block(text)]))
        try:
            answer = await self._watch(task)
        except asyncio.CancelledError:
            await self.cancel()
            await self._abandon(task, self.settings.cancel_grace_s)
            raise
        except Exception as exc:  # noqa: BLE001 -- classified below, every path answered
            err = await self._classify(exc, "session/prompt")
            resumed = resumable and err.kind == "agent.agent_exited"
            return self._failed(err, publish=not resumed)
        finally:
            if self.state == "prompting":
                self.state = "ready"
        if self.updates.budget.exceeded:    # Rio cancelled it: the turn streamed too much
            if answer is None:
                # It did not even take the cancel, and may stream on into the next turn:
                # it is ended (the stop sequence); the next message starts it again.
                self.log.note("!", "the cancel after the output bound was not answered: "
                                   "the agent is stopped")
                await self.close()
            return self._failed(output_limit())
        if answer is None:   # the agent never answered its cancel: abandoned
            return PromptOutcome("stopped", "cancelled", self.updates.reply_text())
        usage = {}
        if answer.usage is not None:
            usage = answer.usage.model_dump(mode="json", exclude_none=True)
        reason = str(answer.stop_reason)
        status: Literal["stopped", "done"] = "stopped" if reason == "cancelled" else "done"
        return PromptOutcome(status, reason, self.updates.reply_text(), usage=usage)

    def _output_limit(self) -> None:
        """The turn streamed past its bound (rio/agent/output_limits.py): said once, and the
        prompt is cancelled; :meth:`prompt` then ends the turn with ``agent.output_limit``."""
        err = output_limit()
        self._publish("agent.note", {"note": OUTPUT_CUT, "text": err.message})
        self.log.note("!", f"output past {TURN_CHARS} characters: the prompt is cancelled")
        task = asyncio.ensure_future(self.cancel())
        self._tasks.append(task)

    def _failed(self, err: RioError, *, publish: bool = True) -> PromptOutcome:
        partial = bool(self.updates.text)
        if publish:
            # details as the session's own agent.error has them (rio/acp/turn.py): the
            # agent's words, its error's details, an exit code, sign-in methods.
            self._publish("agent.error", {"kind": err.kind, "message": err.message,
                                          "next": err.next, "partial": partial,
                                          **({"details": dict(err.details)}
                                             if err.details else {})})
        return PromptOutcome("error", "", self.updates.reply_text(), err, partial)

    async def _watch(self, task: asyncio.Future[Any]) -> Any:
        """Wait for the prompt's answer; surface a silence, give up on a long one."""
        s = self.settings
        tick = max(0.05, min(s.silent_after_s, s.give_up_after_s) / 4)
        reported = False
        while True:
            exit_ = self._exit
            done, _ = await asyncio.wait({task} if exit_ is None else {task, exit_},
                                         timeout=tick, return_when=asyncio.FIRST_COMPLETED)
            if exit_ is not None and exit_ in done and task not in done:
                # The agent died, but its stdout is still open: a helper it left inherited
                # the pipe, so the end of the connection never comes. Its last lines get a
                # moment to arrive, then the prompt ends as the exit it is.
                done, _ = await asyncio.wait({task}, timeout=EXIT_GRACE_S)
                if not done:
                    task.cancel()
                    raise ConnectionError("the agent exited with the prompt pending")
            if task in done:
                if reported:   # a UI showing "silent" must not keep showing it
                    self._publish("agent.silent", {"seconds": 0, "resumed": True})
                return task.result()
            if self._cancel_at is not None and \
                    time.monotonic() - self._cancel_at >= s.cancel_grace_s:
                self.log.note("!", "no answer to session/cancel in time: prompt abandoned")
                task.cancel()
                return None
            if self._user_waits:          # the agent waits for the user, not the reverse
                self.last_activity = time.monotonic()
                continue
            idle = time.monotonic() - self.last_activity
            if idle >= s.silent_after_s and not reported:
                reported = True
                self.log.note("·", f"no update for {idle:.1f} s while a prompt is pending")
                self._publish("agent.silent", {"seconds": round(idle, 1),
                                               "give_up_after_s": s.give_up_after_s})
            elif reported and idle < s.silent_after_s:
                reported = False
                self._publish("agent.silent", {"seconds": 0, "resumed": True})
            if idle >= s.give_up_after_s:
                await self.cancel()
                await self._abandon(task, s.cancel_grace_s)
                raise AgentError("agent_silent", f"The agent {s.name!r} sent nothing for "
                                 f"{idle:.0f} s while working on the message, so Rio stopped "
                                 "waiting.", "Check the agent's own configuration (a model it "
                                 "cannot reach waits forever; opencode does when unconfigured); "
                                 "the protocol log shows the last thing it said.")

    async def cancel(self) -> None:
        """Stop the current prompt (the Stop button): open permission questions are answered
        "cancelled" first, write proposals withdrawn, then ``session/cancel``. The prompt
        then has ``cancel_grace_s`` to answer (``stopReason: cancelled``, 10–40 ms for the
        real agents) before it is abandoned; :meth:`prompt` returns "stopped" either way."""
        if self._cancelling:
            return
        self._cancelling = True
        self._cancel_at = time.monotonic()
        for future in list(self._questions.values()):
            if not future.done():
                future.set_result(None)
        for write in list(self._writes):
            write.cancel()
        # The spec wants the answers out before session/cancel: the SDK's request task
        # sends a handler's answer once the handler returns, so wait for those tasks.
        answering = [t for t in self._answering if not t.done()]
        if answering:
            await asyncio.wait(answering, timeout=2.0)
        if self.session_id is not None and self.conn is not None and self.alive:
            try:
                await self.conn.cancel(session_id=self.session_id)
            except (ConnectionError, OSError, RuntimeError):
                pass

    @staticmethod
    async def _abandon(task: asyncio.Future[Any], grace: float) -> None:
        if not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), grace)
            except BaseException:  # noqa: BLE001 -- abandoned either way
                task.cancel()

    # --- agent → client --------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None \
            and self.state not in ("exited", "stopped")

    async def _request(self, what: str, call: Any, timeout: float | None = None) -> Any:
        try:
            return await asyncio.wait_for(call, timeout or self.settings.request_timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 -- classified
            raise await self._classify(exc, what) from None

    async def _classify(self, exc: BaseException, what: str) -> RioError:
        s = self.settings
        if isinstance(exc, RioError):
            return exc
        if isinstance(exc, RequestError) and exc.code == AUTH_REQUIRED:
            self.state = "sign_in_needed"
            methods = [m.to_dict() for m in self.sign_in]
            self._publish("agent.sign_in", {"state": "needed", "agent": s.name,
                                            "methods": methods})
            return AgentError("sign_in_needed", f"The agent {s.name!r} needs you to sign in "
                              f"(it answered {what} with 'Authentication required').",
                              _sign_in_next(self.sign_in), methods=methods)
        if isinstance(exc, RequestError):
            # The cause is in the agent's words (data.message, data.details), not in
            # JSON-RPC's "Internal error": classified by them, and kept (rio/agent/failures.py).
            err = classify_agent_error(s.name, what, exc.code, str(exc), exc.data,
                                       log_hint=self._log_hint())
            self.log.note("!", f"{what} failed: {err.kind}: {err.message}")
            return err
        if isinstance(exc, asyncio.TimeoutError):
            return AgentError("agent_timeout", f"The agent {s.name!r} did not answer {what} "
                              "in time.", "Stop it and try again; the protocol log shows the "
                              "last thing it said.")
        if isinstance(exc, (ValueError, TypeError)) and self.process is not None \
                and self.process.returncode is None:
            # An answer the SDK could not read (pydantic's ValidationError is a ValueError),
            # from an agent that is still running: its own failure, not an exit (issue 22:
            # it was "stopped during initialize (exit code None)").
            first = str(exc).strip().splitlines()[:3]
            self.log.note("!", f"{what}: an answer Rio cannot read: {' | '.join(first)}")
            return AgentError("unexpected_response", f"The agent {s.name!r} answered {what} "
                              f"with something that is not a valid ACP answer "
                              f"({' '.join(first)[:300]}).",
                              "Check that it is an ACP agent and up to date (`rio agents`); "
                              f"the protocol log has what it sent ({self._log_hint()}).")
        # the connection is gone: the agent exited (or closed its stdout)
        code = await self._exit_code()
        self.state = "exited"
        tail = self.stderr.text().strip().splitlines()[-3:]
        said = f" Its last words: {' | '.join(tail)[-600:]}" if tail else ""
        return AgentError("agent_exited", f"The agent {s.name!r} stopped during {what} "
                          f"(exit code {code}).{said}",
                          "Send the message again to start it again; the protocol log has "
                          "its output.", exit_code=code)

    def _log_hint(self) -> str:
        """The command that prints this conversation's protocol log (its file is
        ``<conversation>.acp.log``, rio/acp/protocol_log.py)."""
        name = self.log.path.name if self.log.path is not None else ""
        conversation = name[:-len(".acp.log")] if name.endswith(".acp.log") else "CONVERSATION"
        return f"`rio agents log {conversation}`"

    async def _exit_code(self) -> int | None:
        if self.process is None:
            return None
        try:
            return await asyncio.wait_for(self.process.wait(), 2.0)
        except (TimeoutError, Exception):  # noqa: BLE001 -- unknown is an answer
            return self.process.returncode

    # --- stop ----------------------------------------------------------------------------
    async def close(self) -> StopResult | None:
        """End the agent and its helpers (the stop sequence); idempotent."""
        for future in list(self._questions.values()):
            if not future.done():
                future.set_result(None)
        if self.conn is not None:
            try:
                await asyncio.wait_for(self.conn.close(), 1.0)
            except Exception as exc:  # noqa: BLE001 -- the connection's close re-raises whatever its reader died of; the stop goes on
                self.log.note("·", f"closing the connection: {type(exc).__name__}: {exc}")
        result = None
        if self.process is not None:
            result = await self.process.stop()
            self.log.note("·", f"stopped: {result.how} after {result.elapsed:.2f} s, "
                               f"exit code {result.returncode}")
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.state = "stopped"
        return result


def _mcp_schema(entries: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Rio's MCP endpoint entries (http or stdio) as the SDK's types."""
    from rio.acp.mcp_servers import to_schema
    return to_schema(entries)


def _sign_in_next(methods: Sequence[SignInMethod]) -> str:
    if not methods:
        return "Sign in with the agent's own command in a terminal, then send the message again."
    ways = []
    for m in methods:
        if m.type == "terminal":
            ways.append(f"run `{m.to_dict()['shell']}` in a terminal")
        elif m.type == "env_var":
            ways.append(f"set {', '.join(m.vars)} in your environment and restart Rio")
        else:
            ways.append(f"choose '{m.name}' to sign in through the agent")
    return "Sign in: " + "; or ".join(ways) + " — then send the message again."


__all__ = ["AcpClient", "AcpSettings", "PromptOutcome", "confine", "pick_option", "settings_for"]
