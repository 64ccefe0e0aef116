"""Make the user guide's screenshots from the running app.

    python tools/screenshots.py --out DIR     # write the PNGs into DIR
    python tools/screenshots.py --docs        # retake docs/screenshots/*.png (tracked files)
    python tools/screenshots.py               # into a new temporary folder (printed)

Starts its own Xvfb, a demo project in a temporary folder and a real desktop instance (`rio
PATH`) with private runtime/state/config folders, drives the window through the ``ui.*`` ops as
a user would, and writes the pictures. It never overwrites the tracked pictures unless told to
with ``--docs``. Nothing is faked: every picture is the real window. Needs Xvfb and ImageMagick
(`import`); fonts from fonts-terminus-otb and fonts-dejavu-core.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS_SHOTS = REPO / "docs" / "screenshots"
sys.path.insert(0, str(REPO))

FORECAST = '''"""Forecasts from the station log: the numbers behind the morning report."""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Reading:
    hour: int
    celsius: float
    wind_kmh: float


def feels_like(r: Reading) -> float:
    # Wind chill only means something below 10 °C and above 4.8 km/h.
    if r.celsius > 10 or r.wind_kmh < 4.8:
        return r.celsius
    v = r.wind_kmh ** 0.16
    return 13.12 + 0.6215 * r.celsius - 11.37 * v + 0.3965 * r.celsius * v


def summary(readings: list[Reading]) -> str:
    temps = [r.celsius for r in readings]
    low, high = min(temps), max(temps)
    mean = statistics.fmean(temps)
    return f"low {low:.1f}, high {high:.1f}, mean {mean:.1f} °C"
'''

REPORT = '''from forecast import Reading, feels_like, summary


def morning_report(readings: list[Reading]) -> str:
    coldest = min(readings, key=feels_like)
    return f"{summary(readings)}; feels like {feels_like(coldest):.0f} °C at {coldest.hour}:00"
'''

README = """# Station

