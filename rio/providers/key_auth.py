"""An API key as a request header: the one face both built-in providers' keys go through.

The key is read from its source at every request, so a key set mid-session is used; it goes
only to a usable http(s) URL, and never over plain http to another machine (anyone on the
path could read it). What the header is called, and whether a missing key is an error, is the
provider's: :class:`rio.providers.anthropic_auth.ApiKeyAuth` (``x-api-key``, required) and
:class:`rio.providers.openai_compat.BearerKeyAuth` (``Authorization: Bearer``, optional).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Self

from rio.agent.failures import insecure_endpoint, unusable_endpoint
from rio.agent.secrets import Secret, SecretStore
from rio.providers.base import key_may_travel_to, usable_url

KeySource = Callable[[], tuple[Secret | None, str | None]]


class KeyAuth:
    """An :class:`~rio.providers.base.AuthFace` over a key source; subclasses say how the key
    is sent (:meth:`key_headers`) and what no key means (:meth:`without_key`)."""

    #: The provider whose key this is, when the caller names none.
    PROVIDER: ClassVar[str]

    def __init__(self, key_source: KeySource, provider: str | None = None) -> None:
        self._key_source = key_source
        self._provider = provider or self.PROVIDER

    @classmethod
    def from_store(cls, store: SecretStore | None = None, provider: str | None = None) -> Self:
        store = store or SecretStore()
        name = provider or cls.PROVIDER
        return cls(lambda: store.get(name), name)

    @classmethod
    def from_key(cls, key: str | Secret, provider: str | None = None) -> Self:
        secret = key if isinstance(key, Secret) else Secret(key)
        return cls(lambda: (secret, "argument"), provider)

    def headers(self, url: str) -> dict[str, str]:
        if not usable_url(url):
            raise unusable_endpoint(self._provider, url)
        key, _source = self._key_source()
        if key is None:
            return self.without_key()
        if not key_may_travel_to(url):
            raise insecure_endpoint(self._provider, url)
        return self.key_headers(key.reveal())

    def key_headers(self, key: str) -> dict[str, str]:
        raise NotImplementedError

    def without_key(self) -> dict[str, str]:
        """No key is set: by default no header (a local server needs none)."""
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider={self._provider!r})"


__all__ = ["KeyAuth", "KeySource"]
