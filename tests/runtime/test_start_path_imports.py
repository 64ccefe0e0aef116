"""The core's start path imports only what answering its first request needs (issue 13): the
HTTP client, the MCP SDK, syntax highlighting and the plug-in lookup (importlib.metadata) load
when a conversation, an MCP call or a window needs them, not while `rio serve` comes up; the
project watcher (watchfiles, ADR-0037) once the core is ready."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import REPO

CORE_MODULES = ("actors.runtime.host", "actors.runtime.factories", "actors.core.documents_actor", "actors.core.workspace_actor",
                "actors.core.runner_actor", "actors.agent.conversations_actor", "actors.agent.gate_actor",
                "actors.agent.discovery_actor")
LATER = ("httpx", "mcp", "pygments", "importlib.metadata", "watchfiles")


@pytest.mark.timeout(60)
def test_the_core_actors_import_nothing_that_can_wait():
    code = (f"import sys; import {', '.join(CORE_MODULES)}; "
            f"print(' '.join(m for m in {LATER!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == []


@pytest.mark.timeout(60)
def test_an_agent_session_never_imports_the_mcp_sdk():
    """The SDK's import (~580 modules, ~1 s) belongs to the endpoint process alone: an agent
    session, and what it loads for an ACP turn, stay off it (ADR-0034)."""
    code = ("import sys; import actors.agent.session, actors.agent.acp_session, "
            "rio.acp.turn, rio.agent.turn_mcp, rio.mcp.tools, rio.mcp.entry, "
            "rio.acp.mcp_servers; print('mcp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]


# --- idle memory: no OpenSSL until a file is hashed (rio/files/digest.py) --------------------
# `import hashlib` (also through secrets and hmac) maps libcrypto: ~3.8 MB of RSS in each process.

SUPERVISOR_MODULES = ("rio.cli.main", "actors.runtime.window_first", "actors.runtime.supervisor")
WINDOW_MODULES = ("ui.tk.start.first", "ui.tk.app.main_window", "ui.tk.start.desktop")


def _loaded(code: str, module: str) -> bool:
    out = subprocess.run([sys.executable, "-c", f"{code}; import sys; print({module!r} in sys.modules)"],
                         cwd=str(REPO), capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[-1] == "True"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("modules", [SUPERVISOR_MODULES, WINDOW_MODULES],
                         ids=["supervisor", "window"])
def test_the_idle_supervisor_and_window_do_not_load_openssl(modules):
    assert not _loaded(f"import {', '.join(modules)}", "_hashlib")


@pytest.mark.timeout(60)
def test_a_spare_waits_for_its_assignment_without_openssl():
    # A spare as the supervisor starts it for the shipped core; stdin at EOF ends it after its
    # preload, as the supervisor stopping it would.
    from rio.config.supervisor_toml import load_config
    core = next(s for s in load_config().to_start(desktop=True) if s.name == "core")
    code = ("from actors.runtime.host import spare_main; "
            f"assert spare_main(['--spare', '--preload', {','.join(core.actors)!r}]) == 0")
    assert not _loaded(code, "_hashlib")
    assert not _loaded(code, "watchfiles")        # the watcher starts after the core's ready
    assert _loaded(code, "actors.core.documents_actor")      # it did preload the core's actors


@pytest.mark.timeout(60)
def test_a_file_hash_still_loads_openssl_when_it_is_needed():
    assert _loaded("from rio.files.digest import sha256; sha256(b'x')", "_hashlib")


@pytest.mark.timeout(60)
def test_an_agent_session_comes_up_without_the_workspace_walk():
    """A session process is ready before it loads the project walk (pathspec, regex: ~55 ms)
    that an ACP turn's fingerprint needs; it loads it right after (Host.after_ready)."""
    code = ("import sys; from actors.runtime.actor_registry import factory_for; "
            "factory_for('agent_session'); "
            "print(' '.join(m for m in ('pathspec', 'regex', 'rio.files.workspace', "
            "'rio.agent.disk_changes') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == []


def test_the_steps_after_ready_run_once_the_host_is_ready_and_survive_a_failure(tmp_path):
    import argparse
    import threading

    from actors.runtime.host import Host

    args = argparse.Namespace(process="t", root=str(tmp_path), requests="ipc:///nonexistent",
                              events="ipc:///nonexistent2", fault_injection=False,
                              actors="")
    host = Host(args)
    ran: list[str] = []
    done = threading.Event()
    host.after_ready += [lambda: 1 / 0, lambda: ran.append("second") or done.set()]
    host._after_ready()
    assert done.is_set() and ran == ["second"]
