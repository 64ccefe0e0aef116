"""Writing a model provider's ``endpoint`` and ``model`` into the user's config.toml (Edit → AI
Preferences, ui/tk/prefs/providers.py), checked first.

config.toml is the user's own file, read by :mod:`rio.agent.config` at every turn; it has no
other writer in Rio. So the edit is surgical: only the ``endpoint`` and ``model`` lines of the
``[providers.NAME]`` tables change (a table that is missing is added at the end), and every other
line — comments, other keys, other sections, their order — stays byte for byte as the user
wrote it. The file is written the way Rio writes its own small files
(:func:`rio.files.atomic.write_json`): a temp file in the same folder, fsync, ``os.replace``,
so a crash leaves the old file or the new one, never half of one; the file keeps its mode
(a new one is 0600). The new text is parsed before it is written: a file Rio could not read
afterwards is never written (and one it cannot read now is refused with where to fix it).

Checks: an endpoint is empty (the provider's default) or a usable URL — ``http://`` or
``https://``, a host, no spaces, no user name or password in it (a key goes in ``rio key
set``); for a provider that always sends a key (Anthropic), plain ``http://`` only to this
machine. A model is empty (the default) or one word of at most 200 characters.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rio.agent.config import (
    CONFIG_FILE,
    DEFAULT_PROVIDERS,
    ENDPOINT_ENV,
    AgentConfig,
    config_dir,
    parse_agent_config,
)
from rio.config.toml_file import parse_toml, read_config_text
from rio.protocol.errors import ConfigError

#: The keys of ``[providers.NAME]`` the dialog edits.
EDITED = ("endpoint", "model")
#: Providers that send an API key with every request: plain http only to this machine.
KEY_ALWAYS = ("anthropic",)
MODEL_LIMIT = 200


@dataclass(frozen=True)
class ProviderForm:
    """One provider as the dialog shows it: what config.toml sets ("" when it does not), the
    default it falls back to, and the environment variable that overrides the endpoint."""
    name: str
    endpoint: str
    model: str
    default_endpoint: str
    default_model: str
    env_var: str | None = None
    env_value: str | None = None


def config_path(folder: Path | None = None) -> Path:
    return (folder or config_dir()) / CONFIG_FILE


def provider_forms(folder: Path | None = None, env: Mapping[str, str] | None = None
                   ) -> list[ProviderForm]:
    """The built-in providers, then any other ``[providers.NAME]`` of config.toml, with what
    the file sets for each. Raises ``config.invalid`` (where to fix it) for a broken file."""
    env = os.environ if env is None else env
    path = config_path(folder)
    text = read_config_text(path)
    parse_agent_config(text, path, env={})          # a broken file is said, not overwritten
    tables = parse_toml(text, path).get("providers", {})
    names = list(DEFAULT_PROVIDERS) + sorted(n for n in tables if n not in DEFAULT_PROVIDERS)
    forms = []
    for name in names:
        found = tables.get(name)
        table: dict[str, object] = found if isinstance(found, dict) else {}
        default = DEFAULT_PROVIDERS.get(name)
        var = ENDPOINT_ENV.get(name)
        forms.append(ProviderForm(
            name, str(table.get("endpoint") or ""), str(table.get("model") or ""),
            default.endpoint if default else "", default.model if default else "",
            var, env.get(var) if var and env.get(var) else None))
    return forms


def check_endpoint(provider: str, text: str) -> str:
    """The endpoint as it will be written ("" for the default); ValueError says what is wrong,
    in words for the dialog."""
    url = text.strip()
    if not url:
        return ""
    label = f"The {provider} endpoint"
    if any(c.isspace() for c in url):
        raise ValueError(f"{label} has spaces in it: {url!r}.")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{label} {url!r} is not a usable URL: it needs http:// or https:// "
                         "and a host, e.g. http://127.0.0.1:11434/v1.")
    try:
        _ = parts.port      # urllib checks the port only when asked for it
    except ValueError:
        raise ValueError(f"{label} {url!r} has a port that is not a number from 0 to "
                         "65535.") from None
    if parts.username or parts.password:
        raise ValueError(f"{label} must not hold a user name or password; store the API key "
                         f"with `rio key set {provider}` (Agent → Set API Key…).")
    if parts.fragment:
        raise ValueError(f"{label} must not end in a #fragment.")
    if provider in KEY_ALWAYS and parts.scheme.lower() == "http":
        from rio.providers.base import is_loopback_url
        if not is_loopback_url(url):
            raise ValueError(f"{label} would carry your API key over plain http to another "
                             "machine: use https://, or http:// to 127.0.0.1 or localhost.")
    return url


def check_model(provider: str, text: str) -> str:
    """The model name as it will be written ("" for the default); ValueError in words."""
    model = text.strip()
    if any(c.isspace() or ord(c) < 32 for c in model):
        raise ValueError(f"The {provider} model {model!r} has spaces in it: give the model's "
                         "name, such as claude-sonnet-4-5 or llama3.1.")
    if len(model) > MODEL_LIMIT:
        raise ValueError(f"The {provider} model name is longer than {MODEL_LIMIT} characters.")
    return model


# --- the edit -----------------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*\[")
_KEY_LINE = r'^(?P<indent>\s*)"?{key}"?\s*=\s*(?P<value>"(?:[^"\\]|\\.)*"|\'[^\']*\')?' \
            r'(?P<rest>.*)$'


def _section_header(name: str) -> re.Pattern[str]:
    quoted = rf'(?:{re.escape(name)}|"{re.escape(name)}"|\'{re.escape(name)}\')'
    return re.compile(rf"^\s*\[\s*providers\s*\.\s*{quoted}\s*\]\s*(?:#.*)?$")


def _toml_string(value: str) -> str:
    # JSON's string escapes are TOML basic-string escapes for everything json.dumps emits.
    return json.dumps(value, ensure_ascii=False)


def edit_text(text: str, name: str, values: Mapping[str, str]) -> str:
    """``text`` with ``[providers.NAME]``'s ``endpoint``/``model`` set to ``values`` ("": the
    key removed, the default applies); every other line kept as it is."""
    lines = text.splitlines(keepends=True)
    header = _section_header(name)
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        wanted = {k: v for k, v in values.items() if v}
        if not wanted:
            return text
        block = f"[providers.{name}]\n" + "".join(f"{k} = {_toml_string(v)}\n"
                                                  for k, v in wanted.items())
        if text and not text.endswith("\n"):
            text += "\n"
        return text + ("\n" if text.strip() else "") + block
    end = next((i for i in range(start + 1, len(lines)) if _HEADER.match(lines[i])),
               len(lines))
    body = lines[start + 1:end]
    for key, value in values.items():
        pattern = re.compile(_KEY_LINE.format(key=re.escape(key)))
        at = next((i for i, line in enumerate(body) if pattern.match(line.rstrip("\n"))), None)
        if at is not None:
            found = pattern.match(body[at].rstrip("\n"))
            assert found is not None
            rest = found.group("rest") if found.group("value") else ""
            comment = rest if rest.strip().startswith("#") else ""
            if value:
                newline = "\n" if body[at].endswith("\n") else ""
                body[at] = f"{found.group('indent')}{key} = {_toml_string(value)}" \
                           f"{comment}{newline}"
            else:
                del body[at]
        elif value:
            last = max((i for i, line in enumerate(body) if line.strip()
                        and not line.lstrip().startswith("#")), default=-1)
            if 0 <= last and not body[last].endswith("\n"):
                body[last] += "\n"
            body.insert(last + 1, f"{key} = {_toml_string(value)}\n")
    return "".join(lines[:start + 1] + body + lines[end:])


def save_provider_settings(changes: Mapping[str, Mapping[str, str]],
                           folder: Path | None = None) -> Path:
    """Write each provider's ``endpoint``/``model`` of ``changes`` (checked already) into
    config.toml, atomically; the text is parsed first, and must say what was asked (a table
    written in a form this edit does not touch — an inline table, dotted keys — is refused
    with where to change it by hand)."""
    path = config_path(folder)
    text = read_config_text(path)
    before = parse_agent_config(text, path, env={})
    new = text
    for name, values in changes.items():
        new = edit_text(new, name, {k: v for k, v in values.items() if k in EDITED})
    after = parse_agent_config(new, path, env={})
    for name, values in changes.items():
        _check_result(path, before, after, name, values)
    if new != text:
        _write_atomic(path, new)
    return path


def _check_result(path: Path, before: AgentConfig, after: AgentConfig, name: str,
                  values: Mapping[str, str]) -> None:
    default = DEFAULT_PROVIDERS.get(name)
    got = after.provider_settings(name)
    for key in EDITED:
        if key not in values:
            continue
        wanted = values[key] or (getattr(default, key) if default else "")
        if getattr(got, key) != wanted:
            raise ConfigError("invalid", f"{path} sets [providers.{name}] {key} in a form the "
                              "AI Preferences cannot edit (an inline table, dotted keys).",
                              f"Change {key} under [providers.{name}] in {path} yourself.",
                              path=str(path))


def _write_atomic(path: Path, text: str) -> None:
    """A 0600 temp file beside ``path`` (its mode copied when it exists), fsync, replace."""
    from rio.files.atomic import write_text
    write_text(path, text, keep_mode=True)
