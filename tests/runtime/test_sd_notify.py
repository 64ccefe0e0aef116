"""sd_notify (issue 19): the messages, the sender, and a real `rio serve` talking to a fake
service manager — a unix datagram socket the test binds and passes as NOTIFY_SOCKET.
READY=1 only once the core answers buffer.list; WATCHDOG=1 every half WATCHDOG_USEC from the
monitor loop, and none while the supervisor is frozen (SIGSTOP); STATUS= on a restart;
STOPPING=1 then exit 0 on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from actors.runtime.sd_notify import Notifier
from rio.service import notify
from tests.support import RioServer, rio_env, wait_for

# --- the messages ----------------------------------------------------------------------------


def test_the_socket_address_a_path_or_an_abstract_name():
    assert notify.socket_address("/run/systemd/notify") == "/run/systemd/notify"
    assert notify.socket_address("@rio/notify") == "\0rio/notify"
    for unusable in (None, "", "@", "relative/path", "vsock:2:1234"):
        assert notify.socket_address(unusable) is None


def test_the_watchdog_interval_is_half_the_period_and_only_for_its_process():
    assert notify.watchdog_interval({"WATCHDOG_USEC": "30000000"}, 10) == 15.0
    assert notify.watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "10"},
                                    10) == 15.0
    assert notify.watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "11"},
                                    10) is None
    for bad in ({}, {"WATCHDOG_USEC": "0"}, {"WATCHDOG_USEC": "soon"},
                {"WATCHDOG_USEC": "1000", "WATCHDOG_PID": "x"}):
        assert notify.watchdog_interval(bad, 10) is None


def test_a_datagram_is_one_assignment_a_line_and_a_status_stays_one_line():
    assert notify.encode(notify.READY, notify.status("serving\n/p")) == \
        b"READY=1\nSTATUS=serving /p\n"
    long = notify.one_line("x" * 1000)
    assert len(long) == notify.STATUS_MAX and long.endswith("…")


@pytest.mark.parametrize("event, said", [
    ({"name": "core", "event": "exited", "last_exit": "killed by SIGKILL",
      "reason": "restart 1 of 5 in 60 s, after 0.1 s"}, "core exited (killed by SIGKILL)"),
    ({"name": "core", "event": "gave_up", "last_exit": "exit 1",
      "reason": "gave up after 5 restarts in 60 s"}, "core failed (exit 1); gave up after 5"),
    ({"name": "core", "event": "hung", "last_exit": "hung: 3 pings missed"},
     "core stopped answering"),
    ({"name": "core", "event": "ready", "restarts": 2}, "core is back after 2 restarts"),
    ({"name": "hub", "event": "restarted", "restarts": 1}, "hub's thread was started again"),
])
def test_process_events_worth_a_status(event, said):
    assert said in (notify.event_status(event) or "")


@pytest.mark.parametrize("event", [{"name": "core", "event": "started"},
                                   {"name": "core", "event": "ready", "restarts": 0},
                                   {"name": "agent:1", "event": "idle-stopped"}])
def test_ordinary_events_change_no_status(event):
    assert notify.event_status(event) is None


# --- the sender ------------------------------------------------------------------------------


def bound(address: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(0.05)
    return sock


def received(sock: socket.socket) -> list[bytes]:
    out = []
    while True:
        try:
            out.append(sock.recv(4096))
        except (socket.timeout, BlockingIOError):
            return out


@pytest.mark.timeout(30)
def test_the_notifier_sends_to_an_abstract_socket_and_takes_the_variables_away():
    name = f"@rio-test-{uuid.uuid4().hex}"
    sock = bound("\0" + name[1:])
    env = {"NOTIFY_SOCKET": name, "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": str(os.getpid()),
           "OTHER": "kept"}
    notifier = Notifier.from_environment(env)
    try:
        assert env == {"OTHER": "kept"}        # no child of the supervisor inherits them
        assert notifier.enabled and notifier.watchdog_s == 0.5
        notifier.ready("serving")
        notifier.ready("again")                # READY is said once
        notifier.watchdog(100.0)
        notifier.watchdog(100.2)               # not yet: half the period is 0.5 s
        notifier.watchdog(100.6)
        notifier.stopping()
        assert received(sock) == [b"READY=1\nSTATUS=serving\n", b"WATCHDOG=1\n",
                                  b"WATCHDOG=1\n", b"STOPPING=1\nSTATUS=stopping\n"]
    finally:
        notifier.close()
        sock.close()


@pytest.mark.timeout(30)
def test_without_a_manager_nothing_is_sent_and_a_gone_manager_is_no_error(tmp_path: Path):
    quiet = Notifier.from_environment({})
    assert not quiet.enabled and not quiet.send(notify.READY)
    path = tmp_path / "notify.sock"
    sock = bound(str(path))
    sock.close()
    path.unlink()                               # the manager went away
    gone = Notifier(str(path))
    assert gone.send(notify.READY) is False     # logged once, never raised
    gone.close()


# --- a real `rio serve` ------------------------------------------------------------------------


class Manager:
    """A fake service manager: the datagrams it received, with when."""

    def __init__(self, tmp_path: Path) -> None:
        path = tmp_path / "notify.sock"
        assert len(str(path)) < 100, path
        self.sock = bound(str(path))
        self.address = str(path)
        self.got: list[tuple[float, bytes]] = []

    def poll(self) -> list[bytes]:
        now = time.monotonic()
        new = received(self.sock)
        self.got += [(now, m) for m in new]
        return new

    def saw(self, text: bytes) -> bool:
        self.poll()
        return any(text in m for _, m in self.got)

    def close(self) -> None:
        self.sock.close()


def serve_env(tmp_path: Path, manager: Manager, **extra: str) -> dict[str, str]:
    env = rio_env(tmp_path)
    env.update({"NOTIFY_SOCKET": manager.address, **extra})
    return env


def status_now(env: dict[str, str], name: str) -> dict | None:
    from actors.bus.client import Endpoints, connect
    info = Path(env["RIO_RUNTIME_DIR"]) / name / "instance.json"
    if not info.exists():
        return None
    import json
    try:
        data = json.loads(info.read_text())
        conn = connect(Endpoints(data["requests"], data["events"]), name="t", timeout=2)
    except Exception:  # noqa: BLE001 -- not up yet
        return None
    try:
        return conn.call("system.status", timeout=2)
    except Exception:  # noqa: BLE001 -- not up yet
        return None
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_ready_comes_only_once_the_core_answers_buffer_list(tmp_path: Path):
    """The core is frozen (SIGSTOP) before it first answers: no READY=1 while it cannot
    serve; it is continued: READY=1 arrives, and buffer.list answers at once after it."""
    root = tmp_path / "proj"
    root.mkdir()
    manager = Manager(tmp_path)
    env = serve_env(tmp_path, manager)
    name = f"t{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen([sys.executable, "-m", "rio.cli", "serve", "--root", str(root),
                             "--instance", name], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)   # a few lines: RioServer.stop reads them
    srv = RioServer(root, tmp_path, name=name, env=env)
    srv.proc = proc              # stop() ends the tree and checks that nothing survived
    srv.known_pids.add(proc.pid)
    core_pid = None
    try:
        deadline = time.monotonic() + 30
        while core_pid is None and time.monotonic() < deadline:
            status = status_now(env, name)
            core = next((p for p in (status or {}).get("processes", ())
                         if p["name"] == "core" and p.get("pid")), None)
            if core is not None:
                core_pid = core["pid"]
                os.kill(core_pid, signal.SIGSTOP)
                srv.known_pids.add(core_pid)
                # The precondition: frozen before its first answer (it takes a few hundred
                # ms to start; its pid shows in the status the moment it is spawned).
                frozen = next(p for p in status_now(env, name)["processes"]
                              if p["name"] == "core")
                assert not frozen["ready"], "the core was frozen too late to test the order"
            time.sleep(0.005)
        assert core_pid is not None, "the core never started"
        time.sleep(1.5)            # a negative check: nothing may say ready in this window
        assert not manager.saw(b"READY=1"), manager.got
        os.kill(core_pid, signal.SIGCONT)
        assert wait_for(lambda: manager.saw(b"READY=1"), 20), manager.got
        srv.call("buffer.list", timeout=5)       # answered at once: no bus.no_route
        ready = next(m for _, m in manager.got if b"READY=1" in m)
        assert b"STATUS=serving " in ready and b"the core answering" in ready
    finally:
        if core_pid is not None:
            try:
                os.kill(core_pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        srv.stop()
        manager.close()


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_watchdog_pings_stop_while_frozen_status_on_a_restart_stopping_on_sigterm(
        tmp_path: Path):
    root = tmp_path / "proj"
    root.mkdir()
    manager = Manager(tmp_path)
    env = serve_env(tmp_path, manager, WATCHDOG_USEC="200000")   # a WATCHDOG=1 every 0.1 s
    srv = RioServer(root, tmp_path, env=env).start()
    supervisor = srv.proc.pid
    try:
        assert wait_for(lambda: manager.saw(b"READY=1"), 20)
        manager.poll()
        start = len(manager.got)
        time.sleep(1.0)            # counting what a second brings
        manager.poll()
        beats = [m for _, m in manager.got[start:] if m == b"WATCHDOG=1\n"]
        assert len(beats) >= 5, manager.got[start:]

        os.kill(supervisor, signal.SIGSTOP)
        try:
            time.sleep(0.2)        # what was sent before the stop landed by now
            manager.poll()
            frozen_from = len(manager.got)
            time.sleep(1.0)        # a negative check: a frozen supervisor says nothing
            manager.poll()
            assert manager.got[frozen_from:] == []
        finally:
            os.kill(supervisor, signal.SIGCONT)
        assert wait_for(lambda: b"WATCHDOG=1\n" in manager.poll(), 5)   # beating again

        core = srv.pids()["core"]
        os.kill(core, signal.SIGKILL)
        assert wait_for(lambda: manager.saw(b"STATUS=core exited (killed by SIGKILL)"), 20), \
            manager.got
        assert wait_for(lambda: manager.saw(b"STATUS=core is back after 1 restart"), 20), \
            manager.got
        srv.pids()
    finally:
        code = srv.stop()
        manager.poll()
        manager.close()
    assert code == 0
    stopping = [m for _, m in manager.got if m.startswith(b"STOPPING=1\n")]
    assert stopping and b"STATUS=stopping " in stopping[0]
    assert not [m for _, m in manager.got if b"READY=1" in m][1:]      # READY once only


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_no_child_inherits_the_managers_socket(tmp_path: Path):
    root = tmp_path / "proj"
    root.mkdir()
    manager = Manager(tmp_path)
    srv = RioServer(root, tmp_path, env=serve_env(tmp_path, manager,
                                                  WATCHDOG_USEC="10000000")).start()
    try:
        import psutil
        core = psutil.Process(srv.pids()["core"])
        environ = core.environ()
        assert not {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} & set(environ)
    finally:
        srv.stop()
        manager.close()
