"""The ACP client's pure parts: confinement, option choice, environment, sign-in methods,
the protocol log and the update translation — no process."""

from __future__ import annotations

import os
import stat
from types import SimpleNamespace

import pytest
from acp import RequestError
from acp.schema import (
    AuthEnvVar,
    AuthMethodAgent,
    EnvVarAuthMethod,
    PermissionOption,
    TerminalAuthMethod,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from rio.acp.auth import sign_in_methods
from rio.acp.client import confine, pick_option
from rio.acp.port import agent_environment
from rio.acp.protocol_log import ProtocolLog, StderrLines, StderrTail, redact
from rio.acp.updates import UpdateTranslator


def test_confine_accepts_paths_inside_and_refuses_the_rest(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "out.txt").write_text("x")
    (root / "up").symlink_to(tmp_path)
    (root / "inner").symlink_to(root / "sub")
    assert confine(root, str(root / "sub" / "a.py")) == "sub/a.py"
    assert confine(root, "sub/new.txt") == "sub/new.txt"
    assert confine(root, str(root / "inner" / "b")) == "sub/b"          # symlink inside
    for bad in (str(tmp_path / "out.txt"), str(root / ".." / "out.txt"),
                str(root / "up" / "out.txt"), "/etc/passwd", "", "a\0b", str(root)):
        with pytest.raises(RequestError):
            confine(root, bad)


@given(st.lists(st.sampled_from(["a", "b", "..", ".", "up", "in", "c.txt"]), min_size=1,
                max_size=6), st.booleans())
@settings(max_examples=150, deadline=None)
def test_confine_never_returns_a_path_that_resolves_outside(tmp_path_factory, parts, absolute):
    base = tmp_path_factory.getbasetemp() / "confine"
    root = base / "root"
    if not root.exists():
        (root / "a" / "b").mkdir(parents=True)
        (root / "up").symlink_to(base)
        (root / "in").symlink_to(root / "a")
    given_path = os.path.join(str(root), *parts) if absolute else os.path.join(*parts)
    try:
        rel = confine(root, given_path)
    except RequestError:
        return
    real_root = os.path.realpath(root)
    full = os.path.realpath(os.path.join(real_root, rel))
    assert os.path.commonpath([real_root, full]) == real_root and full != real_root


def _opts(*pairs):
    return [PermissionOption(option_id=i, name=i, kind=k) for i, k in pairs]


def test_pick_option_maps_by_kind_and_never_widens_a_yes():
    opts = _opts(("allow", "allow_once"), ("always", "allow_always"), ("no", "reject_once"))
    assert pick_option(opts, "allow_once").option_id == "allow"
    assert pick_option(opts, "allow_always").option_id == "always"
    assert pick_option(opts, "reject_once").option_id == "no"
    assert pick_option(opts, None) is None
    once_only = _opts(("once", "allow_once"))
    assert pick_option(once_only, "allow_always").option_id == "once"
    always_only = _opts(("always", "allow_always"), ("never", "reject_always"))
    assert pick_option(always_only, "allow_once") is None        # not turned into "always"
    assert pick_option(always_only, "reject_once") is None       # cancelled, not "never"


def test_agent_environment_drops_rio_variables_and_adds_the_agents_own():
    env = agent_environment({"RIO_MCP_TOKEN": "t", "RIO_BUS": "b", "HOME": "/h",
                             "ANTHROPIC_API_KEY": "user-key"}, {"X": "1", "RIO_Y": "2"})
    assert env == {"HOME": "/h", "ANTHROPIC_API_KEY": "user-key", "X": "1"}


def test_sign_in_methods_for_each_kind_including_the_legacy_terminal_meta():
    methods = [
        TerminalAuthMethod(id="t", name="Terminal", type="terminal", args=["--cli"],
                           env={"MODE": "a b"}),
        EnvVarAuthMethod(id="e", name="Key", type="env_var",
                         vars=[AuthEnvVar(name="OPENAI_API_KEY")], link="https://x"),
        AuthMethodAgent(id="a", name="ChatGPT", description="browser"),
        AuthMethodAgent(id="l", name="Legacy", field_meta={"terminal-auth": {
            "command": "/bin/agent", "args": ["login"], "label": "x"}}),
    ]
    out = {m.id: m.to_dict() for m in sign_in_methods(methods, ("/usr/bin/agent",))}
    assert out["t"]["command"] == ["/usr/bin/agent", "--cli"]
    assert out["t"]["shell"] == "MODE='a b' /usr/bin/agent --cli"
    assert out["e"] == {"id": "e", "name": "Key", "type": "env_var", "description": "",
                        "vars": ["OPENAI_API_KEY"], "link": "https://x"}
    assert out["a"]["type"] == "agent" and "command" not in out["a"]
    assert out["l"]["type"] == "terminal" and out["l"]["command"] == ["/bin/agent", "login"]


def test_protocol_log_redacts_secrets_and_stays_bounded(tmp_path):
    path = tmp_path / "logs" / "conv.log"
    log = ProtocolLog(path, max_entries=50, max_bytes=4000, clock=lambda: 0)
    log.message("→", {"method": "authenticate", "params": {"_meta": {"gateway": {
        "headers": {"x-api-key": "sk-live-123", "Authorization": "Bearer abc"}}}}})
    assert "sk-live-123" not in log.text() and "Bearer abc" not in log.text()
    assert "[redacted]" in log.text()
    for i in range(500):
        log.note("stderr", f"line {i} " + "x" * 50)
    assert len(log.lines()) == 50 and log.dropped > 0
    assert path.stat().st_size <= 4000
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "line 499" in path.read_text() and "older lines cut" in path.read_text()
    log.note("x", "y" * 10_000)
    assert len(log.lines()[-1]) < 2100


def test_redact_leaves_ordinary_values_alone():
    data = {"path": "a.py", "nested": [{"token_count": 3, "api_key": "k"}]}
    assert redact(data) == {"path": "a.py", "nested": [{"token_count": 3,
                                                         "api_key": "[redacted]"}]}


def test_stderr_tail_keeps_the_last_characters():
    tail = StderrTail(max_chars=100)
    for i in range(1000):
        tail.add(f"line {i}")
    assert tail.text().endswith("line 999") and len(tail.text()) <= 100


def _stderr_lines(log: ProtocolLog) -> list[str]:
    return [line.split(" stderr ", 1)[1] for line in log.lines() if " stderr " in line]


def test_every_line_of_a_multi_line_stderr_chunk_is_logged():
    """claude-agent-acp writes its error as several lines in one write: the log used to keep
    only the last (``stderr }``)."""
    log, tail = ProtocolLog(clock=lambda: 0), StderrTail()
    lines = StderrLines(log, tail)
    lines.feed(b'Error: API Error: 400 {\n  "type": "error",\n  "error": {"message": '
               b'"max_tokens: too big"}\n}\n')
    lines.feed(b"a line split ")
    lines.feed(b"across chunks\r\nno newline at the end")
    lines.close()
    assert _stderr_lines(log) == ['Error: API Error: 400 {', '  "type": "error",',
                                  '  "error": {"message": "max_tokens: too big"}', '}',
                                  "a line split across chunks", "no newline at the end"]
    assert tail.text().endswith("}\na line split across chunks\nno newline at the end")


def test_a_huge_stderr_chunk_is_logged_within_its_byte_budget():
    log, tail = ProtocolLog(clock=lambda: 0), StderrTail()
    lines = StderrLines(log, tail, line_bytes=100, budget=5000)
    flood = (b"x" * 1023 + b"\n") * 5000 + b"y" * 300_000 + b"\nlast words\n"
    for at in range(0, len(flood), 64 << 10):
        lines.feed(flood[at:at + (64 << 10)])
    lines.close()
    logged = _stderr_lines(log)
    assert logged[0] == "x" * 100 + " [… 923 more bytes]"          # each line cut at its cap
    kept = len(logged) - 1
    assert kept * (100 + 16) <= 5000 < (kept + 1) * (100 + 16)     # the budget, then no more
    assert logged[-1] == (f"… {len(flood) - kept * 1024} bytes of stderr not logged (over "
                          "the 5000-byte budget of one agent process)")
    assert tail.total_bytes == len(flood)
    assert tail.text().endswith("[… 299900 more bytes]\nlast words")  # the tail still follows
    assert len(tail.text()) <= tail.max_chars


def test_one_endless_stderr_line_is_held_to_its_cap():
    log, tail = ProtocolLog(clock=lambda: 0), StderrTail()
    lines = StderrLines(log, tail, line_bytes=50)
    for _ in range(100):
        lines.feed(b"z" * 10_000)
    lines.close()
    assert _stderr_lines(log) == ["z" * 50 + " [… 999950 more bytes]"]


def _update(kind, **fields):
    base = dict(title=None, kind=None, status=None, raw_input=None, raw_output=None,
                content=None)
    return SimpleNamespace(session_update=kind, **{**base, **fields})


def test_translator_opens_unknown_calls_and_ends_each_call_once():
    events = []
    t = UpdateTranslator(lambda topic, data: events.append((topic, dict(data))))
    t.handle(_update("tool_call_update", tool_call_id="x", status="completed"))
    t.handle(_update("tool_call_update", tool_call_id="x", status="completed"))
    assert [e[0] for e in events] == ["agent.tool", "agent.tool_result"]
    t.replaying = True
    t.handle(SimpleNamespace(session_update="agent_message_chunk",
                             content=SimpleNamespace(text="old")))
    assert len(events) == 2 and t.text == []


def test_settings_for_a_discovered_agent_use_its_program_for_sign_in(tmp_path):
    from rio.acp.client import settings_for
    from rio.acp.discovery import KNOWN_AGENTS, AgentInfo, AgentSpec
    from rio.protocol.errors import AgentError
    opencode = next(a for a in KNOWN_AGENTS if a.name == "opencode")
    info = AgentInfo("opencode", "OpenCode", True, "/bin/opencode", ("acp",))
    spec = AgentSpec("opencode", "OpenCode", "opencode", ("acp",), {"X": "1"}, known=opencode)
    s = settings_for(info, spec, tmp_path, {"RIO_BUS": "b", "HOME": "/h"})
    assert s.argv == ("/bin/opencode", "acp") and s.program == ("/bin/opencode",)
    assert s.env == {"HOME": "/h", "X": "1"} and s.name == "opencode"
    with pytest.raises(AgentError) as err:
        settings_for(AgentInfo("x", "X", False), spec, tmp_path, {})
    assert err.value.kind == "agent.agent_not_found"


def test_a_configured_agents_sign_in_command_keeps_its_args(tmp_path):
    """[agents.x] command = "npx", args = ["pkg"]: the terminal sign-in command is the whole
    program plus the method's args — `npx pkg --login`, runnable as shown (not `npx --login`);
    a legacy terminal-auth without a command of its own gets the whole program too."""
    from types import SimpleNamespace

    from rio.acp.auth import sign_in_methods
    from rio.acp.client import settings_for
    from rio.acp.discovery import AgentInfo, parse_agents_config
    spec = parse_agents_config('[agents.x]\ncommand = "npx"\nargs = ["pkg"]\n')["x"]
    info = AgentInfo("x", "x", True, "/usr/bin/npx", spec.args)
    s = settings_for(info, spec, tmp_path, {})
    assert s.program == ("/usr/bin/npx", "pkg")
    terminal = SimpleNamespace(type="terminal", id="t", name="Log in", description="",
                               field_meta=None, args=["--login"], env={})
    legacy = SimpleNamespace(type=None, id="l", name="Log in", description="",
                             field_meta={"terminal-auth": {"args": ["login"]}})
    shown = [m.to_dict()["shell"] for m in sign_in_methods([terminal, legacy], s.program)]
    assert shown == ["/usr/bin/npx pkg --login", "/usr/bin/npx pkg login"]


def test_the_protocol_log_lives_beside_the_conversation(tmp_path, monkeypatch):
    from rio.acp.protocol_log import log_path
    monkeypatch.setenv("RIO_STATE_DIR", str(tmp_path / "state"))
    path = log_path(tmp_path / "proj", "3f9a0c12b7de")
    assert path.name == "3f9a0c12b7de.acp.log" and path.parent.name == "conversations"
    assert str(path).startswith(str(tmp_path / "state"))
    for bad in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(ValueError):
            log_path(tmp_path, bad)


def test_rio_chat_prints_an_agent_note_as_one_dim_line():
    from ui.term import chat_acp
    lines: list[str] = []
    chat = SimpleNamespace(_line=lines.append, style=lambda kind, text: f"<{kind}>{text}")
    assert chat_acp.show(chat, "agent.note", {"note": "auto_allowed", "text":
                                              "mcp__rio__read_buffer: auto-allowed"}, None)
    assert lines == ["<dim>  (mcp__rio__read_buffer: auto-allowed)"]
