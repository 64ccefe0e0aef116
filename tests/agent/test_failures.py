"""Failure classification, retry-after reading and the retry policy."""

from __future__ import annotations

import asyncio
import datetime as dt

import httpx
import pytest

from rio.agent.failures import (
    RetryPolicy,
    classify_exception,
    classify_failure,
    classify_status,
    classify_stream_error,
    mark_partial,
    not_configured,
    retry_after_seconds,
)
from rio.protocol.errors import AgentError, error_from_wire
from rio.providers.base import Delta, Done, Event, ProviderFailure, stream_with_retries

NOW = 1_800_000_000.0


def _iso(offset_s: float) -> str:
    return dt.datetime.fromtimestamp(NOW + offset_s, dt.timezone.utc).isoformat().replace(
        "+00:00", "Z")


# --- retry-after ------------------------------------------------------------------------------

def test_retry_after_seconds_header() -> None:
    assert retry_after_seconds({"Retry-After": "20"}, NOW) == 20.0


def test_retry_after_http_date() -> None:
    date = dt.datetime.fromtimestamp(NOW + 45, dt.timezone.utc).strftime(
        "%a, %d %b %Y %H:%M:%S GMT")
    assert retry_after_seconds({"retry-after": date}, NOW) == pytest.approx(45, abs=1)


def test_anthropic_reset_headers_take_the_latest_reset() -> None:
    headers = {"anthropic-ratelimit-requests-reset": _iso(5),
               "anthropic-ratelimit-tokens-reset": _iso(30),
               "anthropic-ratelimit-input-tokens-reset": _iso(-10)}
    assert retry_after_seconds(headers, NOW) == pytest.approx(30)


def test_retry_after_wins_over_reset_headers() -> None:
    headers = {"retry-after": "3", "anthropic-ratelimit-tokens-reset": _iso(30)}
    assert retry_after_seconds(headers, NOW) == 3.0


@pytest.mark.parametrize("headers", [{}, {"retry-after": "soon"},
                                     {"anthropic-ratelimit-tokens-reset": "garbage"}])
def test_no_usable_retry_after(headers: dict[str, str]) -> None:
    assert retry_after_seconds(headers, NOW) is None


# --- classify_status --------------------------------------------------------------------------

@pytest.mark.parametrize(("status", "kind"), [
    (401, "agent.auth_rejected"), (403, "agent.auth_rejected"), (429, "agent.rate_limited"),
    (500, "agent.server_error"), (502, "agent.server_error"), (529, "agent.server_error"),
    (400, "agent.request_rejected"), (404, "agent.request_rejected"),
    (413, "agent.request_rejected"), (302, "agent.unexpected_response")])
def test_status_leaves(status: int, kind: str) -> None:
    error = classify_status("anthropic", status, {}, b"")
    assert error.kind == kind
    assert error.details["status"] == status
    assert error.message and error.next


def test_rate_limit_message_says_when_from_reset_headers() -> None:
    error = classify_status("anthropic", 429, {"anthropic-ratelimit-requests-reset": _iso(19.2)},
                            b'{"type":"error","error":{"type":"rate_limit_error",'
                            b'"message":"Number of requests has exceeded your rate limit"}}',
                            now=NOW)
    assert error.next == "Retry in 20 s."
    assert error.details["retry_after_s"] == pytest.approx(19.2)
    assert "exceeded your rate limit" in error.message


def test_long_waits_are_said_in_minutes() -> None:
    assert classify_status("x", 429, {"retry-after": "600"}, now=NOW).next == "Retry in 10 min."


def test_529_says_overloaded() -> None:
    error = classify_status("anthropic", 529, {}, b'{"error":{"type":"overloaded_error",'
                            b'"message":"Overloaded"}}')
    assert "overloaded" in error.message


def test_server_message_is_taken_from_each_dialect_and_capped() -> None:
    assert "bad model" in classify_status("o", 400, {}, b'{"error":"bad model"}').message
    assert "plain text" in classify_status("o", 400, {}, b"plain   text").message
    long = classify_status("o", 400, {}, b'{"error":{"message":"' + b"x" * 5000 + b'"}}')
    assert len(long.message) < 400


