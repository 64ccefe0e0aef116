"""`rio [PATH]`: the window is drawn first, by a fork of the `rio` process itself, before that
process imports the supervisor; the supervisor then adopts it as its ``ui`` child.

Before, `rio FILE` paid two interpreter starts in series — the supervisor's (psutil, zmq, the
hub, its imports), then the window's — where IDLE pays one. Now `rio` forks as soon as it knows
it is to open a window (:func:`fork_window`): the child, a copy of an interpreter that is
already up, imports tkinter and draws the titled window at its saved size (it needs neither the
instance file nor the bus for that), then runs the desktop (``python -m ui.tk --root DIR``, ui/tk/start/first.py) and connects to
the hub, which libzmq lets it do before the hub has bound. The parent waits for ``drawn``,
then imports the supervisor and runs it. Nothing is editable until the App has the core's
answer, as before: nothing can be lost (docs/adr/0026-start-path-and-long-line-keys.md, "b").

The window is a child like any other (ADR-0007): forked from the main thread — the thread that
then runs the supervisor's monitor loop, so PDEATHSIG holds — in a session of its own, with its
own cookie in its environment (for what it spawns), stdin a pipe from the supervisor, logging
to the same file as a window the supervisor starts. A window the supervisor starts again after
a crash is ``python -m ui.tk --root DIR`` through :func:`actors.runtime.process_control.spawn`
(:func:`start_window` is that path too, used when forking is not safe: another thread runs).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from actors.runtime.spawn_env import (
    COOKIE_ENV,
    LIFELINE_ENV,
    LINEAGE_ENV,
    PARENT_ENV,
    PR_SET_NAME,
    PR_SET_PDEATHSIG,
    load_prctl,
    own_lineage,
)
from rio.config.instance import state_base

if TYPE_CHECKING:
    from actors.runtime import process_control

REPO_ROOT = Path(__file__).resolve().parent.parent
WINDOW_PROCESS = "ui"   # its name in the shipped supervisor.toml (its log file's name)
WINDOW_MODULE = "ui.tk"   # the desktop's one entry point; `--root` makes it draw the window first
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
    # -P: the project folder (its cwd) is never on its import path (ADR-0033)
    argv = [sys.executable, "-P", "-m", WINDOW_MODULE, "--instance", instance,
            "--root", str(root)]
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
    from actors.runtime import process_control
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


def fork_window(instance: str, root: Path, files: list[str],
                window_main: Callable[[list[str]], int]) -> process_control.Spawned:
    """Fork now; the child draws the window and runs the desktop in this interpreter (no second
    interpreter start, no imports but the window's own): ``window_main`` is
    ``ui.tk.start.first.main``, given by the `rio` command (actors never import the ui), called with
    that module's arguments. The parent returns the child as a spawned one. Call it from the
    thread that will run the monitor loop, before any other thread exists (else
    :func:`start_window` is used: a fork copies no thread but the caller's, and a lock another
    thread held would stay held in the child)."""
    if threading.active_count() > 1:
        return start_window(instance, root, files)
    argv = window_argv(instance, root, files)      # what a restart runs; shown in the status
    cookie = uuid.uuid4().hex
    parent = os.getpid()
    log_fd = os.open(log_path(instance, WINDOW_PROCESS),
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()             # else the child would write the parent's buffer out again
    pid = os.fork()
    if pid == 0:                                                      # the window
        code = 1
        try:
            os.setsid()
            os.dup2(stdin_r, 0)
            os.dup2(out_w, 1)
            os.dup2(log_fd, 2)
            for fd in (stdin_r, stdin_w, out_r, out_w, log_fd):
                os.close(fd)
            _become_window(parent, instance, cookie, root)
            code = window_main(argv[argv.index(WINDOW_MODULE) + 1:])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 -- a child of a fork never returns to the caller
            import traceback
            traceback.print_exc()
        finally:
            if "logging" in sys.modules:      # os._exit runs no atexit: flush the log here
                sys.modules["logging"].shutdown()
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(code)
    for fd in (stdin_r, out_w, log_fd):
        os.close(fd)
    from actors.runtime import process_control
    child = process_control.ForkedChild(pid, argv, os.fdopen(stdin_w, "wb"),
                                        os.fdopen(out_r, "rb"))
    return process_control.adopt(child, cookie=cookie, argv=argv)


def _become_window(parent: int, instance: str, cookie: str, root: Path) -> None:
    """In the forked child: what :func:`actors.runtime.process_control.spawn` and a fresh interpreter
    would have given it — death with the parent, the spawn cookie for what it starts, the
    instance's environment, the project as its folder, Python's own signal dispositions."""
    import ctypes
    prctl = load_prctl()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        name = ctypes.create_string_buffer(b"rio-window")
        prctl(PR_SET_NAME, ctypes.addressof(name), 0, 0, 0)   # its name in top and ps -o comm
    if os.getppid() != parent:     # the parent died before prctl: no signal would ever come
        os._exit(1)
    lineage = own_lineage()
    os.environ.update(child_env(instance))
    os.environ[COOKIE_ENV] = cookie
    os.environ[LINEAGE_ENV] = ":".join(lineage)
    os.environ[PARENT_ENV] = str(parent)
    os.environ.pop(LIFELINE_ENV, None)   # none: it watches its parent's pid (and PDEATHSIG)
    os.chdir(root)
    # What -P does for a started window (ADR-0033): `python -m rio.cli` run in the project put
    # it on the path, where its own modules would shadow Rio's and the standard library's.
    project = os.path.realpath(root)
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != project]
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)   # `rio` set SIG_DFL; the window writes pipes
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
