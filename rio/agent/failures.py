"""Classify what went wrong talking to a model provider, and decide whether to retry.

Every failure becomes an :class:`~rio.protocol.errors.AgentError` whose leaf names what the user can do:

    agent.not_configured       no key, or no usable endpoint      -> set the key / fix config
    agent.auth_rejected        HTTP 401/403                       -> check or replace the key
    agent.rate_limited         HTTP 429, error event rate_limit   -> wait (we say how long)
    agent.server_error         HTTP 5xx/529, error event overloaded/api_error -> try later
    agent.request_rejected     HTTP 400/404/413/422...            -> check model/endpoint/size
    agent.network              connect failure, reset, timeout, stream cut -> check network
    agent.unexpected_response  malformed SSE/JSON, wrong content type, over the size cap
    agent.output_truncated     max_tokens ran out inside a tool call -> raise max_tokens
    agent.insecure_endpoint    a key would travel over plain http to another host
    agent.provider_crashed     a bug in Rio's provider code (not the server's fault)

``details`` carries ``provider``, ``status`` and ``retry_after_s`` where known. Nothing here
ever sees a key: callers pass response headers and bodies, never request headers.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rio.protocol.errors import AgentError

_SERVER_MESSAGE_CAP = 300

KEY_ENV_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def key_env_var(provider: str) -> str:
    return KEY_ENV_VARS.get(provider, f"{provider.upper().replace('-', '_')}_API_KEY")


def set_key_hint(provider: str) -> str:
    return f"Set your API key with `rio key set {provider}` or {key_env_var(provider)}."


def not_configured(provider: str) -> AgentError:
    return AgentError("not_configured", f"No API key is set for {provider}.",
                      set_key_hint(provider), provider=provider)


def unusable_endpoint(provider: str, url: str) -> AgentError:
    """An endpoint that is not an http(s) URL with a host (``--endpoint notaurl``)."""
    return AgentError("not_configured", f"The {provider} endpoint {url!r} is not a usable URL "
                      "(it needs http:// or https:// and a host).",
                      f"Pass a full URL such as https://api.example.com (--endpoint), or fix "
                      f"endpoint under [providers.{provider}] in config.toml.", provider=provider)


def insecure_endpoint(provider: str, url: str) -> AgentError:
    return AgentError(
        "insecure_endpoint",
        f"Refusing to send the {provider} API key over plain http to {url}.",
        f"Use an https:// endpoint for [providers.{provider}] (plain http is only allowed "
        "for 127.0.0.1/localhost).", provider=provider)


def provider_crashed(exc: BaseException) -> AgentError:
    return AgentError("provider_crashed",
                      f"Rio's provider code failed: {type(exc).__name__}: {exc}"[:400],
                      "Report this as a bug with the log from `rio status`.")


def unexpected_response(provider: str, what: str, **details: Any) -> AgentError:
    return AgentError("unexpected_response", f"{provider} sent a reply Rio cannot read: {what}.",
                      "Check that the endpoint is a real "
                      f"{'Anthropic' if provider == 'anthropic' else 'OpenAI-compatible'} API "
                      "server, then try again.", provider=provider, **details)


def output_truncated(provider: str, tool_name: str) -> AgentError:
    """The model hit its output limit while writing a tool call's input, so the call is
    unusable; running it with half its arguments would be worse than not running it."""
    return AgentError("output_truncated",
                      f"The model ran out of output tokens while writing a {tool_name} call.",
                      f"Raise max_tokens under [providers.{provider}] in config.toml, or ask "
                      "for a smaller step.", provider=provider)


def stream_cut(provider: str) -> AgentError:
    """The stream closed cleanly but before the protocol's end marker."""
    return AgentError("network", f"The {provider} reply ended before it was complete.",
                      "Check your network connection and try again.", provider=provider)


def mark_partial(error: AgentError) -> AgentError:
    """The same failure, saying that what was streamed before it is kept."""
    details = {**error.details, "partial": True}
    return type(error)(error.kind, f"{error.message} The partial reply was kept.",
                       error.next, **details)


