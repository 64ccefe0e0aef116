"""The session zygote: ``python -P -m actors.runtime.host --zygote --preload agent_session --instance
NAME``, one interpreter with an agent session's modules imported, from which the supervisor has
each conversation's session process *forked* instead of started (issue 20, ADR-0039).

Why: every agent session started as a new interpreter paid its own copy of everything it
imports — 34 MB of pages of its own (USS) for an idle API conversation, 46 MB for an ACP one
(the ACP SDK, pydantic). A fork shares those pages with the zygote until one of them writes
to a page; :func:`gc.freeze` after the imports keeps the collector from writing to them (it
would touch every tracked object's header), so an idle session forked here keeps ~8 MB of its
own.

The session is still a process of its own, the supervisor's child like any other: the zygote
forks twice, and the middle process exits at once, so the session is reparented to the
supervisor (a child subreaper, ADR-0007) — not the zygote's child. A session that crashes is
restarted alone (forked again); a zygote that dies takes no session with it.

The protocol, over the zygote's stdin, one end of a ``SOCK_SEQPACKET`` socket pair whose other
end the supervisor holds (actors/runtime/zygotes.py):

* zygote → supervisor, once its first imports are done: ``{"ready": pid}``;
* supervisor → zygote: ``{"argv": [...], "env": {...}, "cwd": DIR, "parent": PID, "cookie":
  C, "name": NAME}`` with two descriptors attached (``SCM_RIGHTS``): the read end of the
  session's stdin pipe and its stderr (the log file, or the relay's pipe under --log-stderr);
* zygote → supervisor: ``{"name": NAME, "pid": PID}``, sent once the session is the
  supervisor's child (the middle process reaped), or ``{"name": NAME, "error": "…"}``.

End of file on the socket ends the zygote. Until the first request the zygote imports only
what a session needs to answer its first ping (as a session started fresh does); after it, on
its own time, what a turn loads lazily — an API provider's HTTP client, the ACP SDK — so later
sessions find it shared (:data:`LATER`). It starts no thread, no ZeroMQ context, no event loop:
a fork copies only the calling thread.

What the forked session makes of itself (:func:`become_session`) is what
:func:`actors.runtime.process_control.spawn` and a new interpreter would have given it: the
environment the supervisor sends (its own spawn cookie, the lineage, the lifeline, the
instance's variables), the project as its folder, a session and process group of its own,
PR_SET_PDEATHSIG once it is the supervisor's child, Python's own signal dispositions, stdin a
pipe from the supervisor, its log as stderr; the import path is the zygote's, started with
``-P`` (ADR-0033). ``/proc/PID/environ`` and ``/proc/PID/cmdline`` of a forked process still
show the zygote's (they are fixed at exec): the supervisor knows its sessions by pid.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from actors.runtime.spawn_env import LIFELINE_ENV

#: Modules a session imports after its start, on its first turn: loaded by the zygote after
#: its first fork (its own time), so that sessions forked later share them. Measured with an
#: API and an ACP turn (tests/bench/bench_sessions.py): the HTTP client and the providers of
#: an API turn; the ACP SDK (pydantic models: ~0.5 s and ~12 MB a session) of an ACP one.
LATER: dict[str, tuple[str, ...]] = {
    "agent_session": (
        "rio.agent.disk_changes",            # an ACP turn's first step (Host.after_ready)
        "actors.runtime.process_control",    # an agent, a run command: spawned
        "rio.agent.config",
        "rio.agent.secrets",
        "importlib.metadata",                # the providers' plug-in lookup
        "httpx",
        "rio.providers.anthropic",
        "rio.providers.anthropic_auth",
        "rio.providers.openai_compat",
        "pygments.lexers",
        "rio.acp.client",                    # the ACP SDK: pydantic's models
        "rio.acp.handlers",
        "rio.acp.protocol_log",
        "rio.acp.settings",
        "rio.acp.discovery",
        "rio.acp.registry",
        "rio.acp.mcp_servers",
        "rio.mcp.entry",
        "actors.agent.acp_process",
        "rio.acp.sandbox",
        "rio.config.instance",
        "secrets",
        "concurrent.futures.thread",
        "anyio._backends._asyncio",          # httpx's first request, on asyncio
        "anyio.streams.tls",
        "anyio.to_thread",
        "zoneinfo",
    ),
}
#: Functions (``module:name``) the zygote runs once :data:`LATER`'s modules are loaded: a
#: session's one-off warm-up (entry points scanned, the HTTP transport and its SSL context
#: built), done once and shared instead of done again in every session. They must start no
#: thread and open no connection: a fork copies neither.
LATER_CALLS: dict[str, tuple[str, ...]] = {
    "agent_session": ("actors.agent.session:warm_up", "actors.agent.session:shared_transport"),
}
#: The longest a forked session waits to become the supervisor's child (the middle process
#: exits at once; a supervisor that died meanwhile never takes it): then it gives up.
REPARENT_S = 5.0
#: The longest a forked session waits for the supervisor to adopt it (:func:`_wait_adopted`).
ADOPT_S = 30.0
#: What the supervisor writes on a forked session's stdin once it has adopted it.
GO = b"\n"
EXIT_PARENT_GONE = 1
MAX_MESSAGE = 1 << 20


def preload(actors: Sequence[str], started: Mapping[str, Sequence[str]]) -> None:
    """What a session needs before it can answer its first ping: its actors' modules (the
    factories import them) and what they start lazily (``started``: the host's
    STARTED_MODULES)."""
    from actors.runtime.actor_registry import factory_for
    for name in actors:
        factory_for(name)
        for module in started.get(name, ()):
            importlib.import_module(module)


def preload_later(todo: list[str], sock: socket.socket) -> list[str]:
    """Import ``todo``'s modules one at a time, stopping as soon as a request is waiting
    (the rest is loaded the next time the zygote is idle). Returns what is still to load."""
    todo = list(todo)
    while todo:
        if select.select([sock], [], [], 0)[0]:
            return todo
        module = todo.pop(0)
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 -- a session imports it again, and fails there
            _say(f"zygote: could not preload {module}: {exc!r}")
    return todo


def _call_later(actors: Sequence[str]) -> None:
    for name in actors:
        for target in LATER_CALLS.get(name, ()):
            module, _, function = target.partition(":")
            try:
                getattr(importlib.import_module(module), function)()
            except Exception as exc:  # noqa: BLE001 -- the session does it itself, later
                _say(f"zygote: {target} failed: {exc!r}")


def _say(text: str) -> None:
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _freeze() -> None:
    """Everything imported so far to the collector's permanent generation: a collection in a
    forked session never writes to those objects' pages, so they stay shared. And the holes
    the imports left in the allocator's pools filled first (:func:`fill_holes`)."""
    gc.collect()
    _FILLER.extend(fill_holes())
    gc.freeze()


