"""A test process that dies without running its finalizers (Xlib's fatal I/O error handler
calls exit() from C: no ``finally``, no fixture teardown) must not leave its ``rio serve``
behind. tests/support.RioServer starts it with process_control.dies_with_this_process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from tests.support import REPO, wait_for

pytestmark = [pytest.mark.timeout(90), pytest.mark.slow]


def test_a_harness_that_dies_abruptly_takes_its_instance_with_it(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from tests.support import RioServer
        root = Path({str(tmp_path)!r}) / "proj"
        root.mkdir()
        server = RioServer(root, Path({str(tmp_path)!r})).start()
        print(server.proc.pid, *server.pids().values(), flush=True)
        os._exit(1)     # as Xlib's handler does: no finally, no atexit, no finalizer
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO)})
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) >= 2, done.stderr

    def gone(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
    try:
        assert wait_for(lambda: all(gone(p) for p in pids), 30), \
            [p for p in pids if not gone(p)]
    finally:
        for pid in pids:
            if not gone(pid):
                psutil.Process(pid).kill()