Forecasts from the station log. Run `python -m report` for the morning report.
"""


def start_xvfb() -> tuple[subprocess.Popen, str]:
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0",
                             "1280x800x24", "-nolisten", "tcp"], pass_fds=(write_fd,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        number = pipe.readline().strip().decode()
    if not number:
        proc.kill()
        raise SystemExit("Xvfb did not start")
    return proc, f":{number}"


class Desktop:
    def __init__(self, project: Path, base: Path, display: str, out: Path):
        self.out = out
        self.name = f"shots{os.getpid()}"
        self.env = {**os.environ, "DISPLAY": display, "PYTHONPATH": str(REPO),
                    "RIO_RUNTIME_DIR": str(Path("/tmp") / f"rio-shots-{os.getpid()}"),
                    "RIO_STATE_DIR": str(base / "state"), "RIO_CONFIG_DIR": str(base / "config"),
                    # the ACP registry's cache too: nothing of the run lands in the user's home
                    "RIO_CACHE_DIR": str(base / "cache"), "RIO_LOG_LEVEL": "WARNING"}
        for key in list(self.env):
            if key.endswith(("_API_KEY", "_TOKEN")):
                del self.env[key]
        self.project = project
        self.proc: subprocess.Popen | None = None

    def start(self, *files: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "rio.cli", str(self.project), *files,
                                      "--instance", self.name], env=self.env, cwd=self.project,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        self.wait(lambda: self.try_call("ui.state") is not None, 40, "the window")

    def _endpoints(self):
        from actors.bus.client import Endpoints
        info = json.loads((Path(self.env["RIO_RUNTIME_DIR"]) / self.name /
                           "instance.json").read_text())
        return Endpoints(info["requests"], info["events"])

    def call(self, op: str, args: dict | None = None, timeout: float = 30) -> object:
        from actors.bus.client import connect
        old = {k: os.environ.get(k) for k in ("RIO_RUNTIME_DIR",)}
        conn = connect(self._endpoints(), name="shots")
        try:
            return conn.call(op, args or {}, timeout=timeout)
        finally:
            conn.close()
            del old

    def try_call(self, op: str, args: dict | None = None) -> object | None:
        try:
            return self.call(op, args, timeout=3)
        except Exception:  # noqa: BLE001 -- not up yet
            return None

    @staticmethod
    def wait(pred, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred():
                return
            time.sleep(0.1)
        raise SystemExit(f"timed out waiting for {what}")

    def wait_ready(self) -> dict:
        box: dict = {}

        def ok() -> bool:
            box["s"] = self.try_call("ui.state")
            s = box["s"]
            return bool(s and s["active"] and all(t["ready"] for t in s["tabs"]))
        self.wait(ok, 40, "the documents to load")
        return box["s"]

    def shot(self, name: str) -> Path:
        path = self.out / name
        self.call("ui.screenshot", {"path": str(path), "delay_ms": 400})
        print(f"wrote {path}")
        return path

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            self.call("system.stop", timeout=5)
        except Exception:  # noqa: BLE001 -- already gone
            pass
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


def output_folder(argv: list[str] | None = None) -> Path:
    """Where the pictures go: ``--out DIR``, ``--docs`` (the tracked ones), else a new
    temporary folder — never the tracked pictures by default."""
    parser = argparse.ArgumentParser(description="Take the user guide's screenshots.")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, help="folder to write the PNGs into")
    where.add_argument("--docs", action="store_true",
                       help=f"overwrite the user guide's pictures in {DOCS_SHOTS}")
    args = parser.parse_args(argv)
    if args.docs:
        return DOCS_SHOTS
    if args.out is not None:
        return args.out.resolve()
    return Path(tempfile.mkdtemp(prefix="rio-screenshots-"))


def main(argv: list[str] | None = None) -> int:
    out = output_folder(argv)
    for tool in ("Xvfb", "import"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is needed (Debian: apt-get install xvfb imagemagick)")
    out.mkdir(parents=True, exist_ok=True)
    print(f"writing screenshots into {out}")
    xvfb, display = start_xvfb()
    base = Path(tempfile.mkdtemp(prefix="rio-shots-"))
    project = base / "station"
    project.mkdir()
    (project / "forecast.py").write_text(FORECAST)
    (project / "report.py").write_text(REPORT)
    (project / "README.md").write_text(README)
    (project / "tests").mkdir()
    (project / "tests" / "test_forecast.py").write_text(
        "from forecast import Reading, feels_like\n\n\ndef test_calm_is_air_temperature():\n"
        "    assert feels_like(Reading(7, 3.0, 2.0)) == 3.0\n")
    desk = Desktop(project, base, display, out)
    try:
        desk.start(str(project / "report.py"), str(project / "forecast.py"))
        desk.wait_ready()
        # A session in progress: a cursor in the middle, an unsaved edit, a bookmark.
        desk.call("ui.open", {"path": "forecast.py", "line": 21, "col": 5})
        desk.call("ui.menu", {"path": "Search/Toggle Bookmark"})
        desk.call("ui.open", {"path": "forecast.py", "line": 25, "col": 1})
        desk.call("ui.key", {"keysym": "End"})
        desk.call("ui.type", {"text": "\n# TODO: gusts"})
        desk.call("ui.key", {"keysym": "Left", "state": "Shift"})
        for _ in range(4):
            desk.call("ui.key", {"keysym": "Left", "state": "Shift"})
        desk.shot("main-light.png")

        desk.call("ui.menu", {"path": "View/Dark Theme"})
        desk.shot("main-dark.png")
        desk.call("ui.menu", {"path": "View/Classic Theme"})

        # Find in files lives in the output pane: pictured when the pane is there.
        if desk.try_call("ui.dialog", {"name": "find_in_files",
                                       "fields": {"pattern": "feels_like"}}) is not None:
            time.sleep(1.0)
            desk.call("ui.open", {"path": "report.py", "line": 5, "col": 1})
            desk.shot("find-in-files.png")

        desk.call("ui.open", {"path": "forecast.py"})
        time.sleep(1.1)   # a new mtime, so the change on disk is certain to be seen
        (project / "forecast.py").write_text(FORECAST.replace("Forecasts", "Forecasts (v2)"))
        desk.wait(lambda: any(d["name"] == "conflict" for d in
                              desk.call("ui.state")["dialogs_open"]), 20, "the conflict prompt")
        desk.shot("conflict.png")
        # Show Difference: the diff alone (closable), then the question again.
        desk.call("ui.dialog_answer", {"name": "conflict", "button": "Show Difference"})
        desk.wait(lambda: any(d["name"] == "difference" for d in
                              desk.call("ui.state")["dialogs_open"]), 20, "the difference")
        desk.shot("difference.png")
        desk.call("ui.dialog_answer", {"name": "difference", "button": "Close"})
        desk.wait(lambda: any(d["name"] == "conflict" for d in
                              desk.call("ui.state")["dialogs_open"]), 20, "the question again")
        desk.call("ui.dialog_answer", {"name": "conflict", "button": "Keep Mine"})
    finally:
        desk.stop()
        xvfb.terminate()
        xvfb.wait(5)
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
