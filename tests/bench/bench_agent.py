"""Issue 5's numbers: text deltas per second end to end (fake Anthropic server streaming as
fast as it can → agent session → bus → a subscriber) against a bare httpx SSE reader of the
same stream in the same run, and the time to the first delta, both ways.

``python -m tests.bench agent [--quick]``. Goals: ≥ 20k deltas/s and ≤ 1 ms added per delta;
first-delta overhead ≤ 10 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import httpx

from rio.protocol.frames import thaw
from tests.bench.common import Row
from tests.fakes.model_servers import FakeModelServer, Reply, anthropic_text
from tests.support import RioServer, rio_env, wait_for


def pieces(n: int) -> list[str]:
    return [f"d{i} " for i in range(n)]


def grouped(reply: Reply, per_chunk: int = 64) -> Reply:
    """The same events, many per HTTP chunk: one flush per SSE event would make the fake
    server, not the readers, the bottleneck (≈ 8k events/s measured)."""
    chunks = reply.chunks
    return replace(reply, chunks=tuple(b"".join(chunks[i:i + per_chunk])
                                       for i in range(0, len(chunks), per_chunk)))


def bare_reader(client: httpx.Client, url: str) -> tuple[float, float, int]:
    """(time to first delta, total time, deltas) reading the SSE stream with httpx alone
    (a client kept across requests, the best case), parsing each data line as JSON the way
    any client must."""
    t0 = time.perf_counter()
    first = None
    count = 0
    if True:
        with client.stream("POST", url + "/v1/messages", json={"stream": True},
                           headers={"x-api-key": "test-key"}) as response:
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                data = json.loads(line[5:])
                if data.get("type") == "content_block_delta" and \
                        data["delta"].get("type") == "text_delta":
                    count += 1
                    if first is None:
                        first = time.perf_counter() - t0
    return first or 0.0, time.perf_counter() - t0, count


async def bare_reader_async(client: httpx.AsyncClient, url: str) -> float:
    """Time to first delta with httpx's asyncio client: the floor for a design that must be
    async (Stop cancels the task that reads the stream)."""
    t0 = time.perf_counter()
    first = 0.0
    async with client.stream("POST", url + "/v1/messages", json={"stream": True},
                             headers={"x-api-key": "test-key"}) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:") and not first:
                data = json.loads(line[5:])
                if data.get("type") == "content_block_delta":
                    first = time.perf_counter() - t0
    return first


class Subscriber:
    def __init__(self, server: RioServer):
        self.conn = server.connect("bench-agent", subscribe=("agent.delta", "agent.turn"))
        self.chars = 0
        self.events = 0
        self.first: float | None = None
        self.last = 0.0
        #: turn id → how it ended (agent.turn), as the store recorded it
        self.ended: dict[str, str] = {}
        self.conn.subscribe("agent.delta", self._on)
        self.conn.subscribe("agent.turn", self._on_turn)

    def _on_turn(self, event) -> None:
        data = thaw(event.data)
        if data.get("state") != "started":
            self.ended[str(data.get("turn"))] = str(data.get("state"))

    def _on(self, event) -> None:
        now = time.perf_counter()
        if self.first is None:
            self.first = now
        self.last = now
        self.events += 1
        self.chars += len(thaw(event.data)["text"])

    def reset(self) -> None:
        self.chars, self.events, self.first, self.last = 0, 0, None, 0.0

    def wait_chars(self, total: int, timeout: float = 120) -> bool:
        deadline = time.monotonic() + timeout
        while self.chars < total and time.monotonic() < deadline:
            self.conn.wait(0.05)
        return self.chars >= total


def _send(sub: Subscriber, conversation: str) -> str:
    """session.send on the subscriber's own (already live) connection: the turn's id."""
    box: dict = {}
    sub.conn.request("session.send", {"conversation": conversation, "text": "go"},
                     lambda reply: box.update(r=reply), timeout=60)
    deadline = time.monotonic() + 60
    while "r" not in box and time.monotonic() < deadline:
        sub.conn.wait(0.001)
    reply = box.get("r")
    if reply is None or not reply.ok:
        raise RuntimeError(f"session.send failed: {reply}")
    return str(thaw(reply.result)["turn"])


def rio_turn(server: RioServer, sub: Subscriber, conversation: str,
             total_chars: int) -> tuple[float, float, dict]:
    """One message sent straight to the session (session.send) on the subscriber's own
    connection, so the numbers hold no connection set-up: (first delta, last delta) after
    sending, seconds; the turn must end done."""
    sub.reset()
    t0 = time.perf_counter()
    turn = _send(sub, conversation)
    deadline = time.monotonic() + 120
    while (sub.chars < total_chars or turn not in sub.ended) and time.monotonic() < deadline:
        sub.conn.wait(0.005)
    if sub.chars < total_chars or sub.ended.get(turn) != "done":
        raise RuntimeError(f"turn did not stream: {sub.ended.get(turn)} "
                           f"chars={sub.chars}/{total_chars}")
    assert sub.first is not None
    return sub.first - t0, sub.last - t0, {"events": sub.events}


def stop_latency(server: RioServer, sub: Subscriber, conversation: str) -> float:
    """Seconds from sending agent.stop (first delta seen) to the turn's end (agent.turn)."""
    sub.reset()
    turn = _send(sub, conversation)
    deadline = time.monotonic() + 60
    while sub.first is None and time.monotonic() < deadline:
        sub.conn.wait(0.005)
    t0 = time.perf_counter()
    sub.conn.request("agent.stop", {"conversation": conversation}, lambda r: None, timeout=30)
    while turn not in sub.ended and time.monotonic() < deadline:
        sub.conn.wait(0.001)
    elapsed = time.perf_counter() - t0
    if sub.ended.get(turn) != "stopped":
        raise RuntimeError(f"the turn did not stop: {sub.ended.get(turn)}")
    return elapsed


