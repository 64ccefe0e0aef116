"""The session process's ACP brain: how ``actors/agent/session.py`` drives an ACP agent.

:class:`AcpOwner` is mixed into :class:`actors.agent.session.AgentSession`: it keeps the
conversation's one :class:`rio.acp.turn.AcpBrain` (the agent process, across turns),
builds an :class:`rio.acp.turn.AcpTurn` for a turn of an ACP conversation, gives the
agent Rio's MCP endpoint (over HTTP with the conversation's bearer token, or the stdio
fallback; the endpoint process is asked for beside the agent's own start), serves the
agent's own settings (``session.set_mode``, ``session.set_config``,
``session.authenticate``), and ends the agent — stop sequence, MCP token revoked — on
``session.close``, on a switch of agent and when the process stops (ADR-0027, ADR-0034).

Between turns it watches the agent: one that exits while idle (a crash, an OOM kill, ``kill
-9``) is reaped at once with the helpers it left, the conversation is told (``agent.note``
``agent_exited``) and ``session.status`` says it is not running, until the next message
starts it again. A sign-in the agent does itself (``session.authenticate``) waits at most
:func:`sign_in_timeout` and can be cancelled with Stop (``agent.stop``); either way the agent,
which may still wait for a browser, is ended, so the next message starts it afresh — with
the configuration as it is then.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

from actors.bus.service import OpTable, RequestContext
from rio.acp.turn import AcpBrain, AcpTurn, AcpTurnSpec
from rio.agent.tools import Tools
from rio.agent.turn_mcp import QUESTION_TIMEOUT_S
from rio.protocol.errors import AgentError, RioError

log = logging.getLogger("rio.agent.session")

#: The supervisor's process of Rio's MCP endpoint (supervisor.toml ``[process.mcp]``).
ENDPOINT_PROCESS = "mcp"
#: Tests shorten the wait for the user's answer with this variable.
QUESTION_TIMEOUT_ENV = "RIO_AGENT_QUESTION_TIMEOUT_S"
#: How long a sign-in the agent does itself (a browser login) may take before Rio gives up.
SIGN_IN_TIMEOUT_S = 300.0
#: Tests shorten it with this variable.
SIGN_IN_TIMEOUT_ENV = "RIO_AGENT_SIGN_IN_TIMEOUT_S"


def sign_in_timeout() -> float:
    """How long ``session.authenticate`` waits for the agent: 300 s (a browser login, 2FA
    included), or ``RIO_AGENT_SIGN_IN_TIMEOUT_S``."""
    import os
    try:
        value = float(os.environ.get(SIGN_IN_TIMEOUT_ENV, ""))
    except ValueError:
        return SIGN_IN_TIMEOUT_S
    return value if value > 0 else SIGN_IN_TIMEOUT_S


def exit_words(code: int | None) -> str:
    """An agent's exit as the user reads it: ``killed by signal 9 (SIGKILL)``, ``exit code 3``."""
    import signal
    if code is None:
        return "its exit code is unknown"
    if code < 0:
        try:
            name = f" ({signal.Signals(-code).name})"
        except ValueError:
            name = ""
        return f"killed by signal {-code}{name}"
    return f"exit code {code}"


def question_timeout() -> float:
    """How long a question to the user (a proposal, a permission) waits: 240 s, or
    ``RIO_AGENT_QUESTION_TIMEOUT_S``."""
    import os
    try:
        value = float(os.environ.get(QUESTION_TIMEOUT_ENV, ""))
    except ValueError:
        return QUESTION_TIMEOUT_S
    return value if value > 0 else QUESTION_TIMEOUT_S


def _import_acp() -> None:
    import rio.acp.client  # noqa: F401 -- the import is the point


