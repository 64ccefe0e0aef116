"""`rio key set/status/delete` as a user runs them: no keyring (the file fallback), 0600, the
environment variable reported as such, and the key itself never printed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-ant-test-0123456789-SECRETVALUE"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]


@pytest.fixture
def env(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "PYTHON_KEYRING_BACKEND")}
    env.update({"RIO_CONFIG_DIR": str(tmp_path / "config"), "PYTHONPATH": str(REPO),
                # keyring's failing backend stands for "no keyring works here" (a headless box)
                "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                "HOME": str(tmp_path / "home")})
    return env


def rio(env, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rio.cli", "key", *args], env=env,
                          input=input, capture_output=True, text=True, timeout=30)


def test_set_without_a_keyring_tells_the_user_then_writes_a_private_file(env, tmp_path):
    done = rio(env, "set", "anthropic", input=KEY + "\n")
    assert done.returncode == 0, done.stderr
    notice_at = done.stderr.find("No secure system keyring")
    assert notice_at >= 0 and "credentials.json" in done.stderr
    assert "Stored the anthropic API key in the file" in done.stdout
    path = tmp_path / "config" / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text())["keys"] == {"anthropic": KEY}
    assert KEY not in done.stdout + done.stderr

    status = rio(env, "status", "anthropic")
    assert status.returncode == 0
    assert "from the file" in status.stdout and str(path) in status.stdout
    assert KEY not in status.stdout + status.stderr
    assert KEY[-4:] in status.stdout   # the tail tells keys apart; the key stays unshown


def test_status_reports_the_environment_variable_and_lists_providers(env):
    env = dict(env, ANTHROPIC_API_KEY=KEY)
    status = rio(env, "status")
    assert status.returncode == 0
    lines = status.stdout.splitlines()
    assert any(line.startswith("anthropic:") and "environment variable ANTHROPIC_API_KEY" in line
               for line in lines)
    assert any(line.startswith("openai:") and "no API key set" in line for line in lines)
    assert KEY not in status.stdout + status.stderr

    done = rio(env, "set", "anthropic", input="another-key-value-123\n")
    assert done.returncode == 0
    assert "ANTHROPIC_API_KEY is set in this environment" in done.stdout


def test_delete_removes_the_stored_key(env, tmp_path):
    rio(env, "set", "openai", input="openai-key-abcdefgh\n")
    done = rio(env, "delete", "openai")
    assert done.returncode == 0 and "Deleted the stored openai API key" in done.stdout
    assert json.loads((tmp_path / "config" / "credentials.json").read_text())["keys"] == {}
    again = rio(env, "delete", "openai")
    assert "No stored openai API key" in again.stdout
    assert "no API key set" in rio(env, "status", "openai").stdout


def test_empty_key_and_unknown_provider_are_refused(env, tmp_path):
    done = rio(env, "set", "anthropic", input="\n")
    assert done.returncode == 1 and "empty" in done.stderr
    assert not (tmp_path / "config" / "credentials.json").exists()
    done = rio(env, "set", "antropic", input=KEY)
    assert done.returncode == 3 and "anthropic" in done.stderr
    assert KEY not in done.stdout + done.stderr
    assert rio(env).returncode == 3
