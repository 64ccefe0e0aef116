"""A provider's endpoint and model written into config.toml (issue 18, point 14): checked as a
usable URL and a model name, written atomically, and nothing else of the user's file changed.
The dialog that uses it is tested through the real window in tests/desktop/prefs/test_gui_ai_prefs_providers.py."""

from __future__ import annotations

import stat

import pytest

from rio.agent.config import load_agent_config
from rio.agent.config_edit import (
    check_endpoint,
    check_model,
    edit_text,
    provider_forms,
    save_provider_settings,
)
from rio.protocol.errors import ConfigError

USERS = """\
# my Rio settings
[agent]
provider = "openai"   # local first

[providers.openai]
endpoint = "http://127.0.0.1:11434/v1"   # Ollama
timeout_s = 300

[agents.mine]
command = "/opt/mine"
"""


def test_usable_endpoints_pass_and_the_rest_say_why():
    assert check_endpoint("openai", "  http://127.0.0.1:1234/v1 ") == "http://127.0.0.1:1234/v1"
    assert check_endpoint("openai", "http://gpu-box.lan:11434/v1") == \
        "http://gpu-box.lan:11434/v1"                      # no key: plain http allowed
    assert check_endpoint("anthropic", "https://proxy.example/anthropic") == \
        "https://proxy.example/anthropic"
    assert check_endpoint("anthropic", "") == ""          # the default
    for bad, words in (("notaurl", "not a usable URL"), ("ftp://host/x", "not a usable URL"),
                       ("http://", "not a usable URL"), ("http://a b/v1", "spaces"),
                       ("http://host:99999/v1", "port"),
                       ("https://me:secret@host/v1", "user name or password"),
                       ("https://host/v1#x", "fragment")):
        with pytest.raises(ValueError) as err:
            check_endpoint("openai", bad)
        assert words in str(err.value) and "openai endpoint" in str(err.value), bad
    with pytest.raises(ValueError) as err:      # the key would travel in the clear
        check_endpoint("anthropic", "http://proxy.example/v1")
    assert "plain http" in str(err.value)
    assert check_endpoint("anthropic", "http://localhost:8080") == "http://localhost:8080"


def test_model_names_are_one_word():
    assert check_model("openai", " qwen2.5-coder:7b ") == "qwen2.5-coder:7b"
    assert check_model("openai", "") == ""
    with pytest.raises(ValueError):
        check_model("openai", "llama 3")
    with pytest.raises(ValueError):
        check_model("openai", "x" * 201)


def test_only_the_edited_lines_change_and_the_file_reads_back(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(USERS)
    path.chmod(0o640)
    save_provider_settings({"openai": {"endpoint": "http://127.0.0.1:1234/v1",
                                       "model": "qwen2.5-coder:7b"},
                            "anthropic": {"model": "claude-opus-4-1"}}, tmp_path)
    text = path.read_text()
    assert text.startswith(USERS.split("[providers.openai]")[0])     # untouched above
    assert 'endpoint = "http://127.0.0.1:1234/v1"   # Ollama\n' in text   # comment kept
    assert 'timeout_s = 300\nmodel = "qwen2.5-coder:7b"\n' in text
    assert '[agents.mine]\ncommand = "/opt/mine"\n' in text
    assert text.endswith('[providers.anthropic]\nmodel = "claude-opus-4-1"\n')
    assert stat.S_IMODE(path.stat().st_mode) == 0o640                  # its mode kept
    config = load_agent_config(tmp_path, env={})
    assert config.provider_settings("openai").endpoint == "http://127.0.0.1:1234/v1"
    assert config.provider_settings("openai").model == "qwen2.5-coder:7b"
    assert config.provider_settings("openai").timeout_s == 300
    assert config.provider_settings("anthropic").model == "claude-opus-4-1"
    # emptied: the line goes, the default applies again
    save_provider_settings({"openai": {"endpoint": ""}}, tmp_path)
    assert "11434" not in path.read_text() and "1234" not in path.read_text()
    assert load_agent_config(tmp_path, env={}).provider_settings("openai").endpoint == \
        "http://127.0.0.1:11434/v1"
    assert not list(tmp_path.glob(".config-*.tmp"))


def test_a_new_file_is_private_and_the_forms_show_what_it_sets(tmp_path):
    save_provider_settings({"openai": {"model": "llama3.2"}}, tmp_path / "new")
    path = tmp_path / "new" / "config.toml"
    assert path.read_text() == '[providers.openai]\nmodel = "llama3.2"\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    forms = {f.name: f for f in provider_forms(tmp_path / "new",
                                               env={"ANTHROPIC_BASE_URL": "http://x:1"})}
    assert forms["openai"].model == "llama3.2" and forms["openai"].endpoint == ""
    assert forms["openai"].default_endpoint == "http://127.0.0.1:11434/v1"
    assert forms["anthropic"].env_value == "http://x:1"


def test_a_broken_file_or_a_form_it_cannot_edit_is_refused_untouched(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[providers.openai\nmodel = 1\n")
    with pytest.raises(ConfigError) as err:
        save_provider_settings({"openai": {"model": "x"}}, tmp_path)
    assert "line 1" in err.value.message
    inline = '[providers]\nopenai = { endpoint = "http://127.0.0.1:9/v1" }\n'
    path.write_text(inline)
    with pytest.raises(ConfigError):
        save_provider_settings({"openai": {"model": "x"}}, tmp_path)
    assert path.read_text() == inline


def test_a_quoted_table_name_and_a_file_without_a_last_newline():
    text = '[providers."openai"]\nendpoint = "http://a:1/v1"'
    assert edit_text(text, "openai", {"endpoint": "http://b:2/v1", "model": "m"}) == \
        '[providers."openai"]\nendpoint = "http://b:2/v1"\nmodel = "m"\n'
