"""A remote key's limits (ADR-0021 "Replies a client does not read"): a byte budget for the
replies its clients have not read, requests in flight, connections open; past them the client is
told (``bus.backpressure``, ``bus.connection_limit``) and nothing else slows down."""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest
import zmq

import actors.bus.remote as remote_module
import rio.config.remote_settings as remote_config
from actors.bus import curve_keys
from actors.bus.client import Endpoints, connect
from actors.bus.remote import RemoteListener
from actors.bus.service import BusThread
from rio.config.remote_settings import MIB, RemoteLimits, remote_limits
from rio.protocol.errors import BusError, ConfigError
from rio.protocol.frames import Request, decode, encode
from tests.bus.test_remote import free_port_pair
from tests.support import REPO, RioServer, rio_env, wait_for

pytestmark = pytest.mark.timeout(90)

REPLY = 1024 * 1024                     # the in-process service's big reply
DEPLOY = REPO / "docs" / "deploy.md"


# --- an instance in this process: a hub, a service, the bridge with small limits --------------

@pytest.fixture
def bench(tmp_path, endpoints, hub):
    held_back = []
    served = Counter()

    def handle(ctx):
        served[ctx.op] += 1
        if ctx.op == "fs.walk":          # answered only at the end: a request in flight
            held_back.append(ctx)
        elif ctx.args.get("path") == "big":
            ctx.reply({"text": "x" * REPLY})
        else:
            ctx.reply({"ok": True})

    bus = BusThread(endpoints, name="svc", handlers={"fs": handle, "buffer": handle}).start()
    base = tmp_path / "curve"
    server_keys, _ = curve_keys.create_server_keys(base)
    keys = {name: curve_keys.create_client_keys(name, base)[0] for name in ("a", "b")}
    curve_keys.set_role("a", "observer", base)
    listeners = []

    def listen(**limits):
        port = free_port_pair()
        remote = RemoteListener(f"tcp://127.0.0.1:{port}", endpoints.requests,
                                endpoints.events, server_keys, base / curve_keys.AUTHORIZED,
                                limits=RemoteLimits(**limits)).start()
        listeners.append(remote)
        return remote

    sockets = []

    def raw(remote, name):
        """A CURVE DEALER that reads nothing unless asked: its pipe holds one message and its
        kernel buffer is small, so what it does not read stays on the server's side."""
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.RCVHWM, 1)
        sock.setsockopt(zmq.RCVBUF, 4096)
        sock.curve_serverkey = server_keys.public
        sock.curve_publickey = keys[name].public
        sock.curve_secretkey = keys[name].secret
        sock.connect(remote.requests_endpoint)
        sockets.append(sock)
        return sock

    conns = []

    def client(remote, name):
        conn = connect(Endpoints(remote.requests_endpoint, remote.events_endpoint,
                                 server_keys.public, keys[name].public, keys[name].secret),
                       name=f"far-{name}", timeout=10)
        conns.append(conn)
        return conn

    yield listen, raw, client, served, held_back
    for ctx in held_back:
        ctx.reply({"late": True})
    for conn in conns:
        conn.close()
    for sock in sockets:
        sock.close()
    for remote in listeners:
        remote.stop()
    bus.stop()


def read_all(sock, expected: int, timeout_ms=5000) -> list:
    """Read ``expected`` answers (fewer if one is ``timeout_ms`` late)."""
    out = []
    while len(out) < expected and sock.poll(timeout_ms):
        out.append(decode(sock.recv()))
    return out


def held(remote) -> int:
    """The bytes the bridge holds for every key (read from this thread: retried if the bridge
    changes its tables meanwhile)."""
    for _ in range(100):
        try:
            return sum(remote.held_bytes().values())
        except RuntimeError:
            time.sleep(0.01)
    raise AssertionError("the bridge's tables kept changing")


def test_replies_a_client_does_not_read_stay_within_its_keys_budget(bench):
    listen, raw, client, served, _ = bench
    budget = 4 * MIB
    remote = listen(reply_budget_bytes=budget)
    stalled = raw(remote, "a")
    for i in range(60):
        stalled.send(encode(Request(f"r{i}", "fs.read", {"path": "big"})))
    other = client(remote, "b")
    for _ in range(20):                          # another key is served meanwhile
        assert other.call("fs.read", {"path": "small"}, timeout=10) == {"ok": True}
    # Everything the service was sent has come back through the bridge (answered or dropped).
    assert wait_for(lambda: remote.stats["replies"] == remote.stats["requests"]
                    and served["fs.read"] == remote.stats["requests"], 20)
    assert remote.stats["backpressure"] > 0
    assert 0 < held(remote) <= budget
    answers = read_all(stalled, 60)
    assert sorted(a.id for a in answers) == sorted(f"r{i}" for i in range(60))  # all told
    kinds = Counter("ok" if a.ok else a.error["kind"] for a in answers)
    assert set(kinds) == {"ok", "bus.backpressure"} and kinds["ok"] >= 2
    refused = next(a for a in answers if not a.ok)
    assert "reply_budget_mb" in refused.error["next"]
    # Read down: the key is served again, and nothing is held for it.
    stalled.send(encode(Request("again", "fs.read", {"path": "small"})))
    assert stalled.poll(5000) and decode(stalled.recv()).ok
    assert wait_for(lambda: held(remote) == 0, 5)


