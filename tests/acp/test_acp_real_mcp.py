"""Opt-in: the three real ACP agents call Rio's own MCP tool through Rio (ADR-0034).

claude-agent-acp, codex-acp and opencode each run under a real ``rio serve``, offline, against a
loopback model server scripted so that the agent calls Rio's ``propose_edit`` on Rio's MCP
endpoint (the ``mcp`` process: Streamable HTTP on 127.0.0.1, the conversation's bearer token in
``session/new``), then ends with text. The call goes through the conversation's running turn and
its gate: an ``agent.propose`` answered with ``agent.approve`` (``rio chat --approve yes``), the
edit applied into a buffer, listed in the turn's end (``agent.turn`` ``buffers``) and saved by
``--save``. The agent's own "may I use this tool?" question about Rio's tool is answered "allow
once" by Rio (an ``agent.note`` ``auto_allowed``), never shown to the user. Also: a rejection
(``--approve no``: exit 5, the agent told ``applied: false``), ``/diff`` and ``/undo`` at the
prompt, the same turn on the bus (``agent.turn`` ``buffers``, ``agent.history``), and a
proposal a user reads for more than a minute (opencode gives up on an MCP call after 60 s
unless the server reports progress: that test fails while Rio's endpoint sends none).

Each agent runs in its sandbox (bubblewrap, ADR-0038) where this machine can make one: the
project read-write, Rio's folders hidden, its own PID namespace; the protocol log says so.
Each test skips, with the reason, when its agent is absent (tests/acp/test_acp_real_agents.py says
how to install them; ``ACP_AGENTS_PREFIX``, default /tmp/acp-agents). Every instance gets a fresh
empty ``HOME`` and a fake key (``test``): nobody's account is used. How each agent is pointed at
the loopback model and made to call an MCP tool (observed with claude-agent-acp 0.23.1,
codex-acp 0.16.0, opencode 1.18.33):

* claude speaks the Anthropic Messages API (``ANTHROPIC_BASE_URL``); the tool is
  ``mcp__rio__propose_edit``;
* codex speaks only the Responses API (``$CODEX_HOME/config.toml``); the tool reaches the model
  inside a ``namespace`` tool ``mcp__rio``, and the call names the namespace and the bare name;
  its cwd is untrusted, so it runs "read-only" and asks before a destructive MCP tool;
* opencode speaks Chat Completions (``OPENCODE_CONFIG_CONTENT``); the tool is
  ``rio_propose_edit``; it asks before an MCP tool only when its config says ``"ask"``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rio.protocol.errors import RioError
from rio.protocol.frames import thaw
from tests.acp.test_acp_real_agents import (
    CLAUDE,
    CODEX,
    NODE,
    OPENCODE,
    need,
    real_agent_sandbox,
    responses_text,
)
from tests.fakes.model_servers import (
    FakeModelServer,
    RecordedRequest,
    Reply,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_call,
    responses_function_call,
)
from tests.support import RioServer, rio_env, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

FILE = "notes.txt"
BEFORE, AFTER = "alpha\nbeta\n", "alpha\ngamma\n"
EDIT = {"path": FILE, "old_text": "beta", "new_text": "gamma"}
DONE = "Changed beta to gamma."
PROMPT = "Change beta to gamma in notes.txt with Rio's propose_edit."
#: How the tool is named to each agent's model.
MODEL_TOOL = {"claude": "mcp__rio__propose_edit", "codex": "mcp__rio/propose_edit",
              "opencode": "rio_propose_edit"}
APPLIED = re.compile(r'\\?"applied\\?":\s*true')


# --- what the model server saw -----------------------------------------------------------------

def _texts(value: Any) -> str:
    """Every text inside a tool result's content, whatever its shape (str or parts)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_texts(v) for v in value)
    if isinstance(value, dict):
        return _texts(value.get("text") if "text" in value else value.get("content"))
    return ""


