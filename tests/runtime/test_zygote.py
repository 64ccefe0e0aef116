"""Agent sessions forked from the session zygote (actors/runtime/zygote.py, actors/runtime/zygotes.py,
ADR-0039): a forked session is what a fresh one would be (environment, folder, signal
dispositions and mask, PDEATHSIG, import path, process group), it is the supervisor's own child,
a crashed one restarts alone, the zygote's death takes no session with it, and a zygote that
cannot start leaves sessions to start fresh."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import psutil
import pytest

from actors.runtime import process_control, zygotes
from actors.runtime.spares import HOST_MODULE
from rio.config.supervisor_toml import load_config
from rio.protocol.errors import ConfigError
from tests.support import REPO, RioServer, wait_for

# ------------------------------------------------------------------ one fork, compared to a spawn

@pytest.fixture
def probed(tmp_path: Path) -> dict[str, Any]:
    """tests/zygote_probe.py's stand-in supervisor, run once: what the fresh and the forked
    session each reported of themselves."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.zygote_probe", "drive", str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=str(tmp_path),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=process_control.dies_with_this_process())
    try:
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert proc.returncode == 0, err.decode()
    return {name: json.loads((tmp_path / f"{name}.json").read_text())
            for name in ("fresh", "forked", "driver")} | {"tmp": tmp_path}


@pytest.mark.timeout(90)
def test_a_forked_session_is_what_a_fresh_one_would_be(probed: dict[str, Any]) -> None:
    fresh, forked, driver = probed["fresh"], probed["forked"], probed["driver"]
    project = str(probed["tmp"] / "project")
    assert forked["pid"] == driver["forked"] != driver["zygote"]
    # The environment the supervisor gives (its own spawn cookie; the lifeline is the
    # supervisor's in both), not the zygote's.
    assert forked["env"]["RIO_SPAWN_COOKIE"] == driver["cookie"]
    assert forked["env"]["RIO_PROBE_VARIABLE"] == "kept"
    assert {k: v for k, v in forked["env"].items() if k != "RIO_SPAWN_COOKIE"} == \
        {k: v for k, v in fresh["env"].items() if k != "RIO_SPAWN_COOKIE"}
    # The project as its folder, not on its import path (-P, ADR-0033).
    assert forked["cwd"] == fresh["cwd"] == project
    assert forked["path"] == fresh["path"]
    assert project not in forked["path"] and "" not in forked["path"]
    # The supervisor's own child, in a session and group of its own, dying with it.
    assert forked["ppid"] == fresh["ppid"] == driver["supervisor"]
    assert forked["pgid"] == forked["sid"] == forked["pid"]
    assert forked["pdeathsig"] == fresh["pdeathsig"] == int(signal.SIGTERM)
    # Python's own signal dispositions and an empty mask, whatever the zygote had changed.
    assert forked["handlers"] == fresh["handlers"]
    assert forked["handlers"][str(int(signal.SIGUSR1))] == int(signal.SIG_DFL)
    assert forked["handlers"][str(int(signal.SIGHUP))] == int(signal.SIG_DFL)
    assert forked["status"] == fresh["status"]
    assert int(forked["status"]["SigBlk"], 16) == 0
    assert forked["stdin_fifo"] and fresh["stdin_fifo"]
    assert forked["argv"][0] == "probe" and driver["forked_exit"] == 0


# ---------------------------------------------------------------------------- with a real instance

@pytest.fixture
def server(tmp_path: Path):
    root = tmp_path / "proj"
    root.mkdir()
    srv = RioServer(root, tmp_path).start()
    yield srv
    srv.stop()


def _status(srv: RioServer) -> dict[str, Any]:
    return srv.call("system.status")


def _session(srv: RioServer, key: str) -> dict[str, Any]:
    return next((p for p in _status(srv)["processes"] if p["name"] == f"agent:{key}"), {})


def _start(srv: RioServer, key: str) -> int:
    srv.call("system.spawn", {"kind": "agent", "key": key}, timeout=30)
    assert wait_for(lambda: _session(srv, key).get("ready"), 30), _status(srv)
    pid = int(_session(srv, key)["pid"])
    srv.known_pids.add(pid)
    return pid


def _zygote_pid(srv: RioServer) -> int | None:
    for spare in _status(srv)["spares"]:
        if spare.get("zygote"):
            srv.known_pids.add(int(spare["pid"]))
            return int(spare["pid"])
    return None


