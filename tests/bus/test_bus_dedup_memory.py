"""A service keeps its replies so a copy of a request is answered, not run again (ADR-0009,
ADR-0020) — but big replies (reads: 4 MiB buffer.text slices while a window loads 100 MB) only
within a byte budget: kept whole they held the document a second time in the core for good
(issue 13, ADR-0030). Small replies (every edit's) keep the old guarantee."""

from __future__ import annotations

import pytest

from actors.bus.client import connect
from actors.bus.service import _BIG_KEEP_BYTES, _BIG_REPLY_BYTES, BusThread

pytestmark = pytest.mark.timeout(60)

BIG = 1024 * 1024


@pytest.fixture
def served(endpoints, hub):
    calls: list[str] = []

    def handler(ctx):
        calls.append(ctx.op)
        if ctx.op == "system.status":          # a read with a big result
            ctx.reply({"text": "x" * BIG})
        else:
            ctx.reply({"n": len(calls)})

    bus = BusThread(endpoints, name="reads", handlers={"system": handler}).start()
    client = connect(endpoints, name="test")
    yield client, bus, calls
    client.close()
    bus.stop()


def _call(client, op, rid):
    box = []
    client.request(op, {}, box.append, request_id=rid, timeout=20)
    assert client.wait_for(lambda: box, 20)
    assert box[0].ok, box[0]
    return box[0].result


def test_big_replies_are_kept_within_a_budget_small_ones_as_before(served) -> None:
    client, bus, calls = served
    assert BIG > _BIG_REPLY_BYTES
    first_small = _call(client, "system.ping", "small-1")
    for i in range(40):                              # 40 MiB of replies
        assert len(_call(client, "system.status", f"big-{i}")["text"]) == BIG
    kept = sum(len(p) for p in bus._done.values())
    assert kept <= _BIG_KEEP_BYTES + 64 * 1024, f"{kept} bytes of replies kept"
    # a copy of the small request is still answered from memory: not run again
    assert _call(client, "system.ping", "small-1") == first_small
    assert calls.count("system.ping") == 1
    # a copy of the oldest big read, dropped from memory, runs again and is answered
    assert len(_call(client, "system.status", "big-0")["text"]) == BIG
    assert calls.count("system.status") == 41
    # the newest big read is still kept: its copy is not run again
    _call(client, "system.status", "big-39")
    assert calls.count("system.status") == 41