def run(quick: bool = False, lean: bool = False) -> list[Row]:
    n = 20_000 if quick else 100_000
    reps = 3 if quick else 5
    text = pieces(n)
    total_chars = sum(map(len, text))
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="rioa") as tmpd, FakeModelServer() as model:
        # TCP_NODELAY on the fake server: its headers and first chunk are separate small
        # writes, and Nagle + the client's delayed ACK add up to 40 ms to the first delta —
        # an artefact of the fake (a real API's first bytes are not held back like that).
        handler = model._server.RequestHandlerClass
        model._server.RequestHandlerClass = type("NoDelayHandler", (handler,),
                                                 {"disable_nagle_algorithm": True})
        tmp = Path(tmpd)
        root = tmp / "proj"
        root.mkdir()
        env = rio_env(tmp)
        env.update({"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "test-key",
                    "RIO_LOG_LEVEL": "DEBUG" if os.environ.get("RIO_BENCH_TRACE") else "WARNING"})
        server = RioServer(root, tmp, env=env).start()
        sub = Subscriber(server)
        client = httpx.Client(timeout=60, trust_env=False)
        try:
            conversation = server.call("agent.new", {"title": "bench"})["conversation"]
            server.call("system.spawn", {"kind": "agent", "key": conversation})

            def up() -> bool:
                try:
                    server.call("session.status", {"conversation": conversation}, timeout=2)
                    return True
                except Exception:  # noqa: BLE001 -- not registered yet
                    return False
            if not wait_for(up, 20):
                raise RuntimeError("the session process did not come up")
            model.push(anthropic_text("warm", "up"))
            rio_turn(server, sub, conversation, len("warmup"))
            # Small replies: time to first delta, both ways.
            bare_first, rio_first, async_first = [], [], []
            loop = asyncio.new_event_loop()
            aclient = httpx.AsyncClient(timeout=60, trust_env=False)
            for _i in range(reps * 2):
                model.push(anthropic_text("hello", " there"))
                bare_first.append(bare_reader(client, model.url)[0])
                model.push(anthropic_text("hello", " there"))
                async_first.append(loop.run_until_complete(
                    bare_reader_async(aclient, model.url)))
                model.push(anthropic_text("hello", " there"))
                rio_first.append(rio_turn(server, sub, conversation, len("hello there"))[0])
            stops = []
            for _i in range(0 if lean else reps * 2):
                model.push(anthropic_text("slow").slow(hold_open=True))
                stops.append(stop_latency(server, sub, conversation))
            loop.run_until_complete(aclient.aclose())
            loop.close()
            # Big replies: deltas per second, both ways.
            bare_rate, rio_rate, per_delta, events = [], [], [], []
            for _i in range(0 if lean else reps):
                model.push(grouped(anthropic_text(*text)))
                _, bare_total, count = bare_reader(client, model.url)
                assert count == n
                model.push(grouped(anthropic_text(*text)))
                _, rio_total, info = rio_turn(server, sub, conversation, total_chars)
                bare_rate.append(n / bare_total)
                rio_rate.append(n / rio_total)
                per_delta.append((rio_total - bare_total) / n)
                events.append(info["events"])
        finally:
            if os.environ.get("RIO_BENCH_TRACE"):
                for log in (tmp / "state" / "logs").glob("*agent*"):
                    print(log.read_text()[-40000:])
            client.close()
            sub.conn.close()
            server.stop()
    bf, rf = statistics.median(bare_first), statistics.median(rio_first)
    af = statistics.median(async_first)
    if not lean:
        rate, floor_rate = statistics.median(rio_rate), statistics.median(bare_rate)
        added = statistics.median(per_delta)
        rows.append(Row("agent", f"deltas/s end to end ({n} deltas)", rate, "/s", floor_rate,
                        "≥ 20k/s", rate >= 20_000,
                        {"bus_events": statistics.median(events)}))
        rows.append(Row("agent", "added per delta vs bare httpx reader",
                        max(0.0, added) * 1e3, "ms", None, "≤ 1 ms", added <= 1e-3))
    rows.append(Row("agent", "time to first delta (floor: bare sync httpx)", rf * 1e3, "ms",
                    bf * 1e3, "≤ bare + 5 ms", rf - bf <= 0.005,
                    {"overhead_ms": (rf - bf) * 1e3}))
    rows.append(Row("agent", "time to first delta (floor: bare async httpx)", rf * 1e3, "ms",
                    af * 1e3, "≤ bare + 5 ms", rf - af <= 0.005,
                    {"overhead_ms": (rf - af) * 1e3}))
    if stops:
        stop = statistics.median(stops)
        rows.append(Row("agent", "Stop → turn ended (agent.stop to agent.turn)", stop * 1e3, "ms",
                        None, "≤ 100 ms", stop <= 0.100, {"max_ms": max(stops) * 1e3}))
    return rows


if __name__ == "__main__":
    from tests.bench.common import print_table
    print_table(run(quick=True))
