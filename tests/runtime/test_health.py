"""`rio health` (issue 19): exit 0 on a whole instance, 1 degraded (a process restarting or
given up, the core not answering), 2 unreachable — and `rio status` / `rio call system.ping`
honest about a process Rio gave up on. The verdict's rules without processes, then against
real `rio serve` trees."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rio.service import health
from tests.support import RioServer, rio_env, wait_for

# --- the verdict ---------------------------------------------------------------------------


def status_of(*procs: tuple[str, str]) -> dict:
    return {"instance": "proj", "processes": [
        {"name": n, "state": s, "restarts": 2, "last_exit": "killed by SIGKILL",
         "log": f"/logs/proj.{n}.log"} for n, s in procs]}


ANSWERED = health.CoreAnswer(True, 1.25)


def test_every_process_running_and_the_core_answering_is_ok():
    verdict = health.judge(status_of(("core", "running"), ("agent:1", "idle-stopped"),
                                     ("mcp", "stopped")), ANSWERED)
    assert (verdict.health, verdict.code, verdict.problems) == ("ok", 0, [])
    assert "1 process running" in verdict.summary and "1.2 ms" in verdict.summary
    assert verdict.to_json()["core"] == {"answered": True, "ms": 1.25, "error": None,
                                         "message": None}


@pytest.mark.parametrize("state", ["restarting", "failed"])
def test_a_process_restarting_or_given_up_is_degraded_and_named(state):
    verdict = health.judge(status_of(("core", "running"), ("agent:7", state)), ANSWERED)
    assert (verdict.health, verdict.code) == ("degraded", 1)
    assert verdict.problems == [{"process": "agent:7", "state": state, "restarts": 2,
                                 "last_exit": "killed by SIGKILL",
                                 "log": "/logs/proj.agent:7.log"}]
    assert f"agent:7 {state}" in verdict.summary


def test_a_core_that_does_not_answer_is_degraded_even_when_its_state_looks_fine():
    hung = health.CoreAnswer(False, 3000.0, "bus.timeout", "No reply to buffer.list")
    verdict = health.judge(status_of(("core", "running")), hung)
    assert verdict.code == 1
    assert verdict.problems[-1]["error"] == "bus.timeout"
    assert "did not answer buffer.list" in verdict.summary


def test_judging_only_some_processes_leaves_the_others_out():
    status = status_of(("core", "running"), ("agent:1", "failed"), ("agent:2", "restarting"))
    assert health.judge(status, ANSWERED, only=["core"]).code == 0
    by_kind = health.judge(status, ANSWERED, only=["agent"])
    assert [p["process"] for p in by_kind.problems] == ["agent:1", "agent:2"]
    assert health.judge(status, ANSWERED, only=["agent:2"]).problems[0]["state"] == "restarting"
    # The core's own answer counts whatever the filter.
    assert health.judge(status, health.CoreAnswer(False, 1, "bus.no_route"), ["mcp"]).code == 1


def test_unreachable_is_2():
    verdict = health.unreachable("bus.unreachable", "No Rio instance named 'x' is running.")
    assert (verdict.health, verdict.code) == ("unreachable", 2)
    assert verdict.to_json()["problems"][0]["error"] == "bus.unreachable"


def test_rio_status_exits_1_only_when_a_process_was_given_up():
    from rio.cli import main as cli
    assert cli.status_code(status_of(("core", "running"), ("agent:1", "restarting"))) == 0
    assert cli.status_code(status_of(("core", "failed"))) == cli.EXIT_ERROR


@pytest.mark.timeout(60)
def test_rio_health_imports_only_what_it_needs(tmp_path: Path):
    """Fit for an exec probe: `rio health` builds its own parser alone and loads the bus
    client — none of the agent, keys or faults commands' modules, no supervisor, no Tk."""
    code = ("import sys; from rio.cli.main import main; "
            "code = main(['health', '--instance', 'nobody-here']); "
            "print(code, ' '.join(sorted(sys.modules)))")
    env = rio_env(tmp_path)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env)
    first, *loaded = done.stdout.split("\n")[-2].split()
    assert first == "2", done.stdout + done.stderr
    assert {"rio.cli.health", "actors.bus.client"} <= set(loaded)
    for heavy in ("rio.cli.agent", "rio.cli.keys", "rio.cli.faults", "actors.runtime.supervisor",
                  "tkinter", "httpx", "pykka", "psutil", "pygments"):
        assert heavy not in loaded, heavy


# --- against real instances ------------------------------------------------------------------


