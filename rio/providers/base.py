"""The provider contract: conversation records, the request, the events a provider posts.

A provider turns one :class:`ProviderRequest` into a stream of events handed to ``post``:
any number of :class:`Delta` and :class:`ToolCall`, then exactly one of :class:`Done` or
:class:`ProviderFailure`. ``stream`` never raises for a provider failure (the failure is
*posted*, so the agent loop contains it in ``agent.error``); it only lets
``asyncio.CancelledError`` through, and cancelling the task closes the HTTP response at once
(that is how the Stop button works).

The conversation records are frozen dataclasses with ``to_dict``/``from_dict`` in plain
str/int/bool/list/dict, so the core's conversation store can keep them as msgpack or JSON.
The block vocabulary is Anthropic's (text, tool_use, tool_result inside user messages);
other wire formats map from it.
"""

from __future__ import annotations

import ipaddress
import logging
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from rio.agent.failures import RetryPolicy, mark_partial, provider_crashed
from rio.protocol.errors import AgentError

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "rio.providers"

# Stop reasons are normalised to Anthropic's words so the agent loop has one vocabulary:
# "end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal"; anything else passes through.
StopReason: TypeAlias = str


# --- conversation records -------------------------------------------------------------------

@dataclass(frozen=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True)
class ToolUseBlock:
    """The model asked for a tool; ``input`` is the parsed JSON object."""

    id: str
    name: str
    input: Mapping[str, Any]
    type: Literal["tool_use"] = "tool_use"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": dict(self.input)}


@dataclass(frozen=True)
class ToolResultBlock:
    """What a tool gave back, sent to the model inside the next user message."""

    tool_use_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": self.tool_use_id, "content": self.content,
                "is_error": self.is_error}


Block: TypeAlias = TextBlock | ToolUseBlock | ToolResultBlock


def block_from_dict(data: Mapping[str, Any]) -> Block:
    kind = data.get("type")
    if kind == "text":
        return TextBlock(str(data["text"]))
    if kind == "tool_use":
        raw_input = data.get("input") or {}
        if not isinstance(raw_input, Mapping):
            raise ValueError(f"tool_use input must be an object, got {type(raw_input).__name__}")
        return ToolUseBlock(str(data["id"]), str(data["name"]), dict(raw_input))
    if kind == "tool_result":
        return ToolResultBlock(str(data["tool_use_id"]), str(data.get("content", "")),
                               bool(data.get("is_error", False)))
    raise ValueError(f"unknown content block type {kind!r}")


@dataclass(frozen=True)
class Message:
    """One turn of the conversation: ``role`` is "user" or "assistant"."""

    role: Literal["user", "assistant"]
    content: tuple[Block, ...]

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ValueError(f"role must be 'user' or 'assistant', not {self.role!r}")
        object.__setattr__(self, "content", tuple(self.content))

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (TextBlock(text),))

    @classmethod
    def assistant(cls, text: str = "", tool_uses: tuple[ToolUseBlock, ...] = ()) -> Message:
        blocks: tuple[Block, ...] = ((TextBlock(text),) if text else ()) + tuple(tool_uses)
        return cls("assistant", blocks)

    @classmethod
    def tool_results(cls, results: tuple[ToolResultBlock, ...], text: str = "") -> Message:
        return cls("user", tuple(results) + ((TextBlock(text),) if text else ()))

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": [b.to_dict() for b in self.content]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        content = data.get("content", ())
        if isinstance(content, str):  # the API's shorthand for one text block
            return cls(data["role"], (TextBlock(content),))
        return cls(data["role"], tuple(block_from_dict(b) for b in content))


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "input_schema": dict(self.input_schema)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolSpec:
        return cls(str(data["name"]), str(data.get("description", "")),
                   dict(data.get("input_schema") or {"type": "object"}))


@dataclass(frozen=True)
class ProviderRequest:
    """One model call. ``model``/``max_tokens`` of None mean "the provider's configured value"."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None
    model: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(self.messages))
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "stop_sequences", tuple(self.stop_sequences))


# --- events a provider posts ----------------------------------------------------------------

@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(frozen=True)
class Delta:
    text: str


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    input: Mapping[str, Any]

    def to_block(self) -> ToolUseBlock:
        return ToolUseBlock(self.id, self.name, dict(self.input))


@dataclass(frozen=True)
class Done:
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class ProviderFailure:
    """A classified failure; ``partial`` means deltas or tool calls were posted before it."""

    error: AgentError
    partial: bool


Event: TypeAlias = Delta | ToolCall | Done | ProviderFailure
Post: TypeAlias = Callable[[Event], None]


@runtime_checkable
class Provider(Protocol):
    name: str

    async def stream(self, request: ProviderRequest, post: Post) -> None: ...


#: ``factory(settings: rio.agent.config.ProviderSettings | None = None, *,
#: secrets: rio.agent.secrets.SecretStore | None = None, **ports) -> Provider``. Built-in providers also
#: take ``auth``, ``transport``, ``sleep`` and ``retry`` ports; a plug-in must accept the first two.
ProviderFactory: TypeAlias = Callable[..., Provider]


def discover_providers() -> dict[str, ProviderFactory]:
    """Provider factories installed under the ``rio.providers`` entry point group.

    A third party ships a provider by declaring an entry point in that group. A broken plug-in
    is logged and left out rather than taking the agent down with it.
    """
    # Imported here, not at the top: importlib.metadata (and the email package it pulls in)
    # is ~10 ms on the core's start path, and plug-ins are looked up only when a conversation
    # needs a provider (issue 13, docs/adr/0026-start-path-and-long-line-keys.md).
    import importlib.metadata
    found: dict[str, ProviderFactory] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            found[ep.name] = ep.load()
        except Exception:  # a third-party import can fail in any way; keep the others usable
            log.exception("provider plug-in %s (%s) failed to load", ep.name, ep.value)
    return found


# --- credentials on the wire -----------------------------------------------------------------

class AuthFace(Protocol):
    """Turns a credential into request headers; raises ``AgentError`` (not_configured,
    insecure_endpoint) when there is none or it must not travel to ``url``."""

    def headers(self, url: str) -> dict[str, str]: ...


def is_loopback_url(url: str) -> bool:
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def usable_url(url: str) -> bool:
    """An http(s) URL with a host: anything else is a configuration mistake, said as such
    (not as "plain http")."""
    parts = urllib.parse.urlsplit(url.strip())
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def key_may_travel_to(url: str) -> bool:
    """A key goes only over https, or over plain http to this machine (Ollama, LM Studio,
    test servers): anyone on the path of a plain-http request can read its headers."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    return scheme == "https" or (scheme == "http" and is_loopback_url(url))


# --- the retry driver shared by every HTTP provider ------------------------------------------

Attempt: TypeAlias = Callable[[Post], Awaitable[None]]
Sleep: TypeAlias = Callable[[float], Awaitable[None]]


async def stream_with_retries(attempt: Attempt, post: Post, *, policy: RetryPolicy,
                              sleep: Sleep) -> None:
    """Run ``attempt`` (which raises :class:`AgentError`) and post its outcome.

    Retrying is safe only while nothing has reached ``post``: after a delta the user has seen
    text, and a second request would repeat or contradict it. So a failure after the first
    event ends the call with ``ProviderFailure(partial=True)`` and the partial text stays.
    """
    posted = False

    def tracking_post(event: Event) -> None:
        nonlocal posted
        posted = True
        post(event)

    attempts = 0
    while True:
        attempts += 1
        try:
            await attempt(tracking_post)
            return
        except AgentError as err:
            error = err
        except Exception as exc:  # a bug in parsing must still end as agent.error, not a hang
            log.exception("provider attempt crashed")
            error = provider_crashed(exc)
        if posted:
            post(ProviderFailure(mark_partial(error), partial=True))
            return
        delay = policy.delay_before_retry(attempts, error)
        if delay is None:
            post(ProviderFailure(error, partial=False))
            return
        log.info("retrying after %s in %.1f s (attempt %d)", error.kind, delay, attempts)
        await sleep(delay)
