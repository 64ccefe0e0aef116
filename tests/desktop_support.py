"""Start a real desktop instance (`rio PATH`: supervisor + core + the Tk ui process) for GUI tests.

Built on tests/support.py's RioServer (its folders, stop and survivor checks); only the command
line differs, and readiness means the ui process serves ``ui.state``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support import RioServer, wait_for


class RioDesktop(RioServer):
    def __init__(self, root: Path, base: Path, display: str, *, files: tuple[str, ...] = ()):
        super().__init__(root, base)
        self.env["DISPLAY"] = display
        self.files = files

    def start(self, timeout: float = 40.0, wait_ready: tuple[str, ...] = ("core",)) -> "RioDesktop":
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rio.cli", str(self.root), *self.files,
             "--instance", self.name],
            env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=str(self.root))
        self.known_pids.add(self.proc.pid)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                _out, err = self.proc.communicate()
                raise RuntimeError(f"rio exited {self.proc.returncode}: {err.decode()}")
            if (self.runtime / "instance.json").exists() and self.ui_ready(timeout=2) \
                    and self.core_ready():
                self.pids()
                return self
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"the desktop did not come up in {timeout} s")

    def core_ready(self) -> bool:
        try:
            status = self.call("system.status", timeout=2)
        except Exception:  # noqa: BLE001 -- not up yet
            return False
        return any(p["name"] == "core" and p.get("ready") for p in status["processes"])

    def ui_ready(self, timeout: float = 2.0) -> bool:
        try:
            self.call("ui.state", timeout=timeout)
            return True
        except Exception:  # noqa: BLE001 -- not up yet
            return False

    def state(self) -> dict[str, Any]:
        return self.call("ui.state")

    def wait_state(self, predicate, timeout: float = 20.0) -> dict[str, Any]:
        box: dict[str, Any] = {}

        def check() -> bool:
            try:
                box["s"] = self.state()
            except Exception:  # noqa: BLE001 -- the ui may be restarting
                return False
            return bool(predicate(box["s"]))
        assert wait_for(check, timeout, 0.05), f"ui state never matched: {box.get('s')}"
        return box["s"]

    def wait_active_ready(self, timeout: float = 30.0) -> dict[str, Any]:
        return self.wait_state(lambda s: s["active"] and any(
            t["active"] and t["ready"] for t in s["tabs"]), timeout)

    def text(self, buffer: str) -> str:
        return self.call("buffer.text", {"buffer": buffer})["text"]

    def wait_text(self, buffer: str, expected: str, timeout: float = 15.0) -> str:
        box = {"t": None}

        def check() -> bool:
            box["t"] = self.text(buffer)
            return box["t"] == expected
        assert wait_for(check, timeout, 0.05), f"core text {box['t']!r} != {expected!r}"
        return box["t"]
