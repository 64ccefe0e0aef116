"""`rio faults` end to end: short runs of each scenario family against the scratch instance it
starts, the invariants read from its JSON, a deliberately broken invariant, and a run against
an instance started by someone else (--instance)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.support import REPO, RioServer, rio_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def faults(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
           hook: str | None = None) -> tuple[int, dict | None, str]:
    env = dict(env or rio_env(tmp_path))
    env["TMPDIR"] = str(tmp_path)   # a broken run keeps its scratch files: keep them here
    if hook:
        env["RIO_FAULTS_TEST_HOOK"] = hook
    proc = subprocess.run([sys.executable, "-m", "rio.cli", "faults", "--json", "--seed", "7",
                           *args], env=env, capture_output=True, text=True, timeout=220,
                          cwd=str(REPO))
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        data = None
    return proc.returncode, data, proc.stderr


def assert_clean(data: dict, scenarios: list[str], min_faults: int) -> None:
    assert data["ok"] is True, json.dumps(data["scenarios"], indent=1)
    totals = data["totals"]
    assert totals["lost"] == totals["duplicated"] == totals["orphans"] == 0
    assert totals["corrupt"] == 0 and data["shutdown_orphans"] == 0
    assert totals["recovered"] == totals["faults"] >= min_faults
    assert [s["scenario"] for s in data["scenarios"]] == scenarios
    for s in data["scenarios"]:
        assert s["runs"] == 2 and s["faults"] > 0 and s["worst_s"] is not None
    assert data["edits_acked"] > 0


def scenario_args(names: list[str]) -> list[str]:
    return [a for n in names for a in ("--scenario", n)]


def no_scratch_left(data: dict) -> None:
    # every process of the scratch instance is gone (its name is in their argv)
    for proc in psutil.process_iter(["cmdline"]):
        assert data["instance"] not in " ".join(proc.info["cmdline"] or []), proc


def test_process_kills_and_the_stop_sequence(tmp_path: Path) -> None:
    names = ["kill", "stubborn", "forking"]
    code, data, err = faults(tmp_path, "--runs", "2", *scenario_args(names))
    assert code == 0 and data is not None, err
    assert_clean(data, names, min_faults=2 * 7 + 2 + 4)
    kinds = {f["target"] for f in data["faults"] if f["scenario"] == "kill"}
    assert {"documents", "gate", "fake:stubborn-forking-2"} <= kinds
    no_scratch_left(data)


def test_hung_processes(tmp_path: Path) -> None:
    code, data, err = faults(tmp_path, "--runs", "2", "--scenario", "hang")
    assert code == 0 and data is not None, err
    assert_clean(data, ["hang"], min_faults=14)
    assert all(f["fault"] == "SIGSTOP" for f in data["faults"])


def test_the_supervisor_killed(tmp_path: Path) -> None:
    code, data, err = faults(tmp_path, "--runs", "2", "--scenario", "supervisor")
    assert code == 0 and data is not None, (err, data and data.get("faults"),
                                            data and data.get("shutdown_orphans"))
    assert_clean(data, ["supervisor"], min_faults=2)
    no_scratch_left(data)


def test_bus_faults_and_failing_saves(tmp_path: Path) -> None:
    code, data, err = faults(tmp_path, "--runs", "2", "--scenario", "bus", "--scenario", "save")
    assert code == 0 and data is not None, err
    assert_clean(data, ["bus", "save"], min_faults=18 + 4)
    assert {f["fault"] for f in data["faults"]} >= {"bus drop", "bus dup", "bus delay",
                                                    "save ENOSPC", "save EIO"}


def _acp_family(tmp_path: Path, names: list[str]) -> dict:
    code, data, err = faults(tmp_path, "--runs", "1", *scenario_args(names))
    assert code == 0 and data is not None, (err, data and data.get("faults"))
    assert [s["scenario"] for s in data["scenarios"]] == names
    assert data["totals"]["faults"] == data["totals"]["recovered"] == len(names)
    assert data["totals"]["orphans"] == data["totals"]["lost"] == 0
    assert data["shutdown_orphans"] == 0 and data["ok"] is True
    assert all(f["note"] == "" and f["recover_s"] is not None for f in data["faults"])
    no_scratch_left(data)
    return data


def test_the_acp_family_crash_and_helpers(tmp_path: Path) -> None:
    """The fault agent shipped with Rio (actors/faults/acp_fake.py), no real agent: a crash
    mid-turn with helpers left (resumed, helpers gone), and a stop with three helpers (one
    in the group, one setsid, one double-forked) — 0 orphans."""
    data = _acp_family(tmp_path, ["acp_crash", "acp_helpers"])
    assert [f["fault"] for f in data["faults"]] == ["agent crash mid-turn",
                                                    "stop with 3 helpers"]


def test_the_acp_family_in_the_agents_box_counts_its_helpers_by_this_machines_pids(
        tmp_path: Path) -> None:
    """With the agent boxed (ADR-0038) the pids it reports are its PID namespace's own: the
    harness maps them (``NSpid``) before it checks or kills them; unmapped they name other
    processes of the machine. Where no box can be had, the scenario runs unboxed (the probe's
    reason is in the skip of the boxed tests of tests/agent/test_agent_sandbox.py)."""
    from tests.agent.test_agent_sandbox import box_here
    env = rio_env(tmp_path)
    boxed = box_here().usable
    env["RIO_AGENT_SANDBOX"] = "required" if boxed else "off"
    code, data, err = faults(tmp_path, "--runs", "1", *scenario_args(["acp_helpers"]), env=env)
    assert code == 0 and data is not None, (err, data and data.get("faults"))
    assert data["totals"]["orphans"] == 0 and data["shutdown_orphans"] == 0
    assert [f["note"] for f in data["faults"]] == [""]


def test_the_acp_family_silence_and_a_stderr_flood(tmp_path: Path) -> None:
    data = _acp_family(tmp_path, ["acp_silent", "acp_stderr"])
    assert [f["fault"] for f in data["faults"]] == ["agent goes silent", "stderr flood 4 MB"]


def test_the_acp_family_output_flood(tmp_path: Path) -> None:
    """100 MiB streamed in one turn: cut at the bound, the core untouched (ADR-0041)."""
    data = _acp_family(tmp_path, ["acp_flood"])
    assert [f["fault"] for f in data["faults"]] == ["agent streams 100 MiB"]


def test_a_broken_invariant_fails_the_run(tmp_path: Path) -> None:
    code, data, err = faults(tmp_path, "--runs", "1", "--scenario", "bus", hook="lose_edit")
    assert code == 1, err
    assert data is not None and data["ok"] is False
    assert data["totals"]["lost"] >= 1
    assert "scratch instance's files are in" in err   # kept for inspection


def test_an_orphan_fails_the_run(tmp_path: Path) -> None:
    code, data, err = faults(tmp_path, "--runs", "1", "--scenario", "save", hook="orphan")
    assert code == 1, err
    assert data is not None and data["ok"] is False
    assert data["totals"]["orphans"] == 2          # seen after each of the two faults
    assert data["totals"]["lost"] == data["totals"]["corrupt"] == 0
    assert data["shutdown_orphans"] == 0           # the hook's process is ended by the harness


def test_against_a_running_instance(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "mine.txt").write_text("the user's file\n")
    srv = RioServer(root, tmp_path, extra_args=["--fault-injection"]).start()
    try:
        code, data, err = faults(tmp_path, "--instance", srv.name, "--runs", "1",
                                 "--scenario", "kill", "--scenario", "supervisor",
                                 "--scenario", "save", env=srv.env)
        assert code == 0 and data is not None, err
        skipped = {s["scenario"]: s["skipped"] for s in data["scenarios"]}
        assert skipped["supervisor"] and not skipped["kill"] and not skipped["save"]
        assert data["totals"]["faults"] == 4 + 2   # the core and 3 fake agents; two saves
        # left as found: the user's file, no scratch file, no fake agent running
        assert sorted(p.name for p in root.iterdir()) == ["mine.txt"]
        running = [p["name"] for p in srv.call("system.status")["processes"]
                   if p["state"] == "running"]
        assert running == ["core"]
        assert srv.call("buffer.list") == []
    finally:
        srv.stop()


def test_usage_errors(tmp_path: Path) -> None:
    code, _, err = faults(tmp_path, "--scenario", "meteor")
    assert code == 3 and "meteor" in err
    code, _, err = faults(tmp_path, "--instance", "nobody-here")
    assert code == 2 and "nobody-here" in err


# --- against a running instance: its restart budget, a table always, a clean project (issue 9) --

def tight_budget_server(tmp_path: Path) -> RioServer:
    """An instance whose processes may restart twice in 20 s: three kills of one process in a
    run (a few seconds apart) would make the supervisor give up on it."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "mine.txt").write_text("the user's file\n")
    env = rio_env(tmp_path)
    config = Path(env["RIO_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "supervisor.toml").write_text(
        "[defaults]\nmax_restarts = 2\nrestart_window_s = 20\nping_misses = 30\n")
    return RioServer(root, tmp_path, env=env, extra_args=["--fault-injection"]).start()


def left_as_found(srv: RioServer) -> None:
    assert sorted(p.name for p in srv.root.iterdir()) == ["mine.txt"]
    live = [p["name"] for p in srv.call("system.status")["processes"]
            if p["state"] in ("starting", "running", "restarting", "stopping")]
    assert live == ["core"]       # the fake agents' stop sequences are over, not under way


@pytest.mark.slow
@pytest.mark.timeout(420)       # the pacing waits are the point: about a minute of them
def test_kills_are_paced_inside_the_instances_restart_budget(tmp_path: Path) -> None:
    srv = tight_budget_server(tmp_path)
    try:
        env = dict(srv.env, TMPDIR=str(tmp_path))
        proc = subprocess.run([sys.executable, "-m", "rio.cli", "faults", "--seed", "7",
                               "--instance", srv.name, "--scenario", "kill", "--runs", "3"],
                              env=env, capture_output=True, text=True, timeout=400,
                              cwd=str(REPO))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out = proc.stdout
        assert "core: 2 restarts in 20 s, 1 faults per window" in out
        assert "pacing: waiting" in out and "all invariants held" in out
        core = next(p for p in srv.call("system.status")["processes"] if p["name"] == "core")
        assert core["state"] == "running" and core["restarts"] == 3
        left_as_found(srv)
    finally:
        srv.stop()


@pytest.mark.slow
def test_an_aborted_run_prints_its_table_and_cleans_up(tmp_path: Path, monkeypatch,
                                                       capsys) -> None:
    from actors.faults import harness as fault_harness
    from rio.faults.report import render_table
    from rio.protocol.errors import BusError
    srv = tight_budget_server(tmp_path)
    try:
        for key, value in srv.env.items():
            monkeypatch.setenv(key, value)

        def core_gave_up(self) -> None:
            raise BusError("no_route", "Nothing serves buffer.* ops right now.",
                           "Check `rio status`.")
        monkeypatch.setattr(fault_harness.Harness, "scenario_hang", core_gave_up)
        harness = fault_harness.Harness(fault_harness.Options(
            instance=srv.name, scenarios=("bus", "hang", "kill"), runs=1, seed=3))
        report = harness.run()
        assert report.aborted.startswith("bus.no_route") and not report.ok
        assert [s.scenario for s in report.summaries] == ["bus", "hang", "kill"]
        assert report.summaries[0].faults > 0 and "aborted" in report.summaries[2].skipped
        table = render_table(report)
        assert "bus" in table and "ABORTED: bus.no_route" in table
        left_as_found(srv)          # no scratch file, no fake agent left running
    finally:
        srv.stop()
