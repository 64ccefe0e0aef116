"""The one place the desktop writes what it keeps between runs.

Everything the UI stores goes through here, and nothing in ``ui/`` but this module imports
the writers (``rio.files.atomic``, ``rio.agent.secrets``, ``save_project_commands``,
``save_provider_settings``; tests/desktop/prefs/test_prefs_store.py and the picture in
docs/architecture.md hold the rule):

* ``ui.json`` in ``config_base()`` — the user's preferences, for every project. Several parts
  own keys in it (the editor's preferences: ui/tk/prefs/model.py; the agent panel's ``agent_*``
  keys: ui/tk/agent/settings.py). Each writes only its keys with :func:`update_ui`: one
  read-merge-write under one lock (this process's, and a folder lock for the user's other
  windows), so two writers never lose each other's keys (a writer that read the file before
  the other wrote would put the old keys back).
* the window's session (``ui-session.json`` in the project's state folder):
  :func:`write_session`; the agent panel's last shown conversation: :func:`write_state`.
* the project's Run/Build commands (``project.json``, :mod:`rio.runs.runner` owns the format):
  :func:`save_commands`.
* the model providers' endpoint and model in the user's ``config.toml`` (Edit → AI
  Preferences…; :mod:`rio.agent.config_edit` owns the format): :func:`save_providers`.
* API keys (:mod:`rio.agent.secrets`: keyring, else the private credentials file):
  :func:`key_store` and :func:`store_key`.

Formats and places are the ones these files always had, so a user's old files keep working.
Every file is written atomically (temp file, fsync, replace): a crash mid-write keeps the
previous version. ADR-0046 says why there is one writer.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from rio.agent.config_edit import save_provider_settings
from rio.agent.secrets import Secret, SecretStore
from rio.config.instance import config_base
from rio.files.atomic import write_json
from rio.runs.runner import ProjectCommands, save_project_commands

UI_FILE = "ui.json"
log = logging.getLogger("rio.ui.store")

#: Held across each read-merge-write of ui.json. One lock for every path: the writes are
#: small and rare (a dialog's OK, the panel docking), so there is nothing to gain from more.
_ui_lock = threading.Lock()


@contextmanager
def ui_json_locked(path: Path) -> Iterator[None]:
    """Hold ``path``'s read-merge-write: this process's lock, then an exclusive ``flock`` on
    the folder, which orders the other Rio windows of this user too (each project's window is
    its own process, and they share ``ui.json``). Locking the folder adds no file beside the
    user's; where the file system cannot lock, the process's lock alone is kept."""
    with _ui_lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd: int | None = os.open(path.parent, os.O_RDONLY)
        except OSError:
            fd = None
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except OSError as exc:
                    log.info("ui.json: no folder lock (%s); this process's lock only", exc)
            yield
        finally:
            if fd is not None:
                os.close(fd)        # closing the descriptor releases the flock


def ui_path(folder: Path | None = None) -> Path:
    """``ui.json``: in ``folder``, else in the user's config folder."""
    return (folder or config_base()) / UI_FILE


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; ``{}`` when it is missing, unreadable, damaged or not an
    object — what the UI keeps must never stop the editor from starting."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_ui(path: Path | None = None) -> dict[str, Any]:
    """Every key of ``ui.json`` (its owners pick and check theirs)."""
    return read_json_object(path or ui_path())


def update_ui(values: Mapping[str, Any], path: Path | None = None) -> Path:
    """Merge ``values`` into ``ui.json``, keeping every other key (another part's, or a newer
    version's). The read and the write happen under one lock, so a second writer reads the
    file only after the first one has replaced it."""
    path = path or ui_path()
    with ui_json_locked(path):
        merged = read_json_object(path)
        merged.update(values)
        write_json(path, merged, sort_keys=True)
    return path


def write_session(path: Path, data: Mapping[str, Any]) -> None:
    """The window's session file, whole (it has one owner: ui/tk/app/session.py)."""
    write_json(path, dict(data))


def write_state(path: Path, data: Mapping[str, Any]) -> None:
    """A small per-project state file, whole (e.g. the panel's last shown conversation)."""
    write_json(path, dict(data))


def save_providers(changes: Mapping[str, Mapping[str, str]]) -> Path:
    """Each provider's ``endpoint``/``model`` (checked already) into the user's config.toml,
    only the lines that changed, atomically (:func:`rio.agent.config_edit.save_provider_settings`:
    a RioError says why a table cannot be edited, and where to change it by hand)."""
    return save_provider_settings(changes)


def save_commands(state_dir: Path, commands: ProjectCommands) -> Path:
    """The project's Run/Build commands (``state_dir/project.json``, other keys kept)."""
    return save_project_commands(state_dir, commands)


class KeyStore(Protocol):
    """What the Set API Key dialog uses of a key store (:class:`rio.agent.secrets.SecretStore`;
    tests give an in-memory one)."""

    def get(self, provider: str) -> tuple[Secret | None, str | None]: ...
    def set(self, provider: str, key: str | Secret) -> str: ...
    def storage_notice(self) -> str | None: ...


def key_store() -> KeyStore:
    """The user's key store: the system keyring, else the private credentials file."""
    return SecretStore()


def store_key(keys: KeyStore, provider: str, typed: str) -> str:
    """Store a typed key; it is wrapped at once so it cannot print itself. Returns where it
    went ("keyring" or "file:<path>"); a RioError says why it could not be stored."""
    return keys.set(provider, Secret(typed))
