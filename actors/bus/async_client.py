"""An asyncio thread's own link to the hub: requests awaited, events published, no thread hop.

The agent session runs its turns on an asyncio loop in a thread of its own. Its bus traffic —
a ``gate.*`` call per tool call, an ``agent.delta`` per network read — would otherwise go
through a thread pool (``BusThread.call`` blocks) and cost two thread switches per call, which
on a loaded two-core machine is milliseconds each. This link is a ``zmq.asyncio`` DEALER owned
by the loop thread alone (never touched by another thread: ZeroMQ sockets are not thread-safe), named under the
host's bus identity (``<identity>/async``) so the hub accepts its events as the service's own,
exactly like the per-thread links of :class:`~actors.bus.service.BusThread`.

Every call gets an answer: a reply, ``bus.timeout`` at its deadline, or ``bus.unreachable``
when the link is closed with calls outstanding.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Mapping
from typing import Any

import zmq
import zmq.asyncio

from actors.bus.client import result_of
from actors.bus.service import BusThread
from actors.bus.sockets import make_dealer
from rio.protocol.errors import BusError, RioError
from rio.protocol.events import CHECKING, guard
from rio.protocol.frames import Event, Reply, Request, decode, encode_checked, thaw

log = logging.getLogger("rio.bus.async")
#: Check every published event against rio/protocol/events.py (RIO_CHECK_EVENTS=1: the test
#: suite): a bad one is raised in the loop's thread, where the turn publishing it runs.
CHECK_EVENTS = CHECKING


class AsyncLink:
    """Create on the loop thread once the host's bus thread is running."""

    def __init__(self, bus: BusThread) -> None:
        if bus.conn is None:
            raise BusError("unreachable", "The bus thread is not running yet.",
                           "Check that the hub is running (`rio status`).")
        self.ctx = zmq.asyncio.Context.shadow(bus.ctx.underlying)
        self.sock = make_dealer(self.ctx, bus.endpoints, bus.conn.identity + b"/async")
        self.name = bus.name
        self._prefix = uuid.uuid4().hex[:6]
        self._ids = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[Reply]] = {}
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def call(self, op: str, args: Mapping[str, Any] | None = None, *,
                   timeout: float = 10.0) -> Any:
        rid = f"{self.name}-a{self._prefix}-{next(self._ids)}"
        payload = encode_checked(Request(rid, op, dict(args or {})))  # too big: raised here
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = future
        try:
            await self.sock.send(payload)
            reply = await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise BusError("timeout", f"No reply to {op} after {timeout:g} s.",
                           "Check `rio status` and try again.", op=op) from None
        finally:
            self._waiting.pop(rid, None)
        return result_of(reply)

    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        if CHECK_EVENTS:
            guard(topic, data)
        # DEALER sends do not block below the high-water mark; the send is queued at once.
        self.sock.send(encode_checked(Event(topic, thaw(dict(data)))))

    async def _read(self) -> None:
        while True:
            frames = await self.sock.recv_multipart()
            try:
                frame = decode(frames[-1])
            except RioError:
                log.warning("%s: undecodable frame on the async link", self.name)
                continue
            except Exception:  # the reader task never dies of one frame
                log.exception("%s: a frame on the async link failed", self.name)
                continue
            if isinstance(frame, Reply):
                future = self._waiting.get(frame.id)
                if future is not None and not future.done():
                    future.set_result(frame)

    def close(self) -> None:
        self._reader.cancel()
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(BusError("unreachable", "The bus link closed.",
                                              "Check `rio status`."))
        self.sock.close(linger=0)
