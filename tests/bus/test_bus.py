"""The hub and the bus connection over real ZeroMQ ipc:// sockets."""

import os
import threading

import msgpack
import pytest
import zmq

from actors.bus.service import BusThread
from rio.protocol.errors import BusError, ProtocolError
from rio.protocol.frames import Request, decode, encode
from tests.bus.settle import settle
from tests.support import wait_for

pytestmark = pytest.mark.timeout(30)


class EchoService:
    """Serves system.* with a counter so duplicates are visible."""

    def __init__(self):
        self.calls = 0
        self.block = threading.Event()

    def __call__(self, ctx):
        self.calls += 1
        if ctx.op == "system.status":
            self.block.wait(5)   # a slow op, to test in-flight duplicates and deaths
        ctx.bus.publish("system.echo", {"n": self.calls})
        ctx.reply({"calls": self.calls, "pid": os.getpid()})


@pytest.fixture
def service(hub, endpoints):
    handler = EchoService()
    bus = BusThread(endpoints, name="echo", handlers={"system": handler}).start()
    yield handler, bus
    handler.block.set()
    bus.stop()


def test_request_is_routed_by_prefix_and_events_are_numbered(client, service):
    seen = []
    client.subscribe("system.", seen.append)
    assert client.call("system.ping")["calls"] == 1
    assert client.call("system.ping")["calls"] == 2
    wait_for(lambda: len(seen) >= 2, 10, 1, pause=client.wait, what="two system.* events")
    assert [e.seq for e in seen] == [1, 2]
    assert [e.data["n"] for e in seen] == [1, 2]


def test_no_route_is_an_error_reply(client):
    with pytest.raises(BusError) as info:
        client.call("agent.send", {"conversation": "c", "text": "hi"})
    assert info.value.kind == "bus.no_route"
    assert "rio status" in info.value.next


def test_unknown_op_and_bad_args_are_error_replies_from_the_service(client, service):
    with pytest.raises(ProtocolError) as info:
        client.call("system.explode")
    assert info.value.kind == "protocol.unknown_op"
    with pytest.raises(ProtocolError) as info:
        client.call("system.ping", {"loud": True})
    assert info.value.kind == "protocol.bad_args"


def test_malformed_frames_get_error_replies_not_silence(hub, endpoints):
    ctx = zmq.Context.instance()
    raw = ctx.socket(zmq.DEALER)
    raw.setsockopt(zmq.LINGER, 0)
    raw.connect(endpoints.requests)
    try:
        for payload, kind in [(b"\xc1not msgpack", "protocol.malformed_frame"),
                              (msgpack.packb({"v": 99, "t": "req", "id": "q1", "op": "a.b"}),
                               "protocol.unsupported_version"),
                              (msgpack.packb({"v": 1, "t": "req", "id": "q2"}),
                               "protocol.malformed_frame")]:
            raw.send(payload)
            assert raw.poll(5000)
            reply = decode(raw.recv())
            assert not reply.ok and reply.error["kind"] == kind
    finally:
        raw.close()


def test_duplicate_request_frames_run_once(client, service):
    handler, _ = service
    rid = "dup-1"
    payload = encode(Request(rid, "system.ping", {}))
    replies = []
    client.request("system.ping", {}, replies.append, request_id=rid)
    client.send_raw(payload)                  # the same frame again (a bus fault)
    wait_for(lambda: replies, 10, 1, pause=client.wait, what="the reply")
    assert replies[0].ok and replies[0].result["calls"] == 1
    # after completion, the duplicate is answered from the cache, not run again
    again = []
    client.request("system.ping", {}, again.append, request_id=rid)
    wait_for(lambda: again, 10, 1, pause=client.wait, what="the cached reply")
    assert again[0].result["calls"] == 1
    assert handler.calls == 1


def test_outstanding_requests_fail_when_the_service_goes(client, service, hub):
    handler, bus = service
    replies = []
    client.request("system.status", {}, replies.append, timeout=10)
    # the service is now busy with it; the supervisor reports its process dead
    wait_for(lambda: handler.calls > 0, 5, 0.01)
    hub.drop_service("echo")
    wait_for(lambda: replies, 10, 1, pause=client.wait, what="the reply")
    assert replies[0].error["kind"] == "bus.actor_dead"
    assert "Try again" in replies[0].error["next"]


def test_timeout_reaches_the_callback(client, service):
    with pytest.raises(BusError) as info:
        client.call("system.status", timeout=0.2)
    assert info.value.kind == "bus.timeout"


