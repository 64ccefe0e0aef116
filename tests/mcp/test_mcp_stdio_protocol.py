"""``rio mcp`` holds to the MCP spec (2025-06-18 / 2025-11-25) where a client can tell
(rio/mcp/server.py): ``notifications/cancelled`` cancels the request in flight, answers nothing
and sends ``mcp.cancel`` for its call; a request whose id is null (or not a string or number)
is Invalid Request, never served; ``tools/list`` with a cursor is Invalid params; stdin's end
cancels every call in flight and the process ends within a second.

The first tests drive :class:`McpStdioServer` against a fake link in one asyncio loop; the last
starts the real ``python -P -m rio.cli mcp`` against a fake endpoint of this test's own (Rio's
MCP endpoint as `rio mcp` sees it: ``POST /rio/stdio`` on 127.0.0.1, the token in a header —
no bus, no instance file, no token file: it runs in the agent's box, ADR-0038)."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rio.mcp.server import McpStdioServer

pytestmark = pytest.mark.timeout(60)


class Link:
    """CoreLink's two calls: an ``mcp.call`` of ``propose_edit`` is a question to the user that
    is never answered, anything else answers at once; ``call_now`` (mcp.cancel) answers at
    once, or never when ``unreachable``."""

    def __init__(self, unreachable: bool = False) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.unreachable = unreachable

    async def call(self, op: str, args: dict[str, Any], timeout: float) -> Any:
        self.sent.append((op, args))
        if args["tool"] == "propose_edit":
            await asyncio.Event().wait()
        return {"turn": "t1", "result": {"text": "x = 1\n"}}

    async def call_now(self, op: str, args: dict[str, Any], timeout: float) -> Any:
        self.sent.append((op, args))
        if self.unreachable:
            await asyncio.Event().wait()
        return {}

    def ops(self, op: str) -> list[dict[str, Any]]:
        return [args for sent, args in self.sent if sent == op]


def request(ident: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params or {}}


def propose(ident: Any) -> dict[str, Any]:
    return request(ident, "tools/call", {"name": "propose_edit", "arguments": {
        "path": "a.py", "old_text": "1", "new_text": "2"}})


def cancelled(ident: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": ident, "reason": "the user pressed Stop"}}


async def until(condition: Any, timeout: float = 10.0) -> None:
    """Let the loop run until ``condition()`` holds (the fake link answers without threads)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.001)


def test_a_request_whose_id_is_null_or_not_a_string_or_number_is_refused_never_served():
    link = Link()
    server = McpStdioServer(link, "c1", "tok")   # type: ignore[arg-type]
    for bad in (None, True, [1], {"n": 1}):
        answer = asyncio.run(server.handle(request(bad, "tools/call", {
            "name": "read_buffer", "arguments": {"path": "a.py"}})))
        assert answer is not None and answer["id"] is None, bad
        assert answer["error"]["code"] == -32600, bad
        ping = asyncio.run(server.handle(request(bad, "ping")))
        assert ping is not None and ping["error"]["code"] == -32600 and ping["id"] is None
    assert link.sent == []                                  # never served
    for good in ("a", 0, 7, 1.5):
        answer = asyncio.run(server.handle(request(good, "ping")))
        assert answer == {"jsonrpc": "2.0", "id": good, "result": {}}


def test_tools_list_with_any_cursor_is_invalid_params():
    server = McpStdioServer(Link(), "c1", "tok")   # type: ignore[arg-type]
    for cursor in ("next", "", 2, None):
        answer = asyncio.run(server.handle(request(1, "tools/list", {"cursor": cursor})))
        assert answer is not None and answer["error"]["code"] == -32602, cursor
        assert "unknown cursor" in answer["error"]["message"]
    first = asyncio.run(server.handle(request(2, "tools/list")))
    assert first is not None and "nextCursor" not in first["result"]
    assert {t["name"] for t in first["result"]["tools"]} >= {"read_buffer", "propose_edit"}


def test_a_cancelled_request_is_not_answered_and_its_call_is_cancelled_in_the_instance():
    link = Link()
    server = McpStdioServer(link, "c1", "tok")   # type: ignore[arg-type]
    answers: list[dict[str, Any]] = []

    async def go() -> asyncio.Task[None]:
        server.receive(propose(7), answers.append)
        await until(lambda: link.ops("mcp.call"))
        task = server.serving[7]
        server.receive(cancelled(7), answers.append)
        await until(lambda: link.ops("mcp.cancel"))
        server.receive(request(8, "ping"), answers.append)
        await until(lambda: answers)
        await asyncio.sleep(0.05)   # a negative check: nothing more is written meanwhile
        return task
    task = asyncio.run(go())
    assert task.cancelled()
    assert answers == [{"jsonrpc": "2.0", "id": 8, "result": {}}]   # nothing for 7
    [call] = link.ops("mcp.call")
    assert "agent" not in call and call["call"].startswith("stdio-")
    assert link.ops("mcp.cancel") == [{"conversation": "c1", "token": "tok",
                                       "call": call["call"]}]
    assert server.serving == {}


