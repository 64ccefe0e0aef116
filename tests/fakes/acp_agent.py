"""A fake ACP agent for the tests, written with the SDK's agent side (``acp.run_agent``).

Run as ``python tests/fakes/acp_agent.py SCRIPT`` where SCRIPT is a JSON file (or inline
JSON). Keys, all optional::

    {"auth": "none" | "new_session" | "prompt",      # where -32000 comes until authenticate
     "auth_methods": [{"id", "name", "type"?: "terminal"|"env_var", "args"?, "vars"?}],
     "auth_hang": "/tmp/marker",                     # authenticate never answers (a browser
                                                     # login offline); writes the marker first
     "load_session": true,                           # offer session/load
     "logout": "/tmp/marker",                        # offer ACP logout; write the marker
     "state": "/tmp/x.json",                         # sessions kept here across processes
     "modes": {"current": "ask", "available": ["ask", "code"]},
     "commands": [{"name": "review", "description": "…"}],
     "on_eof": "exit" | "stay",                      # "stay": ignore stdin close (claude-like)
     "ignore_term": false,                           # also ignore SIGTERM: only KILL ends it
     "startup_stderr": 0,                            # bytes written to stderr before serving
     "turns": [[action, …], …],                      # one list per prompt, in order
     "default_turn": [action, …]}                    # after the listed turns (default: echo)

Actions (one dict each; the key names it):

``{"text": "…"}`` a message chunk · ``{"echo": true}`` the prompt's text back ·
``{"thought": "…"}`` · ``{"plan": ["step", …]}`` · ``{"usage": [used, size]}`` ·
``{"tool": {"id", "title", "kind", "input", "status"}}`` a tool call ·
``{"tool_update": {"id", "status", "input"?, "output"?}}`` ·
``{"permission": {"id", "title"?, "kind"?, "input"?, "options": [[optionId, kind], …]}}`` asks,
then says
``permission: <optionId|cancelled>`` · ``{"read": {"path", "line"?, "limit"?}}`` then says
``read: <content>`` or ``read error: <code> <message>`` · ``{"write": {"path", "content"}}``
then ``write: ok`` / ``write error: <code> <message>`` · ``{"write_disk": {"path",
"content"}}`` writes the file itself, behind the client's back · ``{"delete_disk": {"path"}}``
deletes it · ``{"terminal": "cmd"}`` tries
terminal/create, says ``terminal: <code>`` · ``{"silent": seconds}`` sends nothing (a cancel
ends it) · ``{"hang": true}`` until session/cancel · ``{"hang": "forever"}`` ignores cancel
too · ``{"crash": code, "once"?: marker}`` exits mid-turn (after a line on stderr; with
``once``, only while the marker file does not exist, which it creates) · ``{"stderr": bytes}`` ·
``{"mcp": {"tool", "args"?, "server"?, "token"?, "cancel_after"?}}`` reaches the session's MCP
server (from ``mcpServers``: HTTP, or its stdio command), calls the tool, says ``mcp: <JSON of
the answer>``, ``mcp: error: …`` or ``mcp: cancelled`` · ``{"wait_for": "/path"}`` until the
file exists · ``"mcp_http": true`` (a top-level key) advertises MCP over HTTP ·
``{"stream": {"mib": N, "chunk"?: 65536, "ignore_cancel"?: false}}`` streams N MiB of text
(a cancel stops it, unless ``ignore_cancel``) ·
``{"mcp_many": [{"tool", "args"?}, …]}`` makes those MCP calls at once (one session each, as
``mcp`` does), then says ``mcp: …`` for each, in the list's order · ``"init": "garbage"`` (a
top-level key) answers ``initialize`` with a result that is not one, and keeps running ·
``{"malformed": "…"}`` a raw non-JSON line on stdout · ``{"helper": "group"|"setsid"}`` starts
a sleeping helper, says ``helper <pid>`` · ``{"env": "PREFIX"}`` says ``env: NAMES`` of the
variables starting with PREFIX · ``{"report_init": true}`` says ``init: <JSON of the
client's capabilities>`` · ``{"mode": "id"}`` a current_mode_update ·
``{"report_settings": true}`` says ``mode: <its mode> model: <its model option>`` (what
session/set_mode and session/set_config_option set) · ``{"stop_reason": "…"}`` how the prompt
ends (default end_turn).

What a hostile agent tries (the sandbox's tests, ADR-0038), each saying what came of it:
``{"probe_read": "/path"}`` says ``probe_read /path: ok <first 60 characters>`` or
``probe_read /path: <errno name>`` · ``{"probe_list": "/dir"}`` ``probe_list /dir: <names>``
or the errno name · ``{"probe_write": "/path"}`` writes the file: ``probe_write /path: ok`` or
the errno name · ``{"probe_bus": {"endpoint": "ipc://…", "op": "…", "args"?: {}}}`` sends one
request to a Rio bus, raw: ``probe_bus: answered <ok|error kind>`` or ``probe_bus: no answer``
· ``{"daemon": "TAG"}`` starts a helper that clears its environment, calls setsid and
double-forks (a Python sleeping an hour, ``TAG`` in its argv; it writes its pid as it sees it
to ``daemon-TAG.pid`` in the working folder), says ``daemon TAG``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from typing import Any

from acp import RequestError, run_agent, text_block
from acp.helpers import (
    plan_entry,
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentAuthCapabilities,
    AgentCapabilities,
    AuthenticateResponse,
    AuthEnvVar,
    AuthMethodAgent,
    AvailableCommand,
    AvailableCommandsUpdate,
    CurrentModeUpdate,
    EnvVarAuthMethod,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    LogoutCapabilities,
    LogoutRequest,
    LogoutResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    TerminalAuthMethod,
    ToolCallUpdate,
    UsageUpdate,
)


class Cancelled(Exception):
    pass


class FakeAgent:
    def __init__(self, script: dict[str, Any]) -> None:
        self.script = script
        self.conn: Any = None
        self.authed = script.get("auth", "none") == "none"
        self.client_caps: Any = None
        self.prompts = 0
        self.cancel_event = asyncio.Event()
        self.sessions: dict[str, list[list[str]]] = self._load_state()
        self.config: dict[str, Any] = {"model": "fast"}
        self.mode = (script.get("modes") or {}).get("current")
        self.mcp_servers: dict[str, Any] = {}      # session → its mcpServers (stdio entries)

    # --- state across processes (session/load) ------------------------------------------
    def _load_state(self) -> dict[str, list[list[str]]]:
        path = self.script.get("state")
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)
        return {}

    def _save_state(self) -> None:
        path = self.script.get("state")
        if path:
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(self.sessions, fh)

    def on_connect(self, conn: Any) -> None:
        self.conn = conn
        if self.script.get("logout"):   # ACP 0.12's SDK routes no logout on the agent side
            conn._conn._handler.route_request("logout", LogoutRequest, self, "logout")

    async def logout(self, **kw: Any) -> LogoutResponse:
        with open(self.script["logout"], "w", encoding="utf-8") as fh:
            fh.write("logged out\n")
        self.authed = False
        return LogoutResponse()

    # --- client → agent -----------------------------------------------------------------
    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kw: Any) -> InitializeResponse:
        self.client_caps = {
            "capabilities": client_capabilities.model_dump(mode="json", by_alias=True,
                                                           exclude_none=True)
            if client_capabilities else None, "meta": kw}
        methods = []
        for m in self.script.get("auth_methods", []):
            if m.get("type") == "terminal":
                methods.append(TerminalAuthMethod(id=m["id"], name=m["name"], type="terminal",
                                                  args=m.get("args", [])))
            elif m.get("type") == "env_var":
                methods.append(EnvVarAuthMethod(id=m["id"], name=m["name"], type="env_var",
                                                vars=[AuthEnvVar(name=v) for v in m["vars"]]))
            else:
                methods.append(AuthMethodAgent(id=m["id"], name=m["name"],
                                               description=m.get("description")))
        return InitializeResponse(
            protocol_version=1, auth_methods=methods,
            agent_capabilities=AgentCapabilities(load_session=bool(
                self.script.get("load_session")), **({"auth": AgentAuthCapabilities(
                    logout=LogoutCapabilities())} if self.script.get("logout") else {}),
                **({"mcp_capabilities": McpCapabilities(http=True)}
                   if self.script.get("mcp_http") else {})),
            agent_info=Implementation(name="fake-acp", version="1.2.3"))

    async def authenticate(self, method_id: str, **kw: Any) -> AuthenticateResponse:
        if method_id not in {m["id"] for m in self.script.get("auth_methods", [])}:
            raise RequestError.invalid_params({"method": method_id})
        if self.script.get("auth_hang"):
            with open(self.script["auth_hang"], "w", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
            await asyncio.Event().wait()        # the browser never comes back
        self.authed = True
        return AuthenticateResponse()

    def _modes(self) -> SessionModeState | None:
        modes = self.script.get("modes")
        if not modes:
            return None
        return SessionModeState(current_mode_id=modes["current"], available_modes=[
            SessionMode(id=m, name=m.title()) for m in modes["available"]])

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kw: Any
                          ) -> NewSessionResponse:
        if self.script.get("auth") == "new_session" and not self.authed:
            raise RequestError.auth_required()
        sid = uuid.uuid4().hex[:12]
        self.sessions[sid] = []
        self.mcp_servers[sid] = list(mcp_servers or ())
        self._save_state()
        if self.script.get("commands"):
            asyncio.get_running_loop().call_later(0.01, lambda: asyncio.ensure_future(
                self._send_commands(sid)))
        return NewSessionResponse(session_id=sid, modes=self._modes(),
                                  config_options=self._config())

    async def _send_commands(self, sid: str) -> None:
        await self.conn.session_update(session_id=sid, update=AvailableCommandsUpdate(
            session_update="available_commands_update", available_commands=[
                AvailableCommand(name=c["name"], description=c.get("description", ""))
                for c in self.script["commands"]]))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **kw: Any) -> LoadSessionResponse:
        if session_id not in self.sessions:
            raise RequestError.resource_not_found(session_id)
        self.mcp_servers[session_id] = list(mcp_servers or ())
        for role, text in self.sessions[session_id]:
            update = (update_user_message_text(text) if role == "user"
                      else update_agent_message_text(text))
            await self.conn.session_update(session_id=session_id, update=update)
        return LoadSessionResponse(modes=self._modes())

    async def set_session_mode(self, session_id: str, mode_id: str, **kw: Any
                               ) -> SetSessionModeResponse:
        self.mode = mode_id
        await self.conn.session_update(session_id=session_id, update=CurrentModeUpdate(
            session_update="current_mode_update", current_mode_id=mode_id))
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: Any,
                                **kw: Any) -> SetSessionConfigOptionResponse:
        self.config[config_id] = value
        return SetSessionConfigOptionResponse(config_options=self._config())

    def _config(self) -> list[Any]:
        return [SessionConfigOptionSelect(
            id="model", name="Model", type="select", current_value=self.config["model"],
            options=[SessionConfigSelectOption(value=v, name=v.title())
                     for v in ("fast", "smart")])]

    async def cancel(self, session_id: str, **kw: Any) -> None:
        self.cancel_event.set()

    async def prompt(self, session_id: str, prompt: list[Any], **kw: Any) -> PromptResponse:
        if self.script.get("auth") == "prompt" and not self.authed:
            raise RequestError.auth_required()
        text = "".join(getattr(b, "text", "") for b in prompt)
        turns = self.script.get("turns", [])
        actions = turns[self.prompts] if self.prompts < len(turns) else \
            self.script.get("default_turn", [{"echo": True}])
        self.prompts += 1
        self.cancel_event = asyncio.Event()
        self.said: list[str] = []
        self.stop_reason = "end_turn"
        history = self.sessions.setdefault(session_id, [])
        history.append(["user", text])
        try:
            for action in actions:
                await self.act(session_id, action, text)
        except Cancelled:
            self.stop_reason = "cancelled"
        history.append(["agent", "".join(self.said)])
        self._save_state()
        return PromptResponse(stop_reason=self.stop_reason)

    # --- actions --------------------------------------------------------------------------
    async def say(self, sid: str, text: str) -> None:
        self.said.append(text)
        await self.conn.session_update(session_id=sid, update=update_agent_message_text(text))

    async def call_mcp(self, sid: str, m: dict[str, Any]) -> str:
        """Reach the session's MCP server ``m["server"]`` (default: the first) as an agent does
        — over HTTP with the entry's headers (``m["token"]`` replaces the bearer token), or by
        starting its stdio command — and call ``m["tool"]`` with ``m["args"]``; the structured
        answer as JSON, ``error: <text>``, or ``cancelled`` when ``m["cancel_after"]`` seconds
        pass first (the SDK sends notifications/cancelled)."""
        from mcp import Client, StdioServerParameters
        servers = self.mcp_servers.get(sid) or []
        entry = next((e for e in servers if e.name == m.get("server", e.name)), None)
        if entry is None:
            return "error: no MCP server in session/new"
        if hasattr(entry, "url"):
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client
            headers = {h.name: h.value for h in entry.headers or ()}
            if "token" in m:
                headers["Authorization"] = f"Bearer {m['token']}"
            target: Any = streamable_http_client(
                entry.url, http_client=create_mcp_http_client(headers=headers))
        else:
            target = StdioServerParameters(command=entry.command, args=list(entry.args),
                                           env={"PATH": os.environ.get("PATH", ""),
                                                **{v.name: v.value for v in entry.env or ()}})
        try:
            async with Client(target, mode="legacy") as client:
                call = client.call_tool(m["tool"], m.get("args") or {})
                if m.get("cancel_after") is not None:
                    try:
                        result = await asyncio.wait_for(call, float(m["cancel_after"]))
                    except (TimeoutError, asyncio.TimeoutError):
                        return "cancelled"
                else:
                    result = await call
        except Exception as exc:  # noqa: BLE001 -- the agent says what went wrong
            return f"error: {type(exc).__name__}: {exc}"
        if result.is_error:
            return "error: " + "".join(getattr(c, "text", "") for c in result.content)
        return json.dumps(result.structured_content, sort_keys=True)

    async def stream(self, sid: str, spec: dict[str, Any]) -> None:
        """``spec["mib"]`` MiB of text in chunks of ``spec.get("chunk", 65536)`` characters,
        as fast as the client reads them; a cancel stops it (the prompt ends cancelled)."""
        chunk = int(spec.get("chunk", 65536))
        line = ("stream " * (chunk // 7 + 1))[:chunk - 1] + "\n"
        left = int(float(spec["mib"]) * 1024 * 1024)
        while left > 0:
            if self.cancel_event.is_set() and not spec.get("ignore_cancel"):
                raise Cancelled()
            part = line[:min(left, chunk)]
            await self.conn.session_update(session_id=sid,
                                           update=update_agent_message_text(part))
            left -= len(part)
        self.said.append(f"[streamed {spec['mib']} MiB]")

    async def wait_cancel(self, seconds: float | None) -> None:
        try:
            await asyncio.wait_for(self.cancel_event.wait(), seconds)
        except TimeoutError:
            return
        raise Cancelled()

    async def act(self, sid: str, a: dict[str, Any], prompt_text: str) -> None:
        conn = self.conn
        if self.cancel_event.is_set():
            raise Cancelled()
        if "text" in a:
            await self.say(sid, a["text"])
        elif "stream" in a:
            await self.stream(sid, a["stream"])
        elif "mcp_many" in a:
            for answer in await asyncio.gather(*(self.call_mcp(sid, m) for m in a["mcp_many"])):
                await self.say(sid, "mcp: " + answer)
        elif "echo" in a:
            await self.say(sid, "echo: " + prompt_text)
        elif "thought" in a:
            await conn.session_update(session_id=sid, update=update_agent_thought_text(
                a["thought"]))
        elif "plan" in a:
            await conn.session_update(session_id=sid, update=update_plan(
                [plan_entry(p) for p in a["plan"]]))
        elif "usage" in a:
            await conn.session_update(session_id=sid, update=UsageUpdate(
                session_update="usage_update", used=a["usage"][0], size=a["usage"][1]))
        elif "mode" in a:
            await conn.session_update(session_id=sid, update=CurrentModeUpdate(
                session_update="current_mode_update", current_mode_id=a["mode"]))
        elif "tool" in a:
            t = a["tool"]
            await conn.session_update(session_id=sid, update=start_tool_call(
                t["id"], t.get("title", t["id"]), kind=t.get("kind", "other"),
                status=t.get("status", "pending"), raw_input=t.get("input", {})))
        elif "tool_update" in a:
            t = a["tool_update"]
            content = None
            if "output" in t:
                from acp.helpers import tool_content
                content = [tool_content(text_block(t["output"]))]
            await conn.session_update(session_id=sid, update=update_tool_call(
                t["id"], status=t.get("status"), raw_input=t.get("input"), content=content))
        elif "permission" in a:
            p = a["permission"]
            try:
                answer = await conn.request_permission(
                    session_id=sid, tool_call=ToolCallUpdate(
                        tool_call_id=p["id"], title=p.get("title"), kind=p.get("kind"),
                        raw_input=p.get("input")),
                    options=[PermissionOption(option_id=o, name=o, kind=k)
                             for o, k in p["options"]])
                outcome = answer.outcome
                chosen = getattr(outcome, "option_id", None) or outcome.outcome
            except RequestError as exc:
                chosen = f"error {exc.code}"
            await self.say(sid, f"permission: {chosen}")
        elif "mcp" in a:
            await self.say(sid, "mcp: " + await self.call_mcp(sid, a["mcp"]))
        elif "wait_for" in a:
            for _ in range(600):               # up to 30 s for the test's marker file
                if os.path.exists(a["wait_for"]) or self.cancel_event.is_set():
                    break
                await asyncio.sleep(0.05)
        elif "read" in a:
            r = a["read"]
            try:
                got = await conn.read_text_file(session_id=sid, path=r["path"],
                                                line=r.get("line"), limit=r.get("limit"))
                await self.say(sid, f"read: {got.content}")
            except RequestError as exc:
                await self.say(sid, f"read error: {exc.code} {exc}")
        elif "write" in a:
            w = a["write"]
            try:
                await conn.write_text_file(session_id=sid, path=w["path"], content=w["content"])
                await self.say(sid, "write: ok")
            except RequestError as exc:
                await self.say(sid, f"write error: {exc.code} {exc}")
        elif "write_disk" in a:
            w = a["write_disk"]
            with open(w["path"], "w", encoding="utf-8") as fh:
                fh.write(w["content"])
        elif "delete_disk" in a:
            os.remove(a["delete_disk"]["path"])
        elif "terminal" in a:
            try:
                await conn.create_terminal(session_id=sid, command=a["terminal"])
                await self.say(sid, "terminal: ok")
            except RequestError as exc:
                await self.say(sid, f"terminal: {exc.code}")
            except Exception as exc:  # noqa: BLE001 -- the fake reports what it got
                await self.say(sid, f"terminal: {type(exc).__name__}")
        elif "silent" in a:
            await self.wait_cancel(float(a["silent"]))
        elif "hang" in a:
            if a["hang"] == "forever":
                await asyncio.Event().wait()
            await self.wait_cancel(None)
        elif "crash" in a:
            if a.get("once"):     # a marker file: crash only the first time (across processes)
                if os.path.exists(a["once"]):
                    return
                open(a["once"], "w").close()
            sys.stderr.write("fatal: the fake agent crashes on purpose\n")
            sys.stderr.flush()
            os._exit(int(a["crash"]))
        elif "stderr" in a:
            spam(int(a["stderr"]))
        elif "malformed" in a:
            os.write(1, a["malformed"].encode() + b"\n")
        elif "helper" in a:
            proc = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(3600)"],
                start_new_session=a["helper"] == "setsid")
            await self.say(sid, f"helper {proc.pid}")
        elif any(k in a for k in ("probe_read", "probe_list", "probe_write", "probe_bus",
                                  "daemon")):
            await self.say(sid, probe(a))
        elif "env" in a:
            names = sorted(k for k in os.environ if k.startswith(a["env"]))
            await self.say(sid, "env: " + ",".join(names))
        elif "report_init" in a:
            await self.say(sid, "init: " + json.dumps(self.client_caps, sort_keys=True))
        elif "report_settings" in a:
            await self.say(sid, f"mode: {self.mode} model: {self.config['model']}")
        elif "stop_reason" in a:
            self.stop_reason = a["stop_reason"]
        else:
            raise RequestError.invalid_params({"unknown action": a})


def _errno(exc: OSError) -> str:
    import errno
    return errno.errorcode.get(exc.errno or 0, type(exc).__name__)


#: The daemon: environment cleared, a session of its own, its parent gone (a double fork).
DAEMON = """
import os, sys, time
tag = sys.argv[1]
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
with open("daemon-" + tag + ".pid", "w") as fh:
    fh.write(str(os.getpid()))
