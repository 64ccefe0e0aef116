"""Loopback model servers that speak the documented wire formats, from a script.

A :class:`FakeModelServer` is a real HTTP/1.1 server on 127.0.0.1 (a thread per connection).
Each POST takes the next :class:`Reply` from its script, so a test can script a multi-turn
tool loop: ``[anthropic_tool_use(...), anthropic_text("done")]``. A script entry may also be
a function of the :class:`RecordedRequest` that returns a Reply. Every request is recorded
(headers lower-cased, body, parsed JSON) for assertions about what was sent.

Streams use chunked transfer encoding so that a cut is a *cut*: the client sees an incomplete
body, exactly as when a real connection dies, instead of a clean end of a close-delimited body.

Builders for both formats: ``anthropic_text``, ``anthropic_tool_use``, ``anthropic_events``,
``anthropic_error``, ``openai_text``, ``openai_tool_call``, ``openai_chunks``, ``json_reply``,
``huge_sse``. Never put a real key near these; tests use "test-key".
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    ``chunks`` are written one HTTP chunk each, ``delay_s`` before each. ``cut_after`` closes
    the connection abruptly after that many chunks. ``hold_open`` keeps the stream open after
    the last chunk (a slow model) until the client goes away or the server stops.
    """

    status: int = 200
    chunks: tuple[bytes, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str = "text/event-stream"
    delay_s: float = 0.0
    cut_after: int | None = None
    hold_open: bool = False
    streamed: bool = True
    reset: bool = False

    def cut(self, after: int, reset: bool = False) -> Reply:
        """Close after ``after`` chunks: with FIN, or with a TCP reset when ``reset``."""
        return replace(self, cut_after=after, reset=reset)

    def slow(self, delay_s: float = 0.0, hold_open: bool = True) -> Reply:
        return replace(self, delay_s=delay_s, hold_open=hold_open)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body or b"null")


ScriptEntry = Reply | Callable[[RecordedRequest], Reply]


@dataclass
class _State:
    script: list[ScriptEntry]
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    disconnected: threading.Event = field(default_factory=threading.Event)
    closing: threading.Event = field(default_factory=threading.Event)
    received: threading.Event = field(default_factory=threading.Event)
    open_streams: int = 0

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # the base class's signature
        pass  # keep test output clean; the recorded requests are the log

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):
            # A client that closes a keep-alive connection hard is normal, not a test failure.
            self.close_connection = True

    def do_GET(self) -> None:  # http.server's naming
        self._serve()

    def do_POST(self) -> None:  # http.server's naming
        self._serve()

    def _serve(self) -> None:
        state = self.server.state
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        request = RecordedRequest(self.command, self.path,
                                  {k.lower(): v for k, v in self.headers.items()}, body)
        with state.lock:
            state.requests.append(request)
            entry = state.script.pop(0) if state.script else None
            state.changed.notify_all()
        state.received.set()
        if entry is None:
            reply = json_reply(500, {"type": "error", "error": {
                "type": "api_error", "message": "fake server: script exhausted"}})
        else:
            reply = entry(request) if callable(entry) else entry
        if reply.streamed:
            self._stream(reply)
        else:
            self._whole(reply)

    def _whole(self, reply: Reply) -> None:
        payload = b"".join(reply.chunks)
        self.send_response(reply.status)
        self.send_header("content-type", reply.content_type)
        self.send_header("content-length", str(len(payload)))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _stream(self, reply: Reply) -> None:
        state = self.server.state
        self.send_response(reply.status)
        self.send_header("content-type", reply.content_type)
        self.send_header("transfer-encoding", "chunked")
        self.send_header("cache-control", "no-cache")
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        with state.lock:
            state.open_streams += 1
        try:
            for number, chunk in enumerate(reply.chunks):
                if reply.cut_after is not None and number >= reply.cut_after:
                    self._cut(reply.reset)
                    return
                if reply.delay_s and self._client_gone(reply.delay_s):
                    state.disconnected.set()
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            if reply.cut_after is not None:
                self._cut(reply.reset)
                return
            if reply.hold_open:
                while not state.closing.is_set():
                    if self._client_gone(0.01):
                        state.disconnected.set()
                        return
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            state.disconnected.set()
            self.close_connection = True
        finally:
            with state.lock:
                state.open_streams -= 1

    def _client_gone(self, wait_s: float) -> bool:
        """Wait up to ``wait_s``; True when the client closed its end (EOF or reset)."""
        readable, _, _ = select.select([self.connection], [], [], wait_s)
        if not readable:
            return False
        try:
            data = self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True
        if data:
            time.sleep(wait_s)  # a pipelined request; not ours to read now
            return False
        self.close_connection = True
        return True

    def _cut(self, reset: bool = False) -> None:
        self.close_connection = True
        try:
            if reset:
                # Linger on with a zero timeout makes close() send RST instead of FIN:
                # the client sees "connection reset by peer", as when a proxy dies.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.rfile.close()
                self.connection.close()
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    state: _State