def tool_results(agent: str, body: Any) -> list[str]:
    """The tool results a model request carries back to the model, as text."""
    if not isinstance(body, dict):
        return []
    if agent == "claude":
        return [_texts(p.get("content")) for m in body.get("messages") or ()
                if isinstance(m.get("content"), list) for p in m["content"]
                if isinstance(p, dict) and p.get("type") == "tool_result"]
    if agent == "codex":
        return [_texts(i.get("output")) for i in body.get("input") or ()
                if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return [_texts(m.get("content")) for m in body.get("messages") or ()
            if isinstance(m, dict) and m.get("role") == "tool"]


def tool_names(agent: str, body: Any) -> list[str]:
    """The tools a model request offers, as the model sees them (codex: ``namespace/name``)."""
    if not isinstance(body, dict):
        return []
    out: list[str] = []
    for tool in body.get("tools") or ():
        if agent == "codex" and tool.get("type") == "namespace":
            out += [f"{tool.get('name')}/{t.get('name')}" for t in tool.get("tools") or ()]
        elif agent == "opencode":
            out.append(str((tool.get("function") or {}).get("name")))
        else:
            out.append(str(tool.get("name") or tool.get("type")))
    return out


# --- the scripted models -----------------------------------------------------------------------

def model_reply(agent: str, edit: Callable[[RecordedRequest], dict] = lambda r: EDIT
                ) -> Callable[[RecordedRequest], Reply]:
    """The agent's model: a side request without tools (a title) gets a line of text; a turn's
    first request calls Rio's ``propose_edit`` (with ``edit(request)``); once a tool result came
    back, it ends with text. Without Rio's tool on offer it says so (the test then fails on the
    file, with the text)."""
    text = {"claude": anthropic_text, "codex": responses_text, "opencode": openai_text}[agent]

    def reply(request: RecordedRequest) -> Reply:
        body = request.json if request.body else None
        names = tool_names(agent, body)
        if not names and agent != "codex":
            return text("Rio edit")
        if tool_results(agent, body):
            return text(DONE)
        if MODEL_TOOL[agent] not in names:
            return text(f"Rio's tool is not on offer: {names}")
        if agent == "claude":
            return anthropic_tool_use("toolu_rio_1", MODEL_TOOL[agent], edit(request))
        if agent == "codex":
            return responses_function_call("call_rio_1", "propose_edit", edit(request),
                                           namespace="mcp__rio")
        return openai_tool_call("call_rio_1", MODEL_TOOL[agent], edit(request))
    return reply


def model_saw_applied(agent: str, model: FakeModelServer) -> bool:
    return any(APPLIED.search(r) for req in model.requests if req.body
               for r in tool_results(agent, req.json))


# --- an instance with one real agent -----------------------------------------------------------

def need_agent(agent: str) -> None:
    if agent == "claude":
        need(CLAUDE, node=True)
    else:
        need(CODEX if agent == "codex" else OPENCODE)


def agent_setup(agent: str, home: Path, model_url: str, opencode_ask: bool = False
                ) -> tuple[str, list[str], dict[str, str]]:
    """``[agents.NAME]`` command, args, and the environment the agent needs (into Rio's: the
    agent inherits Rio's environment minus ``RIO_*``)."""
    if agent == "claude":
        assert NODE is not None
        return NODE, [str(CLAUDE)], {"ANTHROPIC_BASE_URL": model_url,
                                     "ANTHROPIC_API_KEY": "test"}
    if agent == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            'model = "gpt-5.4-mini"\nmodel_provider = "fake"\n[model_providers.fake]\n'
            f'name = "fake"\nbase_url = "{model_url}/v1"\nwire_api = "responses"\n'
            'env_key = "FAKE_KEY"\n')
        return str(CODEX), [], {"CODEX_HOME": str(codex_home), "FAKE_KEY": "test"}
    config: dict[str, Any] = {"provider": {"fake": {
        "npm": "@ai-sdk/openai-compatible", "name": "Fake",
        "options": {"baseURL": model_url + "/v1", "apiKey": "test"},
        "models": {"m1": {"name": "M1"}}}}, "model": "fake/m1", "small_model": "fake/m1"}
    if opencode_ask:
        config["permission"] = {"rio_propose_edit": "ask"}
    return str(OPENCODE), ["acp"], {
        "OPENCODE_CONFIG_CONTENT": json.dumps(config), "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "npm_config_registry": "http://127.0.0.1:9"}


@dataclass
class Rig:
    agent: str
    server: RioServer
    model: FakeModelServer
    events: list[tuple[str, dict]] = field(default_factory=list)

    @property
    def target(self) -> Path:
        return self.server.root / FILE

    def conversation(self) -> str:
        return next(d["conversation"] for t, d in self.events
                    if t == "agent.turn" and d.get("conversation"))

    def of(self, topic: str, **match: Any) -> list[dict]:
        return [d for t, d in self.events
                if t == topic and all(d.get(k) == v for k, v in match.items())]

    def protocol_log(self) -> str:
        done = self.server.cli("agents", "log", self.conversation(), "--root",
                               str(self.server.root))
        assert done.returncode == 0, done.stderr
        return done.stdout

    def explain(self) -> str:
        """What to read when a test fails: the events, the model's requests."""
        seen = [(t, {k: v for k, v in d.items() if k != "text" or len(str(v)) < 200})
                for t, d in self.events if t != "agent.delta"]
        sent = [(r.path, tool_results(self.agent, r.json) if r.body else None)
                for r in self.model.requests]
        return f"events: {seen}\nmodel requests (path, tool results): {sent}"


@contextmanager
def rio_with(agent: str, tmp_path: Path, opencode_ask: bool = False) -> Iterator[Rig]:
    """A ``rio serve`` whose ``[agents.NAME]`` is the real agent, pointed at a scripted model."""
    need_agent(agent)
    model = FakeModelServer([model_reply(agent)] * 200).start()
    root = tmp_path / "proj"
    root.mkdir()
    (root / FILE).write_text(BEFORE)
    home = tmp_path / "home"
    home.mkdir()
    command, args, extra = agent_setup(agent, home, model.url, opencode_ask)
    env = rio_env(tmp_path)
    # This test machine sets IS_SANDBOX, with which claude-agent-acp 0.23.1 fails session/new
    # ("Query closed before response received"); a user's shell does not have it.
    env.pop("IS_SANDBOX", None)
    env.update({"HOME": str(home), "RIO_AGENT_SANDBOX": real_agent_sandbox(),
                # the box hides (and so makes) Rio's cache folder: the test's own
                "RIO_CACHE_DIR": str(tmp_path / "cache"), **extra})
    config = Path(env["RIO_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(
        f"[agents.{agent}]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n")
    try:
        server = RioServer(root, tmp_path, env=env).start()
    except BaseException:
        model.close()
        raise
    try:
        yield Rig(agent, server, model)
    finally:
        try:
            server.stop()
        finally:
            model.close()


def run_chat(rig: Rig, *args: str, typed: str | None = None, timeout: float = 200
             ) -> subprocess.CompletedProcess:
    """``rio chat --agent NAME ARGS…`` as a user runs it (``typed``: its input, else none),
    while a bus client records every ``agent.*`` event the instance publishes meanwhile (into
    ``rig.events``)."""
    server = rig.server
    conn = server.connect("real-mcp-watch", subscribe=("agent.",))
    conn.subscribe("agent.", lambda e: rig.events.append((e.topic, thaw(e.data))))
    out, err, given = (server.base / f"chat.{n}" for n in ("out", "err", "in"))
    given.write_text(typed or "")
    argv = [sys.executable, "-m", "rio.cli", "chat", "--instance", server.name,
            "--agent", rig.agent, *args]
    try:
        with out.open("w") as fo, err.open("w") as fe, given.open() as fi:
            proc = subprocess.Popen(argv, env=server.env, cwd=str(server.root),
                                    stdin=fi if typed is not None else subprocess.DEVNULL,
                                    stdout=fo, stderr=fe)
            wait_for(lambda: proc.poll() is not None, timeout, 0.05, pause=conn.wait)
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        conn.wait(0.3)      # events published just before the chat ended
    finally:
        conn.close()
    return subprocess.CompletedProcess(argv, proc.returncode, out.read_text(), err.read_text())


# --- 1. rio chat --agent NAME --approve yes --save ---------------------------------------------

def _check_chat(rig: Rig, done: subprocess.CompletedProcess, asks_itself: bool) -> None:
    why = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}\n" \
          + rig.explain()
    assert done.returncode == 0, why
    # the gate asked (a proposal of Rio's tool), --approve yes approved it, --save wrote it
    assert [t["name"] for t in rig.of("agent.tool", source="mcp")] == ["propose_edit"], why
    assert [(p["path"], p["kind"]) for p in rig.of("agent.propose")] == [(FILE, "edit")], why
    assert rig.target.read_text() == AFTER, why
    assert model_saw_applied(rig.agent, rig.model), why
    assert DONE in done.stdout, why
    # the agent's own question about Rio's tool was answered by Rio, never put to the user
    assert not rig.of("agent.permission"), why
    assert "asks permission" not in done.stdout, why
    if real_agent_sandbox() == "required":
        assert ", in a box (bubblewrap" in rig.protocol_log(), why
    notes = rig.of("agent.note", note="auto_allowed")
    if asks_itself:
        assert [n.get("tool") for n in notes] == ["propose_edit"], why
        assert "auto-allowed" in rig.protocol_log(), why
    else:
        assert not notes, why


@pytest.mark.parametrize("agent", ["claude", "codex", "opencode"])
def test_rio_chat_approve_yes_save_edits_through_rios_mcp_endpoint(agent, tmp_path):
    """claude (default mode) and codex (read-only: an untrusted cwd) ask before Rio's tool;
    opencode does not by default. Either way the user is asked once: by Rio's gate."""
    with rio_with(agent, tmp_path) as rig:
        done = run_chat(rig, "--approve", "yes", "--save", PROMPT)
        _check_chat(rig, done, asks_itself=agent != "opencode")


def test_rio_chat_opencode_told_to_ask_is_auto_allowed(tmp_path):
    """opencode configured with ``"permission": {"rio_propose_edit": "ask"}`` asks before
    Rio's tool: Rio answers that question itself (rawInput ``{}``, title ``rio_propose_edit``)."""
    with rio_with("opencode", tmp_path, opencode_ask=True) as rig:
        done = run_chat(rig, "--approve", "yes", "--save", PROMPT)
        _check_chat(rig, done, asks_itself=True)


@pytest.mark.parametrize("agent", ["claude", "codex", "opencode"])
def test_rio_chat_approve_no_rejects_and_the_agent_is_told(agent, tmp_path):
    """Rio's gate is where the user decides: a rejected proposal exits 5, leaves the file, and
    the agent gets ``applied: false`` as the tool's result (the turn goes on to its text)."""
    with rio_with(agent, tmp_path) as rig:
        done = run_chat(rig, "--approve", "no", PROMPT)
        why = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}\n" \
              + rig.explain()
        assert done.returncode == 5, why
        assert rig.target.read_text() == BEFORE, why
        assert len(rig.of("agent.propose")) == 1, why
        results = [r for req in rig.model.requests if req.body
                   for r in tool_results(agent, req.json)]
        assert any(re.search(r'"applied":\s*false', r) for r in results), why
        assert not model_saw_applied(agent, rig.model), why
        assert not rig.of("agent.permission") and "asks permission" not in done.stdout, why
        ended = [d for d in rig.of("agent.turn") if d["state"] != "started"]
        assert [d["state"] for d in ended] == ["done"] and not ended[0].get("buffers"), why


