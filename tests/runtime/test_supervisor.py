"""The supervisor with real processes: independent restarts, give-up, hung detection, and the
stop sequence against fake agents (actors/faults/injection.py) — zero survivors every time."""

from __future__ import annotations

import os
import signal
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from rio.protocol.errors import RioError
from tests.support import RioServer, rio_env, wait_for, wait_gone

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("first line\n")
    return root


def user_config(tmp_path: Path, text: str) -> dict[str, str]:
    """An environment whose config folder holds ``text`` as the user's supervisor.toml."""
    env = rio_env(tmp_path)
    folder = Path(env["RIO_CONFIG_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "supervisor.toml").write_text(textwrap.dedent(text))
    return env


@pytest.fixture
def server(project: Path, tmp_path: Path):
    srv = RioServer(project, tmp_path, extra_args=["--fault-injection"]).start()
    yield srv
    srv.stop()


def process(srv: RioServer, name: str) -> dict:
    return next((p for p in srv.call("system.status")["processes"] if p["name"] == name), {})


def spawn_fake(srv: RioServer, key: str, helpers: int = 0) -> int:
    got = srv.call("system.spawn", {"kind": "fake", "key": key}, timeout=30)
    assert got["ready"] and got["name"] == f"fake:{key}", got   # answered once it is ready
    pid = got["pid"]
    srv.known_pids.add(pid)
    if helpers:
        assert wait_for(lambda: len(helper_pids(srv)) >= helpers, 20)
    return pid


def helper_pids(srv: RioServer) -> set[int]:
    """Live helper processes anywhere in the tree (escapees reparent to the supervisor, which
    is a subreaper, so they are in its tree)."""
    found = set()
    for p in srv.tree():
        try:
            cmd = p.cmdline()
            if "actors.faults.injection" in cmd and "helper" in cmd and p.status() != psutil.STATUS_ZOMBIE:
                found.add(p.pid)
        except psutil.Error:
            pass
    return found


def edit(srv: RioServer, conn, bid: str, text: str) -> None:
    conn.call("buffer.replace", {"buffer": bid, "start": 0, "end": 0, "text": text}, timeout=10)


# ---------------------------------------------------------------------------------- restarts

def test_the_core_restarts_alone_and_keeps_its_buffers(server: RioServer) -> None:
    fake = spawn_fake(server, "polite-polite-1", helpers=1)
    conn = server.connect()
    try:
        bid = conn.call("buffer.open", {"path": "notes.txt"})["buffer"]
        edit(server, conn, bid, "kept ")
    finally:
        conn.close()
    core = server.pids()["core"]
    os.kill(core, signal.SIGKILL)
    assert wait_for(lambda: process(server, "core").get("pid") not in (None, core)
                    and process(server, "core").get("ready"), 20)
    status = process(server, "core")
    assert status["restarts"] == 1 and "SIGKILL" in status["last_exit"]
    assert server.call("buffer.text", {"buffer": bid})["text"] == "kept first line\n"
    assert process(server, "fake:polite-polite-1")["pid"] == fake  # untouched
    assert process(server, "fake:polite-polite-1")["restarts"] == 0


def test_an_agent_process_dies_and_the_core_never_notices(server: RioServer) -> None:
    core = server.pids()["core"]
    fake = spawn_fake(server, "polite-forking-1", helpers=1)
    escaped = helper_pids(server)
    events: list[dict] = []
    watcher = server.connect("watch", subscribe=("system.process",))
    watcher.subscribe("system.process", lambda e: events.append(dict(e.data)))
    conn = server.connect()
    typed: list[str] = []
    stop = threading.Event()
    failures: list[BaseException] = []
    bid = conn.call("buffer.open", {"path": "notes.txt"})["buffer"]

    def typist() -> None:  # its own connection: sockets belong to one thread
        c = server.connect("typist")
        try:
            while not stop.is_set():
                word = f"w{len(typed)} "
                edit(server, c, bid, word)
                typed.append(word)
                time.sleep(0.01)   # pacing: a typist, not a flood (not a wait for anything)
        except BaseException as exc:  # noqa: BLE001 -- reported below
            failures.append(exc)
        finally:
            c.close()

    thread = threading.Thread(target=typist)
    thread.start()
    try:
        assert wait_for(lambda: len(typed) >= 5, 20)   # typing is under way
        os.kill(fake, signal.SIGKILL)
        assert wait_for(lambda: process(server, "fake:polite-forking-1").get("pid")
                        not in (None, fake)
                        and process(server, "fake:polite-forking-1").get("ready"), 20)
        assert not wait_gone([psutil.Process(p) for p in escaped if psutil.pid_exists(p)], 5), \
            "the escaped helper of the killed agent survived"
        after_restart = len(typed)
        assert wait_for(lambda: len(typed) >= after_restart + 5, 20)   # and goes on after it
    finally:
        stop.set()
        thread.join(20)
    assert not failures, failures
    assert len(typed) > 10
    text = conn.call("buffer.text", {"buffer": bid})["text"]
    assert text == "".join(reversed(typed)) + "first line\n"   # every edit, during and after
    assert server.pids()["core"] == core
    assert process(server, "core")["restarts"] == 0
    wait_for(lambda: any(e["event"] == "ready" and e["pid"] != fake for e in events), 5, 0.05,
             pause=watcher.wait)
    mine = [e for e in events if e["name"] == "fake:polite-forking-1"]
    exited = next(e for e in mine if e["event"] == "exited")
    assert "SIGKILL" in exited["last_exit"] and exited["pid"] == fake
    assert any(e["event"] == "started" and e["restarts"] == 1 for e in mine)
    watcher.close()
    conn.close()


def test_a_process_that_keeps_dying_is_given_up_and_says_so(project: Path,
                                                            tmp_path: Path) -> None:
    env = user_config(tmp_path, """
        [defaults]
        max_restarts = 2
        backoff_initial_ms = 10
        backoff_max_ms = 20
    """)
    srv = RioServer(project, tmp_path, env=env).start()
    try:
        watcher = srv.connect("watch", subscribe=("system.process",))
        events: list[dict] = []
        watcher.subscribe("system.process", lambda e: events.append(dict(e.data)))
        # The spawn is answered when the process is ready, or — this one exits 3 at once —
        # with the classified failure, not with a pid that is already dead.
        with pytest.raises(RioError) as failed:
            srv.call("system.spawn", {"kind": "fake", "key": "crash"}, timeout=30)
        assert failed.value.kind == "bus.spawn_failed", failed.value
        assert "exit 3" in failed.value.message and "fake:crash" in failed.value.message
        assert wait_for(lambda: process(srv, "fake:crash").get("state") == "failed", 30)
        status = process(srv, "fake:crash")
        assert status["restarts"] == 2 and status["last_exit"] == "exit 3"
        wait_for(lambda: any(e["event"] == "gave_up" for e in events), 5, 0.05,
                 pause=watcher.wait)
        gave_up = [e for e in events if e["event"] == "gave_up"]
        assert gave_up and gave_up[0]["name"] == "fake:crash"
        assert gave_up[0]["reason"].startswith("gave up after 2 restarts")
        assert process(srv, "core")["state"] == "running"  # the rest goes on
        watcher.close()
    finally:
        srv.stop()


def test_a_hung_core_is_killed_and_restarted_with_its_buffers(project: Path,
                                                              tmp_path: Path) -> None:
    env = user_config(tmp_path, """
        [defaults]
        ping_interval_ms = 200
        ping_misses = 3
    """)
    srv = RioServer(project, tmp_path, env=env).start()
    try:
        conn = srv.connect()
        bid = conn.call("buffer.open", {"path": "notes.txt"})["buffer"]
        edit(srv, conn, bid, "unsaved ")
        conn.close()
        core = srv.pids()["core"]
        os.kill(core, signal.SIGSTOP)
        assert wait_for(lambda: process(srv, "core").get("pid") not in (None, core)
                        and process(srv, "core").get("ready"), 20)
        status = process(srv, "core")
        assert status["last_exit"] == "hung: 3 pings missed" and status["restarts"] == 1
        assert not psutil.pid_exists(core) or \
            psutil.Process(core).status() == psutil.STATUS_ZOMBIE
        assert srv.call("buffer.text", {"buffer": bid})["text"] == "unsaved first line\n"
    finally:
        srv.stop()


def test_restart_on_request_runs_the_stop_sequence(server: RioServer) -> None:
    fake = spawn_fake(server, "stubborn-stubborn-2", helpers=2)
    helpers = helper_pids(server)
    reply = server.call("system.restart", {"process": "fake:stubborn-stubborn-2"})
    assert reply["state"] == "stopping"
    assert wait_for(lambda: process(server, "fake:stubborn-stubborn-2").get("pid")
                    not in (None, fake), 20)
    status = process(server, "fake:stubborn-stubborn-2")
    # it ignored stdin close and TERM: only the KILL step ended it
    assert status["last_exit"] == "restarted on request (killed)"
    assert not wait_gone([psutil.Process(p) for p in helpers if psutil.pid_exists(p)], 5)
    server.call("system.restart", {"process": "fake:stubborn-stubborn-2", "again": False})
    assert wait_for(lambda: process(server, "fake:stubborn-stubborn-2")["state"] == "stopped",
                    20)
    polite = spawn_fake(server, "polite-polite-1", helpers=1)
    server.call("system.restart", {"process": "fake:polite-polite-1"})
    assert wait_for(lambda: process(server, "fake:polite-polite-1").get("pid")
                    not in (None, polite), 20)
    # a polite one ends when its stdin closes: no signal was needed
    assert process(server, "fake:polite-polite-1")["last_exit"] == \
        "restarted on request (stdin_closed)"
    with pytest.raises(Exception) as info:
        server.call("system.restart", {"process": "nobody"})
    assert info.value.kind == "config.invalid"


# ------------------------------------------------------------------------- the stop sequence

AGENTS = ["polite-polite-2", "stubborn-stubborn-2", "stubborn-forking-2", "polite-forking-1"]


def start_agents(srv: RioServer) -> list[psutil.Process]:
    for key in AGENTS:
        spawn_fake(srv, key)
    assert wait_for(lambda: len(helper_pids(srv)) >= 7, 20), helper_pids(srv)
    everything = srv.tree()
    assert len(everything) >= 1 + 1 + len(AGENTS) + 7
    srv.known_pids.update(p.pid for p in everything)
    return everything


def test_rio_stop_leaves_no_survivor(server: RioServer) -> None:
    everything = start_agents(server)
    res = server.cli("stop", "--instance", server.name)
    assert res.returncode == 0, res.stderr
    survivors = wait_gone(everything, 15)
    assert not survivors, [(p.pid, p.cmdline()) for p in survivors]


def test_a_sigkilled_supervisor_leaves_no_survivor(server: RioServer) -> None:
    everything = start_agents(server)
    server.kill9()
    survivors = wait_gone(everything[1:], 15)
    assert not survivors, [(p.pid, p.cmdline()) for p in survivors]


def test_a_host_whose_actor_never_stops_still_exits_after_sigterm(server: RioServer,
                                                                   project: Path) -> None:
    """SIGTERM (the stop sequence, or PDEATHSIG when the supervisor died) ends a host within
    its exit deadline even when an actor is stuck in on_stop: the interpreter would otherwise
    wait for that actor's thread for ever. Started outside the supervisor, so that neither a
    lifeline nor the supervisor's KILL step can end it instead."""
    import subprocess
    import sys

    from actors.runtime.host import EXIT_DEADLINE_S

    info = server.info()
    host = subprocess.Popen(
        [sys.executable, "-m", "actors.runtime.host", "--process", "fake:wedged-polite-1",
         "--actors", "fake_agent", "--root", str(project), "--requests", info["requests"],
         "--events", info["events"], "--instance", server.name],
        env=server.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert host.stdout is not None
        assert host.stdout.readline().startswith(b"ready"), host.stderr.read()
        assert wait_for(lambda: len(helper_pids(server)) >= 1 or bool(
            psutil.Process(host.pid).children()), 20)
        helpers = psutil.Process(host.pid).children()
        host.send_signal(signal.SIGTERM)
        code = host.wait(EXIT_DEADLINE_S + 10)
        assert code == 1, host.stderr.read()
        assert not wait_gone(helpers, 10)       # its helper did not outlive it
    finally:
        if host.poll() is None:
            os.killpg(host.pid, signal.SIGKILL)
            host.wait(10)


def test_a_failing_system_op_is_an_error_reply_not_a_dead_hub(tmp_path: Path) -> None:
    from actors.runtime.supervisor import Supervisor
    from rio.config.supervisor_toml import load_config
    from rio.protocol.frames import Request

    sup = Supervisor(root=tmp_path, instance="hub-guard", desktop=False, config=load_config())

    def broken(**_: object) -> dict:
        raise RuntimeError("dictionary changed size during iteration")

    sup.status = broken  # type: ignore[method-assign]
    reply = sup.handle_system(b"client", Request("r1", "system.status", {}))
    assert reply is not None and not reply.ok
    assert reply.error["kind"] == "internal.unexpected"
    assert "dictionary changed size" in reply.error["message"]
    ok = sup.handle_system(b"client", Request("r2", "system.ping", {}))
    assert ok is not None and ok.ok


@pytest.mark.timeout(90)
@pytest.mark.slow
def test_a_dead_hub_thread_is_started_again_and_the_instance_stays_usable(tmp_path: Path) -> None:
    """Should the hub's thread die despite its per-frame guards, the supervisor starts it again:
    the instance is never left deaf (`rio stop` unanswered, `rio serve` refused as existing)."""
    root = tmp_path / "proj"
    root.mkdir()
    server = RioServer(root, tmp_path, extra_args=["--fault-injection"]).start()
    try:
        core = server.pids()["core"]
        # An agent spawned (system.spawn arrives on the hub's thread) before the hub dies:
        # PDEATHSIG follows the forking thread, so it must not have been forked there.
        agent = spawn_fake(server, "polite-polite-0")
        assert server.call("system.fault", {"fault": "hub_crash"})["armed"] is True
        # The next frame kills the hub (the agent's events may come first): unanswered.
        _status_or_none(server)
        assert wait_for(lambda: (_status_or_none(server) or {}).get("hub_restarts") == 1, 20)
        status = server.call("system.status")
        assert status["hub_restarts"] == 1
        # The core was not restarted: it reconnected to the same endpoints on its own.
        assert {p["name"]: p["pid"] for p in status["processes"]}["core"] == core
        time.sleep(0.5)     # a SIGTERM'd agent would have exited by now
        after = process(server, "fake:polite-polite-0")
        assert (after["pid"], after["restarts"], after["state"]) == (agent, 0, "running"), after
        assert wait_for(lambda: _buffer_list_or_none(server) is not None, 20)
        done = server.cli("stop", "--instance", server.name)
        assert done.returncode == 0, done.stderr
        assert server.proc is not None and server.proc.wait(30) == 0
    finally:
        server.stop()


def _status_or_none(server: RioServer) -> dict | None:
    try:
        return server.call("system.status", timeout=2)
    except RioError:
        return None


def _buffer_list_or_none(server: RioServer) -> list | None:
    try:
        return server.call("buffer.list", timeout=2)
    except RioError:
        return None


@pytest.mark.timeout(90)
@pytest.mark.slow
def test_host_stop_ends_a_process_cleanly_not_as_a_crash(tmp_path: Path) -> None:
    """A host asked to stop exits 0: its stdin watchdog (a daemon thread blocked on stdin) once
    made the interpreter's shutdown abort (SIGABRT), which the supervisor took for a crash."""
    root = tmp_path / "proj"
    root.mkdir()
    server = RioServer(root, tmp_path).start()
    try:
        got = server.call("system.spawn", {"kind": "agent", "key": "calm"}, timeout=30)

        def agent() -> dict:
            return {p["name"]: p for p in server.call("system.status")["processes"]}["agent:calm"]

        # Answered once the process is ready: a session.* request right after it is routed
        # (it used to be answered at once, and such a request got bus.no_route).
        assert got["ready"] and agent()["ready"], (got, agent())
        assert server.call("session.status", {"conversation": "calm"})["turn"] is None
        # A second spawn of a ready process is answered at once, with the same process.
        assert server.call("system.spawn", {"kind": "agent", "key": "calm"})["pid"] == got["pid"]
        pid = got["pid"]
        assert server.call("host.stop", {"process": "agent:calm"})["stopping"] == "agent:calm"
        assert wait_for(lambda: agent()["state"] == "stopped", 30), agent()
        final = agent()
        assert final["last_exit"] == "exit 0" and final["restarts"] == 0, final
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    finally:
        server.stop()


def test_a_hub_restart_that_fails_to_bind_is_tried_again_not_fatal() -> None:
    """ZeroMQ unbinds a dead socket in its I/O thread, after the hub's thread ended, so the
    first bind of the restarted hub can fail (EADDRINUSE under load). That used to escape the
    supervisor's loop and end the whole instance (its instance.json gone)."""
    from types import SimpleNamespace

    import zmq

    from actors.runtime.supervisor import Supervisor

    class FlakyHub:
        def __init__(self) -> None:
            self.started, self.attempts, self.events = False, 0, []

        def alive(self) -> bool:
            return self.started

        def restart(self) -> None:
            self.attempts += 1
            if self.attempts == 1:
                raise zmq.ZMQError(zmq.EADDRINUSE)
            self.started = True

        def publish(self, topic: str, data: dict) -> None:
            self.events.append((topic, data))

    hub = FlakyHub()
    sup = SimpleNamespace(hub=hub, stop_requested=threading.Event(), hub_restarts=0)
    Supervisor._check_hub(sup)          # the first try fails: no exception, nothing counted
    assert hub.attempts == 1 and sup.hub_restarts == 0 and hub.events == []
    Supervisor._check_hub(sup)          # the next tick succeeds
    assert hub.attempts == 2 and sup.hub_restarts == 1
    assert hub.events == [("system.process", {"name": "hub", "event": "restarted",
                                              "restarts": 1})]
    Supervisor._check_hub(sup)          # alive: left alone
    assert hub.attempts == 2
