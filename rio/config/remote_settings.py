"""Remote access settings: ``[remote]`` in the user's config.toml (ADR-0021 "Replies a client
does not read", ADR-0019 "Code that runs later").

Every key is optional::

    [remote]
    reply_budget_mb = 32            # per key: replies waiting for a client that is not reading
    max_connections_per_key = 8     # per key: open connections (rio call, rio events, a desktop)
    max_requests_in_flight = 8      # per key: requests at the instance at once (more wait)
    owner_only_paths = [".husky/", "Makefile"]   # more paths only an owner key may write

``owner_only_paths`` are gitignore-style patterns relative to the project root, added to the
built-in ones (``.git/``, virtual environments, ``*.pth``, executable files:
rio/files/owner_only.py). Keys are checked as the agent's are (rio/agent/config.py): a typo or
a wrong type is ``config.invalid`` naming the line. The limits are read by ``rio serve
--listen`` when it starts (a bad one refuses the start); ``owner_only_paths`` by the core at
each save of a remote editor key, re-read when the file changes — a bad list then refuses those
saves (never the owner's) until it is fixed: a list that guards code must not fail open.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rio.agent.config import CONFIG_FILE, _check_table, _invalid, config_dir
from rio.config.toml_file import parse_toml, read_config_text

MIB = 1024 * 1024
SECTION = "remote"

_KEYS: dict[str, type | tuple[type, ...]] = {
    "reply_budget_mb": (int, float), "max_connections_per_key": int,
    "max_requests_in_flight": int, "owner_only_paths": list,
}


@dataclass(frozen=True)
class RemoteLimits:
    """What one remote key may hold of the server (actors/bus/remote.py)."""

    #: bytes of replies the bridge keeps for a key whose client is not reading them
    reply_budget_bytes: int = 32 * MIB
    #: connections one key may have open at once; the next one is refused
    max_connections_per_key: int = 8
    #: requests of one key sent on to the instance and not answered yet (more wait in the
    #: listener for their turn)
    max_requests_in_flight: int = 8


def config_path(config_directory: Path | None = None,
                env: Mapping[str, str] | None = None) -> Path:
    return (config_directory or config_dir(env)) / CONFIG_FILE


def _section(path: Path) -> tuple[dict[str, Any], str]:
    """``[remote]`` of ``path`` (checked) and the file's text; empty when there is no file."""
    text = read_config_text(path)
    data = parse_toml(text, path)
    return _check_table(data.get(SECTION, {}), SECTION, _KEYS, path, text), text


def remote_limits(config_directory: Path | None = None,
                  env: Mapping[str, str] | None = None) -> RemoteLimits:
    """The limits of ``[remote]``; ``config.invalid`` for a bad value (it names the line)."""
    path = config_path(config_directory, env)
    table, text = _section(path)
    defaults = RemoteLimits()
    for key in ("reply_budget_mb", "max_connections_per_key", "max_requests_in_flight"):
        if key in table and table[key] <= 0:
            raise _invalid(path, text, SECTION, key, f"{key} must be greater than 0")
    budget = table.get("reply_budget_mb")
    return RemoteLimits(
        reply_budget_bytes=int(budget * MIB) if budget is not None
        else defaults.reply_budget_bytes,
        max_connections_per_key=table.get("max_connections_per_key",
                                          defaults.max_connections_per_key),
        max_requests_in_flight=table.get("max_requests_in_flight",
                                         defaults.max_requests_in_flight))


def owner_only_paths(config_directory: Path | None = None,
                     env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The owner's own ``owner_only_paths`` patterns; ``config.invalid`` when malformed."""
    path = config_path(config_directory, env)
    table, text = _section(path)
    patterns = table.get("owner_only_paths", [])
    if not all(isinstance(p, str) and p.strip() for p in patterns):
        raise _invalid(path, text, SECTION, "owner_only_paths",
                       "owner_only_paths must be a list of non-empty strings "
                       "(gitignore-style patterns relative to the project root)")
    return tuple(patterns)
