"""The OpenAI-compatible provider (Ollama, LM Studio, custom URL) against a loopback server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest

from rio.agent_config import ProviderSettings
from rio.errors import AgentError
from rio.failures import RetryPolicy
from rio.providers.base import (
    Delta,
    Done,
    Event,
    Message,
    ProviderFailure,
    ProviderRequest,
    ToolCall,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Usage,
    discover_providers,
)
from rio.providers.openai_compat import (
    BearerKeyAuth,
    OpenAICompatProvider,
    OpenAIStreamParser,
    messages_to_wire,
)
from rio.providers.sse import SseEvent
from rio.secrets import Secret
from tests.fakes.model_servers import (
    FakeModelServer,
    Reply,
    openai_chunks,
    openai_error,
    openai_text,
    openai_tool_call,
    sse,
)

pytestmark = pytest.mark.timeout(30)

TOOL = ToolSpec("fs_read", "Read a file.", {"type": "object",
                                             "properties": {"path": {"type": "string"}}})
REQUEST = ProviderRequest(system="Be brief.", messages=(Message.user("hi"),), tools=(TOOL,))


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as fake:
        yield fake


class Run:
    def __init__(self, endpoint: str, key: str | None = None, attempts: int = 3,
                 **settings: object) -> None:
        self.events: list[Event] = []
        self.sleeps: list[float] = []
        config = ProviderSettings("openai", endpoint, "llama-test", max_tokens=256,
                                  timeout_s=10.0, **settings)  # type: ignore[arg-type]
        auth = BearerKeyAuth(lambda: (Secret(key) if key else None, "test"))
        self.provider = OpenAICompatProvider(config, auth=auth, sleep=self._sleep,
                                             retry=RetryPolicy(max_attempts=attempts))

    async def _sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def __call__(self, request: ProviderRequest = REQUEST) -> list[Event]:
        asyncio.run(self.provider.stream(request, self.events.append))
        return self.events

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, Delta))

    @property
    def failure(self) -> ProviderFailure:
        assert isinstance(self.events[-1], ProviderFailure), self.events
        return self.events[-1]


def test_text_stream_and_request_shape(server: FakeModelServer) -> None:
    server.push(openai_text("Hi ", "there"))
    events = Run(server.url + "/v1")()
    assert events == [Delta("Hi "), Delta("there"), Done("end_turn", Usage(11, 6))]
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert "authorization" not in request.headers  # no key: nothing to send
    assert request.json == {
        "model": "llama-test", "max_tokens": 256, "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {
            "name": "fs_read", "description": "Read a file.", "parameters": TOOL.input_schema}}]}


def test_key_goes_as_bearer_to_loopback(server: FakeModelServer) -> None:
    server.push(openai_text("ok"))
    Run(server.url, key="test-key")()
    assert server.requests[0].headers["authorization"] == "Bearer test-key"


def test_tool_call_arguments_split_across_chunks(server: FakeModelServer) -> None:
    arguments = {"path": "docs/a b.md", "lines": [1, 20]}
    server.push(openai_tool_call("call_7", "fs_read", arguments, text="Let me look.",
                                 argument_pieces=17))
    events = Run(server.url)()
    assert events == [Delta("Let me look."), ToolCall("call_7", "fs_read", arguments),
                      Done("tool_use", Usage(11, 6))]


def test_two_parallel_tool_calls_keep_their_index() -> None:
    posted: list[Event] = []
    parser = OpenAIStreamParser(posted.append)
    chunks = [
        {"choices": [{"delta": {"tool_calls": [
            {"index": 0, "id": "a", "function": {"name": "one", "arguments": '{"x":'}},
            {"index": 1, "id": "b", "function": {"name": "two", "arguments": '{"y":'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [
            {"index": 1, "function": {"arguments": "2}"}},
            {"index": 0, "function": {"arguments": "1}"}}]}}]},
        {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
    ]
    for chunk in chunks:
        parser.handle(SseEvent("message", json.dumps(chunk)))
    parser.handle(SseEvent("message", "[DONE]"))
    assert posted == [ToolCall("a", "one", {"x": 1}), ToolCall("b", "two", {"y": 2}),
                      Done("tool_use", Usage())]


def test_ollama_style_whole_tool_call_with_stop_reason() -> None:
    # Ollama sends arguments as an object, no index, and finish_reason "stop".
    posted: list[Event] = []
    parser = OpenAIStreamParser(posted.append)
    parser.handle(SseEvent("message", json.dumps({"choices": [{"delta": {"tool_calls": [
        {"id": "call_x", "function": {"name": "fs_list", "arguments": {"path": "."}}}]}}]})))
    parser.handle(SseEvent("message", json.dumps(
        {"choices": [{"delta": {}, "finish_reason": "stop"}]})))
    parser.finish()
    assert posted == [ToolCall("call_x", "fs_list", {"path": "."}), Done("tool_use", Usage())]


def test_length_maps_to_max_tokens_and_missing_done_is_tolerated(server: FakeModelServer) -> None:
    server.push(openai_text("cut", finish_reason="length", done=False, usage=None))
    events = Run(server.url)()
    assert events[-1] == Done("max_tokens", Usage())


def test_conversation_with_tools_maps_to_tool_messages() -> None:
    wire = messages_to_wire("", (
        Message.user("read a"),
        Message.assistant("ok", (ToolUseBlock("c1", "fs_read", {"path": "a"}),)),
        Message.tool_results((ToolResultBlock("c1", "no such file", is_error=True),), "and?"),
        Message.assistant("done")))
    assert wire == [
        {"role": "user", "content": "read a"},
        {"role": "assistant", "content": "ok", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "fs_read", "arguments": '{"path": "a"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: no such file"},
        {"role": "user", "content": "and?"},
        {"role": "assistant", "content": "done"}]


def test_cut_mid_stream_is_partial(server: FakeModelServer) -> None:
    server.push(Reply(chunks=tuple(openai_chunks("a", "b", "c"))).cut(after=3))
    run = Run(server.url)
    run()
    assert run.text == "ab"
    assert run.failure.partial and run.failure.error.kind == "agent.network"


def test_clean_end_without_finish_is_a_cut(server: FakeModelServer) -> None:
    server.push(Reply(chunks=tuple(openai_chunks("a")[:2])))
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.network" and run.failure.partial


def test_error_chunk_mid_stream(server: FakeModelServer) -> None:
    server.push(Reply(chunks=(*openai_chunks("x")[:2],
                              sse(None, {"error": {"message": "model crashed"}}))))
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.server_error"
    assert "model crashed" in run.failure.error.message and run.failure.partial


def test_http_errors_are_classified_and_retried_where_safe(server: FakeModelServer) -> None:
    server.push(openai_error(503, "loading model"), openai_text("ready"))
    run = Run(server.url)
    run()
    assert run.text == "ready" and run.sleeps == [1.0]


def test_ollama_404_model_not_found(server: FakeModelServer) -> None:
    server.push(openai_error(404, 'model "nope" not found, try pulling it first',
                             error_type="api_error"))
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.request_rejected"
    assert "nope" in run.failure.error.message and "[providers.openai]" in run.failure.error.next


def test_rate_limited_with_retry_after(server: FakeModelServer) -> None:
    server.push(openai_error(429, "slow down", "rate_limit_error", {"retry-after": "90"}))
    run = Run(server.url)
    run()
    # 90 s is more than the policy will sleep through: shown to the user instead.
    assert run.failure.error.kind == "agent.rate_limited"
    assert run.failure.error.next == "Retry in 90 s." and run.sleeps == []


def test_malformed_chunk(server: FakeModelServer) -> None:
    server.push(Reply(chunks=(b"data: {oops\n\n",)))
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.unexpected_response"


def test_key_refused_over_plain_http_to_a_remote_host() -> None:
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(500))
    settings = ProviderSettings("openai", "http://10.1.2.3:8080/v1", "m")
    auth = BearerKeyAuth(lambda: (Secret("test-key"), "test"))
    provider = OpenAICompatProvider(settings, auth=auth, transport=transport)
    events: list[Event] = []
    asyncio.run(provider.stream(REQUEST, events.append))
    assert isinstance(events[0], ProviderFailure)
    assert events[0].error.kind == "agent.insecure_endpoint" and "https" in events[0].error.next
    assert seen == []


def test_no_key_over_plain_http_to_a_remote_host_is_allowed() -> None:
    body = b"".join(openai_chunks("lan"))
    transport = httpx.MockTransport(lambda r: httpx.Response(
        200, content=body, headers={"content-type": "text/event-stream; charset=utf-8"}))
    settings = ProviderSettings("openai", "http://10.1.2.3:8080/v1", "m")
    provider = OpenAICompatProvider(settings, auth=BearerKeyAuth(lambda: (None, None)),
                                    transport=transport)
    events: list[Event] = []
    asyncio.run(provider.stream(REQUEST, events.append))
    assert events[0] == Delta("lan")


def test_cancel_closes_the_connection(server: FakeModelServer) -> None:
    server.push(Reply(chunks=tuple(openai_chunks("thinking")[:2]), hold_open=True))
    run = Run(server.url)

    async def main() -> None:
        first = asyncio.Event()

        def post(event: Event) -> None:
            run.events.append(event)
            first.set()

        task = asyncio.create_task(run.provider.stream(REQUEST, post))
        await asyncio.wait_for(first.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert server.disconnected.wait(5)
    assert run.events == [Delta("thinking")]


def test_discovered_through_entry_points() -> None:
    assert discover_providers()["openai"] is OpenAICompatProvider


def test_length_inside_tool_arguments_is_output_truncated() -> None:
    posted: list[Event] = []
    parser = OpenAIStreamParser(posted.append)
    parser.handle(SseEvent("message", json.dumps({"choices": [{"delta": {"tool_calls": [
        {"index": 0, "id": "c", "function": {"name": "propose_edit",
                                             "arguments": '{"new_text": "abc'}}]}}]})))
    with pytest.raises(AgentError) as caught:
        parser.handle(SseEvent("message", json.dumps(
            {"choices": [{"delta": {}, "finish_reason": "length"}]})))
    assert caught.value.kind == "agent.output_truncated"
    assert posted == []


def test_script_entries_can_answer_from_the_request(server: FakeModelServer) -> None:
    # The form agent-loop tests use: the reply depends on what the client sent.
    server.push(lambda request: openai_text(f"{len(request.json['messages'])} messages"))
    run = Run(server.url)
    run()
    assert run.text == "2 messages"  # system + user
    assert server.wait_for_requests(1)[0].path == "/chat/completions"
    assert server.pending == 0


def test_an_exhausted_script_answers_500(server: FakeModelServer) -> None:
    run = Run(server.url, attempts=1)
    run()
    assert run.failure.error.kind == "agent.server_error"
    assert "script exhausted" in run.failure.error.message