#: What :func:`fill_holes` allocated: kept for the zygote's life (and shared by its forks).
_FILLER: list[object] = []


def _malloc_stats() -> str:
    """``sys._debugmallocstats()``'s report (written on stderr), read back."""
    import tempfile
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        return out.read().decode(errors="replace")


def _one(block: int, i: int) -> object:
    """A new object that takes exactly one ``block``-byte block of the small-object
    allocator (none of them is tracked by the collector: no GC header)."""
    if block <= 16:
        return object()
    if block <= 32:
        return (1 << 40) + i
    return bytes(block - 33)               # a bytes object is 33 bytes + its length


def fill_holes() -> list[object]:
    """Take every free block of the small-object allocator's pools that the imports left
    partly used, and its unused pools, with objects kept for good. A forked session's new
    objects then go to pools of their own, packed, instead of into the holes of thousands of
    shared pages, each of which a write would copy (CPython's obmalloc: 16 KiB pools, 32 size
    classes of 16 bytes; sys._debugmallocstats() counts the free blocks of each)."""
    keep: list[object] = []
    for _round in range(3):
        report = _malloc_stats()
        wanted = 0
        for line in report.splitlines():
            parts = line.split()
            if len(parts) == 5 and all(p.isdigit() for p in parts):
                block, avail = int(parts[1]), int(parts[4])
                wanted += avail
                keep.extend(_one(block, i) for i in range(avail))
            elif len(parts) >= 5 and parts[1:3] == ["unused", "pools"] and parts[0].isdigit():
                pools = int(parts[0])
                wanted += pools
                keep.extend(bytes(512 - 33) for _ in range(pools * 31))
        if not wanted:
            break
    return keep