def test_errors_cross_the_wire_intact() -> None:
    error = classify_status("anthropic", 429, {"retry-after": "7"}, b"")
    back = error_from_wire(error.to_wire())
    assert isinstance(back, AgentError)
    assert (back.kind, back.next, back.details["retry_after_s"]) == (error.kind, error.next, 7.0)


# --- stream errors and exceptions -------------------------------------------------------------

@pytest.mark.parametrize(("error_type", "kind"), [
    ("overloaded_error", "agent.server_error"), ("api_error", "agent.server_error"),
    ("rate_limit_error", "agent.rate_limited"), ("authentication_error", "agent.auth_rejected"),
    ("invalid_request_error", "agent.request_rejected"),
    ("something_new", "agent.server_error")])
def test_stream_error_types(error_type: str, kind: str) -> None:
    error = classify_stream_error("anthropic", error_type, "msg")
    assert error.kind == kind and error.details["stream_error"] == error_type


@pytest.mark.parametrize(("exc", "kind"), [
    (httpx.ConnectError("refused"), "agent.network"),
    (httpx.ConnectTimeout("slow"), "agent.network"),
    (httpx.ReadTimeout("quiet"), "agent.network"),
    (httpx.RemoteProtocolError("incomplete chunked read"), "agent.network"),
    (httpx.ReadError("reset by peer"), "agent.network"),
    (httpx.UnsupportedProtocol("ftp"), "agent.not_configured"),
    (ValueError("bad bytes"), "agent.unexpected_response"),
    (RuntimeError("bug"), "agent.provider_crashed")])
def test_exceptions(exc: BaseException, kind: str) -> None:
    assert classify_exception("openai", exc, "http://127.0.0.1:1/v1").kind == kind


def test_classify_failure_dispatches() -> None:
    assert classify_failure("a", status=401).kind == "agent.auth_rejected"
    assert classify_failure("a", exception=httpx.ConnectError("x")).kind == "agent.network"
    assert classify_failure("a", stream_error="overloaded_error").kind == "agent.server_error"
    assert classify_failure("a").kind == "agent.unexpected_response"


def test_not_configured_names_both_ways_to_set_a_key() -> None:
    error = not_configured("anthropic")
    assert error.kind == "agent.not_configured"
    assert error.next == "Set your API key with `rio key set anthropic` or ANTHROPIC_API_KEY."


def test_mark_partial_keeps_kind_and_next() -> None:
    error = classify_status("anthropic", 500)
    partial = mark_partial(error)
    assert (partial.kind, partial.next) == (error.kind, error.next)
    assert partial.message.endswith("The partial reply was kept.")
    assert partial.details["partial"] is True and "partial" not in error.details


# --- the policy -------------------------------------------------------------------------------

def test_backoff_is_exponential_capped_and_bounded() -> None:
    policy = RetryPolicy(max_attempts=5, base_delay_s=1, max_delay_s=3)
    error = classify_status("a", 500)
    assert [policy.delay_before_retry(n, error) for n in range(1, 6)] == [1, 2, 3, 3, None]


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_client_errors_are_never_retried(status: int) -> None:
    assert RetryPolicy().delay_before_retry(1, classify_status("a", status)) is None


def test_server_requested_wait_is_honoured_up_to_a_limit() -> None:
    policy = RetryPolicy(max_retry_after_s=60)
    assert policy.delay_before_retry(1, classify_status("a", 429, {"retry-after": "20"})) == 20
    assert policy.delay_before_retry(1, classify_status("a", 429, {"retry-after": "0"})) == 1
    assert policy.delay_before_retry(1, classify_status("a", 429, {"retry-after": "61"})) is None


# --- stream_with_retries ----------------------------------------------------------------------

def _drive(outcomes: list[object], policy: RetryPolicy = RetryPolicy()
           ) -> tuple[list[Event], list[float], int]:
    """Each outcome: an exception to raise, or a list of events to post then succeed;
    a tuple (events, exception) posts then raises."""
    posted: list[Event] = []
    sleeps: list[float] = []
    calls = 0

    async def attempt(post) -> None:  # type: ignore[no-untyped-def]
        nonlocal calls
        outcome = outcomes[calls]
        calls += 1
        events, exc = outcome if isinstance(outcome, tuple) else (
            (outcome, None) if isinstance(outcome, list) else ([], outcome))
        for event in events:
            post(event)
        if exc is not None:
            raise exc

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    asyncio.run(stream_with_retries(attempt, posted.append, policy=policy, sleep=sleep))
    return posted, sleeps, calls


