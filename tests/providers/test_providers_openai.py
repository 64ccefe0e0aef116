"""The OpenAI-compatible provider (Ollama, LM Studio, custom URL) against a loopback server: what
only its wire format has (request body, bearer key, chunk shapes, Ollama quirks). What every
provider does is in tests/providers/test_providers_behaviour.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest

from rio.agent.config import ProviderSettings
from rio.agent.failures import RetryPolicy
from rio.agent.secrets import Secret
from rio.protocol.errors import AgentError
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
)
from rio.providers.openai_compat import (
    BearerKeyAuth,
    OpenAICompatProvider,
    OpenAIStreamParser,
    messages_to_wire,
)
from rio.providers.sse import SseEvent
from tests.fakes.model_servers import (
    FakeModelServer,
    openai_chunks,
    openai_error,
    openai_text,
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


