"""A reply and the events its op caused travel from an actor's thread to the hub in one message
``[client, reply, event…]`` (ADR-0030): the client gets the reply, subscribers get the events
numbered in order, and a bad event in such a message costs only itself."""

from __future__ import annotations

import threading

import msgpack
import pytest
import zmq

from actors.bus.service import BusThread
from rio.protocol.frames import Event, Reply, Request, decode, encode
from tests.bus.settle import settle

pytestmark = pytest.mark.timeout(30)


class RecordingLink:
    """Wraps an actor thread's DEALER to the hub: records what is sent on it."""

    def __init__(self, sock: zmq.Socket, sent: list[list[bytes]]):
        self._sock, self._sent = sock, sent

    def send_multipart(self, parts, *a, **k):
        self._sent.append(list(parts))
        return self._sock.send_multipart(parts, *a, **k)

    def __getattr__(self, name):
        return getattr(self._sock, name)


def test_an_actor_thread_sends_reply_and_events_as_one_message(hub, client, endpoints):
    def handler(ctx):   # answered from another thread, as a DocumentActor does
        threading.Thread(target=ctx.reply, args=({"version": 7},), kwargs={
            "events": [("t.edit", {"n": 1}), ("t.edit", {"n": 2})]}).start()

    bus = BusThread(endpoints, name="editor", handlers={"buffer": handler}).start()
    sent: list[list[bytes]] = []
    real_link = bus._link
    bus._link = lambda: RecordingLink(real_link(), sent)
    try:
        seen = settle(client, hub, topic="t.settle")
        seen.clear()
        assert client.call("buffer.replace", {"buffer": "b1", "start": 0, "end": 0,
                                              "text": "a"}) == {"version": 7}
        assert client.wait_for(lambda: len(seen) >= 2, 5)
    finally:
        bus.stop()
    assert [(e.topic, e.data["n"]) for e in seen] == [("t.edit", 1), ("t.edit", 2)]
    assert seen[1].seq == seen[0].seq + 1
    assert len(sent) == 1, "reply and events in one message"
    assert len(sent[0]) == 4
    assert isinstance(decode(sent[0][1]), Reply)
    assert [decode(p).data["n"] for p in sent[0][2:]] == [1, 2]


def test_the_hub_sends_the_reply_and_publishes_the_good_events_of_one_message(hub, client,
                                                                               endpoints):
    seen = settle(client, hub, topic="t.settle")
    seen.clear()
    service = zmq.Context.instance().socket(zmq.DEALER)
    service.setsockopt(zmq.LINGER, 0)
    service.setsockopt(zmq.IDENTITY, b"raw-service")
    service.connect(endpoints.requests)
    try:
        service.send(encode(Request("reg-1", "bus.register",
                                    {"prefixes": ["raw"], "name": "raw", "pid": 1})))
        assert service.poll(5000)
        assert decode(service.recv_multipart()[-1]).ok
        replies: list[Reply] = []
        client.request("raw.do", {}, replies.append)
        assert service.poll(5000)
        who, payload = service.recv_multipart()
        rid = decode(payload).id
        service.send_multipart([who, encode(Reply.success(rid, {"done": True})),
                                msgpack.packb({"not": "a frame"}),
                                encode(Event("t.done", {"n": 1}))])
        assert client.wait_for(lambda: replies and seen, 5)
    finally:
        service.close(linger=0)
    assert replies[0].ok and replies[0].result == {"done": True}
    assert [(e.topic, dict(e.data)) for e in seen] == [("t.done", {"n": 1})]
    assert hub.alive()