class FakeModelServer:
    """``with FakeModelServer([reply, ...]) as server: ...``; ``server.url`` is the base URL."""

    def __init__(self, script: Iterable[ScriptEntry] = ()) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = _State(list(script))
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True,
                                        name="fake-model-server")

    @property
    def state(self) -> _State:
        return self._server.state

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self.state.lock:
            return list(self.state.requests)

    @property
    def disconnected(self) -> threading.Event:
        """Set when a client went away while a stream was still being served."""
        return self.state.disconnected

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until ``count`` requests arrived (for tests driving another process)."""
        with self.state.changed:
            if not self.state.changed.wait_for(lambda: len(self.state.requests) >= count,
                                               timeout):
                raise AssertionError(f"expected {count} requests, got "
                                     f"{len(self.state.requests)}")
            return list(self.state.requests)

    @property
    def pending(self) -> int:
        """Script entries not yet consumed."""
        with self.state.lock:
            return len(self.state.script)

    def push(self, *entries: ScriptEntry) -> None:
        with self.state.lock:
            self.state.script.extend(entries)

    def start(self) -> FakeModelServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.state.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- builders: generic ------------------------------------------------------------------------

def sse(event: str | None, data: Any) -> bytes:
    """One SSE event; ``data`` is JSON-encoded unless it is already str/bytes."""
    text = data.decode() if isinstance(data, bytes) else data if isinstance(data, str) \
        else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return (head + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n").encode()


def json_reply(status: int, body: Any, headers: Mapping[str, str] | None = None,
               content_type: str = "application/json") -> Reply:
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Reply(status=status, chunks=(payload,), headers=tuple((headers or {}).items()),
                 content_type=content_type, streamed=False)


def huge_sse(total_bytes: int, piece: int = 64 * 1024) -> Reply:
    """A stream that never ends in time: comment lines until ``total_bytes`` were sent."""
    line = b": " + b"x" * (piece - 3) + b"\n"
    return Reply(chunks=(line,) * (total_bytes // piece + 1))


# --- builders: Anthropic Messages API ---------------------------------------------------------

def _message_start(input_tokens: int) -> bytes:
    return sse("message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1}}})


def _message_end(stop_reason: str, output_tokens: int) -> list[bytes]:
    return [sse("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                  "usage": {"output_tokens": output_tokens}}),
            sse("message_stop", {"type": "message_stop"})]


def _text_block(index: int, pieces: Iterable[str]) -> list[bytes]:
    out = [sse("content_block_start", {"type": "content_block_start", "index": index,
                                       "content_block": {"type": "text", "text": ""}})]
    out += [sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                        "delta": {"type": "text_delta", "text": p}})
            for p in pieces]
    out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


def split_evenly(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def anthropic_events(*pieces: str, tool_uses: Iterable[tuple[str, str, Any]] = (),
                     json_pieces: int = 8, stop_reason: str | None = None,
                     input_tokens: int = 12, output_tokens: int = 7,
                     ping: bool = True) -> list[bytes]:
    """The SSE events of one reply: text ``pieces`` then tool uses (id, name, input), with
    each tool's input JSON split into ``json_pieces`` input_json_delta events."""
    events = [_message_start(input_tokens)]
    if ping:
        events.append(sse("ping", {"type": "ping"}))
    index = 0
    if pieces:
        events += _text_block(index, pieces)
        index += 1
    tool_uses = list(tool_uses)
    for tool_id, name, tool_input in tool_uses:
        events.append(sse("content_block_start", {
            "type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}}}))
        for part in split_evenly(json.dumps(tool_input), json_pieces):
            events.append(sse("content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": part}}))
        events.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    reason = stop_reason or ("tool_use" if tool_uses else "end_turn")
    return events + _message_end(reason, output_tokens)


def anthropic_text(*pieces: str, **kw: Any) -> Reply:
    return Reply(chunks=tuple(anthropic_events(*pieces, **kw)))


def anthropic_tool_use(tool_id: str, name: str, tool_input: Any, *, text: str = "",
                       json_pieces: int = 8, **kw: Any) -> Reply:
    pieces = (text,) if text else ()
    return Reply(chunks=tuple(anthropic_events(*pieces, tool_uses=[(tool_id, name, tool_input)],
                                               json_pieces=json_pieces, **kw)))


def anthropic_error(status: int, error_type: str, message: str = "fake error",
                    headers: Mapping[str, str] | None = None) -> Reply:
    return json_reply(status, {"type": "error", "error": {"type": error_type, "message": message}},
                      {"request-id": "req_fake", **(headers or {})})


def anthropic_stream_error(error_type: str = "overloaded_error", *pieces: str) -> Reply:
    """A 200 stream that fails mid-way with an ``error`` event (after ``pieces`` of text)."""
    events = [_message_start(5)]
    if pieces:
        events += _text_block(0, pieces)[:-1]
    events.append(sse("error", {"type": "error",
                                "error": {"type": error_type, "message": "Overloaded"}}))
    return Reply(chunks=tuple(events))


# --- builders: OpenAI chat completions --------------------------------------------------------

def _chunk(delta: Mapping[str, Any], finish_reason: str | None = None) -> bytes:
    return sse(None, {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                      "created": 0, "model": "fake-model",
                      "choices": [{"index": 0, "delta": dict(delta),
                                   "finish_reason": finish_reason}]})


def openai_chunks(*pieces: str, tool_calls: Iterable[tuple[str, str, Any]] = (),
                  argument_pieces: int = 8, finish_reason: str | None = None,
                  usage: tuple[int, int] | None = (11, 6), done: bool = True) -> list[bytes]:
    out = [_chunk({"role": "assistant", "content": ""})]
    out += [_chunk({"content": p}) for p in pieces]
    tool_calls = list(tool_calls)
    for index, (call_id, name, arguments) in enumerate(tool_calls):
        parts = split_evenly(json.dumps(arguments), argument_pieces)
        out.append(_chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                           "function": {"name": name, "arguments": parts[0]}}]}))
        out += [_chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
                for p in parts[1:]]
    out.append(_chunk({}, finish_reason or ("tool_calls" if tool_calls else "stop")))
    if usage is not None:
        out.append(sse(None, {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                              "choices": [], "usage": {"prompt_tokens": usage[0],
                                                       "completion_tokens": usage[1],
                                                       "total_tokens": sum(usage)}}))
    if done:
        out.append(b"data: [DONE]\n\n")
    return out