def test_rio_chat_diff_and_undo_take_back_claudes_edit_at_the_prompt(tmp_path):
    """At the prompt, the turn's edit through Rio's tool is one of "the agent's changes":
    ``/diff`` shows it, ``/undo`` takes it back out of the buffer; the disk never changed."""
    with rio_with("claude", tmp_path) as rig:
        done = run_chat(rig, "--approve", "yes", typed=f"{PROMPT}\n/diff\n/undo\n/quit\n")
        why = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}\n" \
              + rig.explain()
        assert done.returncode == 0, why
        assert "Unsaved agent changes: notes.txt" in done.stdout, why
        diff = done.stdout.split("Unsaved agent changes", 1)[1]
        assert "-beta\n+gamma" in diff, why
        assert "undid the agent's change to notes.txt" in diff, why
        info = rig.server.call("buffer.open", {"path": FILE})
        assert rig.server.call("buffer.text", {"buffer": info["buffer"]})["text"] == BEFORE
        assert rig.target.read_text() == BEFORE, why


# --- 2. the same through the bus: agent.new / agent.send ---------------------------------------

def drive(rig: Rig, approve_after_s: float = 0.0) -> tuple[str, str, dict, set[str]]:
    """One turn on the bus (``agent.new``, ``agent.send``), every proposal approved
    ``approve_after_s`` after it was published (a user reading the diff); the conversation's
    process is stopped at the end. (conversation, turn, its agent.history, proposals
    approved)."""
    server = rig.server
    conn = server.connect("real-mcp", subscribe=("agent.",))
    conn.subscribe("agent.", lambda e: rig.events.append((e.topic, thaw(e.data))))
    cid = turn = ""
    approved: set[str] = set()
    seen: dict[str, float] = {}
    try:
        cid = conn.call("agent.new", {"agent": rig.agent})["conversation"]
        turn = conn.call("agent.send", {"conversation": cid, "text": PROMPT})["turn"]
        deadline = time.monotonic() + 200 + approve_after_s
        while time.monotonic() < deadline and not [
                d for d in rig.of("agent.turn", turn=turn) if d["state"] != "started"]:
            conn.wait(0.05)
            for p in rig.of("agent.propose", turn=turn):
                first = seen.setdefault(p["proposal"], time.monotonic())
                if p["proposal"] not in approved and time.monotonic() - first >= approve_after_s:
                    approved.add(p["proposal"])
                    try:
                        conn.call("agent.approve", {"turn": turn, "proposal": p["proposal"],
                                                    "decision": "approve"}, timeout=30)
                    except RioError as err:     # closed meanwhile: the assertions say what
                        rig.events.append(("test.approve_refused", {"kind": err.kind,
                                                                    "message": err.message}))
        history = conn.call("agent.history", {"conversation": cid})
    finally:
        conn.close()
        if cid:
            try:
                server.call("system.restart", {"process": f"agent:{cid}", "again": False},
                            timeout=15)
            except RioError:
                pass
    return cid, turn, history, approved