def test_retry_until_success() -> None:
    done = Done("end_turn")
    posted, sleeps, calls = _drive([classify_status("a", 503), [Delta("x"), done]])
    assert posted == [Delta("x"), done] and sleeps == [1.0] and calls == 2


def test_failure_after_a_delta_is_partial_and_not_retried() -> None:
    posted, sleeps, calls = _drive([([Delta("x")], classify_status("a", 503)), [Delta("y")]])
    assert calls == 1 and sleeps == []
    assert posted[0] == Delta("x")
    failure = posted[1]
    assert isinstance(failure, ProviderFailure) and failure.partial
    assert "partial reply was kept" in failure.error.message


def test_bounded_attempts_then_one_failure() -> None:
    error = classify_status("a", 500)
    posted, sleeps, calls = _drive([error, error, error, error])
    assert calls == 3 and sleeps == [1.0, 2.0]
    assert posted == [ProviderFailure(error, partial=False)]


def test_a_crashing_attempt_is_contained() -> None:
    posted, _, calls = _drive([KeyError("oops")])
    assert calls == 1
    assert isinstance(posted[0], ProviderFailure)
    assert posted[0].error.kind == "agent.provider_crashed"


def test_cancellation_is_not_swallowed() -> None:
    async def attempt(post) -> None:  # type: ignore[no-untyped-def]
        raise asyncio.CancelledError

    async def no_sleep(seconds: float) -> None:
        raise AssertionError("must not retry a cancellation")

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(stream_with_retries(attempt, lambda e: None, policy=RetryPolicy(),
                                        sleep=no_sleep))


# --- issue 9: messages that said the wrong thing ------------------------------------------------

def test_an_in_stream_overload_does_not_claim_an_http_status() -> None:
    error = classify_stream_error("anthropic", "overloaded_error", "Overloaded")
    assert "HTTP" not in error.message and "529" not in error.message
    assert "overloaded" in error.message and "overloaded_error" in error.message


def test_rate_limiting_names_a_key_only_when_one_was_sent() -> None:
    assert "this key" in classify_status("openai", 429, {}, b"").message
    unsent = classify_status("openai", 429, {}, b"", key_sent=False)
    assert unsent.kind == "agent.rate_limited" and "key" not in unsent.message
    assert "none was sent" in classify_status("openai", 401, {}, b"", key_sent=False).message


@pytest.mark.parametrize("endpoint", ["notaurl", "notaurl/v1/messages", "ftp://x/v1",
                                      "http:///v1", "api.anthropic.com/v1/messages"])
def test_an_endpoint_that_is_not_a_url_is_said_so_not_plain_http(endpoint: str) -> None:
    from rio.protocol.errors import AgentError
    from rio.providers.anthropic_auth import ApiKeyAuth
    from rio.providers.openai_compat import BearerKeyAuth
    for auth in (ApiKeyAuth.from_key("sk-test-123456"),
                 BearerKeyAuth(lambda: (None, None)),
                 BearerKeyAuth(lambda: (__import__("rio.agent.secrets").secrets.Secret("k"), "x"))):
        with pytest.raises(AgentError) as caught:
            auth.headers(endpoint)
        assert caught.value.kind == "agent.not_configured", endpoint
        assert "not a usable URL" in caught.value.message and "plain http" not in \
            caught.value.message
        assert "--endpoint" in caught.value.next


# --- an ACP agent's JSON-RPC error ------------------------------------------------------------

def _acp(code: int, message: str, data: object = None) -> AgentError:
    from rio.agent.failures import classify_agent_error
    return classify_agent_error("codex", "session/prompt", code, message, data,
                                log_hint="`rio agents log 3f9a0c12b7de`")


