"""Agents in a box (issue 22, points 5 and 6; ADR-0038).

The plan (rio/acp/sandbox.py) is checked without starting anything. Then a real ``rio serve``
with the fake ACP agent (tests/fakes/acp_agent.py) as ``[agents.fake]``, boxed by bubblewrap
(these skip, saying why, where no box can be made here): the agent tries what a hostile agent
tries — read ``instance.json``, a conversation's MCP token, a journal; list Rio's state
folder; send a request to the bus; write outside the project; start a helper that clears its
environment, calls setsid and double-forks — and none of it reaches Rio's folders, the bus or
the disk outside the project, while the project and Rio's MCP tools (HTTP and the stdio
fallback) work; the helper is gone when the agent is stopped and when the instance is. Where
no box can be made, the conversation is told once, and ``rio agents`` says so; the bus refuses
a connection made by the agent's processes all the same (actors/bus/peer_guard.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from rio.acp import sandbox
from rio.acp.sandbox import Availability, SandboxConfig, parse_config, plan
from rio.protocol.errors import ConfigError
from rio.protocol.frames import thaw
from tests.support import REPO, RioServer, rio_env, wait_for

FAKE = REPO / "tests" / "fakes" / "acp_agent.py"
BOX = Availability(True, "bubblewrap 0.8.0", "/usr/bin/bwrap",
                   flags=sandbox.USERNS_FLAGS + sandbox.CORE_FLAGS, landlock=7)


# --- the plan, without starting anything --------------------------------------------------------

def pairs(argv: tuple[str, ...], flag: str) -> list[str]:
    """The first argument of every ``flag`` in bwrap's argv (before ``--``)."""
    head = argv[:argv.index("--")]
    return [head[i + 1] for i, a in enumerate(head) if a == flag]


def test_the_box_shows_the_project_writable_hides_rios_folders_and_keeps_the_agents_own(
        tmp_path):
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    root.mkdir()
    rio_dirs = [tmp_path / "state", tmp_path / "config", tmp_path / "rt"]
    for d in rio_dirs:
        d.mkdir()
    env = {"HOME": str(home), "CODEX_HOME": str(tmp_path / "codexhome"),
           "XDG_RUNTIME_DIR": str(tmp_path / "xdg")}
    (tmp_path / "xdg").mkdir()
    prefix = tmp_path / "prefix"
    script = prefix / "node_modules" / "@x" / "agent" / "dist" / "index.js"
    script.parent.mkdir(parents=True)
    script.write_text("")
    got = plan(["/usr/bin/node", str(script)], root, env, "codex", SandboxConfig(), BOX,
               rio_dirs=rio_dirs)
    argv = got.argv
    assert argv[0] == "/usr/bin/bwrap" and argv[argv.index("--") + 1:] == (
        "/usr/bin/node", str(script))
    for flag in ("--unshare-pid", "--die-with-parent", "--disable-userns", "--unshare-user"):
        assert flag in argv[:argv.index("--")]
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    # everything read-only first; private /tmp and an empty runtime folder
    assert argv[1 + len(BOX.flags):1 + len(BOX.flags) + 3] == ("--ro-bind", "/", "/")
    assert {"/tmp", str(tmp_path / "xdg")} <= set(pairs(argv, "--tmpfs"))
    # the home folder and the npm prefix the agent is installed in: visible, read-only
    assert str(home) in pairs(argv, "--ro-bind-try")
    assert str(prefix) in pairs(argv, "--ro-bind-try")
    # the agent's own folder (created) and npm's cache read-write, then the project
    writable = pairs(argv, "--bind")
    assert writable[-1] == str(root)
    assert str(tmp_path / "codexhome") in writable and (tmp_path / "codexhome").is_dir()
    assert str(home / ".npm") in writable
    # Rio's folders hidden, after every bind that could show them again
    hidden = pairs(argv, "--tmpfs")
    assert all(str(d) in hidden for d in rio_dirs)
    last_bind = max(i for i, a in enumerate(argv) if a == "--bind")
    assert all(argv.index(str(d)) > last_bind for d in rio_dirs)
    assert argv[argv.index("--chdir") + 1] == str(root)
    assert got.scoped and got.hidden == tuple(str(d) for d in rio_dirs)


