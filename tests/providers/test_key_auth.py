"""Both built-in providers' keys go through one face (rio/providers/key_auth.py): the same
checks in the same order, only the header and what no key means differ."""

from __future__ import annotations

import pytest

from rio.agent.secrets import Secret
from rio.protocol.errors import AgentError
from rio.providers.anthropic_auth import ApiKeyAuth
from rio.providers.key_auth import KeyAuth
from rio.providers.openai_compat import BearerKeyAuth

KEY = "sk-test-0123456789"


@pytest.mark.parametrize("face,header", [(ApiKeyAuth, {"x-api-key": KEY}),
                                         (BearerKeyAuth, {"authorization": f"Bearer {KEY}"})])
def test_a_key_is_sent_as_the_providers_header_and_only_where_it_may_travel(
        face: type[KeyAuth], header: dict[str, str]) -> None:
    auth = face.from_key(KEY)
    assert auth.headers("https://api.example.test/v1") == header
    assert auth.headers("http://127.0.0.1:11434/v1") == header      # this machine
    with pytest.raises(AgentError) as caught:
        auth.headers("http://models.example.test/v1")                # anyone on the path
    assert caught.value.kind == "agent.insecure_endpoint"
    assert KEY not in repr(auth) and repr(auth) == f"{face.__name__}(provider={face.PROVIDER!r})"


def test_no_key_is_an_error_for_the_messages_api_and_no_header_for_a_local_server() -> None:
    with pytest.raises(AgentError) as caught:
        ApiKeyAuth(lambda: (None, None)).headers("https://api.example.test")
    assert caught.value.kind == "agent.not_configured"
    assert BearerKeyAuth(lambda: (None, None)).headers("http://models.example.test") == {}


def test_the_key_is_read_at_every_request_so_a_key_set_mid_session_is_used() -> None:
    keys: list[Secret | None] = [None, Secret("sk-later-0123456789")]
    auth = BearerKeyAuth(lambda: (keys[0], "test"))
    assert auth.headers("https://api.example.test") == {}
    keys[0] = keys[1]
    assert auth.headers("https://api.example.test") == {
        "authorization": "Bearer sk-later-0123456789"}
