"""`rio [PATH]`: the window process is started first, by the `rio` process itself, before that
process imports the supervisor; the supervisor then adopts it as its ``ui`` child.

Before, `rio FILE` paid two interpreter starts in series — the supervisor's (psutil, zmq, the
hub, its imports), then the window's — where IDLE pays one. Now they run side by side: the
window process (``python -m ui.tk.first``) draws the titled window at its saved size the
moment Tk is up (it is given the project root and the instance name on its command line, so
it needs neither the instance file nor the bus for that), then connects to the hub, which
libzmq lets it do before the hub has bound. Nothing is editable until the App has the core's answer, as before: nothing can be lost
(docs/adr/0026-start-path-and-long-line-keys.md, "b").

The window is a child like any other (ADR-0007): started through
:func:`actors.process_control.spawn` from the main thread — the thread that then runs the
supervisor's monitor loop, so PDEATHSIG holds — in its own process group with its own cookie,
logging to the same file as a window the supervisor starts.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

from actors import process_control
from rio.config.instance import state_base

REPO_ROOT = Path(__file__).resolve().parent.parent
WINDOW_PROCESS = "ui"   # its name in the shipped supervisor.toml (its log file's name)
DRAWN = b"drawn"        # what the window process prints once its window is on screen
DRAWN_WAIT_S = 3.0      # the longest `rio` holds the supervisor back for it


def child_env(instance: str) -> dict[str, str]:
    """The environment of every process an instance starts: this repo on the path, the
    instance's name (the spawn cookie is added by process_control)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["RIO_INSTANCE"] = instance
    return env


def window_argv(instance: str, root: Path, files: list[str]) -> list[str]:
    argv = [sys.executable, "-m", "ui.tk.first", "--instance", instance, "--root", str(root)]
    for path in files:
        argv += ["--open", path]
    return argv


def log_path(instance: str, process: str) -> Path:
    folder = state_base() / "logs"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / f"{instance}.{process}.log"


def start_window(instance: str, root: Path, files: list[str]) -> process_control.Spawned:
    """Start the window process now (call it from the thread that will run the monitor loop).
    Its stdout is a pipe on which it says when the window is drawn: :func:`wait_drawn`."""
    with open(log_path(instance, WINDOW_PROCESS), "ab") as log_file:
        return process_control.spawn(
            window_argv(instance, root, files), cwd=str(root), env=child_env(instance),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file,
            die_with_parent=True)


def wait_drawn(window: process_control.Spawned, timeout: float = DRAWN_WAIT_S) -> bool:
    """Wait until the window process says its window is drawn (one line on its stdout, after
    which it points its stdout at /dev/null), it ends, or ``timeout`` passes; then close our
    end of the pipe. True when it was drawn.

    Why wait: the supervisor's imports and the core's start are ~3 interpreters' worth of CPU;
    started beside the window on a busy 2-core machine they slow its first paint by half a
    second or more. The window first, the rest behind it."""
    pipe = window.popen.stdout
    if pipe is None:
        return False
    try:
        ready, _, _ = select.select([pipe], [], [], timeout)
        return bool(ready) and pipe.readline().strip() == DRAWN
    except OSError:
        return False
    finally:
        pipe.close()
