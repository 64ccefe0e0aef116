"""The Anthropic provider against a loopback server speaking the documented Messages API: what
only its wire format has (request body, headers, event kinds, auth, configuration). What every
provider does is in tests/providers/test_providers_behaviour.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rio.agent.config import ProviderSettings
from rio.agent.failures import RetryPolicy
from rio.agent.secrets import Secret, SecretStore
from rio.providers.anthropic import AnthropicProvider, AnthropicStreamParser, build_body
from rio.providers.anthropic_auth import ApiKeyAuth
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
from rio.providers.sse import SseEvent
from tests.fakes.model_servers import (
    FakeModelServer,
    Reply,
    anthropic_error,
    anthropic_events,
    anthropic_stream_error,
    anthropic_text,
    anthropic_tool_use,
)

pytestmark = pytest.mark.timeout(30)

KEY = "test-key"
TOOL = ToolSpec("fs_read", "Read a file in the project.",
                {"type": "object", "properties": {"path": {"type": "string"}},
                 "required": ["path"]})
REQUEST = ProviderRequest(system="You are a test.", messages=(Message.user("hello"),),
                          tools=(TOOL,))


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as fake:
        yield fake


class Run:
    """A provider wired to the fake server, a recording ``post`` and a fake ``sleep``."""

    def __init__(self, endpoint: str, key: str | None = KEY, **settings: object) -> None:
        self.events: list[Event] = []
        self.sleeps: list[float] = []
        config = ProviderSettings("anthropic", endpoint, "claude-test", max_tokens=1024,
                                  timeout_s=10.0, **settings)  # type: ignore[arg-type]
        auth = ApiKeyAuth(lambda: (Secret(key) if key else None, "test"))
        self.provider = AnthropicProvider(config, auth=auth, sleep=self._sleep,
                                          retry=RetryPolicy(max_attempts=3))

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
        last = self.events[-1]
        assert isinstance(last, ProviderFailure), self.events
        return last


# --- the happy paths --------------------------------------------------------------------------

def test_request_shape_and_key_only_in_x_api_key(server: FakeModelServer) -> None:
    server.push(anthropic_text("ok"))
    Run(server.url)()
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    others = {k: v for k, v in request.headers.items() if k != "x-api-key"}
    assert KEY not in json.dumps(others) and KEY.encode() not in request.body
    body = request.json
    assert body == {
        "model": "claude-test", "max_tokens": 1024, "stream": True, "system": "You are a test.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
        "tools": [{"name": "fs_read", "description": "Read a file in the project.",
                   "input_schema": TOOL.input_schema}]}


def test_api_version_comes_from_settings(server: FakeModelServer) -> None:
    server.push(anthropic_text("ok"))
    Run(server.url, api_version="2099-01-01")()
    assert server.requests[0].headers["anthropic-version"] == "2099-01-01"


def test_tool_use_with_empty_input_gives_empty_dict(server: FakeModelServer) -> None:
    server.push(anthropic_tool_use("toolu_2", "buffer_list", {}, json_pieces=1))
    events = Run(server.url)()
    assert ToolCall("toolu_2", "buffer_list", {}) in events


def test_multi_turn_script_consumes_one_reply_per_request(server: FakeModelServer) -> None:
    server.push(anthropic_tool_use("toolu_1", "fs_read", {"path": "a"}),
                anthropic_text("It says hi."))
    first = Run(server.url)()
    call = next(e for e in first if isinstance(e, ToolCall))
    follow_up = ProviderRequest(system="s", messages=(
        Message.user("hello"), Message.assistant(tool_uses=(call.to_block(),)),
        Message.tool_results((ToolResultBlock("toolu_1", "hi"),))))
    second = Run(server.url)(follow_up)
    assert second[-1] == Done("end_turn", Usage(12, 7))
    sent = server.requests[1].json["messages"]
    assert sent[1] == {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {"path": "a"}}]}
    assert sent[2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"}]}


def test_build_body_marks_error_results_and_drops_empty_text() -> None:
    settings = ProviderSettings("anthropic", "https://x", "m", max_tokens=5)
    request = ProviderRequest(system="", messages=(
        Message("assistant", (ToolUseBlock("t", "n", {}),)),
        Message.tool_results((ToolResultBlock("t", "boom", is_error=True),))),
        max_tokens=99, model="other", temperature=0.0, stop_sequences=("END",))
    body = build_body(request, settings)
    assert "system" not in body and "tools" not in body
    assert (body["model"], body["max_tokens"], body["temperature"], body["stop_sequences"]) == \
        ("other", 99, 0.0, ["END"])
    assert body["messages"][1]["content"][0]["is_error"] is True


def test_unknown_events_and_thinking_blocks_are_ignored() -> None:
    posted: list[Event] = []
    parser = AnthropicStreamParser(posted.append)
    for name, data in [
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
        ("content_block_start", {"index": 0, "content_block": {"type": "thinking"}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "h"}}),
        ("content_block_stop", {"index": 0}),
        ("some_future_event", {"type": "some_future_event"}),
        ("message_delta", {"delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ]:
        parser.handle(SseEvent(name, json.dumps(data)))
    assert posted == [Done("max_tokens", Usage(3, 9))]


# --- failures before anything was shown: classified, retried where safe ---------------------

def test_overloaded_529_backs_off_exponentially(server: FakeModelServer) -> None:
    overloaded = anthropic_error(529, "overloaded_error", "Overloaded")
    server.push(overloaded, overloaded, overloaded)
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.server_error"
    assert "overloaded" in run.failure.error.message
    assert run.sleeps == [1.0, 2.0]


def test_error_event_before_any_text_is_retried(server: FakeModelServer) -> None:
    server.push(anthropic_stream_error("overloaded_error"), anthropic_text("second try"))
    run = Run(server.url)
    run()
    assert run.text == "second try" and len(server.requests) == 2


# --- failures after text was shown: partial, never retried ------------------------------------

def test_error_event_mid_stream_is_partial_server_error(server: FakeModelServer) -> None:
    server.push(anthropic_stream_error("overloaded_error", "Half an ans"))
    run = Run(server.url)
    run()
    assert run.text == "Half an ans"
    assert run.failure.error.kind == "agent.server_error" and run.failure.partial
    assert run.failure.error.details["stream_error"] == "overloaded_error"


# --- replies Rio cannot read ------------------------------------------------------------------

# --- credentials ------------------------------------------------------------------------------

def test_no_key_is_not_configured_and_nothing_is_sent(server: FakeModelServer) -> None:
    run = Run(server.url, key=None)
    run()
    error = run.failure.error
    assert error.kind == "agent.not_configured"
    assert error.next == "Set your API key with `rio key set anthropic` or ANTHROPIC_API_KEY."
    assert server.requests == []


def test_https_endpoint_goes_through_a_transport_port() -> None:
    body = b"".join(anthropic_events("via port"))
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    settings = ProviderSettings("anthropic", "https://api.example.com/", "m")
    provider = AnthropicProvider(settings, auth=ApiKeyAuth.from_key(KEY),
                                 transport=httpx.MockTransport(handler))
    events: list[Event] = []
    asyncio.run(provider.stream(REQUEST, events.append))
    assert events[0] == Delta("via port")
    assert str(seen[0].url) == "https://api.example.com/v1/messages"


# --- cancellation (the Stop button) -----------------------------------------------------------

def test_default_construction_reads_config_env_and_key(server: FakeModelServer,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[providers.anthropic]\nmodel = "from-config"\n')
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server.push(anthropic_text("configured"))
    provider = AnthropicProvider(secrets=SecretStore(keyring_backend=False))
    events: list[Event] = []
    asyncio.run(provider.stream(REQUEST, events.append))
    assert events[0] == Delta("configured")
    [request] = server.requests
    assert request.headers["x-api-key"] == KEY and request.json["model"] == "from-config"


def test_broken_tool_json_without_max_tokens_is_unexpected(server: FakeModelServer) -> None:
    events = anthropic_events(tool_uses=[("t1", "fs_read", {"path": "abc"})], json_pieces=3)
    last_piece = max(i for i, e in enumerate(events) if b"input_json_delta" in e)
    server.push(Reply(chunks=tuple(events[:last_piece] + events[last_piece + 1:])))
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.unexpected_response"


