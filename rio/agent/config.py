"""The agent's settings: ``[agent]`` and ``[providers.<name>]`` in the user's config.toml.

The file lives in ``platformdirs.user_config_dir("rio")`` (``RIO_CONFIG_DIR`` overrides the
folder). Precedence, lowest to highest: the documented defaults below, the file, the
environment (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``), then one-run overrides
(``rio chat --provider/--endpoint/--model``) passed to :func:`load_agent_config`.

Example (every key optional)::

    [agent]
    provider = "anthropic"            # or "openai", or an installed plug-in's name
    mode = "review"                   # "review" | "auto_buffer" | "allow_all"
    max_requests_per_turn = 24
    max_tool_calls_per_turn = 64
    system_prompt_addition = ""

    [providers.anthropic]
    endpoint = "https://api.anthropic.com"
    model = "claude-sonnet-4-5"
    api_version = "2023-06-01"
    max_tokens = 8192
    timeout_s = 120                   # longest silence on the stream before giving up

    [providers.openai]                # Ollama by default; LM Studio: http://127.0.0.1:1234/v1
    endpoint = "http://127.0.0.1:11434/v1"
    model = "llama3.1"

Sections other than these belong to other parts of Rio and are not read here. Keys in the
sections read here are checked: a typo is an error naming its line, not a silent default.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import platformdirs

from rio.config.toml_file import parse_toml, read_config_text
from rio.protocol.errors import AgentError, ConfigError

CONFIG_FILE = "config.toml"
MODES = ("review", "auto_buffer", "allow_all")
_MIB = 1 << 20


@dataclass(frozen=True)
class ProviderSettings:
    """Everything a provider needs besides the key. ``endpoint_source`` says where the
    endpoint came from ("default", "config", "env:ANTHROPIC_BASE_URL", "override") so a
    status line can explain a surprising URL."""

    name: str
    endpoint: str
    model: str
    api_version: str = "2023-06-01"
    max_tokens: int = 8192
    timeout_s: float = 120.0
    max_response_bytes: int = 32 * _MIB
    endpoint_source: str = "default"
    extra: Mapping[str, Any] = field(default_factory=dict)


#: The documented defaults, one per built-in provider.
DEFAULT_PROVIDERS: Mapping[str, ProviderSettings] = MappingProxyType({
    "anthropic": ProviderSettings("anthropic", "https://api.anthropic.com", "claude-sonnet-4-5"),
    "openai": ProviderSettings("openai", "http://127.0.0.1:11434/v1", "llama3.1",
                               api_version="", max_tokens=4096),
})

#: Environment variables that move an endpoint (the vendors' own conventions).
ENDPOINT_ENV = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}


@dataclass(frozen=True)
class AgentConfig:
    provider: str = "anthropic"
    mode: str = "review"
    max_requests_per_turn: int = 24
    max_tool_calls_per_turn: int = 64
    #: An external (ACP) agent's calls to Rio's MCP tools per turn: changing ones, and all.
    max_agent_changes_per_turn: int = 24
    max_agent_requests_per_turn: int = 400
    system_prompt_addition: str = ""
    #: An agent process idle this long (no turn) is stopped; the next message starts it
    #: again and the conversation goes on. 0 keeps it running until the instance stops.
    idle_stop_s: float = 300.0
    providers: Mapping[str, ProviderSettings] = field(
        default_factory=lambda: dict(DEFAULT_PROVIDERS))
    path: Path | None = None

    def provider_settings(self, name: str | None = None) -> ProviderSettings:
        """Settings for ``name`` (default: the chosen provider); a plug-in with no section
        gets an empty endpoint/model that the plug-in fills in itself."""
        wanted = name or self.provider
        return self.providers.get(wanted) or ProviderSettings(wanted, "", "")


_AGENT_KEYS: dict[str, type | tuple[type, ...]] = {
    "provider": str, "mode": str, "max_requests_per_turn": int, "max_tool_calls_per_turn": int,
    "max_agent_changes_per_turn": int, "max_agent_requests_per_turn": int,
    "system_prompt_addition": str, "idle_stop_s": (int, float)}
_PROVIDER_KEYS: dict[str, type | tuple[type, ...]] = {
    "endpoint": str, "model": str, "api_version": str, "max_tokens": int,
    "timeout_s": (int, float), "max_response_bytes": int}


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    override = env.get("RIO_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir("rio"))


def _line_of(text: str, section: str, key: str | None) -> int | None:
    """The line of ``key`` inside ``[section]`` (or of the header), for error messages.
    tomllib reports positions only for syntax errors, so type errors are located here."""
    lines = text.splitlines()
    header = re.compile(r"^\s*\[\s*" + r"\s*\.\s*".join(map(re.escape, section.split("."))) +
                        r"\s*\]")
    in_section = False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("["):
            in_section = bool(header.match(line))
            if in_section and key is None:
                return number
            continue
        if in_section and key is not None and re.match(rf"^\s*\"?{re.escape(key)}\"?\s*=", line):
            return number
    return None


def _invalid(path: Path | None, text: str, section: str, key: str | None, what: str
             ) -> ConfigError:
    line = _line_of(text, section, key)
    where = f"{path or CONFIG_FILE}" + (f", line {line}" if line else "")
    return ConfigError("invalid", f"{where}: {what}.",
                       f"Fix [{section}] at {where} and start again.",
                       path=str(path) if path else None, line=line)


def _check_table(table: Any, section: str, allowed: Mapping[str, type | tuple[type, ...]] | None,
                 path: Path | None, text: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise _invalid(path, text, section, None, f"[{section}] must be a table")
    for key, value in table.items():
        if allowed is None:
            continue
        if key not in allowed:
            known = ", ".join(sorted(allowed))
            raise _invalid(path, text, section, key, f"unknown key {key!r} (known: {known})")
        expected = allowed[key]
        if isinstance(value, bool) or not isinstance(value, expected):
            names = (expected.__name__ if isinstance(expected, type)
                     else " or ".join(t.__name__ for t in expected))
            raise _invalid(path, text, section, key,
                           f"{key} must be {'an' if names[0] in 'aeiou' else 'a'} {names}, "
                           f"not {value!r}")
    return table


def _positive(table: Mapping[str, Any], key: str, section: str, path: Path | None, text: str
              ) -> None:
    if key in table and table[key] <= 0:
        raise _invalid(path, text, section, key, f"{key} must be greater than 0")


def parse_agent_config(text: str, path: Path | None = None,
                       env: Mapping[str, str] | None = None,
                       overrides: Mapping[str, Any] | None = None) -> AgentConfig:
    """Parse config.toml text; see the module docstring for precedence."""
    env = os.environ if env is None else env
    data = parse_toml(text, path)

    agent = _check_table(data.get("agent", {}), "agent", _AGENT_KEYS, path, text)
    for key in ("max_requests_per_turn", "max_tool_calls_per_turn",
                "max_agent_changes_per_turn", "max_agent_requests_per_turn"):
        _positive(agent, key, "agent", path, text)
    if agent.get("idle_stop_s", 0) < 0:
        raise _invalid(path, text, "agent", "idle_stop_s",
                       "idle_stop_s must be 0 (never) or a number of seconds")
    if agent.get("mode", "review") not in MODES:
        raise _invalid(path, text, "agent", "mode",
                       f"mode must be one of {', '.join(MODES)}, not {agent['mode']!r}")

    providers: dict[str, ProviderSettings] = dict(DEFAULT_PROVIDERS)
    sections = _check_table(data.get("providers", {}), "providers", None, path, text)
    for name, table in sections.items():
        section = f"providers.{name}"
        builtin = name in DEFAULT_PROVIDERS
        table = _check_table(table, section, _PROVIDER_KEYS if builtin else None, path, text)
        for key in ("max_tokens", "timeout_s", "max_response_bytes"):
            if builtin:
                _positive(table, key, section, path, text)
        base = providers.get(name) or ProviderSettings(name, "", "")
        known = {k: v for k, v in table.items() if k in _PROVIDER_KEYS}
        extra = {k: v for k, v in table.items() if k not in _PROVIDER_KEYS}
        settings = replace(base, **known, extra=extra)
        if "timeout_s" in known:
            settings = replace(settings, timeout_s=float(known["timeout_s"]))
        if "endpoint" in known:
            settings = replace(settings, endpoint_source="config")
        providers[name] = settings

    for name, var in ENDPOINT_ENV.items():
        if env.get(var):
            providers[name] = replace(providers[name], endpoint=env[var],
                                      endpoint_source=f"env:{var}")

    config = AgentConfig(
        provider=agent.get("provider", "anthropic"), mode=agent.get("mode", "review"),
        max_requests_per_turn=agent.get("max_requests_per_turn", 24),
        max_tool_calls_per_turn=agent.get("max_tool_calls_per_turn", 64),
        max_agent_changes_per_turn=agent.get("max_agent_changes_per_turn", 24),
        max_agent_requests_per_turn=agent.get("max_agent_requests_per_turn", 400),
        system_prompt_addition=agent.get("system_prompt_addition", ""),
        idle_stop_s=float(agent.get("idle_stop_s", 300.0)),
        providers=providers, path=path)
    return apply_overrides(config, overrides or {})


def apply_overrides(config: AgentConfig, overrides: Mapping[str, Any]) -> AgentConfig:
    """One run's overrides: ``provider`` and ``mode`` for the agent, ``endpoint``/``model``/
    ``max_tokens``/``timeout_s`` for the chosen provider. None values are ignored."""
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(given) - {"provider", "mode", "endpoint", "model", "max_tokens", "timeout_s"}
    if unknown:
        raise ConfigError("invalid", f"Unknown override(s): {', '.join(sorted(unknown))}.",
                          "Use --provider, --mode, --endpoint, --model, --max-tokens or "
                          "--timeout.")
    if "mode" in given and given["mode"] not in MODES:
        raise ConfigError("invalid", f"Mode {given['mode']!r} is not one of {', '.join(MODES)}.",
                          f"Pick one of {', '.join(MODES)}.")
    config = replace(config, **{k: given[k] for k in ("provider", "mode") if k in given})
    settings = config.provider_settings()
    changes: dict[str, Any] = {k: given[k] for k in ("endpoint", "model", "max_tokens", "timeout_s")
                               if k in given}
    if "endpoint" in changes:
        changes["endpoint_source"] = "override"
    if changes:
        providers = {**config.providers, settings.name: replace(settings, **changes)}
        config = replace(config, providers=providers)
    return config


def guard_endpoint(configured: AgentConfig, chosen: AgentConfig, secrets: Any) -> None:
    """Refuse (``agent.endpoint_refused``) a conversation's own endpoint when the provider would
    send it a stored API key (ADR-0019).

    An endpoint from a request (``agent.new {endpoint}``, ``rio chat --endpoint``) may come from
    any client, remote ones included; a provider that attaches the user's key would hand that
    key to whatever host the client named. So a key-bearing provider talks only to the endpoint
    of the server's own configuration (config.toml, ``ANTHROPIC_BASE_URL``/``OPENAI_BASE_URL``);
    a provider with no key stored (a local Ollama) may be pointed anywhere.
    """
    settings = chosen.provider_settings()
    if settings.endpoint_source != "override":
        return
    own = configured.provider_settings(chosen.provider).endpoint
    if settings.endpoint.rstrip("/") == own.rstrip("/"):
        return
    try:
        key, _source = secrets.get(chosen.provider)
    except ConfigError:
        key = True   # a key store that cannot be read may still hold a key: fail closed
    if key is None:
        return
    raise AgentError("endpoint_refused",
                     f"This conversation asks for the endpoint {settings.endpoint}, but Rio "
                     f"sends your stored {chosen.provider} API key only to the endpoint in the "
                     f"server's configuration ({own or 'none set'})",
                     f"Set [providers.{chosen.provider}] endpoint in the server's config.toml "
                     "(or its _BASE_URL variable) and start a conversation without an endpoint",
                     provider=chosen.provider)


def load_agent_config(config_directory: Path | None = None,
                      env: Mapping[str, str] | None = None,
                      overrides: Mapping[str, Any] | None = None) -> AgentConfig:
    """Read ``config.toml`` from the config folder; a missing file means all defaults."""
    folder = config_directory or config_dir(env)
    path = folder / CONFIG_FILE
    return parse_agent_config(read_config_text(path), path, env, overrides)