def test_codex_a_model_400_keeps_the_servers_words_and_says_resending_fails() -> None:
    """codex-acp answers a model HTTP 400 with -32603 "Internal error" and the server's words
    in data.message, more in data.details (captured from codex-acp 0.16.0)."""
    err = _acp(-32603, "Internal error", {
        "message": "Invalid value for 'reasoning.effort': 'max' is not supported.",
        "details": {"status": 400, "type": "invalid_request_error"}})
    assert err.kind == "agent.request_rejected"
    assert "Invalid value for 'reasoning.effort'" in err.message and "HTTP 400" in err.message
    assert "fails the same way" in err.next and "model" in err.next
    assert err.details["said"].startswith("Invalid value") and err.details["status"] == 400
    assert '"invalid_request_error"' in err.details["details"]
    assert err.details["code"] == -32603 and err.details["agent"] == "codex"


@pytest.mark.parametrize(("message", "data", "kind", "next_has"), [
    # claude-agent-acp: the cause in the message itself
    ('Internal error: API Error: 400 {"type":"error","error":{"type":"invalid_request_error",'
     '"message":"max_tokens: too big"}}', None, "agent.request_rejected", "fails the same way"),
    ("Internal error", {"message": "unexpected status 401 Unauthorized: Incorrect API key"},
     "agent.auth_rejected", "Sign in"),
    ("Internal error", {"message": "Invalid API key · Please run /login"}, "agent.auth_rejected",
     "key"),
    ("Internal error", {"message": "exceeded retry limit, last status: 429 Too Many Requests"},
     "agent.rate_limited", "Wait"),
    ("Internal error", "You exceeded your current quota", "agent.rate_limited", "plan"),
    ("Internal error", {"message": "503 Service Unavailable"}, "agent.server_error",
     "again in a little while"),
    ("Internal error", {"message": "Overloaded"}, "agent.server_error", "again"),
    ("Internal error", {"message": "stream disconnected before completion: error sending "
                                   "request"}, "agent.network", "network"),
    ("Internal error", {"message": "model_not_found: gpt-9"}, "agent.request_rejected",
     "model"),
    ("Internal error", {"message": "prompt is too long: 210000 tokens > 200000 maximum"},
     "agent.request_rejected", "new conversation"),
    ("Internal error", {"error": {"message": "something nobody foresaw"}}, "agent.agent_failed",
     "rio agents log 3f9a0c12b7de"),
])
def test_acp_errors_are_classified_by_the_agents_own_words(message: str, data: object,
                                                           kind: str, next_has: str) -> None:
    err = _acp(-32603, message, data)
    assert err.kind == kind, err.message
    assert next_has in err.next
    assert err.details["said"] in err.message          # short words: quoted whole
    assert "Internal error" not in err.details["said"]


def test_an_unexplained_acp_error_points_at_the_protocol_log() -> None:
    err = _acp(-32603, "Internal error")
    assert err.kind == "agent.agent_failed" and "(-32603: Internal error)" in err.message
    assert "`rio agents log 3f9a0c12b7de`" in err.next and "no reason" in err.next
    assert "said" not in err.details


def test_a_json_rpc_level_error_is_never_read_as_a_model_servers() -> None:
    """-32600 "Invalid request" is about Rio's request to the agent, not a model's 400."""
    err = _acp(-32600, "Invalid request", {"reason": "bad request id"})
    assert err.kind == "agent.agent_failed"
    assert err.details["details"] == '{"reason": "bad request id"}'


def test_long_agent_words_are_cut_in_the_message_and_kept_whole_in_details() -> None:
    from rio.agent.failures import AGENT_WORDS_SHOWN, shown_details
    words = "Bad request: " + "the model said a great deal. " * 40
    err = _acp(-32603, "Internal error", {"message": words, "details": "line 1\nline 2"})
    assert err.kind == "agent.request_rejected"
    assert err.details["said"] == words.strip()
    assert len(err.message) < AGENT_WORDS_SHOWN + 200 and "…" in err.message
    assert shown_details(err.message, err.details) == [
        ("The agent said", words.strip()), ("Details", "line 1\nline 2")]
    wire = error_from_wire(err.to_wire())
    assert wire.kind == err.kind and wire.details["said"] == words.strip()
