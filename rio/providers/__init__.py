"""Model providers: the contract (:mod:`.base`) and the built-in HTTP providers.

``anthropic`` (:mod:`.anthropic` + :mod:`.anthropic_auth`) and ``openai``
(:mod:`.openai_compat`) are found like any third-party provider, through the
``rio.providers`` entry point group (:func:`discover_providers`). Both are one
:class:`.sse_provider.SseProvider` with a wire format of their own, their keys one
:class:`.key_auth.KeyAuth`. Importing this package does not import httpx; the provider
modules do when they stream.
"""

from rio.providers.base import (
    AuthFace,
    Block,
    Delta,
    Done,
    Event,
    Message,
    Post,
    Provider,
    ProviderFailure,
    ProviderRequest,
    TextBlock,
    ToolCall,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Usage,
    discover_providers,
    stream_with_retries,
)

__all__ = [
    "AuthFace", "Block", "Delta", "Done", "Event", "Message", "Post", "Provider",
    "ProviderFailure", "ProviderRequest", "TextBlock", "ToolCall", "ToolResultBlock", "ToolSpec",
    "ToolUseBlock", "Usage", "discover_providers", "stream_with_retries",
]