class AgentLauncher:
    """How this session starts its ACP agent ``agent`` (a discovery name): found the way
    ``rio agents`` finds it, at the moment the agent is (re)started, so a config.toml edit or
    an install applies to the next start; a missing agent fails that turn with
    ``agent.agent_not_found``/``agent.not_configured`` and its next action.

    Called with a turn's port it builds the :class:`rio.acp.client.AcpClient`. Before the
    first one, :meth:`start_ahead` starts the agent's process while the session imports the
    ACP SDK (~0.5 s of pydantic models): the agent boots meanwhile (node, or opencode's own
    ~2 s start) instead of after it; the client then takes that process."""

    def __init__(self, session: Any, agent: str) -> None:
        self.session = session
        self.agent = agent
        #: (settings, process) started ahead and not taken by a client yet
        self.ahead: tuple[Any, Any] | None = None
        #: why the agent runs unboxed (rio.acp.sandbox.Availability), said once per session
        self.unboxed: Any = None

    def box(self) -> Any:
        """How this agent is boxed (ADR-0038): a ``Box`` for :class:`ProcessControlPort`, or
        None when ``[sandbox] mode`` is "off" or no sandbox can be made here (then
        :attr:`unboxed` says why). Mode "required" without one raises
        ``agent.sandbox_unavailable``. Asked at every start: an install applies to the next."""
        import os
        import sys

        import rio
        from actors.runtime.landlock import abi
        from rio.acp import sandbox
        from rio.agent.config import config_dir
        config = sandbox.load_config(config_dir())
        if config.mode == "off":
            return None
        available = sandbox.probe(config.bwrap, landlock_abi=abi)
        if not available.usable:
            if config.mode == "required":
                raise sandbox.required_error(available)
            self.unboxed = available
            return None
        self.unboxed = None
        # `rio mcp` (the stdio fallback) runs inside too: this Python and Rio's own modules
        readable = (sys.executable, str(Path(rio.__file__).resolve().parent))
        # Rio's folders as this process knows them: the agent's environment has none of
        # Rio's variables, so its own would name the defaults
        hidden = sandbox.rio_folders(os.environ)
        return lambda argv, cwd, env: sandbox.plan(
            argv, Path(cwd), env, self.agent, config, available, rio_dirs=hidden,
            extra_readable=readable)

    def port(self) -> Any:
        from actors.agent.acp_process import ProcessControlPort
        return ProcessControlPort(box=self.box())

    def settings(self) -> Any:
        import os

        from rio.acp import discovery, registry
        from rio.acp.settings import settings_for
        from rio.agent.config import config_dir
        config = discovery.load_agents_config(config_dir())
        # the registry's agents as cached on disk: starting an agent never waits on the network
        spec = discovery.spec_for(self.agent, config,
                                  registry.load(os.environ, network=False).agents)
        info = discovery.locate(spec, os.environ, discovery.RealHost())
        return settings_for(info, spec, self.session.root, os.environ)

    async def start_ahead(self) -> None:
        """Start the agent's process now; a failure is left to the client's own start, which
        reports it classified."""
        try:
            settings = self.settings()
            process = await self.port().start(settings.argv, cwd=str(settings.root),
                                              env=settings.env)
        except (RioError, OSError, ValueError, TypeError) as exc:
            log.info("the agent was not started ahead (%s); the turn starts it", exc)
            return
        self.ahead = (settings, process)

    def __call__(self, port: Any) -> Any:
        from rio.acp.client import AcpClient
        from rio.acp.protocol_log import ProtocolLog, log_path
        ahead, self.ahead = self.ahead, None
        settings, process = ahead if ahead is not None else (self.settings(), None)
        processes = self.port()
        if self.unboxed is not None and not getattr(self.session, "sandbox_said", True):
            from rio.acp.sandbox import NO_SANDBOX_NOTE, no_sandbox_text
            self.session.sandbox_said = True        # once per conversation's session
            turn = port                             # it adds the conversation and the turn
            turn.publish("agent.note", {"note": NO_SANDBOX_NOTE,
                                        "text": no_sandbox_text(self.unboxed)})
        return AcpClient(settings, port, processes,
                         ProtocolLog(log_path(self.session.root, self.session.conversation)),
                         process=process)

    async def discard(self) -> None:
        """A process started ahead that no client took (the session ends first): stopped."""
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            await ahead[1].stop()


def make_acp_client_factory(session: Any, agent: str) -> AgentLauncher:
    return AgentLauncher(session, agent)