def test_sequence_gap_is_reported(client, hub):
    gaps = []
    client.on_gap = lambda topic, expected, got: gaps.append((topic, expected, got))
    seen = settle(client, hub)
    client.drain()
    gaps.clear()
    last = seen[-1].seq
    hub._seq["t.x"] = last + 3    # three events lost on the way
    hub.publish("t.x", {"a": 2})
    wait_for(lambda: seen[-1].data["a"] == 2, 10, 1, pause=client.wait,
             what="the event after the gap")
    assert gaps == [("t.x", last + 1, last + 4)]


def test_calls_from_other_threads_through_the_bus_thread(service, endpoints):
    _, bus = service
    results = []
    threads = [threading.Thread(target=lambda: results.append(bus.call("system.ping")))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(r["calls"] for r in results) == list(range(1, 9))


def test_second_service_cannot_steal_a_prefix(hub, endpoints, service):
    other = BusThread(endpoints, name="thief", handlers={"system": lambda ctx: None})
    with pytest.raises(BusError) as info:
        other.start()
    assert info.value.kind == "bus.prefix_taken"
    other.stop()


# --- waiting without touching the sockets: wait(), wait_for(), events() -------------------------

def test_wait_returns_false_when_nothing_arrives_and_true_as_soon_as_something_does(client, hub):
    import time
    seen = settle(client, hub)
    client.wait(0.05)                   # a second settling probe, if one is still in flight
    t0 = time.monotonic()
    assert client.wait(0.2) is False
    assert time.monotonic() - t0 >= 0.2
    timer = threading.Timer(0.1, hub.publish, ("t.x", {"a": 1}))
    timer.start()
    t0 = time.monotonic()
    try:
        assert client.wait_for(lambda: seen[-1].data["a"] == 1, 10)
    finally:
        timer.join()
    assert time.monotonic() - t0 < 5    # woken by the event, not by the 10 s timeout


def test_wait_wakes_at_a_request_deadline_and_answers_it(client, service):
    import time
    replies = []
    client.request("system.status", {}, replies.append, timeout=0.3)   # the service sits on it
    t0 = time.monotonic()
    assert client.wait(10) is True
    assert time.monotonic() - t0 < 5
    assert replies[0].error["kind"] == "bus.timeout"


def test_wait_for_gives_up_at_its_timeout(client):
    import time
    t0 = time.monotonic()
    assert client.wait_for(lambda: False, 0.2) is False
    assert 0.2 <= time.monotonic() - t0 < 5


def test_events_yields_matching_events_once_each_in_order(client, hub):
    import itertools
    settle(client, hub)
    client.wait(0.05)
    handlers_before = len(client._handlers)
    stream = client.events(("t.", "t.x"), timeout=10)    # t.x is under t.: delivered once
    got = []
    try:
        for n in (1, 2, 3):
            hub.publish("v.y", {"a": -n})               # not asked for
            hub.publish("t.x", {"a": n})
        # left-over settling probes ({"a": 0}) are not counted
        got = list(itertools.islice((e for e in stream if e.data["a"] != 0), 3))
    finally:
        stream.close()
    # hub.publish sends each through a socket of its own: the hub may number them in any
    # order, and the stream yields them in the hub's order, each once
    assert sorted(e.data["a"] for e in got) == [1, 2, 3]
    assert [e.seq for e in got] == sorted(e.seq for e in got)
    assert len({e.seq for e in got}) == 3
    assert [e.topic for e in got] == ["t.x"] * 3
    assert len(client._handlers) == handlers_before      # closing the stream unsubscribed it


def test_events_ends_at_its_timeout(client, hub):
    import time
    t0 = time.monotonic()
    assert list(client.events("nothing.", timeout=0.2)) == []
    assert 0.2 <= time.monotonic() - t0 < 5
    assert client._handlers == []


def test_wait_ends_when_the_callers_wake_fd_is_readable(client):
    """BusConnection.wait(wake_fd=…): the supervisor's monitor loop waits on its bus sockets
    and its own wake-up pipe at once (a system.spawn wakes it without a frame)."""
    r, w = os.pipe()
    try:
        threading.Timer(0.2, lambda: os.write(w, b"x")).start()
        assert client.wait(30, wake_fd=r) is True     # woken (a timeout answers False)
        assert os.read(r, 10) == b"x"                 # left for the caller to drain
        assert client.wait(0.05, wake_fd=r) is False  # nothing pending: times out
    finally:
        os.close(r)
        os.close(w)
