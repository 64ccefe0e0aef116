"""A stand-in supervisor and session for tests/runtime/test_zygote.py: what a session process is like
when started fresh by :func:`actors.runtime.process_control.spawn` and when forked by the session zygote
(actors/runtime/zygote.py), written down by the process itself, so the test compares the two.

``python -m tests.zygote_probe drive DIR`` is the supervisor's part, in a process of its own (it
becomes a child subreaper, which the test's own process must not): it starts a zygote whose
"host" is :func:`probe_main` (``zygote``), has it fork a session, starts the same session fresh
(``probe``), and writes what each reported to ``DIR/forked.json`` and ``DIR/fresh.json``. The
zygote changes its own signal dispositions and mask first, as a module it preloads might: the
forked session must not inherit them.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PR_GET_PDEATHSIG = 2


def report() -> dict[str, Any]:
    """This process as a session would find itself."""
    from actors.runtime.spawn_env import load_prctl
    pdeathsig = ctypes.c_int(-1)
    prctl = load_prctl()
    if prctl is not None:
        prctl(PR_GET_PDEATHSIG, ctypes.addressof(pdeathsig), 0, 0, 0)
    handlers = {}
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            handler = signal.getsignal(signum)
        except (OSError, ValueError):
            continue
        handlers[int(signum)] = handler if isinstance(handler, int) else \
            getattr(handler, "__name__", repr(handler))
    status = {}
    with open(f"/proc/{os.getpid()}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("SigBlk", "SigIgn", "SigCgt"):
                status[key] = value.strip()
    stdin = os.fstat(0)
    return {"env": dict(os.environ), "cwd": os.getcwd(), "path": list(sys.path),
            "pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0),
            "sid": os.getsid(0), "pdeathsig": pdeathsig.value, "handlers": handlers,
            "status": status, "stdin_fifo": (stdin.st_mode & 0o170000) == 0o010000,
            "argv": sys.argv[1:]}


def probe_main(argv: list[str]) -> int:
    """The session: ``probe OUT`` writes :func:`report` to OUT."""
    out = Path(argv[1])
    out.write_text(json.dumps(report()))
    return 0


def zygote() -> int:
    from actors.runtime.zygote import zygote_main
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)       # what a preloaded module might do
    signal.signal(signal.SIGHUP, lambda *_: None)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])
    return zygote_main(["--zygote"], probe_main, {})


def drive(folder: Path) -> int:
    from actors.runtime import process_control
    from actors.runtime.spawn_env import COOKIE_ENV, LINEAGE_ENV, PARENT_ENV, own_lineage
    from actors.runtime.zygote import GO
    assert process_control.become_subreaper()
    project = folder / "project"
    project.mkdir(exist_ok=True)
    env = dict(os.environ)
    env["RIO_PROBE_VARIABLE"] = "kept"
    command = [sys.executable, "-P", "-m", "tests.zygote_probe"]
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with open(folder / "zygote.log", "wb") as log:
        zyg = process_control.spawn([*command, "zygote"], cwd=str(project), env=env,
                                    stdin=theirs.fileno(), stdout=subprocess.DEVNULL,
                                    stderr=log)
    theirs.close()
    ready = json.loads(ours.recv(1 << 16))
    assert ready["ready"] == zyg.pid, ready

    with open(folder / "fresh.log", "wb") as log:
        fresh = process_control.spawn([*command, "probe", str(folder / "fresh.json")],
                                      cwd=str(project), env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.DEVNULL, stderr=log)
    assert fresh.popen.wait(30) == 0

    cookie = process_control.new_cookie()
    session_env = dict(env, **{COOKIE_ENV: cookie, LINEAGE_ENV: ":".join(own_lineage()),
                               PARENT_ENV: str(os.getpid())})
    request = {"name": "s1", "argv": ["probe", str(folder / "forked.json")], "env": session_env,
               "cwd": str(project), "parent": os.getpid(), "cookie": cookie}
    read_end, write_end = os.pipe()
    with open(folder / "forked.log", "wb") as log:
        socket.send_fds(ours, [json.dumps(request).encode()], [read_end, log.fileno()])
    os.close(read_end)
    reply = json.loads(ours.recv(1 << 16))
    pid = int(reply["pid"])
    child = process_control.ForkedChild(pid, ["probe"], os.fdopen(write_end, "wb"), None)
    spawned = process_control.adopt(child, cookie=cookie, argv=["probe"])
    assert child.stdin is not None
    child.stdin.write(GO)
    child.stdin.flush()
    code = child.wait(30)
    (folder / "driver.json").write_text(json.dumps(
        {"supervisor": os.getpid(), "zygote": zyg.pid, "forked": spawned.pid,
         "forked_exit": code, "fresh": fresh.pid, "cookie": cookie}))
    ours.close()                                # end of file: the zygote ends
    deadline = time.monotonic() + 10
    while zyg.popen.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    process_control.stop(zyg)
    return 0


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "zygote":
        raise SystemExit(zygote())
    if what == "probe":
        raise SystemExit(probe_main(sys.argv[1:]))
    raise SystemExit(drive(Path(sys.argv[2])))