def test_each_known_agent_keeps_its_own_folders_where_its_variables_put_them(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    assert sandbox.agent_folders("claude", env) == [
        tmp_path / ".npm", tmp_path / ".claude", tmp_path / ".cache" / "claude-cli-nodejs"]
    assert sandbox.agent_files("claude", env) == [tmp_path / ".claude.json"]
    moved = {**env, "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")}
    assert tmp_path / "cc" in sandbox.agent_folders("claude", moved)
    assert sandbox.agent_files("claude", moved) == []
    assert sandbox.agent_folders("opencode", env) == [
        tmp_path / ".npm", tmp_path / ".config" / "opencode", tmp_path / "data" / "opencode",
        tmp_path / ".cache" / "opencode", tmp_path / ".local" / "state" / "opencode"]
    assert sandbox.agent_folders("codex", env)[1] == tmp_path / ".codex"
    assert sandbox.agent_folders("mine", env) == [tmp_path / ".npm"]


def test_claudes_settings_file_is_made_so_that_it_can_be_bound_read_write(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    got = plan(["/bin/true"], root, {"HOME": str(tmp_path)}, "claude", SandboxConfig(), BOX,
               rio_dirs=[])
    made = tmp_path / ".claude.json"
    assert made.is_file() and made.stat().st_mode & 0o777 == 0o600
    assert str(made) in pairs(got.argv, "--bind")


def test_a_rio_folder_holding_the_project_is_not_hidden_and_the_plan_says_so(tmp_path):
    root = tmp_path / "state" / "proj"
    root.mkdir(parents=True)
    got = plan(["/bin/true"], root, {"HOME": str(tmp_path)}, "fake", SandboxConfig(), BOX,
               rio_dirs=[tmp_path / "state"])
    assert str(tmp_path / "state") not in got.hidden
    assert any("holds the project" in n for n in got.notes)


def test_config_adds_writable_readable_and_hidden_paths(tmp_path):
    root = tmp_path / "proj"
    (tmp_path / ".ssh").mkdir()
    root.mkdir()
    config = parse_config('[sandbox]\nwritable = ["~/.cargo"]\nreadable = ["/opt/sdk"]\n'
                          'hidden = ["~/.ssh"]\n', env={})
    got = plan(["/bin/true"], root, {"HOME": str(tmp_path)}, "fake", config, BOX, rio_dirs=[])
    assert str(tmp_path / ".cargo") in pairs(got.argv, "--bind")
    assert "/opt/sdk" in pairs(got.argv, "--ro-bind-try")
    assert str(tmp_path / ".ssh") in pairs(got.argv, "--tmpfs")


def test_the_sandbox_section_is_checked_and_the_environment_overrides_its_mode():
    assert parse_config("", env={}) == SandboxConfig()
    assert parse_config('[sandbox]\nmode = "required"\n', env={}).mode == "required"
    off = parse_config('[sandbox]\nmode = "required"\n', env={sandbox.MODE_ENV: "off"})
    assert off.mode == "off" and off.source == "env:RIO_AGENT_SANDBOX"
    for bad in ('[sandbox]\nmode = "maybe"\n', '[sandbox]\nwriteable = []\n',
                '[sandbox]\nwritable = "~/.x"\n', "sandbox = 1\n"):
        with pytest.raises(ConfigError):
            parse_config(bad, env={})


class Ran:
    def __init__(self, *answers: tuple[int, str, str]) -> None:
        self.answers = list(answers)
        self.argvs: list[list[str]] = []

    def __call__(self, argv: list[str], **kw: Any) -> subprocess.CompletedProcess:
        self.argvs.append(argv)
        code, out, err = self.answers.pop(0)
        return subprocess.CompletedProcess(argv, code, out, err)


def test_the_probe_says_why_no_box_can_be_made(tmp_path):
    missing = sandbox.probe(str(tmp_path / "no-bwrap"), fresh=True)
    assert not missing.usable and "apt install bubblewrap" in missing.reason
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    denied = sandbox.probe(str(fake), fresh=True, run=Ran(
        (0, "bubblewrap 0.8.0\n", ""), (1, "", "bwrap: setting up uid map: Permission denied\n")))
    assert not denied.usable and "user namespaces" in denied.reason
    assert "bubblewrap 0.8.0" in denied.reason
    assert "no_sandbox" == sandbox.NO_SANDBOX_NOTE and denied.reason in \
        sandbox.no_sandbox_text(denied)
    # an older bwrap without --disable-userns: the box without it
    ran = Ran((0, "bubblewrap 0.6.1\n", ""), (1, "", "bwrap: Unknown option --disable-userns"),
              (0, "", ""))
    old = sandbox.probe(str(fake), fresh=True, run=ran, landlock_abi=lambda: 4)
    assert old.usable and old.flags == sandbox.CORE_FLAGS and not old.scoped
    assert "--disable-userns" in ran.argvs[1] and "--disable-userns" not in ran.argvs[2]


ABSTRACT_CLIENT = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
                   "try:\n    s.connect('\\0' + sys.argv[1])\n    print('connected')\n"
                   "except OSError as exc:\n    print(exc.errno)\n")