def test_a_keys_requests_past_its_room_in_flight_wait_their_turn(bench, monkeypatch):
    listen, raw, client, served, held_back = bench
    monkeypatch.setattr(remote_module, "MAX_WAITING_REQUESTS", 2)
    remote = listen(max_requests_in_flight=3)
    sock = raw(remote, "a")
    for i in range(6):                   # 3 go on, 2 wait, the last is refused
        sock.send(encode(Request(f"w{i}", "fs.walk", {})))
    assert sock.poll(5000)
    refused = decode(sock.recv())
    assert refused.id == "w5" and refused.error["kind"] == "bus.backpressure"
    assert "max_requests_in_flight" in refused.error["next"]
    assert wait_for(lambda: len(held_back) == 3, 5)
    assert served["fs.walk"] == 3                    # the core never saw the waiting ones
    assert client(remote, "b").call("fs.read", {"path": "x"}, timeout=10) == {"ok": True}
    for _ in range(2):                   # each answer lets one waiting request go on, in order
        held_back.pop(0).reply({"late": True})
    assert wait_for(lambda: served["fs.walk"] == 5, 5)
    for ctx in held_back[:]:
        ctx.reply({"late": True})
        held_back.remove(ctx)
    assert [a.id for a in read_all(sock, 5)] == ["w0", "w1", "w2", "w3", "w4"]
    sock.send(encode(Request("again", "fs.read", {"path": "x"})))
    assert sock.poll(5000) and decode(sock.recv()).ok


def test_the_next_connection_of_a_key_is_refused_until_one_closes(bench):
    listen, raw, client, *_ = bench
    remote = listen(max_connections_per_key=2)
    first, second = client(remote, "a"), client(remote, "a")
    for conn in (first, second):
        assert conn.call("fs.read", {"path": "x"}, timeout=10) == {"ok": True}
    third = client(remote, "a")
    with pytest.raises(BusError) as info:
        third.call("fs.read", {"path": "x"}, timeout=10)
    err = info.value
    assert err.kind == "bus.connection_limit"
    assert "'a'" in err.message and "2 connections" in err.message
    assert "max_connections_per_key" in err.next and "Close one" in err.next
    assert client(remote, "b").call("fs.read", {"path": "x"}, timeout=10) == {"ok": True}
    assert first.call("fs.read", {"path": "x"}, timeout=10) == {"ok": True}  # kept: not dropped
    first.close()               # its tcp connection closes: the monitor frees its slot
    assert wait_for(lambda: _answers(third), 10)


def _answers(conn) -> bool:
    try:
        return conn.call("fs.read", {"path": "x"}, timeout=2) == {"ok": True}
    except BusError:
        return False


# --- the settings -----------------------------------------------------------------------------

def test_remote_limits_come_from_config_toml(tmp_path):
    assert remote_limits(tmp_path) == RemoteLimits()
    (tmp_path / "config.toml").write_text(
        "[remote]\nreply_budget_mb = 8\nmax_connections_per_key = 3\n"
        "max_requests_in_flight = 5\nowner_only_paths = ['Makefile']\n")
    assert remote_limits(tmp_path) == RemoteLimits(8 * MIB, 3, 5)
    for bad, named in (("reply_budget_mb = 0", "reply_budget_mb"),
                       ("max_connections = 3", "unknown key"),
                       ("max_requests_in_flight = '5'", "max_requests_in_flight")):
        (tmp_path / "config.toml").write_text(f"[agent]\nmode = 'review'\n\n[remote]\n{bad}\n")
        with pytest.raises(ConfigError) as info:
            remote_limits(tmp_path)
        assert info.value.kind == "config.invalid" and named in info.value.message
        assert "line 5" in info.value.message


# --- the whole server: the numbers ----------------------------------------------------

