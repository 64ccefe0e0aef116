"""The [agent] and [providers.*] sections: defaults, file, environment, one-run overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from rio.agent.config import (
    DEFAULT_PROVIDERS,
    AgentConfig,
    apply_overrides,
    config_dir,
    load_agent_config,
    parse_agent_config,
)
from rio.protocol.errors import ConfigError


def test_defaults_without_a_file(tmp_path: Path) -> None:
    config = load_agent_config(tmp_path, env={})
    assert (config.provider, config.mode, config.max_requests_per_turn) == \
        ("anthropic", "review", 24)
    anthropic = config.provider_settings()
    assert anthropic.endpoint == "https://api.anthropic.com"
    assert (anthropic.api_version, anthropic.endpoint_source) == ("2023-06-01", "default")
    assert config.provider_settings("openai").endpoint == "http://127.0.0.1:11434/v1"


def test_file_values_are_read(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('''
[editor]
font = "Terminus"   # someone else's section: ignored here

[agent]
provider = "openai"
mode = "auto_buffer"
max_requests_per_turn = 10
max_tool_calls_per_turn = 5
system_prompt_addition = "Use tabs."

[providers.openai]
endpoint = "http://127.0.0.1:1234/v1"
model = "qwen2.5-coder"
timeout_s = 30

[providers.anthropic]
api_version = "2024-01-01"
max_tokens = 2048
''')
    config = load_agent_config(tmp_path, env={})
    assert (config.provider, config.mode, config.max_requests_per_turn,
            config.max_tool_calls_per_turn, config.system_prompt_addition) == \
        ("openai", "auto_buffer", 10, 5, "Use tabs.")
    openai = config.provider_settings()
    assert (openai.endpoint, openai.model, openai.timeout_s, openai.endpoint_source) == \
        ("http://127.0.0.1:1234/v1", "qwen2.5-coder", 30.0, "config")
    anthropic = config.provider_settings("anthropic")
    assert (anthropic.api_version, anthropic.max_tokens, anthropic.model) == \
        ("2024-01-01", 2048, DEFAULT_PROVIDERS["anthropic"].model)
    assert config.path == tmp_path / "config.toml"


def test_env_base_urls_override_the_file() -> None:
    text = '[providers.anthropic]\nendpoint = "https://from-file"\n'
    config = parse_agent_config(text, env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
                                           "OPENAI_BASE_URL": "http://127.0.0.1:8/v1"})
    assert config.provider_settings("anthropic").endpoint == "http://127.0.0.1:9"
    assert config.provider_settings("anthropic").endpoint_source == "env:ANTHROPIC_BASE_URL"
    assert config.provider_settings("openai").endpoint == "http://127.0.0.1:8/v1"


def test_one_run_overrides_win() -> None:
    config = parse_agent_config("", env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
                                overrides={"endpoint": "http://127.0.0.1:7", "model": "m2",
                                           "max_tokens": None})
    settings = config.provider_settings()
    assert (settings.endpoint, settings.model, settings.endpoint_source) == \
        ("http://127.0.0.1:7", "m2", "override")
    assert settings.max_tokens == DEFAULT_PROVIDERS["anthropic"].max_tokens


def test_override_provider_then_endpoint_applies_to_the_new_provider() -> None:
    config = apply_overrides(AgentConfig(), {"provider": "openai", "endpoint": "http://h/v1"})
    assert config.provider_settings().name == "openai"
    assert config.provider_settings().endpoint == "http://h/v1"
    assert config.provider_settings("anthropic").endpoint == "https://api.anthropic.com"


@pytest.mark.parametrize("overrides", [{"colour": "red"}, {"mode": "yolo"}])
def test_bad_overrides(overrides: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        apply_overrides(AgentConfig(), overrides)


def test_plugin_sections_keep_their_own_keys() -> None:
    config = parse_agent_config('[agent]\nprovider = "acme"\n\n[providers.acme]\n'
                                'endpoint = "https://acme"\nregion = "eu"\n', env={})
    settings = config.provider_settings()
    assert (settings.name, settings.endpoint, dict(settings.extra)) == \
        ("acme", "https://acme", {"region": "eu"})
    assert parse_agent_config('[agent]\nprovider = "other"\n', env={}).provider_settings() \
        .endpoint == ""


@pytest.mark.parametrize(("text", "line", "words"), [
    ('[agent]\nmode = "review"\n\n[agent.x\n', 4, "line 4"),
    ('# c\n[agent]\nmax_requests_per_turn = "many"\n', 3, "must be an int"),
    ('[agent]\nprovider = "anthropic"\nmode = "wild"\n', 3, "review, auto_buffer, allow_all"),
    ('[agent]\nmax_requests_per_turn = 0\n', 2, "greater than 0"),
    ('[agent]\nmax_request_per_turn = 3\n', 2, "unknown key 'max_request_per_turn'"),
    ('[providers.anthropic]\nmodel = "m"\n\n[providers.openai]\nmax_tokens = true\n', 5,
     "max_tokens must be an int"),
    ('[providers.openai]\nendpont = "x"\n', 2, "unknown key 'endpont'"),
])
def test_bad_file_names_the_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_agent_config(tmp_path, env={})
    error = caught.value
    assert error.kind == "config.invalid"
    assert error.details["line"] == line
    assert f"line {line}" in error.message and words in error.message
    assert str(tmp_path / "config.toml") in error.message


def test_unreadable_file(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_bytes(b"\xff\xfe[agent]")
    with pytest.raises(ConfigError):
        load_agent_config(tmp_path, env={})


def test_config_dir_honours_rio_config_dir(tmp_path: Path) -> None:
    assert config_dir({"RIO_CONFIG_DIR": str(tmp_path)}) == tmp_path
    assert config_dir({}).name == "rio"


def test_idle_stop_s_defaults_to_minutes_and_refuses_negative_values() -> None:
    from rio.agent.config import parse_agent_config
    from rio.protocol.errors import ConfigError
    assert parse_agent_config("").idle_stop_s == 300.0
    assert parse_agent_config("[agent]\nidle_stop_s = 0\n").idle_stop_s == 0.0
    assert parse_agent_config("[agent]\nidle_stop_s = 2.5\n").idle_stop_s == 2.5
    with pytest.raises(ConfigError):
        parse_agent_config("[agent]\nidle_stop_s = -1\n")
