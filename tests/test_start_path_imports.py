"""The core's start path imports only what answering its first request needs (issue 13): the
HTTP client, the MCP SDK, syntax highlighting and the plug-in lookup (importlib.metadata) load
when a conversation, an MCP call or a window needs them, not while `rio serve` comes up."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import REPO

CORE_MODULES = ("actors.host", "actors.factories", "actors.documents", "actors.workspace_actor",
                "actors.runner_actor", "actors.agents.conversations", "actors.agents.gate",
                "actors.agents.discovery", "actors.agents.mcp")
LATER = ("httpx", "mcp", "pygments", "importlib.metadata")


@pytest.mark.timeout(60)
def test_the_core_actors_import_nothing_that_can_wait():
    code = (f"import sys; import {', '.join(CORE_MODULES)}; "
            f"print(' '.join(m for m in {LATER!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == []
