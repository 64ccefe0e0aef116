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

An ACP agent's JSON-RPC error (:func:`classify_agent_error`) gets the same leaves when its own
words name the cause — ``request_rejected`` (400/404/413/422: change the agent's model or
request settings, sending it again fails the same way), ``auth_rejected`` (sign in, set its
key), ``rate_limited``, ``server_error``, ``network`` (send it again later) — else
``agent.agent_failed``, the agent's words and a pointer at the protocol log. Its words stay in
``details.said`` and its error's ``data.details`` in ``details.details``;
:func:`shown_details` says what a client prints under the error line.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import json
import math
import re
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


#: Errors of a turn that never reached a model: the provider's configuration stopped it.
CONFIG_ERRORS = ("agent.not_configured", "agent.insecure_endpoint", "agent.endpoint_refused")

#: What a missing key's message starts with (:func:`not_configured`): ``rio chat`` adds the
#: choices that need no key to its next action (:func:`keyless_choices`).
NO_KEY_MESSAGE = "No API key is set for "


def not_configured(provider: str) -> AgentError:
    return AgentError("not_configured", f"{NO_KEY_MESSAGE}{provider}.",
                      set_key_hint(provider), provider=provider)


def missing_key(kind: Any, message: Any) -> bool:
    """Is this error the one of a provider with no API key (not a bad endpoint)?"""
    return kind == "agent.not_configured" and str(message or "").startswith(NO_KEY_MESSAGE)


def keyless_choices() -> str:
    """The ways ``rio chat`` works with no API key at all, for a missing key's next action."""
    return ("or use no key: a local OpenAI-compatible server (Ollama, LM Studio) with "
            "`rio chat --provider openai`, or a coding agent you are signed in to with "
            "`rio chat --agent NAME` (`rio agents` lists them)")


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


# --- an ACP agent's JSON-RPC error ---------------------------------------------------------------
#
# Real agents fail session/prompt with -32603 and carry the model server's words through
# (observed against a loopback model server answering HTTP 400: all three fail session/prompt
# with -32603 and carry the message through; claude-agent-acp 0.23.1, codex-acp 0.16.0,
# opencode 1.18.33, docs/agent-chat.md): codex-acp
# as ``{"message": "Internal error", "data": {"message": <the server's words>, "details": …}}``,
# the others in the message itself ("Internal error: API Error: 400 {…}") or in ``data``. The
# cause decides the next action: a request the server refused fails the same way when sent
# again, a rate limit passes, a sign-in does not.

#: JSON-RPC's own codes: the exchange between Rio and the agent went wrong, not the model, so
#: their words are never read as a model server's answer.
_PROTOCOL_CODES = frozenset({-32700, -32600, -32601, -32602})
#: JSON-RPC's "Internal error", which says nothing of the cause, at the start of a message.
_GENERIC = re.compile(r"^\s*internal error\b\s*[:.\-–—]?\s*", re.IGNORECASE)
#: How much of the agent's words the one-line message quotes; ``details.said`` keeps them all
#: up to AGENT_WORDS_CAP characters (a model server's error is short; a dump is not).
AGENT_WORDS_SHOWN = 240
AGENT_WORDS_CAP = 4000
#: An HTTP status named in the agent's words: "API Error: 400", "status code 429", "HTTP 401",
#: "503 Service Unavailable". Only 4xx/5xx: "exit code 127" is no HTTP status.
_STATUS_IN_TEXT = (
    re.compile(r"\b(?:https?|status(?:[ _-]?code)?|api[ _-]?error|error[ _-]?code|code)"
               r"\W{0,3}([45]\d\d)\b", re.IGNORECASE),
    re.compile(r"\b([45]\d\d)\W{0,3}(?:bad request|unauthori[sz]ed|forbidden|not found|"
               r"payload too large|request entity too large|unprocessable|too many requests|"
               r"internal server error|bad gateway|service unavailable|gateway time-?out|"
               r"overloaded)", re.IGNORECASE),
)
_STATUS_KEYS = ("status", "status_code", "statusCode", "http_status", "httpStatus")
#: Words that name a cause when no status does, first match wins (so "invalid request … timeout"
#: is a refused request, not a network failure).
_CAUSE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("auth", ("unauthorized", "unauthorised", "invalid api key", "invalid_api_key",
              "invalid x-api-key", "incorrect api key", "api key not valid", "authentication_error",
              "authentication failed", "permission_error", "forbidden")),
    ("rate", ("rate limit", "rate_limit", "ratelimit", "too many requests", "quota")),
    ("too_large", ("context_length", "context length", "prompt is too long", "too large",
                   "request_too_large")),
    ("missing", ("model_not_found", "model not found", "no such model", "unknown model")),
    ("invalid", ("invalid_request", "invalid request", "bad request", "unprocessable",
                 "not supported", "unsupported")),
    ("server", ("overloaded", "internal server error", "service unavailable", "bad gateway",
                "server_error", "api_error", "server error")),
    ("network", ("timed out", "timeout", "connection refused", "econnrefused", "econnreset",
                 "enotfound", "connection reset", "stream disconnected", "error sending request",
                 "failed to connect", "fetch failed", "network")),
)
#: cause → (leaf, what happened in Rio's words). The leaves are the API providers' own, so a
#: client switches on one kind whoever is behind the conversation (the panel's Retry button).
_CAUSES = {
    "invalid": ("request_rejected", "its model server refused the request as invalid"),
    "missing": ("request_rejected", "its model server does not know the model or endpoint "
                                    "it asked for"),
    "too_large": ("request_rejected", "the request was too large for its model"),
    "auth": ("auth_rejected", "its model server refused its credentials"),
    "rate": ("rate_limited", "its model server is rate limiting it"),
    "server": ("server_error", "its model server had trouble answering"),
    "network": ("network", "it could not reach its model server"),
}


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def agent_words(message: str, data: Any = None) -> str:
    """What the agent itself said: its error message without JSON-RPC's generic "Internal
    error", then ``data.message`` (or ``data.error.message``, or ``data`` when it is a
    string) — each once, up to :data:`AGENT_WORDS_CAP` characters."""
    words: list[str] = []
    for candidate in _word_candidates(message, data):
        text = candidate.strip()
        if text and not any(text in w for w in words):
            words.append(text)
    return _cap(" — ".join(words), AGENT_WORDS_CAP)


def _word_candidates(message: str, data: Any) -> list[str]:
    out = [_GENERIC.sub("", message or "", count=1)]
    if isinstance(data, str):
        out.append(data)
    elif isinstance(data, Mapping):
        for key in ("message", "error"):
            value = data.get(key)
            if isinstance(value, Mapping):
                value = value.get("message") or value.get("type")
            if isinstance(value, str):
                out.append(value)
    return out


def agent_error_details(data: Any) -> str:
    """The rest of an agent's error ``data`` as text: ``data.details`` when it has them, else
    whatever else ``data`` holds besides its message (so no agent's cause is dropped)."""
    if data is None or isinstance(data, str):
        return ""
    if isinstance(data, Mapping):
        if data.get("details") not in (None, "", {}, []):
            return _cap(_as_text(data["details"]), AGENT_WORDS_CAP)
        rest = {k: v for k, v in data.items() if k not in ("message", "details")
                and not (k == "error" and isinstance(v, str))}
        return _cap(_as_text(rest), AGENT_WORDS_CAP) if rest else ""
    return _cap(_as_text(data), AGENT_WORDS_CAP)


def _status_in(data: Any, text: str) -> int | None:
    if isinstance(data, Mapping):
        for source in (data, data.get("details"), data.get("error")):
            if isinstance(source, Mapping):
                for key in _STATUS_KEYS:
                    value = source.get(key)
                    if isinstance(value, int) and 400 <= value < 600:
                        return value
    for pattern in _STATUS_IN_TEXT:
        found = pattern.search(text)
        if found:
            return int(found.group(1))
    return None


def _cause(status: int | None, text: str) -> str | None:
    if status is not None:
        if status in (401, 403):
            return "auth"
        if status == 429:
            return "rate"
        if status == 408:
            return "network"
        if status == 413:
            return "too_large"
        if status == 404:
            return "missing"
        return "invalid" if status < 500 else "server"
    lowered = text.lower()
    return next((cause for cause, words in _CAUSE_WORDS if any(w in lowered for w in words)),
                None)