def zygote_main(argv: list[str], host_main: Callable[[list[str]], int],
                started: Mapping[str, Sequence[str]]) -> int:
    """The zygote (the module's docstring). ``host_main`` is :func:`actors.runtime.host.main`, which a
    forked session runs with its own arguments; ``started`` the host's STARTED_MODULES (given
    by actors.runtime.host, which calls this: no import circle)."""
    parser = argparse.ArgumentParser(prog="python -m actors.runtime.host --zygote")
    parser.add_argument("--zygote", action="store_true")
    parser.add_argument("--preload", default="")
    parser.add_argument("--instance", default="")
    args = parser.parse_args(argv)
    actors = [a for a in args.preload.split(",") if a]
    sock = socket.socket(fileno=os.dup(0))   # a SOCK_SEQPACKET end from the supervisor
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)              # stdin is the socket's other copy: not a session's to read
    os.close(null)
    gc.disable()                  # no collection leaves holes in the pages sessions share
    preload(actors, started)
    _freeze()
    sock.send(json.dumps({"ready": os.getpid()}).encode())
    later: list[str] = []          # what turns load, imported while the zygote is idle
    forked = False
    while True:
        if later and not select.select([sock], [], [], 0)[0]:
            later = preload_later(later, sock)
            if not later:
                _call_later(actors)
                _freeze()
            continue
        try:
            message, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, 2)
        except InterruptedError:
            continue
        except OSError:
            return 0
        if not message:
            return 0              # the supervisor closed its end (stopped, or gone)
        name = ""
        try:
            request = json.loads(message)
            name = str(request.get("name", ""))
            reply: dict[str, Any] = {"name": name,
                                     "pid": fork_session(request, fds, sock, host_main)}
        except Exception as exc:  # noqa: BLE001 -- one bad request must not end the zygote
            reply = {"name": name, "error": f"{type(exc).__name__}: {exc}"}
        finally:
            for fd in fds:
                _close(fd)
        sock.send(json.dumps(reply).encode())
        if not forked:            # the first session is on its way: now the rest, when idle
            forked = True
            later = [m for a in actors for m in LATER.get(a, ())]


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def fork_session(request: dict[str, Any], fds: list[int], sock: socket.socket,
                 host_main: Callable[[list[str]], int]) -> int:
    """Fork twice: the grandchild becomes the session (:func:`become_session`, it never
    returns here), the middle process exits at once so that the session is reparented to the
    supervisor. Returns the session's pid once the middle process is reaped."""
    if len(fds) != 2:
        raise ValueError(f"a fork request carries 2 descriptors, not {len(fds)}")
    for key in ("argv", "env", "cwd", "parent", "cookie"):
        if key not in request:
            raise ValueError(f"a fork request without {key!r}")
    read_pid, write_pid = os.pipe()
    middle = os.fork()
    if middle == 0:
        code = 0
        try:
            os.close(read_pid)
            session = os.fork()
            if session == 0:
                os.close(write_pid)
                become_session(request, fds[0], fds[1], sock, host_main)  # never returns
            os.write(write_pid, str(session).encode())
        except BaseException:  # noqa: BLE001 -- a child of a fork never returns to the caller
            code = 1
        finally:
            os._exit(code)
    os.close(write_pid)
    data = b""
    while chunk := os.read(read_pid, 64):
        data += chunk
    os.close(read_pid)
    os.waitpid(middle, 0)
    if not data.isdigit():
        raise OSError("the session's fork failed")
    return int(data)


