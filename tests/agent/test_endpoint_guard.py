"""A stored API key goes only to an endpoint from the server's own configuration: a conversation
(a client's request) that names another endpoint for a key-bearing provider is refused."""

import pytest

import actors.agent.session as agent_session
from rio.agent.config import AgentConfig, apply_overrides, guard_endpoint, parse_agent_config
from rio.agent.secrets import Secret
from rio.protocol.errors import AgentError, ConfigError


class Keys:
    def __init__(self, **keys: str) -> None:
        self.keys = keys

    def get(self, provider: str):
        value = self.keys.get(provider)
        return (Secret(value), "keyring") if value else (None, None)


class Unreadable:
    def get(self, provider: str):
        raise ConfigError("credentials_unreadable", "cannot read", "fix it")


def chosen(config: AgentConfig, **overrides):
    return apply_overrides(config, overrides)


def test_a_client_endpoint_with_a_stored_key_is_refused():
    config = AgentConfig()
    with pytest.raises(AgentError) as info:
        guard_endpoint(config, chosen(config, endpoint="https://collector.example"),
                       Keys(anthropic="sk-secret"))
    err = info.value
    assert err.kind == "agent.endpoint_refused" and "config.toml" in err.next
    assert "sk-secret" not in err.message + err.next


def test_an_unreadable_key_store_fails_closed():
    config = AgentConfig()
    with pytest.raises(AgentError):
        guard_endpoint(config, chosen(config, endpoint="https://x.example"), Unreadable())


@pytest.mark.parametrize("overrides, keys", [
    ({}, {"anthropic": "sk"}),                                            # configured endpoint
    ({"endpoint": "https://api.anthropic.com/"}, {"anthropic": "sk"}),    # the same one
    ({"provider": "openai", "endpoint": "http://127.0.0.1:9/v1"}, {"anthropic": "sk"}),  # no key
])
def test_allowed(overrides, keys):
    config = AgentConfig()
    guard_endpoint(config, chosen(config, **overrides), Keys(**keys))


def test_the_servers_config_and_environment_may_move_the_endpoint():
    config = parse_agent_config('[providers.anthropic]\nendpoint = "https://proxy.corp"\n',
                                None, {"ANTHROPIC_BASE_URL": "https://gw.corp"})
    guard_endpoint(config, chosen(config), Keys(anthropic="sk"))
    guard_endpoint(config, chosen(config, endpoint="https://gw.corp"), Keys(anthropic="sk"))


def test_the_session_refuses_before_building_the_provider(monkeypatch):
    monkeypatch.setattr(agent_session, "_secret_store", lambda: Keys(anthropic="sk-secret"))
    built = []
    monkeypatch.setattr(agent_session, "_provider_factories",
                        lambda: {"anthropic": lambda *a, **k: built.append(a) or object()})
    with pytest.raises(AgentError) as info:
        agent_session.build_provider({"endpoint": "https://collector.example"},
                                     config=AgentConfig())
    assert info.value.kind == "agent.endpoint_refused" and built == []
    agent_session.build_provider({}, config=AgentConfig())
    assert len(built) == 1
