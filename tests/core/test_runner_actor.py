"""run.* through a real `rio serve`: output streams, stop and timeout end the whole group (zero
survivors, even for helpers that ignore TERM or left the group), secrets stay out."""

from __future__ import annotations

import re
import sys

import psutil
import pytest

from rio.protocol.errors import FileError, PathError, ProtocolError
from rio.protocol.frames import thaw
from tests.support import RioServer, rio_env, wait_for

pytestmark = pytest.mark.timeout(120)

SECRETS = {"FAKE_SERVICE_API_KEY": "sk-leak-1", "GITHUB_TOKEN": "ghp-leak-2",
           "MY_SECRET_THING": "leak-3"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("runner")
    root = base / "proj"
    (root / "sub").mkdir(parents=True)
    env = rio_env(base)
    env.update(SECRETS)
    env["RIO_TEST_KEEP_ME"] = "kept"
    srv = RioServer(root, base, env=env).start()
    yield srv
    srv.stop()


class Runs:
    """A bus connection that collects run.* events by run id."""

    def __init__(self, server: RioServer):
        self.conn = server.connect("runs-test", subscribe=("run.",))
        self.output: dict[str, list[tuple[str, str]]] = {}
        self.exits: dict[str, dict] = {}
        self.conn.subscribe("run.", self._on_event)

    def _on_event(self, event) -> None:
        data = thaw(event.data)
        if event.topic == "run.output":
            self.output.setdefault(data["run"], []).append((data["stream"], data["text"]))
        elif event.topic == "run.exit":
            assert data["run"] not in self.exits, "run.exit must come once"
            self.exits[data["run"]] = dict(data)

    def call(self, op: str, args: dict | None = None, timeout: float = 15.0):
        return self.conn.call(op, args or {}, timeout=timeout)

    def start(self, command, **args) -> str:
        return self.call("run.start", {"command": command, **args})["run"]

    def pump_until(self, predicate, timeout: float = 20.0) -> bool:
        def step() -> bool:
            self.conn.drain()
            return predicate()
        return wait_for(step, timeout)

    def text(self, run: str, stream: str | None = None) -> str:
        return "".join(t for s, t in self.output.get(run, []) if stream in (None, s))

    def wait_exit(self, run: str, timeout: float = 20.0) -> dict:
        assert self.pump_until(lambda: run in self.exits, timeout), f"no run.exit for {run}"
        return self.exits[run]


@pytest.fixture
def runs(server):
    r = Runs(server)
    yield r
    r.conn.close()


def _gone(pid: int) -> bool:
    try:
        p = psutil.Process(pid)
        return p.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _pids(text: str, name: str) -> list[int]:
    return [int(m) for m in re.findall(rf"{name}=(\d+)", text)]


def test_output_streams_while_the_command_runs(runs, server, tmp_path):
    flag = tmp_path / "go"
    run = runs.start(f"echo started; while [ ! -e {flag} ]; do sleep 0.02; done; "
                     f"echo done-out; echo done-err >&2; exit 3")
    # The first line arrives while the command is still waiting for us: it streamed.
    assert runs.pump_until(lambda: "started" in runs.text(run))
    assert run not in runs.exits
    listed = {r["run"]: r for r in runs.call("run.list")}
    assert listed[run]["state"] == "running" and listed[run]["argv"][:2] == ["/bin/sh", "-c"]
    flag.touch()
    end = runs.wait_exit(run)
    assert end["code"] == 3 and end["how"] == "exited" and end["survivors"] == []
    assert runs.text(run, "stdout") == "started\ndone-out\n"
    assert runs.text(run, "stderr") == "done-err\n"
    listed = {r["run"]: r for r in runs.call("run.list")}
    assert listed[run]["state"] == "exited" and listed[run]["code"] == 3


def test_argv_list_runs_without_a_shell_in_cwd(runs, server):
    run = runs.start([sys.executable, "-c", "import os, sys; print(sys.argv[1], os.getcwd())",
                      "$HOME;*"], cwd="sub")
    assert runs.wait_exit(run)["code"] == 0
    assert runs.text(run) == f"$HOME;* {server.root / 'sub'}\n"


def test_stop_ends_a_group_that_ignores_term_including_escaped_helpers(runs):
    # The main shell and its background helper ignore TERM; a second helper leaves the group
    # with setsid (only the cookie sweep can find it).
    run = runs.start("trap '' TERM; sleep 300 & echo helper=$!; "
                     "setsid sleep 301 & echo escaped=$!; echo main=$$; wait")
    assert runs.pump_until(lambda: "main=" in runs.text(run))
    out = runs.text(run)
    pids = _pids(out, "helper") + _pids(out, "escaped") + _pids(out, "main")
    assert len(pids) == 3 and not any(_gone(p) for p in pids)
    reply = runs.call("run.stop", {"run": run})
    assert reply["how"] == "stopped" and reply["survivors"] == []
    assert reply["stop"] == "killed"  # TERM was ignored: it took the KILL step
    assert all(_gone(p) for p in pids), [p for p in pids if not _gone(p)]
    end = runs.wait_exit(run)
    assert end["how"] == "stopped" and end["code"] == 137
    # Stopping a finished run answers with how it ended.
    assert runs.call("run.stop", {"run": run})["how"] == "stopped"


def test_timeout_ends_the_whole_group(runs):
    run = runs.start("trap '' TERM; sleep 300 & echo helper=$!; wait", timeout_s=0.5)
    end = runs.wait_exit(run)
    assert end["how"] == "timeout" and end["survivors"] == []
    helper = _pids(runs.text(run), "helper")
    assert len(helper) == 1 and _gone(helper[0])


def test_helpers_left_behind_by_a_finished_command_are_ended(runs):
    run = runs.start("sleep 300 > /dev/null 2>&1 & echo bg=$!")
    end = runs.wait_exit(run)
    assert end["how"] == "exited" and end["code"] == 0 and end["survivors"] == []
    bg = _pids(runs.text(run), "bg")
    assert len(bg) == 1 and wait_for(lambda: _gone(bg[0]), 5)


def test_secrets_are_not_in_the_environment(runs):
    run = runs.start("env")
    assert runs.wait_exit(run)["code"] == 0
    env = runs.text(run)
    assert "RIO_TEST_KEEP_ME=kept" in env  # the environment is passed on...
    for name, value in SECRETS.items():   # ...without credentials
        assert name not in env and value not in env


def test_errors_are_typed(runs):
    with pytest.raises(FileError) as info:
        runs.start(["/nonexistent/program-xyz"])
    assert info.value.kind == "file.exec_failed"
    with pytest.raises(PathError):
        runs.start("true", cwd="../..")
    with pytest.raises(ProtocolError) as info:
        runs.start("   ")
    assert info.value.kind == "protocol.bad_args"
    with pytest.raises(ProtocolError) as info:
        runs.call("run.stop", {"run": "run-nope"})
    assert info.value.kind == "protocol.unknown_run"


def test_many_lines_arrive_batched_and_complete(runs):
    run = runs.start([sys.executable, "-c", "for i in range(20000): print(i)"])
    assert runs.wait_exit(run)["code"] == 0
    assert runs.pump_until(lambda: runs.text(run).endswith("19999\n"), 5)
    assert runs.text(run) == "".join(f"{i}\n" for i in range(20000))
    assert len(runs.output[run]) < 200  # batched, not one event per line
