"""The HTTP provider both built-ins are: one POST whose answer is an event stream, retried.

:class:`SseProvider` holds what the Anthropic and the OpenAI-compatible providers share — the
ports (``auth``, ``transport``, ``sleep``, ``retry``), the settings from ``config.toml`` or the
defaults, :func:`~rio.providers.base.stream_with_retries` around each attempt, and the attempt
itself: credential headers, the POST (:func:`~rio.providers.sse.post_event_stream`, no proxy
from the environment for a loopback server), each SSE event handed to the wire format's
parser, and the parser's say at the end of the stream (finished, or cut). A provider module
keeps only its wire format (:class:`WireFormat`: its URL, its headers, its body and its
:class:`StreamParser`) and where its key comes from.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from rio.agent.config import DEFAULT_PROVIDERS, ProviderSettings, load_agent_config
from rio.agent.failures import RetryPolicy, unexpected_response
from rio.providers.base import (
    AuthFace,
    Post,
    ProviderRequest,
    Sleep,
    is_loopback_url,
    stream_with_retries,
)
from rio.providers.sse import SseEvent, post_event_stream

if TYPE_CHECKING:
    from rio.agent.secrets import SecretStore


class StreamParser(Protocol):
    """A wire format's events turned into the provider's posts."""

    def handle(self, event: SseEvent) -> None:
        """One SSE event; raises a classified ``AgentError`` for an error event or garbage."""
        ...

    def end(self) -> None:
        """The stream ended without an error: post what is still due, or raise
        ``agent.network`` (stream cut) when the reply is not complete."""
        ...


# --- what both wire formats parse alike ---------------------------------------------------

def event_object(event: SseEvent, provider: str, what: str) -> dict[str, Any]:
    """The JSON object an event carries; ``agent.unexpected_response`` naming ``what`` (the
    event) when it is not one."""
    try:
        data = json.loads(event.data)
    except ValueError:
        raise unexpected_response(provider, f"malformed JSON in {what}") from None
    if not isinstance(data, dict):
        raise unexpected_response(provider, f"{what} is not a JSON object")
    return data


@dataclass
class ToolInProgress:
    """A tool call whose input arrives as JSON text in pieces, keyed by its index in the
    stream; complete only when its block or choice ends."""

    id: str = ""
    name: str = ""
    pieces: list[str] = field(default_factory=list)

    def input(self) -> Any:
        """The parsed input (``{}`` for none); ``ValueError`` when the text is not JSON —
        a truncated reply or a broken server, which only the caller can tell apart."""
        return json.loads("".join(self.pieces).strip() or "{}")


# --- the provider --------------------------------------------------------------------------

def _no_headers(settings: ProviderSettings) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class WireFormat:
    """What differs between two streamed-POST providers."""

    #: the endpoint's URL for the request
    url: Callable[[str], str]
    #: the request as the JSON body
    body: Callable[[ProviderRequest, ProviderSettings], dict[str, Any]]
    #: the stream's parser, posting to the given post
    parser: Callable[[Post], StreamParser]
    #: headers beside the credentials and the JSON/event-stream pair
    headers: Callable[[ProviderSettings], dict[str, str]] = _no_headers


class SseProvider:
    """A provider over one streamed POST; see the module docstring. Subclasses set
    :attr:`name`, :attr:`wire` and :meth:`default_auth`."""

    name: ClassVar[str]
    wire: ClassVar[WireFormat]

    def __init__(self, settings: ProviderSettings | None = None, *,
                 secrets: SecretStore | None = None, auth: AuthFace | None = None,
                 transport: Any = None, sleep: Sleep = asyncio.sleep,
                 retry: RetryPolicy | None = None) -> None:
        if settings is None:
            settings = load_agent_config().provider_settings(self.name)
        if not settings.endpoint:
            settings = DEFAULT_PROVIDERS[self.name]
        self.settings = settings
        self._auth = auth if auth is not None else self.default_auth(secrets)
        self._transport = transport
        self._sleep = sleep
        self._retry = retry or RetryPolicy()

    def default_auth(self, secrets: SecretStore | None) -> AuthFace:
        """The credential face when the caller gives none (the key from ``secrets``)."""
        raise NotImplementedError

    # --- shared ------------------------------------------------------------------------------
    async def stream(self, request: ProviderRequest, post: Post) -> None:
        await stream_with_retries(lambda p: self._attempt(request, p), post,
                                  policy=self._retry, sleep=self._sleep)

    async def _attempt(self, request: ProviderRequest, post: Post) -> None:
        settings = self.settings
        url = self.wire.url(settings.endpoint)
        headers = {**self._auth.headers(url), **self.wire.headers(settings),
                   "content-type": "application/json", "accept": "text/event-stream"}
        parser = self.wire.parser(post)
        await post_event_stream(provider=self.name, url=url, headers=headers,
                                body=self.wire.body(request, settings), on_event=parser.handle,
                                timeout_s=settings.timeout_s,
                                max_response_bytes=settings.max_response_bytes,
                                transport=self._transport, trust_env=not is_loopback_url(url))
        parser.end()


__all__ = ["SseProvider", "StreamParser", "ToolInProgress", "WireFormat", "event_object"]
