"""``rio mcp`` serves tool calls at once (rio/mcp/server.py over actors/bus/call_pool.py): a
proposal waiting for the user does not hold up the agent's reads, each bus connection is used
by the thread that made it alone, and closing the link closes the idle workers' connections.
An ``mcp.cancel`` never waits behind the calls in flight, a call cancelled while queued is
never sent, and closing never waits for a worker still waiting for the user.
No processes: the bus connection is a fake with the ``call``/``close`` of a real one."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest

from actors.bus.call_pool import CallPool
from rio.mcp.server import CoreLink, McpStdioServer

pytestmark = pytest.mark.timeout(60)


class FakeConn:
    """A bus connection: ``propose_edit`` waits until released, everything else answers."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.owner = threading.get_ident()
        self.closed = False

    def call(self, op: str, args: dict[str, Any], *, timeout: float) -> Any:
        if threading.get_ident() != self.owner:
            self.world.foreign.append(op)
        self.world.sent.append(op)
        if args.get("tool") == "propose_edit":
            self.world.proposing.set()
            assert self.world.release.wait(20)
            return {"turn": "t1", "result": {"applied": True}}
        return {"turn": "t1", "result": {"text": "x = 1\n"}}

    def close(self) -> None:
        if threading.get_ident() != self.owner:
            self.world.foreign.append("close")
        self.closed = True


class World:
    def __init__(self) -> None:
        self.proposing = threading.Event()
        self.release = threading.Event()
        self.foreign: list[str] = []
        self.sent: list[str] = []
        self.conns: list[FakeConn] = []

    def connect(self) -> FakeConn:
        conn = FakeConn(self)
        self.conns.append(conn)
        return conn


def call(ident: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}


def test_a_read_is_answered_while_a_proposal_waits_for_the_user():
    world = World()
    link = CoreLink(CallPool(world.connect))
    server = McpStdioServer(link, "c1", "tok")

    async def go() -> tuple[dict[str, Any], dict[str, Any], bool]:
        proposal = asyncio.ensure_future(server.handle(call(
            1, "propose_edit", {"path": "a.py", "old_text": "1", "new_text": "2"})))
        assert await asyncio.to_thread(world.proposing.wait, 10)
        read = await asyncio.wait_for(server.handle(call(2, "read_buffer", {"path": "a.py"})),
                                      10)
        waiting = not proposal.done()
        world.release.set()
        return read, await asyncio.wait_for(proposal, 10), waiting
    try:
        read, proposed, waiting = asyncio.run(go())
    finally:
        world.release.set()
        link.close()
    assert waiting                                  # the read did not wait for the proposal
    assert read["id"] == 2 and read["result"]["structuredContent"] == {"text": "x = 1\n"}
    assert proposed["id"] == 1 and proposed["result"]["structuredContent"] == {"applied": True}
    assert len(world.conns) >= 2                    # each concurrent call its own connection
    assert world.foreign == []                      # each used by the thread that made it only
    assert all(c.closed for c in world.conns)


def test_calls_beyond_the_pool_wait_for_a_worker_and_all_are_answered():
    world = World()
    link = CoreLink(CallPool(world.connect, size=2))
    server = McpStdioServer(link, "c1", "tok")

    async def go() -> list[dict[str, Any]]:
        return await asyncio.wait_for(asyncio.gather(*(
            server.handle(call(i, "read_buffer", {"path": "a.py"})) for i in range(20))), 20)
    try:
        answers = asyncio.run(go())
    finally:
        link.close()
    assert [a["id"] for a in answers] == list(range(20))
    assert all(a["result"]["isError"] is False for a in answers)
    assert 1 <= len(world.conns) <= 2 and world.foreign == []