@pytest.mark.timeout(60)
def test_the_landlock_scope_keeps_the_box_from_abstract_sockets_outside_where_the_kernel_can():
    """An abstract unix socket (an X server's, a D-Bus bus's) is reachable across the box's
    mounts — the network is shared. Where the kernel has Landlock ABI 6, a process spawned with
    the scope step cannot connect to one made outside; elsewhere there is no step, and the plan
    says it is not scoped (`rio agents` says "abstract sockets reachable")."""
    import errno
    import socket

    from actors.runtime import landlock, process_control
    step = landlock.scope_step()
    got = plan(["/bin/true"], Path("/"), {"HOME": "/nonexistent"}, "fake", SandboxConfig(),
               Availability(True, "bubblewrap", "/usr/bin/bwrap", landlock=landlock.abi()),
               rio_dirs=[], make_dirs=False)
    assert got.scoped == (landlock.abi() >= landlock.SCOPED_ABI)
    if landlock.abi() < landlock.SCOPED_ABI:
        assert step is None and "abstract sockets reachable" in Availability(
            True, "bubblewrap", landlock=landlock.abi()).describe()
        return
    assert step is not None
    server = socket.socket(socket.AF_UNIX)
    name = f"rio-test-{uuid.uuid4().hex[:8]}"
    server.bind("\0" + name)
    server.listen(1)
    try:
        outcomes = []
        for child_step in (None, step):
            spawned = process_control.spawn([sys.executable, "-c", ABSTRACT_CLIENT, name],
                                            stdout=process_control.PIPE, child_step=child_step)
            out, _ = spawned.popen.communicate(timeout=30)
            outcomes.append(out.decode().strip())
        assert outcomes == ["connected", str(errno.EPERM)], outcomes
    finally:
        server.close()


# --- a real instance, the fake agent boxed ------------------------------------------------------

def box_here() -> Availability:
    from actors.runtime.landlock import abi
    return sandbox.probe(landlock_abi=abi)


needs_box = pytest.mark.skipif(not box_here().usable,
                               reason=f"no sandbox here: {box_here().reason}")