def _check_bus_turn(rig: Rig, turn: str, history: dict, approved: set[str]) -> None:
    why = rig.explain()
    server = rig.server
    ended = [d for d in rig.of("agent.turn", turn=turn) if d["state"] != "started"]
    assert ended and ended[0]["state"] == "done", why
    assert len(approved) == 1, why
    info = server.call("buffer.open", {"path": FILE})
    assert server.call("buffer.text", {"buffer": info["buffer"]})["text"] == AFTER, why
    assert ended[0].get("buffers") == [info["buffer"]], why
    assert rig.target.read_text() == BEFORE, why     # applied into the editor, unsaved
    assert model_saw_applied(rig.agent, rig.model), why
    assert not rig.of("agent.permission"), why
    assert [t["turn"] for t in history["turns"]] == [turn], history
    assert history["turns"][0]["status"] == "done", history
    assert history["turns"][0]["text"] == PROMPT, history


@pytest.mark.parametrize("agent", ["claude", "codex", "opencode"])
def test_bus_turn_lists_the_edited_buffer_and_history_has_it(agent, tmp_path):
    with rio_with(agent, tmp_path) as rig:
        _, turn, history, approved = drive(rig)
        _check_bus_turn(rig, turn, history, approved)


@pytest.mark.timeout(400)
def test_opencode_proposal_approved_after_a_minute_still_lands(tmp_path):
    """Rio keeps a proposal of its tools open for 4 minutes (QUESTION_TIMEOUT_S), but opencode
    gives up on an MCP call after 60 s (the MCP SDK's default request timeout; opencode's
    ``experimental.mcp_timeout`` changes it) unless the server reports progress: it calls with
    a ``progressToken`` and ``resetTimeoutOnProgress``. Reading a diff for more than a minute
    must not lose the edit: Rio's endpoint can keep the call alive by sending
    ``notifications/progress`` for its token while the user decides (checked against a bare
    ``mcp`` SDK server: progress every 20 s carries opencode's call past 75 s). Fails while
    Rio sends none: at 60 s the call times out ("MCP error -32001: Request timed out"), Rio
    closes the proposal as cancelled by the agent, and the approval finds it gone.
    (codex-acp 0.16 cuts an MCP call at 120 s whatever the progress; claude waited 200 s.)"""
    with rio_with("opencode", tmp_path) as rig:
        _, turn, history, approved = drive(rig, approve_after_s=70)
        _check_bus_turn(rig, turn, history, approved)
