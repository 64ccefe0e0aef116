"""The Anthropic provider against a loopback server speaking the documented Messages API."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rio.agent_config import ProviderSettings
from rio.failures import RetryPolicy
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
    discover_providers,
)
from rio.providers.sse import SseEvent
from rio.secrets import Secret, SecretStore
from tests.fakes.model_servers import (
    FakeModelServer,
    Reply,
    anthropic_error,
    anthropic_events,
    anthropic_stream_error,
    anthropic_text,
    anthropic_tool_use,
    huge_sse,
    json_reply,
    sse,
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

def test_text_streams_as_deltas_then_done(server: FakeModelServer) -> None:
    server.push(anthropic_text("Hel", "lo, ", "world"))
    run = Run(server.url)
    events = run()
    assert [e for e in events if isinstance(e, Delta)] == [Delta("Hel"), Delta("lo, "),
                                                          Delta("world")]
    assert events[-1] == Done("end_turn", Usage(12, 7))


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


def test_tool_input_split_across_many_deltas_is_parsed_at_block_stop(
        server: FakeModelServer) -> None:
    tool_input = {"path": "src/main.py", "nested": {"a": [1, 2, 3], "s": "{not json}"}}
    server.push(anthropic_tool_use("toolu_1", "fs_read", tool_input, text="Reading.",
                                   json_pieces=25))
    events = Run(server.url)()
    assert events == [Delta("Reading."), ToolCall("toolu_1", "fs_read", tool_input),
                      Done("tool_use", Usage(12, 7))]


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

@pytest.mark.parametrize("status", [401, 403])
def test_auth_rejected_is_not_retried(server: FakeModelServer, status: int) -> None:
    server.push(anthropic_error(status, "authentication_error", "invalid x-api-key"))
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.auth_rejected"
    assert run.failure.partial is False
    assert run.failure.error.details["status"] == status
    assert "rio key set anthropic" in run.failure.error.next
    assert len(server.requests) == 1 and run.sleeps == []


def test_rate_limit_retries_after_the_servers_delay_then_succeeds(server: FakeModelServer) -> None:
    server.push(anthropic_error(429, "rate_limit_error", headers={"retry-after": "20"}),
                anthropic_text("fine"))
    run = Run(server.url)
    run()
    assert run.sleeps == [20.0]
    assert run.text == "fine" and isinstance(run.events[-1], Done)


def test_rate_limit_gives_up_after_bounded_tries_and_says_when(server: FakeModelServer) -> None:
    limited = anthropic_error(429, "rate_limit_error", headers={"retry-after": "20"})
    server.push(limited, limited, limited, anthropic_text("never reached"))
    run = Run(server.url)
    run()
    error = run.failure.error
    assert error.kind == "agent.rate_limited"
    assert error.next == "Retry in 20 s."
    assert error.details["retry_after_s"] == 20.0
    assert len(server.requests) == 3 and run.sleeps == [20.0, 20.0]


def test_overloaded_529_backs_off_exponentially(server: FakeModelServer) -> None:
    overloaded = anthropic_error(529, "overloaded_error", "Overloaded")
    server.push(overloaded, overloaded, overloaded)
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.server_error"
    assert "overloaded" in run.failure.error.message
    assert run.sleeps == [1.0, 2.0]


def test_server_error_then_success(server: FakeModelServer) -> None:
    server.push(anthropic_error(500, "api_error"), anthropic_text("back"))
    run = Run(server.url)
    run()
    assert run.text == "back" and run.sleeps == [1.0]


def test_model_not_found_is_a_rejected_request(server: FakeModelServer) -> None:
    server.push(anthropic_error(404, "not_found_error", "model: claude-nope"))
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.request_rejected"
    assert "claude-nope" in run.failure.error.message
    assert len(server.requests) == 1


def test_error_event_before_any_text_is_retried(server: FakeModelServer) -> None:
    server.push(anthropic_stream_error("overloaded_error"), anthropic_text("second try"))
    run = Run(server.url)
    run()
    assert run.text == "second try" and len(server.requests) == 2


def test_cut_before_any_text_is_retried(server: FakeModelServer) -> None:
    server.push(anthropic_text("lost").cut(after=1), anthropic_text("whole"))
    run = Run(server.url)
    run()
    assert run.text == "whole" and len(server.requests) == 2


def test_connection_refused_is_network_and_retried() -> None:
    with FakeModelServer() as fake:
        endpoint = fake.url  # the port is closed once the server is gone
    run = Run(endpoint)
    run()
    assert run.failure.error.kind == "agent.network"
    assert run.sleeps == [1.0, 2.0]


# --- failures after text was shown: partial, never retried ------------------------------------

def test_cut_mid_stream_keeps_partial_text(server: FakeModelServer) -> None:
    events = anthropic_events("one ", "two ", "three")
    server.push(Reply(chunks=tuple(events)).cut(after=5), anthropic_text("not used"))
    run = Run(server.url)
    run()
    assert run.text == "one two "
    assert run.failure.partial is True
    assert run.failure.error.kind == "agent.network"
    assert "partial reply was kept" in run.failure.error.message
    assert len(server.requests) == 1 and run.sleeps == []


def test_error_event_mid_stream_is_partial_server_error(server: FakeModelServer) -> None:
    server.push(anthropic_stream_error("overloaded_error", "Half an ans"))
    run = Run(server.url)
    run()
    assert run.text == "Half an ans"
    assert run.failure.error.kind == "agent.server_error" and run.failure.partial
    assert run.failure.error.details["stream_error"] == "overloaded_error"


def test_clean_end_without_message_stop_is_a_cut(server: FakeModelServer) -> None:
    server.push(Reply(chunks=tuple(anthropic_events("partial")[:-2])))
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.network" and run.failure.partial


# --- replies Rio cannot read ------------------------------------------------------------------

def test_malformed_sse_json(server: FakeModelServer) -> None:
    server.push(Reply(chunks=(sse("message_start", "{not json"),)))
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.unexpected_response"
    assert len(server.requests) == 1


def test_wrong_content_type(server: FakeModelServer) -> None:
    server.push(json_reply(200, {"content": [{"type": "text", "text": "hi"}]}))
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.unexpected_response"
    assert "application/json" in run.failure.error.message


def test_response_beyond_the_cap_is_refused(server: FakeModelServer) -> None:
    server.push(huge_sse(4 << 20))
    run = Run(server.url, max_response_bytes=256 * 1024)
    run()
    assert run.failure.error.kind == "agent.unexpected_response"
    assert run.failure.error.details["limit_bytes"] == 256 * 1024


# --- credentials ------------------------------------------------------------------------------

def test_no_key_is_not_configured_and_nothing_is_sent(server: FakeModelServer) -> None:
    run = Run(server.url, key=None)
    run()
    error = run.failure.error
    assert error.kind == "agent.not_configured"
    assert error.next == "Set your API key with `rio key set anthropic` or ANTHROPIC_API_KEY."
    assert server.requests == []


def test_key_is_never_sent_over_plain_http_to_another_host() -> None:
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(500))
    settings = ProviderSettings("anthropic", "http://models.example.com", "m")
    provider = AnthropicProvider(settings, auth=ApiKeyAuth.from_key(KEY), transport=transport)
    events: list[Event] = []
    asyncio.run(provider.stream(REQUEST, events.append))
    [failure] = events
    assert isinstance(failure, ProviderFailure)
    assert failure.error.kind == "agent.insecure_endpoint" and "https" in failure.error.next
    assert seen == []


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


def test_key_does_not_leak_through_repr_or_errors(server: FakeModelServer) -> None:
    server.push(anthropic_error(401, "authentication_error"))
    run = Run(server.url)
    run()
    texts = [repr(run.provider), repr(run.provider._auth), str(run.failure.error),
             json.dumps(run.failure.error.to_wire())]
    assert not any(KEY in t for t in texts)


# --- cancellation (the Stop button) -----------------------------------------------------------

def test_cancelling_the_task_closes_the_connection(server: FakeModelServer) -> None:
    # Without message_stop and with hold_open, the fake keeps the stream open like a model
    # still thinking; only the client going away ends it.
    server.push(Reply(chunks=tuple(anthropic_events("first words")[:-2]), hold_open=True))
    run = Run(server.url)

    async def stop_after_first_delta() -> None:
        got_text = asyncio.Event()

        def post(event: Event) -> None:
            run.events.append(event)
            if isinstance(event, Delta):
                got_text.set()

        task = asyncio.create_task(run.provider.stream(REQUEST, post))
        await asyncio.wait_for(got_text.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(stop_after_first_delta())
    assert server.disconnected.wait(5), "the server never saw the client go away"
    assert run.events == [Delta("first words")]
    assert len(server.requests) == 1


def test_discovered_through_entry_points() -> None:
    providers = discover_providers()
    assert providers["anthropic"] is AnthropicProvider


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


def test_max_tokens_inside_a_tool_call_is_output_truncated(server: FakeModelServer) -> None:
    events = anthropic_events("Writing.",
                              tool_uses=[("t1", "propose_edit", {"new_text": "x" * 50})],
                              json_pieces=5, stop_reason="max_tokens")
    # Drop the last input_json_delta: the input JSON ends half-way, as when tokens run out.
    last_piece = max(i for i, e in enumerate(events) if b"input_json_delta" in e)
    server.push(Reply(chunks=tuple(events[:last_piece] + events[last_piece + 1:])))
    run = Run(server.url)
    run()
    assert run.text == "Writing."
    assert not any(isinstance(e, ToolCall) for e in run.events)
    assert run.failure.error.kind == "agent.output_truncated" and run.failure.partial
    assert "max_tokens" in run.failure.error.next


def test_broken_tool_json_without_max_tokens_is_unexpected(server: FakeModelServer) -> None:
    events = anthropic_events(tool_uses=[("t1", "fs_read", {"path": "abc"})], json_pieces=3)
    last_piece = max(i for i, e in enumerate(events) if b"input_json_delta" in e)
    server.push(Reply(chunks=tuple(events[:last_piece] + events[last_piece + 1:])))
    run = Run(server.url)
    run()
    assert run.failure.error.kind == "agent.unexpected_response"


def test_connection_reset_mid_stream_is_network_partial(server: FakeModelServer) -> None:
    server.push(Reply(chunks=tuple(anthropic_events("one ", "two"))).cut(after=4, reset=True))
    run = Run(server.url)
    run()
    assert run.text == "one "
    assert run.failure.error.kind == "agent.network" and run.failure.partial
