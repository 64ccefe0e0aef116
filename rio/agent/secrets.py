"""API keys: the environment, the system keyring, or a private file — in that order.

Where a key is read from (:meth:`SecretStore.get`):

1. the provider's environment variable (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``); it wins
   and is reported as ``env:<NAME>`` so nobody wonders why a stored key is ignored;
2. the system keyring, but only a *recommended* backend (priority >= 1: Secret Service,
   KWallet, macOS Keychain, Windows Credential Locker). keyring alone falls back to a failing
   backend, and with keyrings.alt installed it silently picks a base64 "plaintext" file
   (keyring 25.7, measured), so we select the backend ourselves and never touch keyring's global;
3. ``<config dir>/credentials.json``: mode 0600 in a 0700 folder, written with O_EXCL and
   os.replace. It is used for storing only when no secure backend works, and the caller is
   told so first (:meth:`SecretStore.storage_notice`). A file others can read is refused.

A key is carried as :class:`Secret`, whose repr and str are ``<secret>``, so it cannot reach a
log, a traceback's locals printout or the bus by accident.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rio.agent.config import config_dir
from rio.agent.failures import key_env_var
from rio.protocol.errors import ConfigError

SERVICE = "rio"
CREDENTIALS_FILE = "credentials.json"


class Secret:
    """A key that does not print itself. Use :meth:`reveal` at the one place it is sent."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> Any:
        # Pickling would copy the key into whatever file or socket the pickle goes to.
        raise TypeError("a Secret cannot be pickled")


def _recommended_backend() -> Any | None:
    """The highest-priority recommended keyring backend, without changing keyring's global."""
    try:
        import keyring.core
        from keyring.backend import get_all_keyring
        from keyring.backends import chainer, fail
    except ImportError:
        return None
    explicit = keyring.core.load_env()  # PYTHON_KEYRING_BACKEND: the user's explicit choice
    if explicit is not None:
        return None if isinstance(explicit, fail.Keyring) else explicit
    usable = [b for b in get_all_keyring()
              if keyring.core.recommended(b)
              and not isinstance(b, (fail.Keyring, chainer.ChainerBackend))]
    return max(usable, key=lambda b: b.priority) if usable else None


