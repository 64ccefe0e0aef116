"""``rio mcp`` serves tool calls at once (rio/mcp/server.py over actors/bus/call_pool.py): a
proposal waiting for the user does not hold up the agent's reads, each bus connection is used
by the thread that made it alone, and closing the link closes the idle workers' connections.
No processes: the bus connection is a fake with the ``call``/``close`` of a real one."""

from __future__ import annotations

import asyncio
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
        if args["tool"] == "propose_edit":
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
    server = McpStdioServer(link, "c1", "tok", "claude")

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
    server = McpStdioServer(link, "c1", "tok", "claude")

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
    server = McpStdioServer(link, "c1", "tok", "claude")
    try:
        # the first connection (made at start) failed: this call connects again
        first = asyncio.run(server.handle(call(1, "list_buffers", {})))
    finally:
        link.close()
    assert first["result"]["isError"] is False and len(world.conns) == 1