class Rig:
    """A ``rio serve`` whose ``[agents.fake]`` is the fake agent reading ``script``."""

    def __init__(self, tmp_path: Path, mode: str, config: str = "") -> None:
        self.base = tmp_path
        self.root = tmp_path / "proj"
        self.root.mkdir(parents=True)
        self.script_file = tmp_path / "script.json"
        self.script_file.write_text("{}")
        env = rio_env(tmp_path)
        env["RIO_AGENT_SANDBOX"] = mode
        env["HOME"] = str(tmp_path / "home")
        # the box hides (and so makes) Rio's cache folder too: the test's own
        env["RIO_CACHE_DIR"] = str(tmp_path / "cache")
        (tmp_path / "home").mkdir()
        conf = Path(env["RIO_CONFIG_DIR"])
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "config.toml").write_text(
            f'[agents.fake]\ncommand = "{sys.executable}"\n'
            f'args = ["{FAKE}", "{self.script_file}"]\n' + config)
        self.server = RioServer(self.root, tmp_path, env=env).start()
        self.conn = self.server.connect("sandbox-test", subscribe=("agent.",))
        self.events: list[tuple[str, dict]] = []
        self.conn.subscribe("agent.", lambda e: self.events.append((e.topic, thaw(e.data))))

    def script(self, script: dict[str, Any]) -> None:
        self.script_file.write_text(json.dumps(script))

    def new(self) -> str:
        return self.conn.call("agent.new", {"agent": "fake"})["conversation"]

    def turn(self, conversation: str, text: str = "go", timeout: float = 60) -> dict:
        turn = self.conn.call("agent.send", {"conversation": conversation, "text": text},
                              timeout=30)["turn"]
        def end() -> dict | None:
            return next((d for t, d in self.events if t == "agent.turn" and d.get("turn") == turn
                         and d.get("state") != "started"), None)
        ended = wait_for(end, timeout, 0.05, pause=self.conn.wait, what=f"the end of turn {turn}",
                         seen=lambda: self.events)
        return {**ended, "said": self.said(turn)}

    def said(self, turn: str) -> str:
        self.conn.drain()
        return "".join(d.get("text", "") for t, d in self.events
                       if t == "agent.delta" and d.get("turn") == turn)

    def notes(self, note: str) -> list[dict]:
        return [d for t, d in self.events if t == "agent.note" and d.get("note") == note]

    def close(self, conversation: str) -> None:
        self.conn.call("session.close", {"conversation": conversation}, timeout=15)

    def stop(self) -> None:
        try:
            self.conn.close()
        finally:
            self.server.stop()


@pytest.fixture
def rig(tmp_path, request):
    made: list[Rig] = []

    def make(mode: str, config: str = "") -> Rig:
        made.append(Rig(tmp_path / f"i{len(made)}", mode, config))
        return made[-1]
    yield make
    for r in made:
        if r.server.proc is not None and r.server.proc.poll() is None:
            r.stop()