def rio(env: dict[str, str], *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rio.cli", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def timed_health(env: dict[str, str], name: str, runs: int = 5) -> list[float]:
    """Wall-clock seconds of `rio health` as a probe runs it (a fresh interpreter each time).
    Reported, not asserted: this machine is shared."""
    script = Path(sys.executable).with_name("rio")
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "rio.cli"]
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([*argv, "health", "--instance", name], env=env,
                              capture_output=True, text=True, timeout=30)
        times.append(time.perf_counter() - started)
        assert done.returncode == 0, done.stdout + done.stderr
    return times


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_health_is_0_on_a_fresh_instance_and_2_with_none(tmp_path: Path):
    root = tmp_path / "proj"
    root.mkdir()
    srv = RioServer(root, tmp_path).start()
    try:
        done = srv.cli("health", "--instance", srv.name, "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        verdict = json.loads(done.stdout)
        assert verdict["health"] == "ok" and verdict["core"]["answered"]
        assert verdict["processes"] == {"core": "running"}
        plain = srv.cli("health", "--instance", srv.name)
        assert plain.returncode == 0 and "ok:" in plain.stdout
        times = timed_health(srv.env, srv.name)
        print(f"\nrio health wall-clock (s): {', '.join(f'{t:.3f}' for t in times)}; "
              f"median {statistics.median(times):.3f}; in-process {verdict['elapsed_ms']} ms")
    finally:
        srv.stop()
    gone = rio(srv.env, "health", "--instance", srv.name, "--json")
    assert gone.returncode == 2, gone.stdout + gone.stderr
    assert json.loads(gone.stdout)["health"] == "unreachable"
    assert rio(srv.env, "health").returncode == 2          # no instance at all


def core_of(srv: RioServer) -> dict:
    return next(p for p in srv.call("system.status")["processes"] if p["name"] == "core")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_health_status_and_ping_say_so_when_the_core_is_restarting_then_given_up(
        tmp_path: Path):
    root = tmp_path / "proj"
    root.mkdir()
    env = rio_env(tmp_path)
    config = Path(env["RIO_CONFIG_DIR"])
    config.mkdir(parents=True)
    # One restart allowed, after a back-off long enough to look at it: the second kill -9
    # spends the budget and Rio gives up on the core.
    (config / "supervisor.toml").write_text(textwrap.dedent("""
        [process.core]
        max_restarts = 1
        backoff_initial_ms = 2000
        backoff_max_ms = 2000
        spare = false
    """))
    srv = RioServer(root, tmp_path, env=env).start()
    try:
        first = core_of(srv)["pid"]
        os.kill(first, signal.SIGKILL)
        assert wait_for(lambda: core_of(srv)["state"] == "restarting", 10)
        during = srv.cli("health", "--instance", srv.name, "--json")
        assert during.returncode == 1, during.stdout + during.stderr
        problems = json.loads(during.stdout)["problems"]
        assert {"process": "core", "state": "restarting"}.items() <= problems[0].items()
        assert srv.cli("status", "--instance", srv.name).returncode == 0   # Rio is on it

        assert wait_for(lambda: core_of(srv)["ready"] and core_of(srv)["pid"] != first, 20)
        srv.known_pids.add(core_of(srv)["pid"])
        healthy = srv.cli("health", "--instance", srv.name)
        assert healthy.returncode == 0, (healthy.stdout, srv.cli("status", "--instance",
                                                                 srv.name).stdout,
                                         srv.logs_tail())
        os.kill(core_of(srv)["pid"], signal.SIGKILL)
        assert wait_for(lambda: core_of(srv)["state"] == "failed", 10)

        after = srv.cli("health", "--instance", srv.name, "--json")
        assert after.returncode == 1, after.stdout + after.stderr
        verdict = json.loads(after.stdout)
        assert verdict["health"] == "degraded"
        assert verdict["problems"][0]["process"] == "core"
        assert verdict["problems"][0]["state"] == "failed"
        assert verdict["core"]["answered"] is False
        status = srv.cli("status", "--instance", srv.name)
        assert status.returncode == 1 and "failed" in status.stdout
        assert "system.restart" in status.stderr
        assert srv.cli("status", "--instance", srv.name, "--json").returncode == 1
        ping = srv.cli("call", "--instance", srv.name, "system.ping")
        assert ping.returncode == 0 and json.loads(ping.stdout)["failed"] == ["core"]

        # Started again by hand, with a fresh budget: whole again.
        gave_up = core_of(srv)["pid"]
        srv.call("system.restart", {"process": "core"})
        assert wait_for(lambda: core_of(srv)["pid"] != gave_up and core_of(srv)["ready"], 20)
        srv.known_pids.add(core_of(srv)["pid"])
        healthy = srv.cli("health", "--instance", srv.name)
        assert healthy.returncode == 0, (healthy.stdout, srv.cli("status", "--instance",
                                                                 srv.name).stdout,
                                         srv.logs_tail())
        assert srv.cli("status", "--instance", srv.name).returncode == 0
    finally:
        srv.stop()