def become_session(request: dict[str, Any], stdin_fd: int, stderr_fd: int,
                   sock: socket.socket, host_main: Callable[[list[str]], int]) -> None:
    """In the forked session: become what a fresh ``python -P -m actors.runtime.host ARGV`` started
    by :func:`actors.runtime.process_control.spawn` would be, then run it; never returns."""
    code = 1
    try:
        sock.close()
        # Its own session and group first (stopped by killpg): a stop of the zygote's group
        # must not reach it while it waits to be reparented.
        os.setsid()
        _wait_reparented(int(request["parent"]))
        os.dup2(stdin_fd, 0)
        os.dup2(stderr_fd, 2)
        _close(stdin_fd)
        _close(stderr_fd)
        _wait_adopted()
        lifeline = os.environ.get(LIFELINE_ENV)    # the supervisor's, inherited with its fd
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in request["env"].items()})
        if lifeline:
            os.environ[LIFELINE_ENV] = lifeline
        os.chdir(str(request["cwd"]))
        _fresh_signals()
        argv = [str(a) for a in request["argv"]]
        sys.argv = [sys.argv[0], *argv]
        gc.enable()
        code = host_main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 -- never back into the zygote's loop
        import traceback
        traceback.print_exc()
    finally:
        _finish()
        os._exit(code)


def _wait_adopted() -> None:
    """Wait for :data:`GO` on stdin: the supervisor writes it once it has adopted this process
    (it knows its pid from then on: the bus's peer check lets it connect, a stop finds it).
    End of file (not wanted any more: stopped while it was being forked) or nothing within
    :data:`ADOPT_S`: exit."""
    ready, _, _ = select.select([0], [], [], ADOPT_S)
    if not ready or os.read(0, 1) != GO:
        os._exit(0)


def _wait_reparented(supervisor: int) -> None:
    """Until the middle process has exited, this process is its child; then the supervisor's
    (the nearest child subreaper). Only then can PR_SET_PDEATHSIG name the supervisor: set
    before, the middle process's exit would fire it."""
    from actors.runtime.spawn_env import PR_SET_PDEATHSIG, load_prctl
    deadline = time.monotonic() + REPARENT_S
    while os.getppid() != supervisor:
        if time.monotonic() > deadline:
            os._exit(EXIT_PARENT_GONE)       # the supervisor is gone: nobody will take it
        time.sleep(0.0002)
    prctl = load_prctl()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != supervisor:           # it died between the check and the prctl
        os._exit(EXIT_PARENT_GONE)


#: What a new interpreter starts with (Python's own start-up sets SIGINT, SIGPIPE and
#: SIGXFSZ; spawn() resets SIGINT and SIGQUIT when the parent ignored them); everything else
#: at its default. The zygote changes none of them: this holds even if a module it preloads
#: ever does.
_FRESH: dict[int, Callable[..., Any] | int] = {
    int(signal.SIGINT): signal.default_int_handler,
    int(signal.SIGPIPE): signal.SIG_IGN,
    int(signal.SIGXFSZ): signal.SIG_IGN,
}


def _fresh_signals() -> None:
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        wanted = _FRESH.get(int(signum), signal.SIG_DFL)
        try:
            if signal.getsignal(signum) is not wanted:
                signal.signal(signum, wanted)
        except (OSError, ValueError, TypeError):
            continue
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _finish() -> None:
    """What interpreter shutdown would do for a session that ends: join its non-daemon
    threads and run its exit functions, then flush (it ends with ``os._exit``: it must
    never unwind into the zygote's frames)."""
    import atexit
    import threading
    try:
        threading._shutdown()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 -- best effort, the process ends either way
        pass
    try:
        atexit._run_exitfuncs()
    except Exception:  # noqa: BLE001 -- exit handlers are any library's code; the child exits all the same
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
