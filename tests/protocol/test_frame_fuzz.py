"""Hostile frames on every socket that reads the network: the hub's ROUTER, a service's link (the
core's bus thread) and the remote CURVE bridge. Each frame must get an error reply (or be
dropped), and afterwards the instance must answer normally with no process restarted.

Issue 8: a 639-byte request nested 600 deep killed the hub thread (the instance could then not
be stopped); a map with a str and a bytes key killed the core's bus thread; bus.register with
``prefixes: 5`` killed the hub. The frames come from :mod:`tests.frame_strategies`, whose
wrong-typed requests are generated from the op catalogue.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
import zmq
from hypothesis import HealthCheck, given, settings

from actors.bus import curve_keys
from actors.bus.client import Endpoints
from actors.bus.hub import WELCOME
from actors.bus.service import BusThread
from rio.protocol import ops
from rio.protocol.frames import Reply, Request, decode, encode
from tests.bus.test_remote import free_port_pair
from tests.frame_strategies import deep_request, hostile_frame, nest, request_bytes
from tests.support import RioServer, rio_env

pytestmark = pytest.mark.timeout(240)

FUZZ = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


# --- one instance with remote access for the whole module ---------------------------------------

@pytest.fixture(scope="module")
def instance(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzz")
    root = base / "project"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    env = rio_env(base)
    curve = Path(env["RIO_CONFIG_DIR"]) / "curve"
    server_keys, _ = curve_keys.create_server_keys(curve)
    client_keys, _ = curve_keys.create_client_keys("fuzzer", curve)
    port = free_port_pair()
    srv = RioServer(root, base, env=env,
                    extra_args=["--listen", f"tcp://127.0.0.1:{port}"]).start()
    srv.remote = (f"tcp://127.0.0.1:{port}", server_keys, client_keys)
    yield srv
    srv.stop()


def _dealer(endpoint: str, curve: tuple | None = None) -> zmq.Socket:
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.ROUTING_ID, f"fuzz-{uuid.uuid4().hex[:8]}".encode())
    if curve is not None:
        server, client = curve
        sock.curve_serverkey = server.public
        sock.curve_publickey = client.public
        sock.curve_secretkey = client.secret
    sock.connect(endpoint)
    return sock


def _reply_to(sock: zmq.Socket, rid: str, timeout: float = 15.0) -> Reply | None:
    """The reply with id ``rid`` (replies to earlier undecodable frames are skipped)."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        if not sock.poll(int(left * 1000) + 1):
            return None
        frame = decode(sock.recv())
        if isinstance(frame, Reply) and frame.id == rid:
            return frame
    return None


def _check_answered(sock: zmq.Socket, frame: tuple) -> None:
    """A request-shaped frame gets an error reply (never a crash's internal.*); then the socket
    still answers a normal request."""
    rid, raw, kind = frame
    sock.send(raw)
    if rid is not None:
        reply = _reply_to(sock, rid)
        assert reply is not None, f"no reply to a {kind} frame"
        assert not reply.ok and not reply.error["kind"].startswith("internal."), reply.error
    probe = f"probe-{uuid.uuid4().hex[:8]}"
    sock.send(encode(Request(probe, "system.ping", {})))
    assert _reply_to(sock, probe) is not None, f"no answer after a {kind} frame"


def _health(srv: RioServer) -> dict[str, tuple]:
    status = srv.call("system.status", timeout=15)
    assert isinstance(srv.call("buffer.list", timeout=15), list)
    return {p["name"]: (p["pid"], p["restarts"], p["state"]) for p in status["processes"]}


@pytest.mark.slow
def test_hub_router_answers_hostile_frames_and_nothing_restarts(instance):
    before = _health(instance)
    sock = _dealer(instance.info()["requests"])
    try:
        # the frames from the issue first, then the generated ones
        _check_answered(sock, (*deep_request(600, "list"), "deep"))
        _check_answered(sock, (*request_bytes("bus.register", {"prefixes": 5}), "register"))
        _check_answered(sock, (*request_bytes("bus.register", {"prefixes": ["zz"],
                                                               "pid": "x"}), "register"))
        _check_answered(sock, (*request_bytes("buffer.info", {"buffer": "b", b"k": 1}), "keys"))

        @FUZZ
        @given(hostile_frame())
        def burst(frame):
            _check_answered(sock, frame)
        burst()
    finally:
        sock.close()
    assert _health(instance) == before   # same pids, no restarts, all still running


def test_remote_bridge_answers_hostile_frames(instance):
    listen, server, client = instance.remote
    before = _health(instance)
    sock = _dealer(listen, (server, client))
    try:
        _check_answered(sock, (*deep_request(600, "map"), "deep"))
        _check_answered(sock, (*request_bytes("buffer.info", {"a": {b"b": 1}}), "keys"))

        @FUZZ
        @given(hostile_frame())
        def burst(frame):
            _check_answered(sock, frame)
        burst()
    finally:
        sock.close()
    assert _health(instance) == before