def test_a_cancel_for_an_unknown_or_finished_request_is_ignored():
    link = Link()
    server = McpStdioServer(link, "c1", "tok")   # type: ignore[arg-type]
    answers: list[dict[str, Any]] = []
    read = request("r", "tools/call", {"name": "read_buffer", "arguments": {"path": "a.py"}})

    async def go() -> None:
        server.receive(read, answers.append)
        await until(lambda: answers)
        for ident in ("r", 99, None, [1]):
            server.receive(cancelled(ident), answers.append)
        server.receive({"jsonrpc": "2.0", "method": "notifications/cancelled"}, answers.append)
        server.receive(request(2, "ping"), answers.append)
        await until(lambda: len(answers) == 2)
    asyncio.run(go())
    assert [a["id"] for a in answers] == ["r", 2]
    assert answers[0]["result"]["structuredContent"] == {"text": "x = 1\n"}
    assert link.ops("mcp.cancel") == []


def test_each_call_has_an_id_of_its_own():
    link = Link()
    server = McpStdioServer(link, "c1", "tok")   # type: ignore[arg-type]
    for n in range(3):
        asyncio.run(server.handle(request(n, "tools/call", {"name": "list_buffers"})))
    ids = [args["call"] for args in link.ops("mcp.call")]
    assert len(set(ids)) == 3 and all(i.startswith(f"stdio-{os.getpid()}-") for i in ids)


@pytest.mark.parametrize("unreachable", [False, True])
def test_the_end_of_stdin_cancels_every_call_in_flight_in_bounded_time(unreachable):
    """stdin's end is the client gone: each call in flight is cancelled in the instance (best
    effort: an unreachable bus is waited for the grace only), nothing more is answered, and
    a request answered without the bus, read just before the end, still is."""
    link = Link(unreachable=unreachable)
    server = McpStdioServer(link, "c1", "tok")   # type: ignore[arg-type]
    answers: list[dict[str, Any]] = []

    async def go() -> float:
        server.receive(propose(1), answers.append)
        server.receive(propose("b"), answers.append)
        await until(lambda: len(link.ops("mcp.call")) == 2)
        server.receive(request(3, "ping"), answers.append)   # read just before the end
        started = time.monotonic()
        await server.close(grace=0.2)
        return time.monotonic() - started
    took = asyncio.run(go())
    assert took < 2.0                                     # 0.2 s grace, twice at most
    assert answers == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
    calls = {args["call"] for args in link.ops("mcp.call")}
    assert {args["call"] for args in link.ops("mcp.cancel")} == calls and len(calls) == 2


# --- the real process ---------------------------------------------------------------------------

class McpProcess:
    """``python -P -m rio.cli mcp`` with its stdout read on a thread, line by line."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
        from actors.runtime import process_control
        self.stderr = log.open("wb")
        self.proc = subprocess.Popen(argv, env=env, cwd=str(cwd), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr,
                                     preexec_fn=process_control.dies_with_this_process())
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float = 20.0) -> dict[str, Any]:
        return self.lines.get(timeout=timeout)

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        for pipe in (self.proc.stdin, self.proc.stdout, self.stderr):
            if pipe is not None:
                pipe.close()


class Held:
    """A call the fake endpoint keeps unanswered (a question to the user) until replied."""

    def __init__(self) -> None:
        self.answer: dict[str, Any] | None = None
        self.done = threading.Event()

    def reply(self, result: Any) -> None:
        self.answer = {"result": result}
        self.done.set()

    def fail(self, message: str) -> None:
        self.answer = {"error": {"kind": "bus.actor_dead", "message": message}}
        self.done.set()


class FakeEndpoint:
    """Rio's MCP endpoint as `rio mcp` sees it (``POST /rio/stdio``, rio/mcp/stdio_link.py):
    ``read_buffer`` answers, any other ``mcp.call`` is a question to the user held
    unanswered; ``mcp.cancel`` is recorded and answered. Each request is recorded as sent,
    with the bearer token it carried as ``token``."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        self.calls: queue.Queue[dict[str, Any]] = queue.Queue()
        self.cancels: queue.Queue[dict[str, Any]] = queue.Queue()
        self.held: list[Held] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # http.server's name
                size = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(size))
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                raw = {**body["args"], "token": token}
                answer: dict[str, Any]
                if body["op"] == "mcp.cancel":
                    fake.cancels.put(raw)
                    answer = {"result": {}}
                elif raw.get("tool") == "read_buffer":
                    answer = {"result": {"turn": "t1", "result": {"text": "x = 1\n"}}}
                else:
                    held = Held()
                    fake.held.append(held)
                    fake.calls.put(raw)
                    held.done.wait(120)
                    answer = held.answer or {"error": {"kind": "bus.timeout",
                                                       "message": "never answered"}}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def gone(self) -> None:
        """The endpoint goes away: no new connection is accepted (held calls stay held)."""
        self.server.shutdown()
        self.server.server_close()

    def stop(self) -> None:
        while self.held:
            self.held.pop().fail("the instance stopped")
        if self.thread.is_alive():
            self.gone()