class SecretStore:
    """API keys per provider name. ``keyring_backend``: a keyring backend object to use
    (tests pass an in-memory one, or ``False`` for "no keyring"); None means detect."""

    def __init__(self, config_dir: Path | None = None, keyring_backend: Any = None,
                 env: Mapping[str, str] | None = None) -> None:
        self._config_dir = config_dir
        self._env = env
        self._backend = keyring_backend
        self._detected = keyring_backend is not None

    # --- where things are ------------------------------------------------------------------

    @property
    def env(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    @property
    def folder(self) -> Path:
        return self._config_dir or config_dir(self.env)

    @property
    def file_path(self) -> Path:
        return self.folder / CREDENTIALS_FILE

    def keyring(self) -> Any | None:
        if not self._detected:
            self._backend = _recommended_backend()
            self._detected = True
        return self._backend or None

    def storage_notice(self) -> str | None:
        """What the CLI must print *before* :meth:`set` when keys will go to a file."""
        if self.keyring() is not None:
            return None
        return (f"No secure system keyring is available, so the key will be stored in "
                f"{self.file_path} (readable only by you, mode 0600). Set "
                "PYTHON_KEYRING_BACKEND or install a Secret Service (e.g. gnome-keyring) to "
                "use a keyring instead.")

    # --- the API ---------------------------------------------------------------------------

    def set(self, provider: str, key: str | Secret) -> str:
        """Store ``key``; returns where: "keyring" or "file:<path>"."""
        value = key.reveal() if isinstance(key, Secret) else key
        value = value.strip()
        if not value:
            raise ConfigError("empty_key", "The API key is empty.", "Paste the whole key.")
        backend = self.keyring()
        if backend is not None:
            try:
                backend.set_password(SERVICE, provider, value)
                return "keyring"
            except Exception as exc:  # noqa: BLE001 -- a backend is any plug-in (PYTHON_KEYRING_BACKEND); its D-Bus errors are not KeyringError
                raise ConfigError("keyring_failed", f"The keyring refused to store the key "
                                  f"({type(exc).__name__}).", "Unlock your keyring and try "
                                  "again, or set PYTHON_KEYRING_BACKEND.") from None
        keys = self._read_file()
        keys[provider] = value
        self._write_file(keys)
        return f"file:{self.file_path}"

    def get(self, provider: str) -> tuple[Secret | None, str | None]:
        """(key, source); source is "env:<VAR>", "keyring", "file:<path>" or None."""
        var = key_env_var(provider)
        if self.env.get(var, "").strip():
            return Secret(self.env[var].strip()), f"env:{var}"
        backend = self.keyring()
        if backend is not None:
            try:
                found = backend.get_password(SERVICE, provider)
            except Exception:  # noqa: BLE001 -- a plug-in backend's own errors: a broken keyring is "not there"; the file may be
                found = None
            if found:
                return Secret(found), "keyring"
        value = self._read_file().get(provider)
        if value:
            return Secret(value), f"file:{self.file_path}"
        return None, None

    def status(self, provider: str) -> str:
        try:
            key, source = self.get(provider)
        except ConfigError as exc:
            return f"{provider}: {exc.message} {exc.next}"
        if key is None:
            return (f"{provider}: no API key set. Use `rio key set {provider}` or "
                    f"{key_env_var(provider)}.")
        shown = key.reveal()
        tail = f"…{shown[-4:]}" if len(shown) >= 12 else ""
        where = {"keyring": "the system keyring"}.get(source or "", source or "")
        if where.startswith("env:"):
            where = f"the environment variable {where[4:]}"
        elif where.startswith("file:"):
            where = f"the file {where[5:]}"
        return f"{provider}: API key {tail} from {where}.".replace("  ", " ")

    def delete(self, provider: str) -> bool:
        """Remove a stored key from the keyring and the file; True if one was removed.
        An environment variable is the user's to unset, and is left alone."""
        removed = False
        backend = self.keyring()
        if backend is not None:
            try:
                if backend.get_password(SERVICE, provider) is not None:
                    backend.delete_password(SERVICE, provider)
                    removed = True
            except Exception:  # noqa: BLE001 -- PasswordDeleteError, or a plug-in backend's own errors: the file is still cleaned
                pass
        keys = self._read_file()
        if provider in keys:
            del keys[provider]
            self._write_file(keys)
            removed = True
        return removed

    # --- the file fallback ---------------------------------------------------------------

    def _read_file(self) -> dict[str, str]:
        path = self.file_path
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConfigError("credentials_unreadable", f"{path} cannot be read ({exc}).",
                              f"Check {path}, or delete it and set the key again.") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if info.st_mode & 0o077:
                raise ConfigError("insecure_credentials",
                                  f"{path} can be read by other users "
                                  f"(mode {stat.S_IMODE(info.st_mode):o}); the keys in it are "
                                  "not used.", f"Run `chmod 600 {path}`, then consider "
                                  "replacing the keys it holds.", path=str(path))
            raw = handle.read(1 << 20)
        try:
            data = json.loads(raw.decode("utf-8"))
            keys = data["keys"]
            if not isinstance(keys, dict):
                raise TypeError("keys is not an object")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError("credentials_unreadable", f"{path} is not a Rio credentials file "
                              f"({type(exc).__name__}).", f"Delete {path} and set the key "
                              "again with `rio key set`.", path=str(path)) from None
        return {str(k): str(v) for k, v in keys.items()}

    def _write_file(self, keys: Mapping[str, str]) -> None:
        folder = self.folder
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = folder.stat()
        if info.st_uid == os.getuid() and info.st_mode & 0o077:
            os.chmod(folder, 0o700)  # the key file's folder must not be listable by others
        tmp = folder / f".{CREDENTIALS_FILE}.{os.getpid()}.tmp"
        payload = json.dumps({"version": 1, "keys": dict(keys)}, indent=2).encode()
        tmp.unlink(missing_ok=True)  # left by a crashed write from a process with our pid
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.file_path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