class AcpOwner:
    """The ACP half of the session (see the module docstring). Its ops are in ``handles``,
    which the session's own table extends."""

    handles: OpTable[Any] = OpTable()
    brain: AcpBrain | None
    acp_client_factory: Callable[..., Any]
    conversation: str
    root: Path
    loop: asyncio.AbstractEventLoop
    port: Any
    endpoint: asyncio.Task[Mapping[str, Any] | None] | None
    #: the conversation's one turn (the session's), None between turns
    running: Any
    #: the agent's client whose exit is watched between turns (:meth:`_watch_agent`)
    watched: Any = None
    #: how the agent ended while no turn ran, until one starts it again (session.status)
    agent_ended: str | None = None
    #: the last turn's id: a note between turns belongs to the conversation's latest turn
    last_turn: str | None = None
    #: set by Stop to cancel the sign-in under way (:meth:`authenticate_op`)
    signing: asyncio.Event | None = None
    #: the conversation was told its agent runs without a sandbox (said once: ADR-0038)
    sandbox_said: bool = False

    def _turn_port(self, turn_id: str, provider: str) -> Any:
        raise NotImplementedError

    async def _acp_turn(self, running: Any, began: Mapping[str, Any]) -> Any:
        """The turn of a conversation that drives an ACP agent (ADR-0023): the agent is
        started (or kept from the last turn), and Rio's MCP endpoint is made sure of at the
        same time, so its start never adds to the agent's."""
        agent = str(began["agent"])
        if self.brain is not None and self.brain.agent != agent:
            await self._end_agent()         # the conversation switched agent: the old one ends
        if self.brain is None or not self.brain.alive:
            self._want_endpoint()
        if self.brain is None:
            # The SDK's import builds ~200 pydantic models (0.5 s here, seconds on a loaded
            # machine): off the loop, which must keep answering the supervisor's liveness
            # pings — and beside the agent's own start, which needs none of it.
            launcher = self.acp_client_factory(self, agent)
            imported = self.loop.run_in_executor(self.port.pool, _import_acp)
            ahead = getattr(launcher, "start_ahead", None)
            if ahead is not None:
                await asyncio.gather(ahead(), imported)
            else:
                await imported
            self.brain = AcpBrain(agent, launcher, mcp_servers=self._mcp_servers)
        turn_id = str(running.turn_id)
        stored = began.get("acp_session")
        spec = AcpTurnSpec(self.conversation, turn_id, agent, running.text,
                           stored if isinstance(stored, str) else None)
        port = self._turn_port(turn_id, f"acp:{agent}")
        return AcpTurn(spec, self.brain, Tools(self.port, self.conversation, self.root), port,
                       self.root, permission_timeout_s=question_timeout(),
                       question_timeout_s=question_timeout())

    # --- Rio's MCP endpoint ------------------------------------------------------------------
    def _want_endpoint(self) -> None:
        """Ask for the endpoint process now (``system.spawn``, answered when it is ready): its
        start (the SDK's import, ~1 s) runs beside the agent's own, not after it."""
        if self.endpoint is None or (self.endpoint.done() and self.endpoint.result() is None):
            self.endpoint = self.loop.create_task(self._endpoint_address())

    async def _endpoint_address(self) -> Mapping[str, Any] | None:
        try:
            await self.port.call("system.spawn", {"kind": ENDPOINT_PROCESS,
                                                  "key": ENDPOINT_PROCESS}, timeout=25)
            got = await self.port.call("mcp.address", {}, timeout=10)
        except RioError as err:
            log.warning("Rio's MCP endpoint is not available (%s): the agent works without "
                        "Rio's tools this time", err.kind)
            return None
        return got if isinstance(got, Mapping) and got.get("url") else None

    async def _mcp_servers(self, client: Any) -> list[dict[str, Any]]:
        """Rio's MCP endpoint for the agent's session/new or session/load: over HTTP with the
        conversation's bearer token when the agent speaks it (claude, codex and opencode do),
        else the stdio fallback ``rio mcp`` — a client of the same endpoint, over HTTP too
        (it runs in the agent's box: ADR-0038). Waits for the endpoint to answer: codex never
        retries a server that was down at session/new."""
        from rio.acp.mcp_servers import supports_http
        from rio.mcp import entry
        self._want_endpoint()
        assert self.endpoint is not None
        address = await asyncio.shield(self.endpoint)
        if address is None:
            return []
        try:
            token = entry.fresh_token(self.root, self.conversation)
            if supports_http(getattr(client, "init", None)):
                return [entry.http_server_entry(str(address["url"]), token)]
            return [entry.mcp_server_entry(self.conversation, str(address["url"]), token)]
        except Exception:  # the agent works without Rio's tools
            log.exception("no MCP entry for %s", self.conversation)
            return []

    # --- the agent between turns ------------------------------------------------------------
    def _watch_agent(self) -> None:
        """Watch the agent's exit between turns (called when a turn ends): see the module
        docstring. A turn running when it exits reports it itself (the prompt ends)."""
        brain = self.brain
        if brain is None:
            return
        client = brain.client
        if client is None or getattr(client, "process", None) is None or client is self.watched:
            return
        self.watched = client
        self.agent_ended = None
        self.loop.create_task(self._agent_exit(brain, client))

    async def _agent_exit(self, brain: AcpBrain, client: Any) -> None:
        try:
            code = await client.process.wait()      # waitid(WNOWAIT): not reaped yet
        except Exception:  # nothing to watch; the next turn finds out
            log.debug("the agent's exit cannot be watched", exc_info=True)
            return
        idle = self.running is None
        while self.running is not None:             # a turn owns the agent meanwhile
            await self.running.done.wait()
        if self.brain is not brain or brain.client is not client or client.state == "stopped":
            return      # ended on purpose (session.close, a switch), or started again
        await client.close()            # reaped, with the helpers it left (its cookie)
        if not idle:
            return      # it died during a turn, which said so (agent.agent_exited)
        how = exit_words(code)
        self.agent_ended = f"it stopped while idle ({how})"
        log.warning("the agent %r of %s exited while idle (%s); reaped", brain.agent,
                    self.conversation, how)
        if self.last_turn is not None:
            self.port.publish("agent.note", {
                "conversation": self.conversation, "turn": self.last_turn,
                "note": "agent_exited",
                "text": f"The agent {brain.agent!r} stopped while no message was being "
                        f"answered ({how}). Your next message starts it again."})

    def _agent_state(self) -> dict[str, Any] | None:
        """The conversation's ACP agent for ``session.status`` (None: no agent started yet)."""
        brain = self.brain
        if brain is None:
            return None
        client = brain.client
        process = getattr(client, "process", None)
        running = bool(client is not None and client.alive)
        state: dict[str, Any] = {"name": brain.agent, "running": running,
                                 "pid": process.pid if running and process is not None
                                 else None}
        if not running and self.agent_ended:
            state["ended"] = self.agent_ended
        return state

    @handles("session.authenticate")
    async def authenticate_op(self, ctx: RequestContext) -> Any:
        """One of the agent's own sign-in methods, on the running agent. It waits at most
        :func:`sign_in_timeout`, and Stop (``agent.stop``) cancels it; then the agent — whose
        login may still wait for a browser that never comes — is ended, and the next message
        starts it afresh, with the configuration as it is then."""
        brain = self.brain
        # Sign-in needed: the agent runs, with no session yet (or a refused prompt).
        if brain is None or brain.client is None or not brain.client.alive:
            raise AgentError("agent_not_running", "The conversation's agent is not running "
                             "now.", "Send your message again: the sign-in card comes back "
                             "with its button.")
        if self.signing is not None:
            raise AgentError("busy", "A sign-in is under way already.",
                             "Finish it in the browser, or cancel it (Stop).")
        method = str(ctx.args["method"])
        limit = min(sign_in_timeout(), float(getattr(getattr(brain.client, "settings", None),
                                                     "authenticate_timeout_s", 600.0)))
        cancelled = self.signing = asyncio.Event()
        signing = self.loop.create_task(brain.client.authenticate(method))
        stop = self.loop.create_task(cancelled.wait())
        try:
            done, _ = await asyncio.wait({signing, stop}, timeout=limit,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            self.signing = None
        if signing in done:
            signing.result()            # the agent's refusal, classified (agent.*)
            return {"signed_in": True, "method": method}
        signing.cancel()
        await asyncio.gather(signing, return_exceptions=True)
        await self._end_agent()
        again = ("Send your message again to start the agent afresh (with its configuration "
                 "as it is now), then sign in from its card — or sign in with the agent's "
                 "own command in a terminal")
        if cancelled.is_set():
            raise AgentError("sign_in_cancelled", "You cancelled the sign-in; Rio ended the "
                             "agent, which was still waiting for it.", again, method=method)
        raise AgentError("sign_in_timeout", f"The sign-in did not finish in {limit:.0f} s (the "
                         "browser page was not completed, or the agent cannot reach its "
                         "server — offline?), so Rio stopped waiting and ended the agent.",
                         again, method=method)

    def cancel_sign_in(self) -> bool:
        """Stop while the agent signs in: the sign-in is cancelled (True when one was)."""
        if self.signing is None or self.signing.is_set():
            return False
        self.signing.set()
        return True

    @handles("session.set_mode")
    async def set_mode_op(self, ctx: RequestContext) -> Any:
        """The agent's own mode, on its running session; the agent's answer is published as
        ``agent.modes`` with the conversation, as its own updates are."""
        brain = self._running_brain()
        await brain.client.set_mode(str(ctx.args["mode"]))
        return {"mode": brain.client.updates.modes.get("current")}

    @handles("session.set_config")
    async def set_config_op(self, ctx: RequestContext) -> Any:
        """One of the agent's config options (its model …), published as ``agent.config``."""
        brain = self._running_brain()
        await brain.client.set_config_option(str(ctx.args["option"]), ctx.args["value"])
        return {"options": brain.client.updates.config}

    def _running_brain(self) -> Any:
        brain = self.brain
        if brain is None or not brain.alive:
            raise AgentError("agent_not_running", "The conversation's agent is not running "
                             "now (it starts with the next message).",
                             "Send a message, then pick again.")
        return brain

    @handles("session.close")
    async def close_op(self, ctx: RequestContext) -> Any:
        closed = self.brain is not None
        result = await self._end_agent()
        return {"closed": closed, "how": getattr(result, "how", None)}

    async def _end_agent(self) -> Any:
        """End the agent (the stop sequence) and its MCP token; the StopResult, if any."""
        brain, self.brain = self.brain, None
        result = await brain.close() if brain is not None else None
        discard = getattr(brain.make_client, "discard", None) if brain is not None else None
        if discard is not None:
            await discard()
        try:
            from rio.mcp.entry import end_conversation
            end_conversation(self.conversation, self.root)
        except ImportError:
            pass
        except OSError as exc:
            log.info("MCP token of %s not removed: %s", self.conversation, exc)
        return result
