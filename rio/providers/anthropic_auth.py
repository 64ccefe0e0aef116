"""The Claude provider's authentication face: the user's API key as ``x-api-key``.

Only the documented Messages API key scheme lives here (ADR-0011): no OAuth, no borrowed
client identity. The inference module (:mod:`rio.providers.anthropic`) asks this face for
headers and knows nothing about where keys come from, so a future sanctioned scheme is a new
face, not a change to request shaping or SSE parsing.
"""

from __future__ import annotations

from collections.abc import Callable

from rio.agent.failures import insecure_endpoint, not_configured, unusable_endpoint
from rio.agent.secrets import Secret, SecretStore
from rio.providers.base import key_may_travel_to, usable_url

KeySource = Callable[[], tuple[Secret | None, str | None]]

PROVIDER = "anthropic"


class ApiKeyAuth:
    """Headers from a key source, read at every request so a key set mid-session is used."""

    def __init__(self, key_source: KeySource, provider: str = PROVIDER) -> None:
        self._key_source = key_source
        self._provider = provider

    @classmethod
    def from_store(cls, store: SecretStore | None = None, provider: str = PROVIDER) -> ApiKeyAuth:
        store = store or SecretStore()
        return cls(lambda: store.get(provider), provider)

    @classmethod
    def from_key(cls, key: str | Secret, provider: str = PROVIDER) -> ApiKeyAuth:
        secret = key if isinstance(key, Secret) else Secret(key)
        return cls(lambda: (secret, "argument"), provider)

    def headers(self, url: str) -> dict[str, str]:
        if not usable_url(url):
            raise unusable_endpoint(self._provider, url)
        key, _source = self._key_source()
        if key is None:
            raise not_configured(self._provider)
        if not key_may_travel_to(url):
            raise insecure_endpoint(self._provider, url)
        return {"x-api-key": key.reveal()}

    def __repr__(self) -> str:
        return f"ApiKeyAuth(provider={self._provider!r})"