def daemons(tag: str) -> list[psutil.Process]:
    """The helper started with ``tag`` in its argv, seen from outside any box."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if tag in (proc.info.get("cmdline") or ()):
            found.append(proc)
    return found


@needs_box
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_boxed_agent_reaches_neither_rios_folders_nor_the_bus_nor_the_disk_outside(
        rig, monkeypatch):
    r = rig("required")
    server = r.server
    # a journal: an unsaved edit in the editor
    (r.root / "kept.txt").write_text("kept\n")
    info = server.call("buffer.open", {"path": "kept.txt"})
    server.call("buffer.replace", {"buffer": info["buffer"], "start": 0, "end": 0,
                                   "text": "unsaved "})
    journals = Path(server.env["RIO_STATE_DIR"]) / "projects"
    assert wait_for(lambda: [p for p in journals.rglob("*") if p.is_file()
                             and p.parent.name == "journal"], 10)
    journal = next(p for p in journals.rglob("*") if p.is_file()
                   and p.parent.name == "journal")
    conversation = r.new()
    state = Path(server.env["RIO_STATE_DIR"])
    from rio.mcp.entry import token_path
    monkeypatch.setenv("RIO_STATE_DIR", str(state))
    token = token_path(r.root.resolve(), conversation)   # written at the agent's session/new
    instance = server.runtime / "instance.json"
    bus = server.runtime / "bus.sock"
    outside = r.base / "outside.txt"
    tag = f"rio-daemon-{uuid.uuid4().hex[:8]}"
    r.script({"turns": [[
        {"probe_read": str(instance)}, {"text": "\n"},
        {"probe_list": str(state)}, {"text": "\n"},
        {"probe_read": str(journal)}, {"text": "\n"},
        {"probe_list": str(server.runtime)}, {"text": "\n"},
        {"probe_read": str(token)}, {"text": "\n"},
        {"probe_bus": {"endpoint": f"ipc://{bus}", "op": "gate.mode",
                       "args": {"mode": "allow_all"}, "timeout": 2}}, {"text": "\n"},
        {"probe_write": str(outside)}, {"text": "\n"},
        {"probe_write": str(r.base / "home" / "dotfile")}, {"text": "\n"},
        {"probe_write": str(r.root / "made.txt")}, {"text": "\n"},
        {"daemon": tag}]]})
    done = r.turn(conversation)
    said = done["said"]
    assert done["state"] == "done", done
    lines = said.splitlines()
    assert lines[0] == f"probe_read {instance}: ENOENT", said
    assert lines[1] == f"probe_list {state}: ", said            # an empty folder
    assert lines[2] == f"probe_read {journal}: ENOENT", said
    assert lines[3] == f"probe_list {server.runtime}: ENOENT", said
    assert lines[4] == f"probe_read {token}: ENOENT", said
    assert token.is_file()                                      # there, outside the box
    assert lines[5] == "probe_bus: no answer", said
    # read-only there, or into the box's own /tmp: either way not on the disk
    assert lines[6] in (f"probe_write {outside}: ok", f"probe_write {outside}: EROFS"), said
    assert not outside.exists()
    assert lines[7] == f"probe_write {r.base / 'home' / 'dotfile'}: EROFS", said
    assert lines[8] == f"probe_write {r.root / 'made.txt'}: ok", said
    assert (r.root / "made.txt").read_text() == "written by the agent\n"
    assert server.call("gate.status")["mode"] != "allow_all"
    # the helper left the agent's session and process tree, with no environment at all
    assert wait_for(lambda: daemons(tag), 10)
    helper = daemons(tag)[0]
    agent_pid = server.call("session.status", {"conversation": conversation})["agent"]["pid"]
    assert helper.environ() == {} and os.getsid(helper.pid) != os.getsid(agent_pid)
    assert helper.pid not in {p.pid for p in psutil.Process(agent_pid).children()}
    # Stop the conversation's agent: the helper goes with it
    r.close(conversation)
    assert wait_for(lambda: not daemons(tag), 10), daemons(tag)
    assert not r.notes("no_sandbox")


@needs_box
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_boxed_helper_that_escaped_its_agent_is_gone_after_rio_stop(rig):
    r = rig("required")
    conversation = r.new()
    tag = f"rio-daemon-{uuid.uuid4().hex[:8]}"
    r.script({"turns": [[{"daemon": tag}]]})
    assert r.turn(conversation)["state"] == "done"
    assert wait_for(lambda: daemons(tag), 10)
    done = r.server.cli("stop")
    assert done.returncode == 0, done.stderr
    assert r.server.proc is not None and r.server.proc.wait(30) is not None
    assert wait_for(lambda: not daemons(tag), 10), daemons(tag)
    r.stop()


@needs_box
@pytest.mark.timeout(60)
def test_an_agent_killed_inside_its_box_is_reported_killed_by_that_signal_not_as_bwraps_exit(
        tmp_path):
    """bwrap exits 128 + N for an agent killed by signal N: the session's exit code is the
    agent's, -N, as for an unboxed agent (the note "killed by signal 9"), and a plain exit
    code passes through."""
    import asyncio

    from actors.agent.acp_process import ProcessControlPort
    root = tmp_path / "proj"
    root.mkdir()
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}

    def box(argv, cwd, env):
        return plan(argv, Path(cwd), env, "fake", SandboxConfig(), box_here(), rio_dirs=[])

    async def run(script: str) -> tuple[int, str | None]:
        agent = await ProcessControlPort(box=box).start(["/bin/sh", "-c", script],
                                                        cwd=str(root), env=env)
        try:
            return await asyncio.wait_for(agent.wait(), 30), agent.sandbox
        finally:
            await agent.stop()

    assert asyncio.run(run("kill -9 $$")) == (-9, f"in a box ({box_here().tool})")
    assert asyncio.run(run("exit 3"))[0] == 3


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_without_a_box_the_agents_processes_are_refused_by_the_bus_the_users_cli_is_not(rig):
    """The honest part (ADR-0038): unboxed, the agent reads what the user can read — the
    instance file included — but the bus refuses its connection (the peer check), so it cannot
    switch the gate; the user's own `rio` still gets in. Its escaped helper lives until the
    instance stops, and then is ended (the supervisor ends the orphans it adopted)."""
    r = rig("off")
    server = r.server
    conversation = r.new()
    instance = server.runtime / "instance.json"
    tag = f"rio-daemon-{uuid.uuid4().hex[:8]}"
    r.script({"turns": [[
        {"probe_read": str(instance)}, {"text": "\n"},
        {"probe_bus": {"endpoint": f"ipc://{server.runtime / 'bus.sock'}", "op": "gate.mode",
                       "args": {"mode": "allow_all"}, "timeout": 3}}, {"text": "\n"},
        {"daemon": tag}]]})
    done = r.turn(conversation)
    lines = done["said"].splitlines()
    assert lines[0].startswith(f"probe_read {instance}: ok "), done["said"]
    assert lines[1] == "probe_bus: no answer", done["said"]
    assert server.call("gate.status")["mode"] == "review"
    mine = server.cli("call", "gate.status")
    assert mine.returncode == 0 and json.loads(mine.stdout)["mode"] == "review", mine.stderr
    assert not r.notes("no_sandbox")         # turned off on purpose: nothing to say
    assert wait_for(lambda: daemons(tag), 10)
    r.close(conversation)
    assert daemons(tag)                      # unboxed: it outlives its agent…
    done = server.cli("stop")
    assert done.returncode == 0, done.stderr
    assert server.proc is not None and server.proc.wait(30) is not None
    assert wait_for(lambda: not daemons(tag), 10), daemons(tag)    # …not the instance
    r.stop()


#: A bwrap as a container without user namespaces has it: it runs, and cannot make a box.
DENIED_BWRAP = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "bubblewrap 0.8.0"; exit 0; fi
echo "bwrap: No permissions to create new namespace, likely because the kernel does not \
allow non-privileged user namespaces." >&2
exit 1
"""


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("why", ["missing", "denied"])
def test_where_no_box_can_be_made_the_conversation_and_rio_agents_say_so_once(rig, tmp_path,
                                                                               why):
    """The fallback, on every machine: no bubblewrap, or one that cannot make its namespaces
    (a container's): the agent runs, the conversation says why once, `rio agents` and
    `rio chat` too."""
    bwrap = "/nonexistent/bwrap"
    if why == "denied":
        bwrap = str(tmp_path / "bwrap")
        Path(bwrap).write_text(DENIED_BWRAP)
        Path(bwrap).chmod(0o755)
    r = rig("auto", f'[sandbox]\nbwrap = "{bwrap}"\n')
    conversation = r.new()
    r.script({"default_turn": [{"echo": True}]})
    first = r.turn(conversation, "one")
    second = r.turn(conversation, "two")
    assert first["state"] == second["state"] == "done"
    notes = r.notes("no_sandbox")
    assert len(notes) == 1 and notes[0]["turn"] == first["turn"], notes
    reason = ("bubblewrap (/nonexistent/bwrap) is not installed" if why == "missing" else
              "bubblewrap 0.8.0 cannot make a box here: bwrap: No permissions to create new "
              "namespace")
    assert "without a sandbox" in notes[0]["text"] and reason in notes[0]["text"], notes
    if why == "denied":
        assert "does not let unprivileged programs make user namespaces" in notes[0]["text"]
    shown = r.server.cli("agents", "--timeout", "1")
    assert f"Sandbox: none — {reason}" in shown.stdout, shown.stdout
    log = r.server.cli("agents", "log", conversation, "--root", str(r.root)).stdout
    assert "without a sandbox" in log
    # rio chat: a conversation of its own, two messages, the line once
    chat = r.server.cli("chat", "--instance", r.server.name, "--agent", "fake",
                        input="one\ntwo\n/quit\n", timeout=90)
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.count("The agent runs without a sandbox:") == 1, chat.stdout
    assert "echo: one" in chat.stdout and "echo: two" in chat.stdout


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_by_default_the_agent_is_boxed_where_this_machine_allows_else_it_is_said_once(rig):
    """"auto" with the real bwrap, whichever path this machine takes (the probe decides, so a
    container without user namespaces runs the fallback here, never a skip): boxed — the
    protocol log says so and nothing is said in the conversation — or unboxed with the probe's
    reason said once, and the agent answers either way."""
    here = box_here()
    r = rig("auto")
    conversation = r.new()
    r.script({"default_turn": [{"echo": True}]})
    first = r.turn(conversation, "one")
    second = r.turn(conversation, "two")
    assert first["state"] == second["state"] == "done", (first, second)
    assert first["said"] == "echo: one" and second["said"] == "echo: two"
    log = r.server.cli("agents", "log", conversation, "--root", str(r.root)).stdout
    notes = r.notes("no_sandbox")
    if here.usable:
        assert f"in a box ({here.tool})" in log, log
        assert notes == []
    else:
        assert "without a sandbox" in log, log
        assert len(notes) == 1 and here.reason in notes[0]["text"], notes


