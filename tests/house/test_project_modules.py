"""A project's own Python files are never imported by Rio's processes.

``python -m actors.runtime.host`` puts its working directory — the project root — first on
``sys.path``, before the standard library and site-packages. So a ``msgpack.py`` (or an
``argparse.py``, a ``json.py``, a ``queue.py``: names beginners' projects have) at the top of
the project was
imported by the core, the spare and every agent session: a cloned repository ran its code as
the user the moment Rio opened it, and a remote *editor* key could save such a file and gain
the owner's power at the next restart. Every Python process Rio starts with a working
directory in the project is started with ``-P`` (Python 3.11: no unsafe path first).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.support import RioServer, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def shadow(root: Path, marker: Path) -> None:
    """A ``msgpack.py`` that notes who imported it, then hands over to the real msgpack (the
    test harness runs ``python -m rio.cli serve`` from the project, as a user could: should a
    process import it, the test sees who and the process still works)."""
    (root / "msgpack.py").write_text(
        "import os, sys\n"
        f"with open({str(marker)!r}, 'a') as f:\n"
        "    f.write(open('/proc/self/cmdline').read().replace('\\0', ' ') + '\\n')\n"
        "del sys.modules['msgpack']\n"
        "sys.path[:] = [p for p in sys.path if p not in ('', os.getcwd())]\n"
        "import msgpack as real\n"
        "sys.modules['msgpack'] = real\n")


def test_a_projects_msgpack_py_is_not_imported_by_the_core_or_its_spare(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    marker = tmp_path / "imported-by"
    shadow(root, marker)
    srv = RioServer(root, tmp_path).start()
    try:
        status = srv.call("system.status")
        assert wait_for(lambda: srv.call("system.status")["spares"], 30)
        old = srv.pids()["core"]
        os.kill(old, signal.SIGKILL)                 # the spare becomes the core
        assert wait_for(lambda: srv.pids().get("core") not in (None, old) and next(
            p for p in srv.call("system.status")["processes"] if p["name"] == "core")["ready"],
            30), status
        srv.known_pids.add(srv.pids()["core"])
        assert srv.call("fs.read", {"path": "msgpack.py"})["text"].startswith("import os")
    finally:
        srv.stop()
    lines = marker.read_text().splitlines() if marker.exists() else []
    assert not [line for line in lines if "actors.runtime.host" in line], lines
    # Nor by the supervisor, started here as `python -m rio.cli serve` in the project.
    assert not [line for line in lines if "rio.cli" in line], lines


@pytest.mark.timeout(60)
def test_the_mcp_server_an_agent_starts_in_the_project_does_not_import_its_modules(
        tmp_path, monkeypatch):
    """An ACP agent runs ``rio mcp`` (the mcpServers entry) with the project as its working
    directory: that command, too, keeps the project's own modules out."""
    import subprocess

    from rio.mcp.entry import mcp_server_entry
    # The entry writes the conversation's token file into the state folder: this test's.
    monkeypatch.setenv("RIO_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / "proj"
    root.mkdir()
    marker = tmp_path / "imported-by"
    # a standard library name: `python -m` puts the project before the standard library too
    (root / "argparse.py").write_text(f"open({str(marker)!r}, 'a').write('imported')\n"
                                      "raise ImportError('a project module')\n")
    entry = mcp_server_entry("c1", "http://127.0.0.1:9/mcp", "token")
    done = subprocess.run([entry["command"], *entry["args"][:entry["args"].index("mcp") + 1],
                           "--help"], cwd=root, capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