def openai_text(*pieces: str, **kw: Any) -> Reply:
    return Reply(chunks=tuple(openai_chunks(*pieces, **kw)))


def openai_tool_call(call_id: str, name: str, arguments: Any, *, text: str = "",
                     argument_pieces: int = 8, **kw: Any) -> Reply:
    pieces = (text,) if text else ()
    return Reply(chunks=tuple(openai_chunks(*pieces, tool_calls=[(call_id, name, arguments)],
                                            argument_pieces=argument_pieces, **kw)))


def openai_error(status: int, message: str = "fake error", error_type: str = "server_error",
                 headers: Mapping[str, str] | None = None) -> Reply:
    return json_reply(status, {"error": {"message": message, "type": error_type, "code": None}},
                      headers)


# --- builders: OpenAI Responses API (codex-acp speaks only this) ------------------------------

def responses_stream(items: Iterable[Mapping[str, Any]], *, model: str = "gpt-5.4-mini") -> Reply:
    """One Responses API stream (``POST /v1/responses``) whose output is ``items``, each sent as
    ``response.output_item.added`` then ``.done``, closed by ``response.completed``."""
    items = [dict(i) for i in items]
    resp = {"id": "resp_fake", "object": "response", "created_at": 0, "status": "in_progress",
            "model": model, "output": []}
    usage = {"input_tokens": 5, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 8}
    chunks = [sse("response.created", {"type": "response.created", "response": resp})]
    for index, item in enumerate(items):
        chunks.append(sse("response.output_item.added", {
            "type": "response.output_item.added", "output_index": index,
            "item": {**item, "status": "in_progress"}}))
        chunks.append(sse("response.output_item.done", {
            "type": "response.output_item.done", "output_index": index, "item": item}))
    chunks.append(sse("response.completed", {"type": "response.completed", "response": {
        **resp, "status": "completed", "output": items, "usage": usage}}))
    return Reply(chunks=tuple(chunks))


def responses_function_call(call_id: str, name: str, arguments: Any, *,
                            namespace: str | None = None) -> Reply:
    """A Responses API stream calling one function. An MCP tool reaches codex's model inside a
    ``namespace`` tool (``mcp__<server>``): the call must name that namespace and the tool's
    bare name (``namespace="mcp__rio", name="propose_edit"``)."""
    item: dict[str, Any] = {"id": f"fc_{call_id}", "type": "function_call",
                            "status": "completed", "call_id": call_id, "name": name,
                            "arguments": json.dumps(arguments)}
    if namespace:
        item["namespace"] = namespace
    return responses_stream([item])


def serve_model() -> Iterator[FakeModelServer]:
    """The loopback Anthropic server for a test module (its ``model_server`` fixture:
    ``yield from serve_model()``)."""
    with FakeModelServer() as server:
        yield server


def fresh_model(model_server: FakeModelServer) -> FakeModelServer:
    """The module's server with nothing scripted (a test's ``model`` fixture): a test that
    failed half-way must not leave replies for the next one."""
    with model_server.state.lock:
        model_server.state.script.clear()
    return model_server