def test_the_panel_shows_the_no_sandbox_note_as_a_note():
    from ui.tk.agent.model import Conversation
    conv = Conversation("3f9a0c12b7de")
    conv.apply("agent.turn", {"conversation": "3f9a0c12b7de", "turn": "t1",
                              "state": "started", "text": "go"})
    text = sandbox.no_sandbox_text(Availability(False, reason="bubblewrap is not installed."))
    conv.apply("agent.note", {"conversation": "3f9a0c12b7de", "turn": "t1",
                              "note": sandbox.NO_SANDBOX_NOTE, "text": text})
    assert [b.text for b in conv.blocks if b.kind == "note"] == [text]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_required_without_a_box_refuses_to_start_the_agent(rig):
    r = rig("required", '[sandbox]\nbwrap = "/nonexistent/bwrap"\n')
    conversation = r.new()
    done = r.turn(conversation)
    assert done["state"] == "error", done
    errors = [d for t, d in r.events if t == "agent.error"]
    assert errors and errors[-1]["kind"] == "agent.sandbox_unavailable", errors


@needs_box
@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_rios_mcp_tools_work_from_inside_the_box(rig, transport):
    """The endpoint is HTTP on 127.0.0.1, the network is shared, and the token comes in
    session/new: an HTTP agent reaches it, and so does `rio mcp` — the stdio fallback, run by
    the agent inside the box, where there is no bus and no token file (ADR-0038)."""
    r = rig("required")
    (r.root / "notes.txt").write_text("alpha\n")
    info = r.server.call("buffer.open", {"path": "notes.txt"})
    r.server.call("buffer.replace", {"buffer": info["buffer"], "start": 0, "end": 0,
                                     "text": "unsaved "})
    conversation = r.new()
    r.script({"mcp_http": transport == "http", "turns": [[
        {"mcp": {"tool": "read_buffer", "args": {"path": "notes.txt"}}}]]})
    done = r.turn(conversation, timeout=90)
    assert done["state"] == "done", done
    said = done["said"]
    assert said.startswith("mcp: {") and "unsaved alpha" in said, said
    log = r.server.cli("agents", "log", conversation, "--root", str(r.root)).stdout
    assert "in a box (bubblewrap" in log


