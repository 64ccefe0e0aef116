"""Remote access over tcp with CURVE: real sockets on 127.0.0.1, a real hub behind the bridge."""

import os
import socket
import subprocess
import sys

import pytest
import zmq

from actors.bus import curve_keys
from actors.bus.client import BusConnection, Endpoints, connect
from actors.bus.remote import RemoteListener, parse_listen
from actors.bus.service import BusThread
from rio.protocol.errors import BusError
from rio.protocol.frames import Request, decode, encode
from tests.support import REPO, RioServer, rio_env, wait_for

pytestmark = pytest.mark.timeout(60)


def free_port_pair() -> int:
    """A port P with P and P+1 both free on 127.0.0.1 (requests and events)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port >= 65534:
            continue
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair")


@pytest.fixture
def keys(tmp_path):
    base = tmp_path / "curve"
    server, _ = curve_keys.create_server_keys(base)
    client, _ = curve_keys.create_client_keys("laptop", base)
    return base, server, client


@pytest.fixture
def service(hub, endpoints):
    calls = []

    def handle(ctx):
        calls.append(ctx.op)
        ctx.bus.publish("fs.echo", {"n": len(calls)})
        ctx.reply({"op": ctx.op, "path": ctx.args["path"]})

    bus = BusThread(endpoints, name="echo", handlers={"fs": handle}).start()
    yield calls
    bus.stop()


@pytest.fixture
def listener(hub, keys, endpoints):
    base, server, _ = keys
    port = free_port_pair()
    remote = RemoteListener(f"tcp://127.0.0.1:{port}", endpoints.requests, endpoints.events,
                            server, base / curve_keys.AUTHORIZED).start()
    yield remote
    remote.stop()


def remote_endpoints(listener, server, client=None) -> Endpoints:
    return Endpoints(listener.requests_endpoint, listener.events_endpoint, server.public,
                     client.public if client else None, client.secret if client else None)


def can_connect(endpoints: Endpoints) -> bool:
    try:
        connect(endpoints, name="probe", timeout=2).close()
    except BusError:
        return False
    return True


def test_parse_listen_gives_requests_and_events_ports():
    assert parse_listen("tcp://127.0.0.1:7311") == ("tcp://127.0.0.1:7311",
                                                    "tcp://127.0.0.1:7312")
    assert parse_listen("tcp://0.0.0.0:9000")[1] == "tcp://0.0.0.0:9001"
    for bad in ("ipc:///tmp/x", "tcp://host", "tcp://host:0", "tcp://host:65535",
                "tcp://:80", "tcp://h:80/path"):
        with pytest.raises(BusError) as info:
            parse_listen(bad)
        assert info.value.kind == "bus.bad_listen_address"


def test_an_authorised_client_gets_replies_and_events(listener, keys, service):
    _, server, client = keys
    conn = connect(remote_endpoints(listener, server, client), name="far", timeout=10)
    try:
        seen = []
        conn.subscribe("fs.", seen.append)
        assert conn.call("fs.read", {"path": "a"}, timeout=10) == {"op": "fs.read",
                                                                  "path": "a"}
        # A subscription takes two hops (client → bridge → hub): ping until events flow.
        assert wait_for(lambda: conn.call("fs.read", {"path": "p"}, timeout=10) and seen, 10)
        before = len(seen)
        conn.call("fs.read", {"path": "b"}, timeout=10)
        conn.call("fs.read", {"path": "c"}, timeout=10)
        assert wait_for(lambda: conn.drain() >= 0 and len(seen) >= before + 2, 10)
        last = seen[before - 1:before + 2]
        # the hub's numbering crosses the bridge unchanged: consecutive, no gap
        assert [e.seq for e in last] == [last[0].seq, last[0].seq + 1, last[0].seq + 2]
        assert [e.data["n"] for e in last] == [e.seq for e in last]
        # bus.* ops answered by the hub itself come back the same way
        assert any(s["name"] == "echo" for s in conn.call("bus.services", timeout=10))
    finally:
        conn.close()
    assert listener.stats["requests"] == listener.stats["replies"] >= 4


def test_two_remote_clients_get_their_own_replies(listener, keys, service):
    base, server, first = keys
    second, _ = curve_keys.create_client_keys("desk", base)
    # authorised while the listener runs: it re-reads authorized_clients/ within a second
    assert wait_for(lambda: can_connect(remote_endpoints(listener, server, second)), 10)
    a = connect(remote_endpoints(listener, server, first), name="a", timeout=10)
    b = connect(remote_endpoints(listener, server, second), name="b", timeout=10)
    try:
        replies = {}
        for i in range(20):
            a.request("fs.read", {"path": f"a/{i}"},
                      lambda r: replies.setdefault(("a", r.result["path"]), r.result))
            b.request("fs.read", {"path": f"b/{i}"},
                      lambda r: replies.setdefault(("b", r.result["path"]), r.result))
        assert wait_for(lambda: a.drain() + b.drain() >= 0 and len(replies) == 40, 10)
        assert all(path.startswith(who + "/") for who, path in replies)
        assert listener.client_count == 2
    finally:
        a.close()
        b.close()


@pytest.mark.slow
def test_an_unknown_client_key_gets_nothing(listener, keys, service):
    _, server, _ = keys
    stranger = curve_keys.KeyPair(*zmq.curve_keypair())
    with pytest.raises(BusError) as info:
        connect(remote_endpoints(listener, server, stranger), name="stranger", timeout=1.5)
    assert info.value.kind == "bus.unreachable"
    conn = BusConnection(remote_endpoints(listener, server, stranger), name="stranger")
    try:
        with pytest.raises(BusError) as info:
            conn.call("fs.read", {"path": "s"}, timeout=1.5)
        assert info.value.kind == "bus.timeout"
    finally:
        conn.close()
    assert service == []
    assert listener.stats["requests"] == 0


@pytest.mark.slow
def test_a_revoked_key_is_refused_for_new_connections(listener, keys, service):
    base, server, client = keys
    assert can_connect(remote_endpoints(listener, server, client))
    curve_keys.revoke("laptop", base)
    assert wait_for(lambda: not can_connect(remote_endpoints(listener, server, client)), 10)
    with pytest.raises(BusError):
        connect(remote_endpoints(listener, server, client), name="gone", timeout=1.5)


def test_a_plaintext_client_is_refused(listener, service):
    ctx = zmq.Context.instance()
    raw = ctx.socket(zmq.DEALER)
    raw.setsockopt(zmq.LINGER, 0)
    raw.connect(listener.requests_endpoint)
    try:
        raw.send(encode(Request("p1", "fs.read", {"path": "p"})))
        assert not raw.poll(1500)
    finally:
        raw.close()
    assert service == []
    assert listener.stats["requests"] == 0


def test_a_client_that_uses_the_wrong_server_key_is_refused(listener, keys, service):
    _, _, client = keys
    impostor_server = curve_keys.KeyPair(*zmq.curve_keypair())
    with pytest.raises(BusError):
        connect(remote_endpoints(listener, impostor_server, client), name="x", timeout=1.5)
    assert service == []


def test_remote_clients_cannot_register_as_services(listener, keys, service):
    _, server, client = keys
    conn = connect(remote_endpoints(listener, server, client), name="far", timeout=10)
    try:
        with pytest.raises(BusError) as info:
            conn.call("bus.register", {"name": "echo", "prefixes": ["fs"]}, timeout=10)
        assert info.value.kind == "bus.remote_not_allowed"
        conn.publish("fs.fake", {"evil": True})
        # the real service still owns fs.*
        assert conn.call("fs.read", {"path": "x"}, timeout=10)["op"] == "fs.read"
    finally:
        conn.close()


def test_idle_remote_clients_release_their_hub_socket(hub, keys, service, endpoints):
    base, server, client = keys
    port = free_port_pair()
    remote = RemoteListener(f"tcp://127.0.0.1:{port}", endpoints.requests, endpoints.events,
                            server, base / curve_keys.AUTHORIZED, idle_close_s=0.2).start()
    conn = connect(remote_endpoints(remote, server, client), name="far", timeout=10)
    try:
        conn.call("fs.read", {"path": "x"}, timeout=10)
        assert remote.client_count == 1
        assert wait_for(lambda: remote.client_count == 0, 5)
        # a later request simply opens a new one
        assert conn.call("fs.read", {"path": "y"}, timeout=10)["op"] == "fs.read"
    finally:
        conn.close()
        remote.stop()


def test_a_busy_port_is_a_clear_error(hub, keys, endpoints):
    base, server, _ = keys
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(BusError) as info:
            RemoteListener(f"tcp://127.0.0.1:{port}", endpoints.requests, endpoints.events,
                           server, base / curve_keys.AUTHORIZED).start()
    assert info.value.kind == "bus.listen_failed"


@pytest.mark.timeout(60)
def test_serve_listen_without_keys_refuses_to_start(tmp_path):
    env = rio_env(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "rio.cli", "serve", "--root", str(tmp_path), "--instance",
         f"nokeys{os.getpid()}", "--listen", f"tcp://127.0.0.1:{free_port_pair()}"],
        env=env, capture_output=True, text=True, timeout=30, cwd=str(REPO))
    assert done.returncode != 0
    assert "rio keys" in done.stderr
    assert "bus.no_server_keys" in done.stderr
    # refused before claiming the instance: no runtime folder, no socket left behind
    assert not os.path.exists(env["RIO_RUNTIME_DIR"])


@pytest.mark.timeout(120)
@pytest.mark.slow
def test_rio_serve_listen_end_to_end_with_rio_keys(tmp_path):
    """`rio keys`, `rio keys --client`, `rio serve --listen`, `rio status/call --connect`."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "hello.txt").write_text("hi\n")
    env = rio_env(tmp_path)
    cli = [sys.executable, "-m", "rio.cli"]
    made = subprocess.run(cli + ["keys"], env=env, capture_output=True, text=True, timeout=30)
    assert made.returncode == 0, made.stderr
    server_key = made.stdout.strip().splitlines()[-1].split()[-1]
    assert len(server_key) == 40
    laptop = subprocess.run(cli + ["keys", "--client", "laptop"], env=env, capture_output=True,
                            text=True, timeout=30)
    assert laptop.returncode == 0, laptop.stderr
    port = free_port_pair()
    server = RioServer(root, tmp_path, env=env,
                       extra_args=["--listen", f"tcp://127.0.0.1:{port}"]).start()
    try:
        client_env = dict(env, RIO_CLIENT_KEY_DIR=str(tmp_path / "config" / "curve" / "clients"))
        remote = ["--connect", f"tcp://127.0.0.1:{port}", "--server-key", server_key]
        status = subprocess.run(cli + ["status", "--json", *remote], env=client_env,
                                capture_output=True, text=True, timeout=30)
        assert status.returncode == 0, status.stderr
        assert f'"instance": "{server.name}"' in status.stdout
        stranger_dir = tmp_path / "stranger"
        stranger_dir.mkdir()
        public, secret = zmq.curve_keypair()
        curve_keys.write_key_file(stranger_dir / "s.key_secret", public, secret)
        refused = subprocess.run(cli + ["status", "--timeout", "2", *remote],
                                 env=dict(env, RIO_CLIENT_KEY_DIR=str(stranger_dir)),
                                 capture_output=True, text=True, timeout=30)
        assert refused.returncode == 2
        assert "bus.unreachable" in refused.stderr
        # The laptop key is an editor (the default role): it edits, but runs nothing and
        # cannot stop the server; the refusal is one line naming the role and the fix.
        opened = subprocess.run(cli + ["call", "buffer.open", '{"path": "hello.txt"}', *remote],
                                env=client_env, capture_output=True, text=True, timeout=30)
        assert opened.returncode == 0, opened.stderr
        for op, args in (("run.start", '{"command": "touch pwned"}'), ("system.stop", "{}")):
            denied = subprocess.run(cli + ["call", op, args, *remote], env=client_env,
                                    capture_output=True, text=True, timeout=30)
            assert denied.returncode == 1, denied.stderr
            err = denied.stderr.strip().splitlines()
            assert len(err) == 1 and err[0].startswith("rio: auth.forbidden: ")
            assert "owner" in err[0] and "rio keys --set-role" in err[0]
        assert not (root / "pwned").exists()
        assert server.call("system.ping")["pong"]
    finally:
        server.stop()


