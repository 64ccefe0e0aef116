"""What every model provider does, whatever its wire format: one suite run against each
provider (Anthropic Messages, OpenAI-compatible chat completions) over a loopback server.

Streaming text, tool calls, each failure class (before any text: classified and retried where
safe; after text: partial, never retried), credentials and cancellation are the same contract
for both. What only one wire format has (request bodies, headers, parser quirks) is tested in
tests/providers/test_providers_anthropic.py and tests/providers/test_providers_openai.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from rio.agent.config import ProviderSettings
from rio.agent.failures import RetryPolicy
from rio.agent.secrets import Secret
from rio.providers.anthropic import AnthropicProvider
from rio.providers.anthropic_auth import ApiKeyAuth
from rio.providers.base import (
    Delta,
    Done,
    Event,
    Message,
    ProviderFailure,
    ProviderRequest,
    ToolCall,
    ToolSpec,
    Usage,
    discover_providers,
)
from rio.providers.openai_compat import BearerKeyAuth, OpenAICompatProvider
from tests.fakes.model_servers import (
    FakeModelServer,
    Reply,
    anthropic_error,
    anthropic_events,
    anthropic_stream_error,
    huge_sse,
    json_reply,
    openai_chunks,
    openai_error,
    sse,
)

pytestmark = pytest.mark.timeout(30)

KEY = "test-key"
TOOL = ToolSpec("fs_read", "Read a file in the project.",
                {"type": "object", "properties": {"path": {"type": "string"}},
                 "required": ["path"]})
REQUEST = ProviderRequest(system="You are a test.", messages=(Message.user("hello"),),
                          tools=(TOOL,))
_ANTHROPIC_ERROR_TYPES = {401: "authentication_error", 403: "permission_error",
                          404: "not_found_error", 429: "rate_limit_error", 500: "api_error"}


@dataclass(frozen=True)
class Wire:
    """One provider and how its server speaks: the builders this suite needs."""

    name: str
    provider: type
    auth: Callable[[str | None], Any]
    usage: Usage                                      # what the fake's replies report
    events: Callable[..., list[bytes]]                # (*pieces, tool=..., stop=...) → chunks
    error: Callable[[int, str, dict[str, str]], Reply]    # an HTTP error reply
    stream_error: Callable[[str], Reply]              # 200, ``text`` shown, then an error
    malformed: Reply                                  # a chunk that is not JSON
    end_chunks: int                                   # trailing chunks that end a reply
    argument_marker: bytes                            # in chunks carrying tool-input pieces

    def __str__(self) -> str:
        return self.name


def _anthropic_events(*pieces: str, tool: tuple[str, str, Any] | None = None,
                      input_pieces: int = 8, stop: str | None = None) -> list[bytes]:
    return anthropic_events(*pieces, tool_uses=[tool] if tool else (),
                            json_pieces=input_pieces, stop_reason=stop)


def _openai_events(*pieces: str, tool: tuple[str, str, Any] | None = None,
                   input_pieces: int = 8, stop: str | None = None) -> list[bytes]:
    finish = {"max_tokens": "length"}.get(stop or "", stop)
    return openai_chunks(*pieces, tool_calls=[tool] if tool else (),
                         argument_pieces=input_pieces, finish_reason=finish)


ANTHROPIC = Wire(
    "anthropic", AnthropicProvider,
    lambda key: ApiKeyAuth(lambda: (Secret(key) if key else None, "test")),
    Usage(12, 7), _anthropic_events,
    lambda status, message, headers: anthropic_error(status, _ANTHROPIC_ERROR_TYPES[status],
                                                     message, headers),
    lambda text: anthropic_stream_error("overloaded_error", text),
    Reply(chunks=(sse("message_start", "{not json"),)),
    end_chunks=2, argument_marker=b"input_json_delta")
OPENAI = Wire(
    "openai", OpenAICompatProvider,
    lambda key: BearerKeyAuth(lambda: (Secret(key) if key else None, "test")),
    Usage(11, 6), _openai_events,
    lambda status, message, headers: openai_error(status, message, headers=headers),
    lambda text: Reply(chunks=(*openai_chunks(text)[:2],
                               sse(None, {"error": {"message": "model crashed"}}))),
    Reply(chunks=(b"data: {oops\n\n",)),
    end_chunks=3, argument_marker=b'"arguments"')


@pytest.fixture(params=[ANTHROPIC, OPENAI], ids=str)
def wire(request: pytest.FixtureRequest) -> Wire:
    return request.param


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as fake:
        yield fake


class Run:
    """A provider wired to an endpoint, with a recording ``post`` and a fake ``sleep``."""

    def __init__(self, wire: Wire, endpoint: str, key: str | None = KEY, attempts: int = 3,
                 **settings: Any) -> None:
        self.events: list[Event] = []
        self.sleeps: list[float] = []
        config = ProviderSettings(wire.name, endpoint, "model-test", max_tokens=1024,
                                  timeout_s=10.0, **settings)
        self.provider = wire.provider(config, auth=wire.auth(key), sleep=self._sleep,
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
        last = self.events[-1]
        assert isinstance(last, ProviderFailure), self.events
        return last


def _reply(chunks: list[bytes], **kw: Any) -> Reply:
    return Reply(chunks=tuple(chunks), **kw)


def _first_with(chunks: list[bytes], text: str) -> int:
    return next(i for i, c in enumerate(chunks) if json.dumps(text).encode()[1:-1] in c)


# --- the happy paths --------------------------------------------------------------------------

def test_text_streams_as_deltas_then_done(wire: Wire, server: FakeModelServer) -> None:
    server.push(_reply(wire.events("Hel", "lo, ", "world")))
    events = Run(wire, server.url)()
    assert events == [Delta("Hel"), Delta("lo, "), Delta("world"), Done("end_turn", wire.usage)]


def test_tool_input_split_across_many_pieces_is_one_call(wire: Wire,
                                                         server: FakeModelServer) -> None:
    tool_input = {"path": "src/main.py", "nested": {"a": [1, 2, 3], "s": "{not json}"}}
    server.push(_reply(wire.events("Reading.", tool=("call_1", "fs_read", tool_input),
                                   input_pieces=25)))
    events = Run(wire, server.url)()
    assert events == [Delta("Reading."), ToolCall("call_1", "fs_read", tool_input),
                      Done("tool_use", wire.usage)]


def test_discovered_through_entry_points(wire: Wire) -> None:
    assert discover_providers()[wire.name] is wire.provider


# --- failures before anything was shown: classified, retried where safe ---------------------

@pytest.mark.parametrize("status", [401, 403])
def test_auth_rejected_is_not_retried(wire: Wire, server: FakeModelServer, status: int) -> None:
    server.push(wire.error(status, "invalid key", {}))
    run = Run(wire, server.url)
    run()
    assert run.failure.error.kind == "agent.auth_rejected" and run.failure.partial is False
    assert run.failure.error.details["status"] == status
    assert f"rio key set {wire.name}" in run.failure.error.next
    assert len(server.requests) == 1 and run.sleeps == []


def test_rate_limit_retries_after_the_servers_delay_then_succeeds(
        wire: Wire, server: FakeModelServer) -> None:
    server.push(wire.error(429, "slow down", {"retry-after": "20"}),
                _reply(wire.events("fine")))
    run = Run(wire, server.url)
    run()
    assert run.sleeps == [20.0]
    assert run.text == "fine" and isinstance(run.events[-1], Done)


def test_rate_limit_gives_up_after_bounded_tries_and_says_when(
        wire: Wire, server: FakeModelServer) -> None:
    limited = wire.error(429, "slow down", {"retry-after": "20"})
    server.push(limited, limited, limited, _reply(wire.events("never reached")))
    run = Run(wire, server.url)
    run()
    error = run.failure.error
    assert error.kind == "agent.rate_limited"
    assert error.next == "Retry in 20 s." and error.details["retry_after_s"] == 20.0
    assert len(server.requests) == 3 and run.sleeps == [20.0, 20.0]


def test_server_error_then_success(wire: Wire, server: FakeModelServer) -> None:
    server.push(wire.error(500, "internal", {}), _reply(wire.events("back")))
    run = Run(wire, server.url)
    run()
    assert run.text == "back" and run.sleeps == [1.0]


def test_model_not_found_is_a_rejected_request(wire: Wire, server: FakeModelServer) -> None:
    server.push(wire.error(404, "model: model-nope not found", {}))
    run = Run(wire, server.url)
    run()
    assert run.failure.error.kind == "agent.request_rejected"
    assert "model-nope" in run.failure.error.message
    assert len(server.requests) == 1 and run.sleeps == []


def test_cut_before_any_text_is_retried(wire: Wire, server: FakeModelServer) -> None:
    server.push(_reply(wire.events("lost")).cut(after=1), _reply(wire.events("whole")))
    run = Run(wire, server.url)
    run()
    assert run.text == "whole" and len(server.requests) == 2


def test_connection_refused_is_network_and_retried(wire: Wire) -> None:
    with FakeModelServer() as fake:
        endpoint = fake.url  # the port is closed once the server is gone
    run = Run(wire, endpoint)
    run()
    assert run.failure.error.kind == "agent.network"
    assert run.sleeps == [1.0, 2.0]


def test_an_exhausted_script_answers_500(wire: Wire, server: FakeModelServer) -> None:
    run = Run(wire, server.url, attempts=1)
    run()
    assert run.failure.error.kind == "agent.server_error"
    assert "script exhausted" in run.failure.error.message


# --- failures after text was shown: partial, never retried ------------------------------------

def test_cut_mid_stream_keeps_partial_text(wire: Wire, server: FakeModelServer) -> None:
    chunks = wire.events("one ", "two ", "three")
    server.push(_reply(chunks).cut(after=_first_with(chunks, "one ") + 2),
                _reply(wire.events("not used")))
    run = Run(wire, server.url)
    run()
    assert run.text == "one two "
    assert run.failure.partial is True and run.failure.error.kind == "agent.network"
    assert "partial reply was kept" in run.failure.error.message
    assert len(server.requests) == 1 and run.sleeps == []


def test_connection_reset_mid_stream_is_network_partial(wire: Wire,
                                                        server: FakeModelServer) -> None:
    chunks = wire.events("one ", "two")
    server.push(_reply(chunks).cut(after=_first_with(chunks, "one ") + 1, reset=True))
    run = Run(wire, server.url)
    run()
    assert run.text == "one "
    assert run.failure.error.kind == "agent.network" and run.failure.partial


def test_error_in_the_stream_after_text_is_a_partial_server_error(
        wire: Wire, server: FakeModelServer) -> None:
    server.push(wire.stream_error("Half an ans"))
    run = Run(wire, server.url)
    run()
    assert run.text == "Half an ans"
    assert run.failure.error.kind == "agent.server_error" and run.failure.partial
    assert len(server.requests) == 1


def test_clean_end_without_the_end_marker_is_a_cut(wire: Wire, server: FakeModelServer) -> None:
    server.push(_reply(wire.events("partial")[:-wire.end_chunks]))
    run = Run(wire, server.url)
    run()
    assert run.failure.error.kind == "agent.network" and run.failure.partial


def test_out_of_tokens_inside_a_tool_call_is_output_truncated(
        wire: Wire, server: FakeModelServer) -> None:
    chunks = wire.events("Writing.", tool=("t1", "propose_edit", {"new_text": "x" * 50}),
                         input_pieces=5, stop="max_tokens")
    # Drop the last piece of tool input: the JSON ends half-way, as when tokens run out.
    last = max(i for i, c in enumerate(chunks) if wire.argument_marker in c)
    server.push(_reply(chunks[:last] + chunks[last + 1:]))
    run = Run(wire, server.url)
    run()
    assert run.text == "Writing." and not any(isinstance(e, ToolCall) for e in run.events)
    assert run.failure.error.kind == "agent.output_truncated" and run.failure.partial


# --- replies Rio cannot read ------------------------------------------------------------------

def test_malformed_stream_json(wire: Wire, server: FakeModelServer) -> None:
    server.push(wire.malformed)
    run = Run(wire, server.url)
    run()
    assert run.failure.error.kind == "agent.unexpected_response"
    assert len(server.requests) == 1


def test_wrong_content_type(wire: Wire, server: FakeModelServer) -> None:
    server.push(json_reply(200, {"content": [{"type": "text", "text": "hi"}]}))
    run = Run(wire, server.url)
    run()
    assert run.failure.error.kind == "agent.unexpected_response"
    assert "application/json" in run.failure.error.message


def test_response_beyond_the_cap_is_refused(wire: Wire, server: FakeModelServer) -> None:
    server.push(huge_sse(4 << 20))
    run = Run(wire, server.url, max_response_bytes=256 * 1024)
    run()
    assert run.failure.error.kind == "agent.unexpected_response"
    assert run.failure.error.details["limit_bytes"] == 256 * 1024


# --- credentials ------------------------------------------------------------------------------

def test_key_is_never_sent_over_plain_http_to_another_host(wire: Wire) -> None:
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(500))
    settings = ProviderSettings(wire.name, "http://10.1.2.3:8080/v1", "m")
    provider = wire.provider(settings, auth=wire.auth(KEY), transport=transport)
    events: list[Event] = []
    asyncio.run(provider.stream(REQUEST, events.append))
    [failure] = events
    assert isinstance(failure, ProviderFailure)
    assert failure.error.kind == "agent.insecure_endpoint" and "https" in failure.error.next
    assert seen == []


def test_key_does_not_leak_through_repr_or_errors(wire: Wire, server: FakeModelServer) -> None:
    server.push(wire.error(401, "invalid key", {}))
    run = Run(wire, server.url)
    run()
    texts = [repr(run.provider), repr(run.provider._auth), str(run.failure.error),
             json.dumps(run.failure.error.to_wire())]
    assert not any(KEY in t for t in texts)


# --- cancellation (the Stop button) -----------------------------------------------------------

def test_cancelling_the_task_closes_the_connection(wire: Wire, server: FakeModelServer) -> None:
    # Without its end and with hold_open, the fake keeps the stream open like a model still
    # thinking; only the client going away ends it.
    server.push(_reply(wire.events("first words")[:-wire.end_chunks], hold_open=True))
    run = Run(wire, server.url)

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
