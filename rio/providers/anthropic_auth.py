"""The Claude provider's authentication face: the user's API key as ``x-api-key``.

Only the documented Messages API key scheme lives here (ADR-0011): no OAuth, no borrowed
client identity. The inference module (:mod:`rio.providers.anthropic`) asks this face for
headers and knows nothing about where keys come from, so a future sanctioned scheme is a new
face, not a change to request shaping or SSE parsing.
"""

from __future__ import annotations

from rio.agent.failures import not_configured
from rio.providers.key_auth import KeyAuth, KeySource

PROVIDER = "anthropic"


class ApiKeyAuth(KeyAuth):
    """Headers from a key source, read at every request so a key set mid-session is used;
    the key is required (the Messages API answers nothing without one)."""

    PROVIDER = PROVIDER

    def key_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def without_key(self) -> dict[str, str]:
        raise not_configured(self._provider)


__all__ = ["PROVIDER", "ApiKeyAuth", "KeySource"]