def _forked(pid: int) -> bool:
    """A forked session's command line is its zygote's (fixed at exec)."""
    return "--zygote" in psutil.Process(pid).cmdline()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sessions_are_forked_and_a_crashed_one_restarts_alone(server: RioServer) -> None:
    one, two = _start(server, "c1"), _start(server, "c2")
    assert _zygote_pid(server) is not None
    for pid in (one, two):
        assert _forked(pid)
        assert psutil.Process(pid).ppid() == server.proc.pid     # the supervisor's child
        assert os.getpgid(pid) == pid

    os.kill(one, signal.SIGKILL)
    assert wait_for(lambda: _session(server, "c1").get("pid") not in (None, one)
                    and _session(server, "c1").get("ready"), 30), _status(server)
    again = int(_session(server, "c1")["pid"])
    server.known_pids.add(again)
    assert _forked(again) and _session(server, "c1")["restarts"] == 1
    # The other conversation's session did not move.
    assert _session(server, "c2")["pid"] == two and _session(server, "c2")["restarts"] == 0
    assert server.call("host.ping", {"process": "agent:c2"})["pid"] == two


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_zygotes_death_takes_no_session_with_it(server: RioServer) -> None:
    one = _start(server, "c1")
    zygote = _zygote_pid(server)
    assert zygote is not None
    os.kill(zygote, signal.SIGKILL)
    assert wait_for(lambda: _zygote_pid(server) != zygote, 30), _status(server)
    # The session lives on and answers; a later one starts (from a new zygote).
    assert server.call("host.ping", {"process": "agent:c1"})["pid"] == one
    two = _start(server, "c2")
    assert server.call("host.ping", {"process": "agent:c2"})["pid"] == two
    assert _session(server, "c1")["pid"] == one and _session(server, "c1")["restarts"] == 0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sessions_start_fresh_when_the_kind_says_no_zygote(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    srv = RioServer(root, tmp_path)
    Path(srv.env["RIO_CONFIG_DIR"]).mkdir(parents=True)
    (Path(srv.env["RIO_CONFIG_DIR"]) / "supervisor.toml").write_text(
        "[process.core]\nspare = false\n\n[process.agent]\nzygote = false\n")
    srv.start()
    try:
        pid = _start(srv, "c1")
        assert not _forked(pid) and _zygote_pid(srv) is None
    finally:
        srv.stop()


# ------------------------------------------------------- a zygote that cannot start (no instance)

class _Owner:
    """What :class:`actors.runtime.zygotes.Zygotes` needs of the supervisor."""

    def __init__(self, tmp: Path) -> None:
        self.name = "t"
        self.root = tmp
        self.log_dir = tmp
        self.children: dict[str, Any] = {}
        self.fresh: list[Any] = []
        self.forked_children: list[Any] = []

    def _child_env(self) -> dict[str, str]:
        return dict(os.environ)

    def child_stderr(self, label: str, path: Path) -> Any:
        import contextlib

        @contextlib.contextmanager
        def opened() -> Any:
            with open(path, "ab") as fh:
                yield fh, None
        return opened()

    def forked(self, child: Any, spawned: Any) -> None:
        self.forked_children.append(child)

    def start_fresh(self, child: Any) -> None:
        self.fresh.append(child)


class _Child:
    def __init__(self, name: str, spec: Any) -> None:
        self.spec = spec
        self.argv = [sys.executable, *HOST_MODULE, "--process", name, "--actors", "agent_session"]
        self.state = "starting"
        self.spawned = None


def _agent_spec(tmp: Path) -> Any:
    config = load_config(None, tmp / "absent.toml")
    spec = config.process("agent")
    assert spec.zygote          # as shipped
    return spec


@pytest.mark.timeout(60)
def test_a_zygote_that_cannot_start_leaves_sessions_to_start_fresh(tmp_path: Path,
                                                                   monkeypatch) -> None:
    monkeypatch.setattr(zygotes, "_reparents_to_us", lambda: True)
    spec = _agent_spec(tmp_path)
    # An interpreter that is not there: not started, the session starts as before.
    missing = zygotes.Zygotes(_Owner(tmp_path), python=str(tmp_path / "no-python"))
    assert not missing.fork(_Child("agent:c1", spec), None, 0.0)

    # One that exits at once: what waited on it starts fresh, each time; past its budget
    # (5 in 60 s) the kind is not asked again.
    owner = _Owner(tmp_path)
    broken = zygotes.Zygotes(owner, python="/bin/false")
    now = 0.0
    for i in range(6):
        child = _Child(f"agent:c{i}", spec)
        assert broken.fork(child, None, now)
        kind = broken.kinds["agent"]
        assert kind.spawned is not None
        kind.spawned.popen.wait(10)
        broken.check(now)
        assert owner.fresh[-1] is child and kind.spawned is None
        now += 1.0
    assert broken.kinds["agent"].gave_up
    assert not broken.fork(_Child("agent:late", spec), None, now)
    assert not owner.forked_children


@pytest.mark.timeout(60)
def test_a_zygote_with_no_session_of_its_kind_for_a_while_is_stopped(tmp_path: Path,
                                                                      monkeypatch) -> None:
    """Its pages go back once no session of its kind has run for IDLE_STOP_S; a live
    session of its kind (or one waiting to be forked) keeps it."""
    monkeypatch.setattr(zygotes, "_reparents_to_us", lambda: True)
    stand_in = tmp_path / "python"       # a "zygote" that never answers: only its life counts
    stand_in.write_text("#!/bin/sh\nexec sleep 60\n")
    stand_in.chmod(0o755)
    owner = _Owner(tmp_path)
    zyg = zygotes.Zygotes(owner, python=str(stand_in))
    assert zyg.fork(_Child("agent:c1", _agent_spec(tmp_path)), None, 0.0)
    kind = zyg.kinds["agent"]
    assert kind.spawned is not None
    proc = kind.spawned.popen
    kind.pending.clear()                 # handed over; the session runs
    owner.children = {"agent:c1": type("C", (), {"state": "running"})()}
    zyg.check(0.0)
    zyg.check(zygotes.IDLE_STOP_S + 1)
    assert kind.spawned is not None      # a live session keeps it
    owner.children = {}                  # the conversation ended
    zyg.check(zygotes.IDLE_STOP_S + 2)   # idle from here
    zyg.check(2 * zygotes.IDLE_STOP_S)
    assert kind.spawned is not None      # not yet IDLE_STOP_S idle
    zyg.check(2 * zygotes.IDLE_STOP_S + 3)
    assert kind.spawned is None
    assert proc.wait(30) is not None     # ended, and reaped
    assert zyg.pids() == set()


def test_a_kind_is_forked_only_where_its_entry_says_so(tmp_path: Path) -> None:
    path = tmp_path / "supervisor.toml"
    path.write_text(textwrap.dedent("""
        [process.agent]
        zygote = false
    """))
    assert not load_config(None, path).process("agent").zygote
    path.write_text('[process.agent]\nzygote = "yes"\n')
    with pytest.raises(ConfigError, match="zygote must be true or false"):
        load_config(None, path)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_rio_status_shows_each_sessions_own_pages(server: RioServer) -> None:
    """`rio status` (system.status with the tree): per conversation, its session's RSS and
    USS — a forked session's USS leaves out the pages it shares — and Rio's own total."""
    from rio.cli.main import render_status
    _start(server, "c1")
    _start(server, "c2")
    status = server.call("system.status", {"tree": True})
    sessions = [p for p in status["processes"] if p["name"].startswith("agent:")]
    assert len(sessions) == 2
    for proc in sessions:
        assert 0 < proc["uss"] < proc["rss"]
    zygote = next(s for s in status["spares"] if s.get("zygote"))
    assert zygote["uss"] and status["uss"]
    assert status["uss_own"] >= sum(p["uss"] for p in sessions) + zygote["uss"] + status["uss"]
    lines = render_status(status)
    header = lines[1]
    row = next(line for line in lines if line.startswith("agent:c1"))
    uss_mb = f"{sessions[0]['uss'] / 1048576:.1f} MB" if sessions[0]["name"] == "agent:c1" \
        else f"{sessions[1]['uss'] / 1048576:.1f} MB"
    assert row.index(uss_mb) + len(uss_mb) == header.index("USS") + 3
    assert any(line.startswith("Rio's own pages (USS): ") and "2 conversation sessions" in line
               for line in lines)