@pytest.fixture
def endpoint():
    fake = FakeEndpoint()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def rio_mcp(endpoint, tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    # no bus, no instance file, no token file: the endpoint's address and the token, as the
    # entry hands them (ADR-0038); old options are accepted and ignored
    from tests.support import REPO
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO),
           "RIO_MCP_TOKEN": "tok-stdio"}
    proc = McpProcess([sys.executable, "-P", "-m", "rio.cli", "mcp", "--conversation", "c1",
                       "--url", endpoint.url, "--root", str(root), "--agent", "older-entry"],
                      env, root, tmp_path / "rio-mcp.stderr")
    try:
        proc.send(request(0, "initialize", {"protocolVersion": "2025-06-18",
                                            "capabilities": {}}))
        assert proc.answer()["result"]["protocolVersion"] == "2025-06-18"
        proc.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield proc, endpoint
    finally:
        proc.end()


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_rio_mcp_cancels_a_call_on_notifications_cancelled_and_on_the_end_of_stdin(rio_mcp):
    proc, actor = rio_mcp
    # notifications/cancelled: mcp.cancel for that call, and no answer for the request
    proc.send(propose(7))
    first = actor.calls.get(timeout=20)
    assert first["call"].startswith("stdio-") and "agent" not in first
    assert first["conversation"] == "c1" and first["token"] == "tok-stdio"
    proc.send(cancelled(7))
    assert actor.cancels.get(timeout=20) == {"conversation": "c1", "token": "tok-stdio",
                                             "call": first["call"]}
    actor.held.pop().reply({"turn": "t1", "result": {"applied": False}})   # as the core would
    proc.send(request(8, "tools/call", {"name": "read_buffer", "arguments": {"path": "a.py"}}))
    proc.send(request(9, "ping"))
    seen = [proc.answer(), proc.answer()]
    assert sorted(a["id"] for a in seen) == [8, 9]                     # nothing for 7

    # the end of stdin with a call in flight (held, as a question to the user is): its
    # mcp.cancel, and the process ends, its worker waiting on the 360 s call or not
    proc.send(propose(10))
    second = actor.calls.get(timeout=20)
    assert second["call"] not in (first["call"], "")
    assert proc.proc.stdin is not None
    closed = time.monotonic()
    proc.proc.stdin.close()
    assert actor.cancels.get(timeout=10)["call"] == second["call"]
    assert proc.proc.wait(timeout=3) == 0
    took = time.monotonic() - closed
    assert took < 3.0, took     # within 1 s on an idle machine (it took ~10 s)
    assert proc.lines.empty()   # nothing answered after the end


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_rio_mcp_ends_at_the_end_of_stdin_when_the_instance_is_gone(rio_mcp):
    """The cancel is best effort: with the endpoint gone (its mcp.cancel cannot even connect),
    the process still ends within a second of stdin's end, its worker waiting on the 360 s
    call."""
    proc, endpoint = rio_mcp
    proc.send(propose(1))
    endpoint.calls.get(timeout=20)
    endpoint.gone()                    # the endpoint goes first: the call is never answered
    assert proc.proc.stdin is not None
    closed = time.monotonic()
    proc.proc.stdin.close()
    assert proc.proc.wait(timeout=3) == 0
    took = time.monotonic() - closed
    assert took < 3.0, took            # the grace (0.5 s) and the pool's close (0.25 s)
    assert proc.lines.empty()