# --- retry-after ------------------------------------------------------------------------------

def _parse_instant(value: str) -> float | None:
    """An RFC 3339 timestamp (Anthropic's *-reset headers) or an HTTP-date, as epoch seconds."""
    text = value.strip()
    try:
        parsed = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_dt.timezone.utc)
    return parsed.timestamp()


def retry_after_seconds(headers: Mapping[str, str], now: float) -> float | None:
    """How long the server asked us to wait, from ``retry-after`` or the rate-limit resets.

    ``retry-after`` (seconds or an HTTP-date) wins; otherwise the latest of Anthropic's
    ``anthropic-ratelimit-*-reset`` instants, since every exhausted limit must have reset.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    raw = lowered.get("retry-after")
    if raw is not None:
        try:
            seconds = float(raw)
        except ValueError:
            instant = _parse_instant(raw)
            seconds = instant - now if instant is not None else -1.0
        if seconds >= 0 and math.isfinite(seconds):
            return seconds
    resets = [_parse_instant(v) for k, v in lowered.items()
              if k.startswith("anthropic-ratelimit-") and k.endswith("-reset")]
    waits = [t - now for t in resets if t is not None and t > now]
    return max(waits) if waits else None


def _server_message(body: bytes | str | None) -> str:
    """The human part of an error body: Anthropic/OpenAI ``error.message``, Ollama ``error``."""
    if not body:
        return ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:_SERVER_MESSAGE_CAP]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or error.get("type") or "")
    elif error is not None:
        message = str(error)
    else:
        message = str(data.get("message", "")) if isinstance(data, dict) else ""
    return message[:_SERVER_MESSAGE_CAP]


def _wait_words(seconds: float) -> str:
    whole = max(1, math.ceil(seconds))
    return f"{whole} s" if whole < 120 else f"{math.ceil(whole / 60)} min"


# --- classification -----------------------------------------------------------------------------

def classify_status(provider: str, status: int, headers: Mapping[str, str] | None = None,
                    body: bytes | str | None = None, *, now: float | None = None,
                    key_sent: bool = True, label: str | None = None) -> AgentError:
    """A non-200 HTTP answer to the model request. ``key_sent`` says whether the request
    carried an API key (a local server may get none); ``label`` replaces "HTTP <status>" in
    the message when the failure was not an HTTP status (an error event inside a stream)."""
    headers = headers or {}
    said = _server_message(body)
    suffix = f": {said}" if said else ""
    shown = label or f"HTTP {status}"
    if status in (401, 403):
        what = ("rejected the API key" if status == 401 else "refused this key access") \
            if key_sent else "wants an API key, and none was sent"
        return AgentError("auth_rejected", f"{provider} {what} ({shown}{suffix}).",
                          f"Check the key with `rio key status {provider}`, or set a new one "
                          f"with `rio key set {provider}`.", provider=provider, status=status)
    if status == 429:
        wait = retry_after_seconds(headers, time.time() if now is None else now)
        when = f"Retry in {_wait_words(wait)}." if wait is not None else "Retry in a minute."
        return AgentError("rate_limited",
                          f"{provider} is rate limiting "
                          f"{'this key' if key_sent else 'these requests'} ({shown}{suffix}).",
                          when, provider=provider, status=status, retry_after_s=wait)
    if status >= 500:
        overloaded = status == 529 or "overload" in said.lower()
        what = "is overloaded" if overloaded else "had a server error"
        wait = retry_after_seconds(headers, time.time() if now is None else now)
        return AgentError("server_error", f"{provider} {what} ({shown}{suffix}).",
                          "Try again in a little while.", provider=provider, status=status,
                          retry_after_s=wait)
    if status in (404, 405):
        return AgentError("request_rejected",
                          f"{provider} has no such model or endpoint ({shown}{suffix}).",
                          f"Check endpoint and model under [providers.{provider}] in config.toml.",
                          provider=provider, status=status)
    if 400 <= status < 500:
        return AgentError("request_rejected",
                          f"{provider} rejected the request ({shown}{suffix}).",
                          "Shorten the conversation or check the model settings, then try again.",
                          provider=provider, status=status)
    return unexpected_response(provider, f"HTTP status {status}", status=status)


_STREAM_ERROR_STATUS = {"overloaded_error": 529, "api_error": 500, "rate_limit_error": 429,
                        "authentication_error": 401, "permission_error": 403,
                        "not_found_error": 404, "invalid_request_error": 400,
                        "request_too_large": 413, "timeout_error": 504}


def classify_stream_error(provider: str, error_type: str, message: str = "") -> AgentError:
    """An ``error`` event inside a 200 stream (Anthropic documents overloaded_error there)."""
    status = _STREAM_ERROR_STATUS.get(error_type)
    if status is None:
        lowered = error_type.lower()
        status = 429 if "rate" in lowered else 529 if "overload" in lowered else 500
    body = json.dumps({"error": {"type": error_type, "message": message or error_type}})
    # Not an HTTP status: the answer was 200 and the error came inside the stream.
    error = classify_status(provider, status, {}, body, label=f"error event {error_type}")
    error.details["stream_error"] = error_type
    return error


def classify_exception(provider: str, exc: BaseException, endpoint: str = "") -> AgentError:
    """A transport exception (httpx) or a decoding failure while reading the stream."""
    import httpx  # local: keeps this module importable without paying httpx's import cost

    where = f" {endpoint}" if endpoint else ""
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
        return AgentError("network", f"Could not connect to {provider} at{where} ({exc}).",
                          "Check your network connection and the endpoint, then try again.",
                          provider=provider)
    if isinstance(exc, httpx.TimeoutException):
        return AgentError("network", f"{provider} stopped responding ({type(exc).__name__}).",
                          "Try again; raise timeout_s in config.toml if replies are slow.",
                          provider=provider)
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return AgentError("not_configured", f"The {provider} endpoint{where} is not a usable "
                          f"URL ({exc}).", f"Fix endpoint under [providers.{provider}] in "
                          "config.toml.", provider=provider)
    if isinstance(exc, (httpx.TransportError, httpx.StreamError)):
        said = f": {exc}" if str(exc) else ""
        return AgentError("network", f"The connection to {provider} was cut "
                          f"({type(exc).__name__}{said}).",
                          "Check your network connection and try again.", provider=provider)
    if isinstance(exc, (ValueError, UnicodeError)):
        return unexpected_response(provider, str(exc)[:200])
    return provider_crashed(exc)


def classify_failure(provider: str, *, status: int | None = None,
                     headers: Mapping[str, str] | None = None, body: bytes | str | None = None,
                     exception: BaseException | None = None, stream_error: str | None = None,
                     message: str = "", endpoint: str = "", now: float | None = None
                     ) -> AgentError:
    """One entry point for every failure shape; see the module docstring for the leaves."""
    if exception is not None:
        return classify_exception(provider, exception, endpoint)
    if stream_error is not None:
        return classify_stream_error(provider, stream_error, message)
    if status is not None:
        return classify_status(provider, status, headers, body, now=now)
    return unexpected_response(provider, message or "no status and no error")


# --- retry policy ---------------------------------------------------------------------------------

RETRYABLE_KINDS = frozenset({"agent.rate_limited", "agent.server_error", "agent.network"})


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff for failures that may pass by themselves.

    ``attempts`` counts tries made so far. A server-requested wait longer than
    ``max_retry_after_s`` is not slept through silently: the failure is shown with its
    "Retry in N s" and the user decides.
    """

    max_attempts: int = 3
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0

    def delay_before_retry(self, attempts: int, error: AgentError) -> float | None:
        if error.kind not in RETRYABLE_KINDS or attempts >= self.max_attempts:
            return None
        # int ** int is typed Any (a negative exponent gives a float)
        backoff: float = min(self.max_delay_s, self.base_delay_s * (2 ** (attempts - 1)))
        asked = error.details.get("retry_after_s")
        if isinstance(asked, (int, float)):
            if asked > self.max_retry_after_s:
                return None
            return max(backoff, float(asked))
        return backoff