# --- the bus's peer check, without an instance --------------------------------------------------

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
PARENT = [sys.executable, "-c", "import subprocess, sys, time\n"
          f"p = subprocess.Popen({SLEEPER!r})\nprint(p.pid, flush=True)\ntime.sleep(60)"]


def test_the_peer_check_refuses_an_agents_processes_and_orphans_and_admits_the_rest():
    from actors.bus.peer_guard import PeerGuard
    session = subprocess.Popen(PARENT, stdout=subprocess.PIPE, text=True)
    stray = subprocess.Popen(SLEEPER)
    try:
        assert session.stdout is not None
        agent = int(session.stdout.readline())
        names = {session.pid: "agent:c1"}
        guard = PeerGuard(lambda: names, settle_s=0.2)
        assert guard.verdict(os.getpid()) is None                 # the supervisor itself
        assert guard.verdict(session.pid) is None                 # the session process
        assert "agent of agent:c1" in (guard.verdict(agent) or "")   # its agent
        assert "left its parent" in (guard.verdict(stray.pid) or "")  # a child it cannot name
        names[session.pid] = "core"
        assert guard.verdict(agent) is None                       # a Run command of the core
        assert guard.verdict(os.getppid()) is None                # not Rio's: the user's own
        assert guard.verdict(0) is None      # outside Rio's PID namespace: never one of Rio's
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        assert guard.verdict(gone.pid) is not None                # cannot be asked: refused
    finally:
        for proc in (session, stray):
            proc.kill()
            proc.wait()
        for child in psutil.Process().children(recursive=True):
            if child.cmdline()[:2] == SLEEPER[:2]:
                child.kill()