def test_a_failed_connection_is_a_refusal_and_the_next_call_connects_again():
    from rio.protocol.errors import BusError
    world = World()
    failures = [BusError("unreachable", "The instance did not answer.", "Check `rio status`.")]

    def connect() -> FakeConn:
        if failures:
            raise failures.pop()
        return world.connect()
    link = CoreLink(CallPool(connect, size=1))
    server = McpStdioServer(link, "c1", "tok")
    try:
        # the first connection (made at start) failed: this call connects again
        first = asyncio.run(server.handle(call(1, "list_buffers", {})))
    finally:
        link.close()
    assert first["result"]["isError"] is False and len(world.conns) == 1


def test_a_call_now_is_served_while_every_worker_waits_for_the_user():
    """mcp.cancel is sent to end a call in flight: queued behind the calls holding every
    worker, it would wait for one of them to end (up to 360 s) and cancel nothing."""
    world = World()
    pool = CallPool(world.connect, size=1)
    try:
        proposal = pool.submit("mcp.call", {"tool": "propose_edit"}, 30)
        assert world.proposing.wait(10)
        cancel = pool.submit_now("mcp.cancel", {"call": "stdio-1"}, 5)
        assert cancel.result(timeout=10) == {"turn": "t1", "result": {"text": "x = 1\n"}}
        assert not proposal.done()
        assert len(world.conns) == 2 and world.foreign == []   # its own connection, closed
        assert world.conns[1].closed
    finally:
        world.release.set()
        pool.close()


def test_a_call_cancelled_while_it_waits_for_a_worker_is_never_sent():
    world = World()
    link = CoreLink(CallPool(world.connect, size=1))

    async def go() -> None:
        busy = asyncio.ensure_future(link.call("mcp.call", {"tool": "propose_edit"}, 30))
        assert await asyncio.to_thread(world.proposing.wait, 10)
        queued = asyncio.ensure_future(link.call("mcp.call", {"tool": "read_buffer"}, 30))
        await asyncio.sleep(0.05)     # a negative check: the queued call is not sent meanwhile
        queued.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await queued              # its job is cancelled before the worker is free
        world.release.set()
        await asyncio.wait_for(busy, 10)
    try:
        asyncio.run(go())
        assert link.calls.submit("mcp.call", {"tool": "list_buffers"}, 5).result(10)
    finally:
        world.release.set()
        link.close()
    assert world.sent == ["mcp.call", "mcp.call"]   # the proposal and the last call only


def test_closing_does_not_wait_for_a_worker_still_waiting_for_the_user():
    """The worker's call may wait 360 s; closing waits for the idle workers only (it waited
    5 s for the busy one, half of `rio mcp`'s 10 s exit)."""
    import time
    world = World()
    pool = CallPool(world.connect, size=2)
    try:
        pool.submit("mcp.call", {"tool": "propose_edit"}, 30)
        assert world.proposing.wait(10)
        assert pool.submit("mcp.call", {"tool": "read_buffer"}, 30).result(10)
        started = time.monotonic()
        pool.close()
        took = time.monotonic() - started
        assert took < 1.0, took
        assert sum(c.closed for c in world.conns) == 1    # the idle worker's, not the busy one's
    finally:
        world.release.set()


def test_a_worker_that_takes_a_queued_call_is_not_counted_idle():
    """The count of idle workers is what promises a call a worker: one counted idle while it
    ran a queued call let a later call (an mcp.cancel too) queue behind a busy worker."""
    from tests.support import wait_for
    world = World()
    pool = CallPool(world.connect, size=1)
    try:
        pool.connecting.result(10)
        proposal = pool.submit("mcp.call", {"tool": "propose_edit"}, 30)
        assert world.proposing.wait(10)
        queued = pool.submit("mcp.call", {"tool": "read_buffer"}, 30)   # waits for the worker
        world.release.set()
        assert proposal.result(10) and queued.result(10)
        assert wait_for(lambda: not pool.busy and pool.idle >= 1, 10)
        assert (pool.idle, pool.waiting, len(pool.workers)) == (1, 0, 1)
    finally:
        world.release.set()
        pool.close()
