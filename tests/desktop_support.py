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


class InProcessApp:
    """The real desktop window (ui/tk/app/main_window.py: App, its EditorTabs and its plug-in modules) in the
    test process on ``tk_root``, a client of ``srv``'s core over the bus, drained by Tk's loop
    (ui/tk/app/bus_pump.py) as in the ui process.

    Widget tests drive the real widgets through it: no copy of the editor's wiring. ``opened``
    records the ``open_path`` calls the widgets make (the seam they use), then the real
    ``open_path`` runs. ``state_dir=None`` keeps no session file; the caller points
    RIO_CONFIG_DIR at the server's folders so no user preference leaks in.
    """

    def __init__(self, tk_root: Any, srv: RioServer, *, state_dir: Path | None = None,
                 geometry: str = "1000x700", conn: Any = None, remote: str | None = None):
        """``conn`` and ``remote``: a window on a remote instance (``rio --connect``), on a
        connection the caller made (actors.bus.client.connect_remote)."""
        from ui.tk.app.bus_pump import BusPump
        from ui.tk.app.main_window import App
        self.root = tk_root
        self.srv = srv
        self.conn = conn if conn is not None else srv.connect("ui")
        tk_root.geometry(geometry)
        self.app = App(tk_root, self.conn, project_root=str(srv.root), instance=srv.name,
                       state_dir=state_dir, remote=remote)
        self.opened: list[tuple[str, int | None, int | None]] = []
        real_open = self.app.open_path

        def open_path(path: str, line: int | None = None, col: int | None = None,
                      **kw: Any) -> None:
            self.opened.append((str(path), line, col))
            real_open(path, line, col, **kw)
        self.app.open_path = open_path  # type: ignore[method-assign]
        self.bus_pump = BusPump(tk_root, self.conn)
        self.app.start([])
        self.bus_pump.start()
        # The plug-in modules are installed just after the window's first paint.
        assert self.pump(lambda: self.app.plugins_ready), "the plug-in modules never came"

    def close(self) -> None:
        for bid in list(self.app.editors):
            try:
                self.conn.call("buffer.close", {"buffer": bid, "discard": True}, timeout=5)
            except Exception:  # noqa: BLE001 -- a core a test killed may not know it
                pass
        self.bus_pump.stop()
        self.conn.close()

    def pump(self, predicate: Any, timeout: float = 10.0) -> bool:
        """Run Tk's loop until ``predicate()`` holds (or ``timeout`` passes)."""
        def updated() -> bool:
            self.root.update()
            return bool(predicate())
        return bool(wait_for(updated, timeout, 0.005))

    def open(self, path: str) -> Any:
        """Open ``path`` in a tab and wait until its editor is live; returns the EditorTab."""
        self.app.open_path(path)
        assert self.pump(lambda: (ed := self.app.active_editor()) is not None and ed.ready
                         and ed.summary.get("path") and
                         Path(ed.summary["path"]).name == Path(path).name), f"{path} never opened"
        return self.app.active_editor()

    @property
    def active(self) -> Any:
        """The active tab's EditorTab (None without a tab)."""
        return self.app.active_editor()

    def core_text(self, buffer_id: str) -> str:
        return self.conn.call("buffer.text", {"buffer": buffer_id})["text"]

    def handler(self, name: str) -> Any:
        """The function a command of the app's command table runs."""
        return self.app.commands.get(name).handler