def test_an_oversize_frame_is_cut_by_the_socket_and_the_hub_lives_on(instance):
    """ZMQ_MAXMSGSIZE: libzmq drops the frame from its length header and disconnects the sender;
    nothing of it is allocated, and everyone else is served as before."""
    from rio.protocol.frames import MAX_SOCKET_MESSAGE_BYTES
    before = _health(instance)
    sock = _dealer(instance.info()["requests"])
    try:
        sock.send(b"\x00" * (MAX_SOCKET_MESSAGE_BYTES + 1))
        assert not sock.poll(500)           # dropped: no reply to a frame nobody read
    finally:
        sock.close()
    assert _health(instance) == before


# --- a service's link, frames straight from a stand-in hub ---------------------------------------

class _StandInHub:
    """A bare ROUTER + XPUB where a hub would be, so hostile frames reach a service's link
    without the real hub's checks in between (a service must not rely on them)."""

    def __init__(self, folder: Path):
        ctx = zmq.Context.instance()
        self.endpoints = Endpoints(f"ipc://{folder}/r", f"ipc://{folder}/e")
        self.router = ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.bind(self.endpoints.requests)
        self.xpub = ctx.socket(zmq.XPUB)
        self.xpub.setsockopt(zmq.LINGER, 0)
        self.xpub.setsockopt(zmq.XPUB_WELCOME_MSG, WELCOME)
        self.xpub.bind(self.endpoints.events)
        self.service: bytes | None = None

    def accept_registration(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while self.service is None and time.monotonic() < deadline:
            if self.xpub.poll(0):
                self.xpub.recv()
            if not self.router.poll(50):
                continue
            frames = self.router.recv_multipart()
            frame = decode(frames[-1])
            if isinstance(frame, Request) and frame.op == "bus.register":
                self.router.send_multipart([frames[0], encode(Reply.success(frame.id, {}))])
                self.service = frames[0]
        assert self.service is not None, "the service never registered"

    def route(self, raw: bytes, timeout: float = 15.0) -> list[bytes] | None:
        client = f"c-{uuid.uuid4().hex[:6]}".encode()
        self.router.send_multipart([self.service, client, raw])
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not self.router.poll(int(left * 1000) + 1):
                return None
            frames = self.router.recv_multipart()
            if len(frames) == 3 and frames[1] == client:
                return frames
        return None

    def close(self) -> None:
        self.router.close(linger=0)
        self.xpub.close(linger=0)


@pytest.fixture
def service_link(tmp_path):
    hub = _StandInHub(tmp_path)
    ran: list[str] = []
    handlers = {spec.prefix: (lambda ctx: (ran.append(ctx.op), ctx.reply({})))
                for spec in ops.REGISTRY.values()}
    bus = BusThread(hub.endpoints, name="core", handlers=handlers)
    starter = threading.Thread(target=bus.start, daemon=True)
    starter.start()
    hub.accept_registration()
    starter.join(15)
    yield hub, bus, ran
    bus.stop()
    hub.close()


@pytest.mark.timeout(120)
@pytest.mark.slow
def test_a_service_link_answers_hostile_frames_and_runs_none(service_link):
    hub, bus, ran = service_link

    def answered(frame: tuple) -> None:
        rid, raw, kind = frame
        frames = hub.route(raw)
        assert frames is not None, f"the service did not answer a {kind} frame"
        reply = decode(frames[2])
        assert not reply.ok and not reply.error["kind"].startswith("internal."), reply.error
        if rid is not None:
            assert reply.id == rid
        # and it still serves a normal request
        ok = hub.route(encode(Request("ok", "buffer.list", {})))
        assert ok is not None and decode(ok[2]).ok

    answered((*request_bytes("buffer.info", {"buffer": "b", b"k": 1}), "keys"))  # TypeError once
    answered((*deep_request(600, "list"), "deep"))

    @FUZZ
    @given(hostile_frame())
    def burst(frame):
        answered(frame)
    burst()
    assert set(ran) == {"buffer.list"}      # no hostile frame reached an actor
    assert bus._thread is not None and bus._thread.is_alive()


def test_rio_call_with_deeply_nested_args_prints_one_error_line(instance):
    deep = '{"a": ' * 600 + "1" + "}" * 600
    res = instance.cli("call", "--instance", instance.name, "buffer.list", deep)
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert "nests deeper than" in res.stderr
    assert isinstance(instance.call("buffer.list"), list)


# --- what a service sends, and what a reading thread's callbacks do ------------------------------

@pytest.fixture
def local_hub(tmp_path):
    from actors.bus.hub import Hub
    endpoints = Endpoints(f"ipc://{tmp_path}/r", f"ipc://{tmp_path}/e")
    hub = Hub(endpoints.requests, endpoints.events).start()
    yield endpoints
    hub.stop()


@pytest.mark.timeout(60)
def test_a_result_too_big_to_send_is_answered_as_oversize_and_the_service_stays(local_hub):
    """Before: the core sent it, the client's decode dropped it and the call timed out (and with
    the socket limit the hub would cut the core's connection). Now the service sends the error."""
    from actors.bus.client import connect
    from rio.protocol.errors import ProtocolError
    from rio.protocol.frames import MAX_FRAME_BYTES

    def handle(ctx):
        size = MAX_FRAME_BYTES + 1 if ctx.args["path"] == "big" else 1
        ctx.reply({"text": "x" * size})

    bus = BusThread(local_hub, name="core", handlers={"fs": handle}).start()
    conn = connect(local_hub, name="asker")
    try:
        with pytest.raises(ProtocolError) as info:
            conn.call("fs.read", {"path": "big"}, timeout=20)
        assert info.value.kind == "protocol.oversize_frame"
        assert conn.call("fs.read", {"path": "small"}, timeout=10) == {"text": "x"}
    finally:
        conn.close()
        bus.stop()


@pytest.mark.timeout(60)
def test_a_failing_event_handler_or_reply_callback_does_not_stop_the_reading(local_hub):
    from actors.bus.client import connect
    seen = []

    def handle(ctx):
        ctx.bus.publish("fs.tick", {"n": ctx.args["path"]})
        ctx.reply({})

    def flaky(event):
        seen.append(event.data["n"])
        if event.data["n"] == "1":
            raise RuntimeError("a bug in a handler")

    bus = BusThread(local_hub, name="svc", handlers={"fs": handle}).start()
    conn = connect(local_hub, name="listener", subscribe=("fs.",))   # live once connected
    try:
        conn.subscribe("fs.", flaky)
        conn.request("fs.read", {"path": "0"}, lambda reply: 1 / 0)   # a callback that raises
        conn.call("fs.read", {"path": "1"}, timeout=10)
        conn.call("fs.read", {"path": "2"}, timeout=10)
        deadline = time.monotonic() + 10
        while "2" not in seen and time.monotonic() < deadline:
            conn.wait(0.2)
        assert seen[-2:] == ["1", "2"]
    finally:
        conn.close()
        bus.stop()


@pytest.mark.timeout(30)
def test_ops_the_hub_routes_by_an_argument_check_it_first(local_hub):
    from actors.bus.client import connect
    from rio.protocol.errors import ProtocolError
    conn = connect(local_hub, name="asker")
    try:
        for op, args in (("host.ping", {"process": 5}), ("session.status", {"conversation": []}),
                         ("bus.register", {"prefixes": 5})):
            with pytest.raises(ProtocolError) as info:
                conn.call(op, args, timeout=10)
            assert info.value.kind == "protocol.bad_args", op   # was bus.no_route / a dead hub
    finally:
        conn.close()


def test_every_rio_socket_refuses_messages_over_the_socket_limit(local_hub, monkeypatch):
    """Both sockets of a client are made by actors.bus.sockets, which sets the limit."""
    from actors.bus import client as bus
    from actors.bus import sockets as bus_socket
    from rio.protocol.frames import MAX_SOCKET_MESSAGE_BYTES
    made: list[zmq.Socket] = []

    def spy(make):
        def wrapped(*args, **kwargs):
            made.append(make(*args, **kwargs))
            return made[-1]
        return wrapped

    monkeypatch.setattr(bus, "make_dealer", spy(bus_socket.make_dealer))
    monkeypatch.setattr(bus, "make_sub", spy(bus_socket.make_sub))
    conn = bus.BusConnection(local_hub, name="probe")
    try:
        assert [s.type for s in made] == [zmq.DEALER, zmq.SUB]
        for sock in made:
            assert sock.getsockopt(zmq.MAXMSGSIZE) == MAX_SOCKET_MESSAGE_BYTES
    finally:
        conn.close()


@pytest.mark.timeout(60)
def test_a_request_too_big_to_send_is_answered_through_its_callback(local_hub):
    """The desktop sends edits with callbacks from Tk: an oversize paste must come back as an
    error reply (so the editor resyncs), not as an exception out of ``request``."""
    from actors.bus.client import connect
    from rio.protocol.frames import MAX_FRAME_BYTES
    conn = connect(local_hub, name="desktop")
    try:
        got = []
        conn.request("buffer.replace", {"buffer": "b", "start": 0, "end": 0,
                                        "text": "x" * (MAX_FRAME_BYTES + 1)}, got.append)
        conn.request("buffer.list", {"deep": nest(150)}, got.append)
        conn.drain()
        assert [r.error["kind"] for r in got] == ["protocol.oversize_frame",
                                                  "protocol.malformed_frame"]
        assert conn.call("bus.stats", timeout=10)["requests"] >= 1   # and it still talks
    finally:
        conn.close()
