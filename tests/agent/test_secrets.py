"""SecretStore: environment first, a recommended keyring, else a private file; keys never print."""

from __future__ import annotations

import json
import os
import pickle
import stat
from pathlib import Path

import pytest
from keyring.backend import KeyringBackend

from rio.agent.secrets import Secret, SecretStore, _recommended_backend
from rio.protocol.errors import ConfigError


class MemoryKeyring(KeyringBackend):
    priority = 5  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        del self.store[(service, username)]


def file_store(tmp_path: Path, env: dict[str, str] | None = None) -> SecretStore:
    return SecretStore(config_dir=tmp_path / "rio", keyring_backend=False, env=env or {})


def test_secret_never_prints_itself() -> None:
    secret = Secret("sk-ant-test-key")
    assert repr(secret) == str(secret) == f"{secret}" == "<secret>"
    assert "sk-ant" not in repr([secret, {"k": secret}])
    assert secret.reveal() == "sk-ant-test-key"
    with pytest.raises(TypeError):
        pickle.dumps(secret)


def test_keyring_is_used_when_available(tmp_path: Path) -> None:
    ring = MemoryKeyring()
    store = SecretStore(config_dir=tmp_path, keyring_backend=ring, env={})
    assert store.storage_notice() is None
    assert store.set("anthropic", "  test-key\n") == "keyring"
    assert ring.store == {("rio", "anthropic"): "test-key"}
    assert store.get("anthropic") == (Secret("test-key"), "keyring")
    assert not (tmp_path / "credentials.json").exists()
    assert store.delete("anthropic") is True
    assert store.get("anthropic") == (None, None)
    assert store.delete("anthropic") is False


def test_env_var_wins_and_is_reported(tmp_path: Path) -> None:
    ring = MemoryKeyring()
    store = SecretStore(config_dir=tmp_path, keyring_backend=ring,
                        env={"ANTHROPIC_API_KEY": "from-env", "OPENAI_API_KEY": ""})
    store.set("anthropic", "stored")
    store.set("openai", "stored-openai")
    assert store.get("anthropic") == (Secret("from-env"), "env:ANTHROPIC_API_KEY")
    assert store.get("openai") == (Secret("stored-openai"), "keyring")  # empty env is unset
    assert "ANTHROPIC_API_KEY" in store.status("anthropic")


def test_file_fallback_tells_first_and_is_private(tmp_path: Path) -> None:
    store = file_store(tmp_path)
    notice = store.storage_notice()
    assert notice is not None and str(store.file_path) in notice and "0600" in notice
    where = store.set("anthropic", "test-key")
    assert where == f"file:{tmp_path / 'rio' / 'credentials.json'}"
    assert stat.S_IMODE(store.file_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.folder.stat().st_mode) == 0o700
    assert json.loads(store.file_path.read_text())["keys"] == {"anthropic": "test-key"}
    assert store.get("anthropic") == (Secret("test-key"), where)
    store.set("openai", "other")
    assert store.delete("anthropic") and store.get("anthropic") == (None, None)
    assert store.get("openai")[0] == Secret("other")
    assert [p.name for p in store.folder.iterdir()] == ["credentials.json"]  # no temp left


def test_an_existing_open_folder_is_tightened(tmp_path: Path) -> None:
    folder = tmp_path / "rio"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    file_store(tmp_path).set("anthropic", "k")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644])
def test_readable_credentials_file_is_refused(tmp_path: Path, mode: int) -> None:
    store = file_store(tmp_path)
    store.set("anthropic", "test-key")
    os.chmod(store.file_path, mode)
    with pytest.raises(ConfigError) as caught:
        store.get("anthropic")
    assert caught.value.kind == "config.insecure_credentials"
    assert f"chmod 600 {store.file_path}" in caught.value.next
    assert "chmod 600" in store.status("anthropic")


def test_symlinked_credentials_file_is_not_followed(tmp_path: Path) -> None:
    store = file_store(tmp_path)
    store.folder.mkdir(mode=0o700)
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"version": 1, "keys": {"anthropic": "planted"}}))
    os.chmod(target, 0o600)
    store.file_path.symlink_to(target)
    with pytest.raises(ConfigError):
        store.get("anthropic")


def test_corrupt_file_is_a_config_error(tmp_path: Path) -> None:
    store = file_store(tmp_path)
    store.set("anthropic", "k")
    fd = os.open(store.file_path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, b"not json")
    os.close(fd)
    with pytest.raises(ConfigError) as caught:
        store.get("anthropic")
    assert caught.value.kind == "config.credentials_unreadable"


def test_status_shows_source_and_only_a_tail(tmp_path: Path) -> None:
    store = file_store(tmp_path)
    assert "no API key" in store.status("anthropic")
    assert "rio key set anthropic" in store.status("anthropic")
    store.set("anthropic", "sk-ant-0123456789-abcd")
    line = store.status("anthropic")
    assert "abcd" in line and "0123456789" not in line and "credentials.json" in line


def test_empty_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        file_store(tmp_path).set("anthropic", "   ")


def test_rio_config_dir_env_moves_the_file(tmp_path: Path) -> None:
    store = SecretStore(keyring_backend=False, env={"RIO_CONFIG_DIR": str(tmp_path / "cfg")})
    assert store.file_path == tmp_path / "cfg" / "credentials.json"


def test_detection_skips_the_fail_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    # On this headless box there is no Secret Service: detection must say "none", never
    # hand back keyring's failing backend or a plaintext one (keyrings.alt).
    from keyring.backends import fail

    monkeypatch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
    backend = _recommended_backend()
    assert not isinstance(backend, fail.Keyring)
    if backend is not None:
        assert backend.priority >= 1


class DBusLikeError(Exception):
    """What a plug-in backend raises of its own (a D-Bus error, say): not a KeyringError."""


class BrokenKeyring(MemoryKeyring):
    def get_password(self, service: str, username: str) -> str | None:
        raise DBusLikeError("org.freedesktop.DBus.Error.ServiceUnknown")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise DBusLikeError("org.freedesktop.DBus.Error.ServiceUnknown")

    def delete_password(self, service: str, username: str) -> None:
        raise DBusLikeError("org.freedesktop.DBus.Error.ServiceUnknown")


def test_a_backends_own_errors_are_answered_not_raised(tmp_path: Path) -> None:
    """Why secrets.py catches broadly: a backend's own error types, not only KeyringError."""
    store = SecretStore(config_dir=tmp_path / "rio", keyring_backend=BrokenKeyring(), env={})
    with pytest.raises(ConfigError) as caught:
        store.set("anthropic", "test-key")
    assert caught.value.kind == "config.keyring_failed" and "DBusLikeError" in caught.value.message
    # a key left in the file from before is still found, and still deleted
    file_store(tmp_path).set("anthropic", "from-file")
    assert store.get("anthropic") == (Secret("from-file"), f"file:{store.file_path}")
    assert store.delete("anthropic") is True
    assert store.get("anthropic") == (None, None)