time.sleep(3600)
"""


def probe(a: dict[str, Any]) -> str:
    """One of the hostile agent's attempts, and what came of it (see the module docstring)."""
    if "probe_read" in a:
        path = a["probe_read"]
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return f"probe_read {path}: ok {fh.read(60)!r}"
        except OSError as exc:
            return f"probe_read {path}: {_errno(exc)}"
    if "probe_list" in a:
        path = a["probe_list"]
        try:
            return f"probe_list {path}: {','.join(sorted(os.listdir(path)))}"
        except OSError as exc:
            return f"probe_list {path}: {_errno(exc)}"
    if "probe_write" in a:
        path = a["probe_write"]
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("written by the agent\n")
            return f"probe_write {path}: ok"
        except OSError as exc:
            return f"probe_write {path}: {_errno(exc)}"
    if "probe_bus" in a:
        import zmq

        from rio.protocol.frames import Reply, Request, decode, encode
        b = a["probe_bus"]
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            sock.connect(b["endpoint"])
            sock.send(encode(Request("probe-1", b["op"], b.get("args") or {})))
            if not sock.poll(int(float(b.get("timeout", 3)) * 1000)):
                return "probe_bus: no answer"
            reply = decode(sock.recv())
            if isinstance(reply, Reply):
                return "probe_bus: answered " + ("ok" if reply.ok else
                                                 str((reply.error or {}).get("kind")))
            return "probe_bus: answered something else"
        except zmq.ZMQError as exc:
            return f"probe_bus: {exc}"
        finally:
            sock.close(0)
            ctx.term()
    tag = a["daemon"]
    subprocess.run([sys.executable, "-c", DAEMON, tag], env={}, check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return f"daemon {tag}"


def garbage_initialize() -> int:
    """``"init": "garbage"``: answer ``initialize`` with a result no client can read, then go
    on running (reading stdin) until it is closed — a broken agent that does not exit."""
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("method") == "initialize":
            answer = {"jsonrpc": "2.0", "id": message.get("id"),
                      "result": {"protocolVersion": "one", "agentCapabilities": 42}}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
    return 0


def spam(count: int) -> None:
    line = b"x" * 1023 + b"\n"
    while count > 0:
        os.write(2, line[:min(count, len(line))])
        count -= len(line)


def main() -> int:
    arg = sys.argv[1] if len(sys.argv) > 1 else "{}"
    if arg.lstrip().startswith("{"):
        script = json.loads(arg)
    else:
        with open(arg, encoding="utf-8") as fh:
            script = json.load(fh)
    if script.get("ignore_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if script.get("startup_stderr"):
        spam(int(script["startup_stderr"]))
    if script.get("init") == "garbage":
        return garbage_initialize()
    asyncio.run(run_agent(FakeAgent(script)))
    if script.get("on_eof") == "stay":   # like claude-agent-acp and codex-acp
        while True:   # ends: the test ends this process (it outlives stdin on purpose)
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
