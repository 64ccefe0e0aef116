"""The supervisor's spare host (actors/runtime/spares.py, ADR-0026 d) with real processes: a core
restart is answered by the spare's pid, the spare is replaced after it is taken or when it
dies, and it never outlives the instance or the supervisor. Plus the pure parts: the
``spare`` key of supervisor.toml and the assignment line a spare reads."""

from __future__ import annotations

import json
import os
import signal
import textwrap
from pathlib import Path

import psutil
import pytest

from actors.runtime.host import read_assignment
from rio.config.supervisor_toml import load_config
from rio.protocol.errors import ConfigError
from tests.support import RioServer, rio_env, wait_for, wait_gone


@pytest.fixture
def server(tmp_path: Path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("first line\n")
    srv = RioServer(root, tmp_path).start()
    yield srv
    srv.stop()


def status(srv: RioServer) -> dict:
    return srv.call("system.status")


def core(srv: RioServer) -> dict:
    return next(p for p in status(srv)["processes"] if p["name"] == "core")


def spare_pid(srv: RioServer) -> int:
    """The core's spare, once the instance has started it (after the core is ready)."""
    assert wait_for(lambda: status(srv)["spares"], 30), status(srv)
    [spare] = status(srv)["spares"]
    assert spare["for"] == "core"
    srv.known_pids.add(spare["pid"])
    return int(spare["pid"])


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_core_restart_is_answered_by_the_spare(server: RioServer) -> None:
    conn = server.connect()
    try:
        bid = conn.call("buffer.open", {"path": "notes.txt"})["buffer"]
        conn.call("buffer.replace", {"buffer": bid, "start": 0, "end": 0, "text": "kept "})
    finally:
        conn.close()
    spare = spare_pid(server)
    old = server.pids()["core"]
    proc = psutil.Process(spare)
    assert "--spare" in proc.cmdline() and proc.ppid() == server.proc.pid
    assert os.getpgid(spare) == spare          # a process group of its own, like every child

    os.kill(old, signal.SIGKILL)
    assert wait_for(lambda: core(server)["pid"] == spare and core(server)["ready"], 30), \
        status(server)
    # The spare answers as the core: its actors run, the journal brought the edit back.
    assert server.call("host.ping", {"process": "core"})["pid"] == spare
    assert server.call("buffer.text", {"buffer": bid})["text"] == "kept first line\n"
    assert core(server)["restarts"] == 1 and "SIGKILL" in core(server)["last_exit"]
    # Its stderr went to the core's log at assignment (the spare had its own before).
    log = Path(core(server)["log"])
    assert os.path.samefile(f"/proc/{spare}/fd/2", log)
    # A new spare is started behind it.
    assert wait_for(lambda: [s["pid"] for s in status(server)["spares"]] not in ([], [spare]),
                    30), status(server)
    server.known_pids.add(status(server)["spares"][0]["pid"])


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_crashed_spare_is_replaced_and_the_core_is_untouched(server: RioServer) -> None:
    spare = spare_pid(server)
    old_core = server.pids()["core"]
    os.kill(spare, signal.SIGKILL)
    assert wait_for(lambda: [s["pid"] for s in status(server)["spares"]] not in ([], [spare]),
                    30), status(server)
    new = status(server)["spares"][0]["pid"]
    server.known_pids.add(new)
    assert alive(new) and not alive(spare)
    assert core(server)["pid"] == old_core and core(server)["restarts"] == 0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_stopped_spare_is_not_given_the_core(server: RioServer) -> None:
    """A SIGSTOPped spare would take the assignment and never answer: the core sat 15 s as
    "never answered a ping" before a second restart. It is passed over (and swept) instead."""
    spare = spare_pid(server)
    os.kill(spare, signal.SIGSTOP)
    assert wait_for(lambda: psutil.Process(spare).status() == psutil.STATUS_STOPPED, 10)
    old = server.pids()["core"]
    os.kill(old, signal.SIGKILL)
    assert wait_for(lambda: core(server)["pid"] not in (old, spare) and core(server)["ready"]
                    or core(server)["restarts"] > 1, 60), status(server)
    server.known_pids.add(core(server)["pid"])
    assert core(server)["restarts"] == 1 and "SIGKILL" in core(server)["last_exit"]
    assert not alive(spare)
    assert wait_for(lambda: [s["pid"] for s in status(server)["spares"]] not in ([], [spare]),
                    30), status(server)
    server.known_pids.add(status(server)["spares"][0]["pid"])


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_spare_is_stopped_with_the_instance(server: RioServer) -> None:
    spare = psutil.Process(spare_pid(server))
    res = server.cli("stop", "--instance", server.name)
    assert res.returncode == 0, res.stderr
    assert not wait_gone([spare], 15)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_no_spare_outlives_a_killed_supervisor(server: RioServer) -> None:
    spare = psutil.Process(spare_pid(server))
    server.kill9()
    assert not wait_gone([spare], 15), spare.cmdline()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_an_on_demand_process_takes_the_spare_of_its_kind(tmp_path: Path) -> None:
    """Agent sessions use the same mechanism when their kind says spare = true (the fault
    harness's fake agent stands in for one)."""
    root = tmp_path / "proj"
    root.mkdir()
    env = rio_env(tmp_path)
    Path(env["RIO_CONFIG_DIR"]).mkdir(parents=True)
    (Path(env["RIO_CONFIG_DIR"]) / "supervisor.toml").write_text(
        "[process.core]\nspare = false\n\n[process.fake]\nspare = true\n")
    srv = RioServer(root, tmp_path, extra_args=["--fault-injection"], env=env).start()
    try:
        assert wait_for(lambda: status(srv)["spares"], 30), status(srv)
        [spare] = status(srv)["spares"]
        assert spare["for"] == "fake"
        srv.known_pids.add(spare["pid"])
        srv.call("system.spawn", {"kind": "fake", "key": "polite-polite-1"}, timeout=30)
        name = "fake:polite-polite-1"

        def fake() -> dict:
            return next((p for p in status(srv)["processes"] if p["name"] == name), {})
        assert wait_for(lambda: fake().get("ready"), 30), status(srv)
        assert fake()["pid"] == spare["pid"]
        assert wait_for(lambda: [s["pid"] for s in status(srv)["spares"]]
                        not in ([], [spare["pid"]]), 30), status(srv)
        srv.known_pids.add(status(srv)["spares"][0]["pid"])
    finally:
        srv.stop()


# ------------------------------------------------------------------------------ pure parts

def test_the_core_has_a_spare_as_shipped_and_a_user_copy_can_turn_it_off(tmp_path: Path) -> None:
    shipped = load_config()
    assert shipped.process("core").spare and not shipped.process("agent").spare
    user = tmp_path / "supervisor.toml"
    user.write_text("[process.core]\nspare = false\n")
    assert not load_config(None, user).process("core").spare
    user.write_text("[defaults]\nspare = true\n")
    assert load_config(None, user).process("agent").spare


def test_a_spare_that_is_not_a_boolean_is_refused_with_its_line(tmp_path: Path) -> None:
    user = tmp_path / "supervisor.toml"
    user.write_text(textwrap.dedent("""\
        [process.core]
        restart = "always"
        spare = "yes"
        """))
    with pytest.raises(ConfigError) as err:
        load_config(None, user)
    assert err.value.kind == "config.invalid" and "line 3" in err.value.message
    assert "spare must be true or false" in err.value.message


def test_a_spare_reads_its_one_line_and_leaves_the_rest_of_stdin() -> None:
    read, write = os.pipe()
    try:
        line = json.dumps({"argv": ["--process", "core"], "log": "/x"}).encode()
        os.write(write, line + b"\nMORE")
        assert read_assignment(read) == {"argv": ["--process", "core"], "log": "/x"}
        assert os.read(read, 10) == b"MORE"    # the stdin watchdog's, not the spare's
        os.close(write)
        write = -1
        assert read_assignment(read) is None   # end of file: the supervisor stopped it
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)


def test_an_assignment_that_is_not_an_object_with_argv_is_refused() -> None:
    read, write = os.pipe()
    try:
        os.write(write, b'["--process", "core"]\n')
        with pytest.raises(ValueError):
            read_assignment(read)
    finally:
        os.close(read)
        os.close(write)

