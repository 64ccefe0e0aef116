"""A reply sent from a thread that ends right after (an actor stopped after its last reply —
buffer.close — or a short-lived worker) still reaches the client: the thread's link to the hub
closes with the thread, and with LINGER 0 whatever was still queued in it was dropped, so the
request was never answered (seen as a flaky test in tests/runtime/test_core_restart.py)."""

from __future__ import annotations

import threading

import pytest

from actors.bus.client import connect
from actors.bus.service import BusThread

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def served(endpoints, hub):

    def handler(ctx):   # answered from a thread that ends as soon as it has sent
        threading.Thread(target=ctx.reply, args=({"id": ctx.request.id},)).start()

    bus = BusThread(endpoints, name="brief", handlers={"system": handler}).start()
    client = connect(endpoints, name="test")
    yield client
    client.close()
    bus.stop()


def test_replies_from_threads_that_end_at_once_all_arrive(served) -> None:
    client = served
    replies: list = []
    for i in range(60):
        client.request("system.ping", {}, replies.append, request_id=f"r{i}", timeout=5)
        assert client.wait_for(lambda i=i: len(replies) > i, 6)
    assert [r.ok for r in replies] == [True] * 60, [r for r in replies if not r.ok][:1]
    assert [r.result["id"] for r in replies] == [f"r{i}" for i in range(60)]
