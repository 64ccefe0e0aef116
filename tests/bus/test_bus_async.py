"""The asyncio link: calls answered (or timed out, or failed), events accepted as the
service's own, through a real hub over ipc:// sockets."""

from __future__ import annotations

import asyncio

import pytest

from actors.bus.async_client import AsyncLink
from actors.bus.client import Endpoints, connect
from actors.bus.service import BusThread
from rio.protocol.errors import BusError, PathError
from rio.protocol.frames import thaw
from tests.support import wait_for

pytestmark = pytest.mark.timeout(30)


def fs_handler(ctx) -> None:
    if ctx.args.get("path") == "slow":
        return  # never answered: the caller's deadline must fire
    if ctx.args.get("path") == "missing":
        ctx.fail(PathError("not_found", "missing does not exist"))
        return
    ctx.reply({"path": ctx.args["path"], "entries": [], "truncated": False})


@pytest.fixture
def service(hub, endpoints):
    bus = BusThread(endpoints, name="svc", handlers={"fs": fs_handler}).start()
    yield bus
    bus.stop()


def test_calls_errors_timeouts_and_events(service: BusThread, endpoints: Endpoints) -> None:
    watcher = connect(endpoints, name="watch", subscribe=("agent.",))
    seen: list[dict] = []
    watcher.subscribe("agent.", lambda e: seen.append(thaw(e.data)))

    async def go() -> None:
        link = AsyncLink(service)
        try:
            results = await asyncio.gather(*(link.call("fs.list", {"path": f"d{i}"})
                                             for i in range(20)))
            assert [r["path"] for r in results] == [f"d{i}" for i in range(20)]
            with pytest.raises(PathError):
                await link.call("fs.list", {"path": "missing"})
            with pytest.raises(BusError) as err:
                await link.call("fs.list", {"path": "slow"}, timeout=0.2)
            assert err.value.kind == "bus.timeout"
            for i in range(3):
                link.publish("agent.delta", {"text": f"t{i}"})
        finally:
            link.close()

    asyncio.run(go())
    wait_for(lambda: len(seen) >= 3, 5, 0.05, pause=watcher.wait)
    watcher.close()
    assert [d["text"] for d in seen] == ["t0", "t1", "t2"]


def test_a_link_needs_a_running_bus_thread(endpoints: Endpoints) -> None:
    async def go() -> None:
        AsyncLink(BusThread(endpoints, name="idle"))
    with pytest.raises(BusError):
        asyncio.run(go())
