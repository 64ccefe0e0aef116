"""The provider contract: conversation records round-trip, discovery, where keys may travel."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rio.agent.config import ProviderSettings
from rio.agent.secrets import SecretStore
from rio.providers import base
from rio.providers.anthropic import AnthropicProvider
from rio.providers.anthropic_auth import ApiKeyAuth
from rio.providers.base import (
    Message,
    Provider,
    ProviderRequest,
    TextBlock,
    ToolCall,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    discover_providers,
    is_loopback_url,
    key_may_travel_to,
)
from rio.providers.openai_compat import OpenAICompatProvider

_json = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
_blocks = st.one_of(
    st.builds(TextBlock, st.text(max_size=20)),
    st.builds(ToolUseBlock, st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8),
              st.dictionaries(st.text(max_size=5), _json, max_size=3)),
    st.builds(ToolResultBlock, st.text(min_size=1, max_size=8), st.text(max_size=20),
              st.booleans()))
_messages = st.builds(Message, st.sampled_from(["user", "assistant"]),
                      st.lists(_blocks, max_size=4).map(tuple))


@given(_messages)
@pytest.mark.slow
def test_messages_round_trip_through_json_and_msgpack(message: Message) -> None:
    data = message.to_dict()
    assert Message.from_dict(json.loads(json.dumps(data))) == message
    assert Message.from_dict(msgpack.unpackb(msgpack.packb(data))) == message


def test_message_helpers() -> None:
    call = ToolCall("t1", "fs_read", {"path": "a"})
    reply = Message.assistant("Reading.", (call.to_block(),))
    assert reply.text == "Reading." and reply.tool_uses == (ToolUseBlock("t1", "fs_read",
                                                                          {"path": "a"}),)
    assert Message.assistant().content == ()
    results = Message.tool_results((ToolResultBlock("t1", "hi"),), "thanks")
    assert [b.type for b in results.content] == ["tool_result", "text"]
    assert Message.from_dict({"role": "user", "content": "short"}) == Message.user("short")


@pytest.mark.parametrize("bad", [{"role": "system", "content": []},
                                 {"role": "user", "content": [{"type": "image"}]},
                                 {"role": "user", "content": [{"type": "tool_use", "id": "x",
                                                               "name": "n", "input": [1]}]}])
def test_bad_records_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises((ValueError, KeyError)):
        Message.from_dict(bad)


def test_request_and_tool_spec() -> None:
    spec = ToolSpec.from_dict({"name": "fs_list", "description": "List."})
    assert spec.input_schema == {"type": "object"}
    assert ToolSpec.from_dict(spec.to_dict()) == spec
    request = ProviderRequest("s", [Message.user("x")], [spec])  # type: ignore[arg-type]
    assert isinstance(request.messages, tuple) and isinstance(request.tools, tuple)


@pytest.mark.parametrize(("url", "loopback", "may_send"), [
    ("http://127.0.0.1:11434/v1", True, True), ("http://localhost:1234/v1", True, True),
    ("http://[::1]:8080", True, True), ("http://127.8.9.10", True, True),
    ("https://api.anthropic.com", False, True), ("http://api.example.com", False, False),
    ("http://192.168.1.5:11434/v1", False, False), ("ftp://127.0.0.1", True, False)])
def test_where_a_key_may_travel(url: str, loopback: bool, may_send: bool) -> None:
    assert is_loopback_url(url) is loopback
    assert key_may_travel_to(url) is may_send


def test_built_in_providers_satisfy_the_protocol(tmp_path: Path) -> None:
    store = SecretStore(config_dir=tmp_path, keyring_backend=False, env={})
    settings = ProviderSettings("x", "https://h", "m")
    for factory in discover_providers().values():
        assert isinstance(factory(settings, secrets=store), Provider)
    assert AnthropicProvider(settings, auth=ApiKeyAuth.from_key("k")).name == "anthropic"
    assert OpenAICompatProvider(settings, secrets=store).name == "openai"


class _FakeEntryPoint:
    def __init__(self, name: str, target: object) -> None:
        self.name, self.value, self._target = name, f"acme:{name}", target

    def load(self) -> object:
        if isinstance(self._target, Exception):
            raise self._target
        return self._target


def test_third_party_providers_are_found_and_broken_ones_skipped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class AcmeProvider:
        name = "acme"

    def fake_entry_points(group: str) -> list[_FakeEntryPoint]:
        assert group == "rio.providers"
        return [_FakeEntryPoint("acme", AcmeProvider),
                _FakeEntryPoint("broken", ImportError("no module named acme_sdk"))]

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    assert base.discover_providers() == {"acme": AcmeProvider}