def test_frames_cross_unchanged(listener, keys, service):
    """The bridge forwards the payload bytes: a raw CURVE DEALER sees a normal reply."""
    _, server, client = keys
    ctx = zmq.Context.instance()
    raw = ctx.socket(zmq.DEALER)
    raw.setsockopt(zmq.LINGER, 0)
    raw.curve_serverkey = server.public
    raw.curve_publickey = client.public
    raw.curve_secretkey = client.secret
    raw.connect(listener.requests_endpoint)
    try:
        raw.send(encode(Request("r1", "fs.read", {"path": "v"})))
        assert raw.poll(10_000)
        reply = decode(raw.recv())
        assert reply.id == "r1" and reply.ok and reply.result["path"] == "v"
    finally:
        raw.close()


def test_remote_clients_cannot_reach_host_ops(listener, keys, service):
    _, server, client = keys
    conn = connect(remote_endpoints(listener, server, client), name="far", timeout=10)
    try:
        with pytest.raises(BusError) as info:
            conn.call("host.stop", {"process": "echo"}, timeout=10)
        assert info.value.kind == "bus.remote_not_allowed"
    finally:
        conn.close()
    assert service == []


def test_a_client_with_the_longest_identity_is_served(listener, keys, service):
    """libzmq caps identities at 255 bytes: the bridge's hub-side name must stay valid."""
    _, server, client = keys
    ctx = zmq.Context.instance()
    raw = ctx.socket(zmq.DEALER)
    raw.setsockopt(zmq.LINGER, 0)
    raw.setsockopt(zmq.ROUTING_ID, b"x" * 255)
    raw.curve_serverkey = server.public
    raw.curve_publickey = client.public
    raw.curve_secretkey = client.secret
    raw.connect(listener.requests_endpoint)
    try:
        raw.send(encode(Request("long", "fs.read", {"path": "l"})))
        assert raw.poll(10_000)
        assert decode(raw.recv()).result["path"] == "l"
    finally:
        raw.close()