def _agent_next(cause: str | None, agent: str, text: str, log_hint: str) -> str:
    same = "sending the message again fails the same way."
    if cause in ("invalid", "missing"):
        return (f"Change {agent}'s model or request settings (its own configuration, or its "
                f"Model picker in the panel); {same}")
    if cause == "too_large":
        return f"Start a new conversation, or ask for less at a time; {same}"
    if cause == "auth":
        return (f"Sign in to {agent} again (`rio agents` shows how it signs in), or set its API "
                "key where it reads it — its own configuration, or the environment Rio was "
                "started from (then restart Rio); then send the message again.")
    if cause == "rate":
        if "quota" in text.lower():
            return ("Its account's quota looks used up: check the plan or billing of the "
                    "account the agent uses, then send the message again.")
        return "Wait a minute, then send the message again."
    if cause == "server":
        return "Send the message again in a little while."
    if cause == "network":
        return ("Check the network and the agent's model endpoint, then send the message "
                "again in a little while.")
    if not text.strip():
        return (f"The agent gave no reason: {log_hint} shows the whole exchange, its stderr "
                "included. If it looks temporary, send the message again.")
    return (f"Read what the agent said; {log_hint} shows the whole exchange. If it looks "
            "temporary, send the message again.")


def classify_agent_error(agent: str, what: str, code: int, message: str, data: Any = None,
                         *, log_hint: str = "`rio agents log CONVERSATION`") -> AgentError:
    """An ACP agent's JSON-RPC error answer (``what``: the request, ``session/prompt``) as a
    classified :class:`AgentError`, keeping the agent's own words.

    The leaf is the API providers' one for the same cause (``request_rejected``,
    ``auth_rejected``, ``rate_limited``, ``server_error``, ``network``), else ``agent_failed``.
    ``details``: ``agent``, ``code``, ``said`` (the agent's words), ``details`` (the rest of
    its ``data``), ``status`` and ``cause`` where its words name them. The message quotes the
    words on one line, cut at :data:`AGENT_WORDS_SHOWN`; clients show ``said`` in full when
    the message does not hold all of it."""
    said = agent_words(message, data)
    extra = agent_error_details(data)
    text = f"{said} {extra}"
    status = cause = None
    if code not in _PROTOCOL_CODES:
        status = _status_in(data, text)
        cause = _cause(status, text)
    short = _cap(" ".join(said.split()), AGENT_WORDS_SHOWN)
    quoted = f" It said: {short}" if short else ""
    if cause is None:
        leaf = "agent_failed"
        plain = (message or "").strip() or "no message"
        head = f"The agent {agent!r} answered {what} with an error ({code}" + \
            ("" if short else f": {plain}") + ")."
    else:
        leaf, what_happened = _CAUSES[cause]
        shown = f" (HTTP {status})" if status is not None else ""
        head = f"The agent {agent!r} failed {what}: {what_happened}{shown}."
    text_out = head + quoted
    if quoted and not text_out.endswith((".", "!", "?", "…")):
        text_out += "."
    details: dict[str, Any] = {"agent": agent, "code": code}
    details.update({k: v for k, v in (("said", said), ("details", extra), ("status", status),
                                      ("cause", cause)) if v})
    return AgentError(leaf, text_out, _agent_next(cause, agent, text, log_hint), **details)


def shown_details(message: str, details: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """What a client shows under an error line, as (label, text): the agent's own words when
    the message does not already hold them whole, and the details of its error. Empty for
    every other error (its details are for programs: exit codes, sign-in methods)."""
    if not isinstance(details, Mapping):
        return []
    out: list[tuple[str, str]] = []
    said = details.get("said")
    if isinstance(said, str) and said.strip() and " ".join(said.split()) not in message:
        out.append(("The agent said", said.strip()))
    extra = details.get("details")
    if isinstance(extra, str) and extra.strip():
        out.append(("Details", extra.strip()))
    return out


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