@pytest.mark.timeout(60)
def test_a_hub_with_the_peer_check_refuses_the_connection_before_any_request(tmp_path):
    """The refusal is ZAP's: the connection is closed at its handshake, requests and the event
    stream alike; the process the hub runs in (the supervisor) connects as before."""
    import zmq

    from actors.bus.hub import Hub
    from actors.bus.peer_guard import PeerGuard
    from rio.protocol.frames import Request, decode, encode
    runtime = Path("/tmp") / f"rio-t-{uuid.uuid4().hex[:8]}"
    from tests.support import RUNTIME_DIRS
    RUNTIME_DIRS.append(runtime)
    runtime.mkdir(mode=0o700)
    requests, events = f"ipc://{runtime}/bus.sock", f"ipc://{runtime}/events.sock"
    guard = PeerGuard(lambda: {}, settle_s=0.1)
    hub = Hub(requests, events, context=zmq.Context(), peer_guard=guard).start()
    try:
        ctx = zmq.Context()
        mine = ctx.socket(zmq.DEALER)
        mine.connect(requests)
        mine.send(encode(Request("r1", "bus.stats", {})))
        assert mine.poll(5000) and decode(mine.recv()).ok
        mine.close(0)
        ctx.term()
        code = ("import sys, zmq\nfrom rio.protocol.frames import Request, encode\n"
                "s = zmq.Context().socket(zmq.DEALER)\ns.setsockopt(zmq.LINGER, 0)\n"
                f"s.connect({requests!r})\ns.send(encode(Request('r2', 'bus.stats', {{}})))\n"
                "print('answered' if s.poll(2000) else 'no answer')\n")
        # a process under a child of ours the check cannot name (as an orphan adopted by the
        # supervisor would be) connects: refused, never answered
        done = subprocess.run([sys.executable, "-c", "import subprocess, sys\n"
                               f"sys.exit(subprocess.run([sys.executable, '-c', {code!r}])"
                               ".returncode)"],
                              capture_output=True, text=True, timeout=30,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        assert done.stdout.strip() == "no answer", done.stderr
        assert guard.refused >= 1
    finally:
        hub.stop()