def _rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 1e6


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_an_observer_that_never_reads_200_big_replies_leaves_the_supervisor_small(tmp_path):
    """Before: every unread 10 MB reply stayed in the bridge (~10.5 MB each: 200 of them took
    the supervisor past 2 GB). Now the key's budget holds, the rest are ``bus.backpressure``,
    and an editor key's edits are answered all along (latencies printed, not asserted)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "big.txt").write_text(("x" * 99 + "\n") * 100_000)      # 10 MB
    (root / "notes.txt").write_text("hello\n")
    env = rio_env(tmp_path)
    curve = tmp_path / "config" / "curve"
    server_keys, _ = curve_keys.create_server_keys(curve)
    observer, _ = curve_keys.create_client_keys("watcher", curve)
    editor, _ = curve_keys.create_client_keys("typist", curve)
    curve_keys.set_role("watcher", "observer", curve)
    port = free_port_pair()
    server = RioServer(root, tmp_path, env=env,
                       extra_args=["--listen", f"tcp://127.0.0.1:{port}"]).start()
    sockets = []
    try:
        pid = server.proc.pid
        far = Endpoints(f"tcp://127.0.0.1:{port}", f"tcp://127.0.0.1:{port + 1}",
                        server_keys.public, editor.public, editor.secret)
        typist = connect(far, name="typist", timeout=10)
        sockets.append(typist)
        buffer = typist.call("buffer.open", {"path": "notes.txt"}, timeout=10)["buffer"]

        def edit() -> float:
            start = time.perf_counter()
            typist.call("buffer.replace", {"buffer": buffer, "start": 0, "end": 0,
                                           "text": "a"}, timeout=30)
            return (time.perf_counter() - start) * 1000

        quiet = [edit() for _ in range(100)]
        before = _rss_mb(pid)
        watcher = zmq.Context.instance().socket(zmq.DEALER)
        sockets.append(watcher)
        watcher.setsockopt(zmq.LINGER, 0)
        watcher.setsockopt(zmq.RCVHWM, 1)
        watcher.setsockopt(zmq.RCVBUF, 4096)
        watcher.curve_serverkey = server_keys.public
        watcher.curve_publickey = observer.public
        watcher.curve_secretkey = observer.secret
        watcher.connect(far.requests)
        for i in range(200):
            watcher.send(encode(Request(f"r{i}", "fs.read",
                                        {"path": "big.txt", "max_chars": 20_000_000})))
        during, peak = [], before
        deadline = time.monotonic() + 120

        def core_pending() -> int:
            core = [s for s in server.call("bus.services") if s["name"] == "core"]
            return core[0]["pending"] if core else 0

        # The flood is on once the core has reads of it to do (the bridge lets 32 through, a
        # second of reading), and over when it has none left; then a few more seconds of
        # editing (the bridge's last drops, the hub's trim a second after a large flow).
        assert wait_for(lambda: core_pending() > 0, 30)
        while core_pending() > 0 and time.monotonic() < deadline:
            during += [edit() for _ in range(5)]
            peak = max(peak, _rss_mb(pid))
        assert core_pending() == 0
        end = time.monotonic() + 3
        while time.monotonic() < end:
            during += [edit() for _ in range(5)]
            peak = max(peak, _rss_mb(pid))
        after = _rss_mb(pid)
        answers = read_all(watcher, 200)
        read = _rss_mb(pid)
        kinds = Counter("ok" if a.ok else a.error["kind"] for a in answers)
        print(f"\nsupervisor RSS: {before:.1f} MB before, {peak:.1f} MB peak, {after:.1f} MB "
              f"with 200 x 10 MB replies unread, {read:.1f} MB once read; observer got {kinds}"
              f"\neditor buffer.replace: quiet median {statistics.median(quiet):.2f} ms, "
              f"p95 {_p95(quiet):.2f} ms; during median {statistics.median(during):.2f} ms, "
              f"p95 {_p95(during):.2f} ms, max {max(during):.1f} ms, n={len(during)}",
              file=sys.stderr)
        assert after < 100, f"the supervisor holds {after:.1f} MB"
        assert len(answers) == 200 and kinds["ok"] >= 1 and kinds["bus.backpressure"] >= 150
        assert set(kinds) <= {"ok", "bus.backpressure"}
        assert typist.call("buffer.info", {"buffer": buffer}, timeout=10)["length"] \
            == len("hello\n") + len(quiet) + len(during)     # every edit was answered, applied
    finally:
        for sock in sockets:
            sock.close()
        server.stop()


def _p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))]


def test_the_documented_defaults_are_the_defaults():
    """rio/config/remote_settings.py's example and docs/deploy.md show the limits Rio applies."""
    defaults = RemoteLimits()
    for doc in (Path(remote_config.__file__).read_text(), DEPLOY.read_text()):
        assert f"reply_budget_mb = {defaults.reply_budget_bytes // MIB} " in doc
        assert f"max_connections_per_key = {defaults.max_connections_per_key} " in doc
        assert f"max_requests_in_flight = {defaults.max_requests_in_flight} " in doc
