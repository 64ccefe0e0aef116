"""Process control: the ONE place Rio starts, stops and sweeps long-running child processes.

The supervisor (service processes), agent sessions (ACP agents) and the editor's Run command all
start children through :func:`spawn` and end them through :func:`stop`, so every child gets the
same guarantees (ADR-0007):

* **A process group of its own** (``new_session``): one ``killpg`` reaches the child and every
  helper it starts, including helpers psutil has not seen yet.
* **An environment cookie**: ``RIO_SPAWN_COOKIE=<uuid>`` plus ``RIO_SPAWN_LINEAGE`` (the cookies
  of the spawning Rio processes). Descendants inherit both, so :func:`sweep` finds a helper that
  escaped the group (double fork + ``setsid``) wherever it was reparented, and sweeping an outer
  cookie also finds everything spawned below it.
* **Death with the parent** (``die_with_parent``): ``PR_SET_PDEATHSIG(SIGTERM)`` in the child,
  plus a *lifeline* pipe whose read end the child inherits; a Rio child runs
  :func:`exit_with_parent` to stop its own tree when the parent vanishes.

The stop sequence (:func:`stop`): close stdin → grace → SIGTERM the group → grace → SIGKILL the
group → sweep the cookie → reap. Real agents need every step: claude-agent-acp and codex-acp
ignore the end of stdin and only a signal ends them (observed with
claude-agent-acp 0.23.1 and codex-acp 0.16.0; ADR-0007, ADR-0023).

Threading note: Linux delivers PDEATHSIG when the *thread* that forked the child exits, not the
process (prctl(2)). Spawn from a long-lived thread (the supervisor uses one), never from a
short-lived worker or a pykka actor thread that may be restarted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Literal

import psutil

from actors.bus.parent_watch import (
    EXIT_PARENT_GONE,
    PARENT_SIGNALS,
    Watchdog,
    on_parent_signals,
    watch_parent,
)

# The variables that tie a child to its spawner are named here too (``as``: re-exported), so
# the rooms that read them (open_folder, the fault harness) ask the module that sets them.
from actors.runtime.spawn_env import COOKIE_ENV as COOKIE_ENV
from actors.runtime.spawn_env import LIFELINE_ENV as LIFELINE_ENV
from actors.runtime.spawn_env import LINEAGE_ENV as LINEAGE_ENV
from actors.runtime.spawn_env import PARENT_ENV as PARENT_ENV
from actors.runtime.spawn_env import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_PDEATHSIG,
    load_prctl,
    own_lineage,
)

log = logging.getLogger("rio.process_control")

PIPE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL

_POLL_S = 0.01  # how often a stop looks at the tree while it waits
#: Graces when a Rio child stops its own tree because its parent vanished: be quick, nobody waits.
ORPHAN_GRACES = {"stdin_grace": 0.2, "term_grace": 0.5, "kill_grace": 1.0}

StopHow = Literal["exited", "stdin_closed", "terminated", "killed"]
StdSpec = int | IO[Any] | None


_prctl = load_prctl()


@dataclass(frozen=True)
class Spawned:
    """A child started by :func:`spawn`. ``started_at`` is wall-clock time (for display)."""

    popen: subprocess.Popen[bytes]
    pid: int
    pgid: int
    cookie: str
    argv: tuple[str, ...]
    started_at: float


@dataclass(frozen=True)
class StopReport:
    """How a stop went. ``how`` is the step at which the main process ended; ``swept`` are the
    descendants that had escaped the process group and were found by the cookie;
    ``survivors`` should always be empty (anything still alive, zombies excluded)."""

    how: StopHow
    returncode: int | None
    swept: list[int]
    elapsed: float
    survivors: list[int] = field(default_factory=list)


# Children this process spawned and has not stopped yet: exit_with_parent() stops them, and
# reap_zombies() must never reap them (their Popen owns the exit status).
_live: dict[int, Spawned] = {}
_live_lock = threading.Lock()

# The lifeline: a pipe whose write end only this process holds (os.pipe() fds are
# close-on-exec, so no exec'd child inherits it). Children get the read end; it reads EOF the
# moment this process is gone, however it died -- and unlike PDEATHSIG it is per process.
_lifeline: tuple[int, int] | None = None
_lifeline_lock = threading.Lock()


def _lifeline_read_fd() -> int:
    global _lifeline
    with _lifeline_lock:
        if _lifeline is None:
            _lifeline = os.pipe()
        return _lifeline[0]


# --------------------------------------------------------------------------------------- spawn

def new_cookie() -> str:
    return uuid.uuid4().hex


def _check_argv(argv: Sequence[str]) -> tuple[str, ...]:
    if isinstance(argv, (str, bytes)):
        raise TypeError("spawn() takes an argv list, never a shell string")
    items = tuple(os.fspath(a) for a in argv)
    if not items or not all(isinstance(a, str) for a in items):
        raise TypeError(f"argv must be a non-empty list of str, got {argv!r:.200}")
    return items


def _check_cookie(cookie: str) -> str:
    if not cookie or any(c in cookie for c in ":=\0") or not cookie.isprintable():
        raise ValueError(f"bad spawn cookie {cookie!r}: use printable text without ':' or '='")
    return cookie


#: Signals a non-interactive shell's background job starts ignoring (bash, dash: ``cmd &``
#: with no job control). An ignored signal stays ignored across exec, so everything Rio
#: starts would inherit it — an agent and its helpers (a dev server it stops with SIGINT), a
#: Run command, a ``rio chat`` a test interrupts. Rio's children run in a session of their
#: own, outside the shell's job the ignoring was meant for: they start with these signals at
#: their default action, as a service manager starts a service.
_RESET_IF_IGNORED = (signal.SIGINT, signal.SIGQUIT)


def _ignored_job_signals() -> tuple[int, ...]:
    """The signals of :data:`_RESET_IF_IGNORED` this process ignores (read before a fork)."""
    return tuple(int(s) for s in _RESET_IF_IGNORED if signal.getsignal(s) == signal.SIG_IGN)


def _make_preexec(parent_pid: int, reset: tuple[int, ...] = ()) -> Callable[[], None]:
    """The step run in the child between fork and exec: PR_SET_PDEATHSIG, and ``reset``'s
    signals back to their default action (:data:`_RESET_IF_IGNORED`).

    subprocess warns that preexec_fn is unsafe with threads: a lock another thread held at fork
    time stays locked in the child. This step takes no lock: it calls ``signal.signal``
    (sigaction; subprocess made the forking thread the child's main thread before this step
    runs), a foreign function bound before the fork, ``os.getppid`` and ``os._exit``, with the
    GIL the child already holds.
    """
    prctl = _prctl
    sigterm = int(signal.SIGTERM)
    getppid = os.getppid
    exit_now = os._exit
    set_handler = signal.signal
    default = signal.SIG_DFL

    def preexec() -> None:
        for signum in reset:
            set_handler(signum, default)
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, sigterm, 0, 0, 0)
        # The race PDEATHSIG leaves open: the parent died before prctl ran, so no signal
        # will ever come. Then we were reparented already: give up before exec.
        if getppid() != parent_pid:
            exit_now(EXIT_PARENT_GONE)

    return preexec


def _reset_signals(reset: tuple[int, ...]) -> Callable[[], None]:
    """The child step of a spawn that does not die with its parent: ``reset`` only."""
    set_handler = signal.signal
    default = signal.SIG_DFL

    def preexec() -> None:
        for signum in reset:
            set_handler(signum, default)

    return preexec


def _then(first: Callable[[], None] | None, step: Callable[[], None]) -> Callable[[], None]:
    """``first`` (the spawn's own child step, if any), then ``step`` — which, like it, must
    take no lock: it runs between fork and exec."""
    if first is None:
        return step

    def both() -> None:
        first()
        step()

    return both


def dies_with_this_process() -> Callable[[], None]:
    """A ``preexec_fn`` for a plain ``subprocess.Popen`` (test harnesses, benchmarks): the
    child gets SIGTERM when the calling thread's process ends, however it ends — a test
    process killed by Xlib's fatal I/O error handler runs no ``finally`` and no fixture
    finalizer, and its ``rio serve`` used to live on. Call it on a long-lived thread
    (the module's threading note). Like :func:`spawn`'s, the child starts with SIGINT and
    SIGQUIT at their default action even when this process ignores them."""
    return _make_preexec(os.getpid(), _ignored_job_signals())


def spawn(argv: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
          env: Mapping[str, str] | None = None, stdin: StdSpec = PIPE, stdout: StdSpec = PIPE,
          stderr: StdSpec = DEVNULL, cookie: str | None = None, new_session: bool = True,
          die_with_parent: bool = True,
          child_step: Callable[[], None] | None = None) -> Spawned:
    """Start ``argv`` (a list, never a shell string) as a long-running child.

    ``env`` None inherits this process's environment; either way the child also gets the
    cookie variables. ``stderr`` defaults to DEVNULL: a PIPE nobody drains freezes the child
    once 64 KiB are written, so pass a log file to keep it. A child in a session of its own
    starts with SIGINT and SIGQUIT at their default action, even when this process ignores
    them (:data:`_RESET_IF_IGNORED`). ``child_step`` runs in the child last, before exec
    (:func:`_then`: an agent's Landlock scope, actors/runtime/landlock.py).
    """
    args = _check_argv(argv)
    cookie = _check_cookie(cookie if cookie is not None else new_cookie())
    child_env = dict(os.environ if env is None else env)
    child_env[COOKIE_ENV] = cookie
    child_env[LINEAGE_ENV] = ":".join(own_lineage())
    me = os.getpid()
    child_env[PARENT_ENV] = str(me)
    pass_fds: tuple[int, ...] = ()
    preexec = None
    reset = _ignored_job_signals() if new_session else ()
    if die_with_parent:
        fd = _lifeline_read_fd()
        pass_fds = (fd,)
        child_env[LIFELINE_ENV] = f"{me}:{fd}"
        preexec = _make_preexec(me, reset)
    else:
        child_env.pop(LIFELINE_ENV, None)
        if reset:
            preexec = _reset_signals(reset)
    if child_step is not None:
        preexec = _then(preexec, child_step)
    popen = subprocess.Popen(  # an argv list, no shell
        list(args), cwd=cwd, env=child_env, stdin=stdin, stdout=stdout, stderr=stderr,
        start_new_session=new_session, preexec_fn=preexec, pass_fds=pass_fds, close_fds=True)
    pgid = popen.pid if new_session else os.getpgrp()
    spawned = Spawned(popen=popen, pid=popen.pid, pgid=pgid, cookie=cookie, argv=args,
                      started_at=time.time())
    with _live_lock:
        _prune_locked()
        _live[popen.pid] = spawned
    log.debug("spawned pid %d pgid %d cookie %s: %s", popen.pid, pgid, cookie, args)
    return spawned


class ForkedChild:
    """The face of :class:`subprocess.Popen` (``pid``, ``returncode``, ``stdin``, ``stdout``,
    ``stderr``, ``poll``, ``wait``, ``send_signal``) for a child made by ``os.fork()`` without
    exec — the window `rio FILE` draws in a copy of itself (actors/runtime/window_first.py) — so that
    :func:`stop` and the supervisor treat it like any spawned child."""

    def __init__(self, pid: int, args: Sequence[str], stdin: IO[bytes] | None,
                 stdout: IO[bytes] | None) -> None:
        self.pid = pid
        self.args = list(args)
        self.stdin = stdin
        self.stdout = stdout
        self.stderr: IO[bytes] | None = None
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:      # reaped elsewhere: its status is lost
                    self.returncode = 255
                else:
                    if pid == self.pid:
                        self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            time.sleep(_POLL_S)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def adopt(child: ForkedChild, *, cookie: str, argv: Sequence[str]) -> Spawned:
    """Track a child this process forked itself (in a session of its own, carrying ``cookie``
    in its ``os.environ``) as if :func:`spawn` had started it."""
    spawned = Spawned(popen=child, pid=child.pid, pgid=child.pid,  # type: ignore[arg-type]
                      cookie=_check_cookie(cookie), argv=_check_argv(argv),
                      started_at=time.time())
    with _live_lock:
        _prune_locked()
        _live[child.pid] = spawned
    log.debug("adopted forked pid %d cookie %s: %s", child.pid, cookie, spawned.argv)
    return spawned


def _prune_locked() -> None:
    """Forget children whose Popen was reaped elsewhere (``poll()`` by a monitor loop that
    then never called stop()): their pid is free and may belong to someone else next."""
    for pid in [pid for pid, s in _live.items() if s.popen.returncode is not None]:
        del _live[pid]


def live_spawned() -> list[Spawned]:
    """The children this process spawned and has neither stopped nor seen reaped."""
    with _live_lock:
        _prune_locked()
        return list(_live.values())


# ----------------------------------------------------------------------------- inspection

def _alive(proc: psutil.Process) -> bool:
    """Running, not a zombie (a zombie holds no resources and cannot be signalled away)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def descendants(pid: int) -> list[psutil.Process]:
    """Every live descendant of ``pid`` psutil can see (not those reparented away)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _carries(environ: Mapping[str, str] | None, cookie: str) -> bool:
    if not environ:
        return False
    return environ.get(COOKIE_ENV) == cookie or cookie in environ.get(LINEAGE_ENV, "").split(":")


def _with_cookie(cookie: str) -> list[psutil.Process]:
    me = os.getpid()
    found = []
    # ad_value: another user's environ raises AccessDenied; such a process is not ours to kill.
    for proc in psutil.process_iter(["environ"], ad_value=None):
        if proc.pid != me and _carries(proc.info.get("environ"), cookie) and _alive(proc):
            found.append(proc)
    return found


def live_with_cookie(cookie: str) -> list[int]:
    """Pids of live processes (zombies excluded) whose environment carries ``cookie``, as
    their own cookie or in their lineage."""
    return sorted(p.pid for p in _with_cookie(cookie))


# ------------------------------------------------------------------------------ reaping

def _is_tracked(pid: int) -> bool:
    with _live_lock:
        spawned = _live.get(pid)
        return spawned is not None and spawned.popen.returncode is None


def _reap_if_child(pid: int) -> None:
    """Reap ``pid`` if it is our (untracked) child and already dead; never block."""
    if _is_tracked(pid):
        return
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER).

    Orphans then reparent here instead of to init, so ``children(recursive=True)`` still sees
    a double-forked helper. The caller must then call :func:`reap_zombies` now and then.
    Returns False where the kernel offers no such thing.
    """
    if _prctl is None:
        return False
    return _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _any_child_exited() -> bool:
    """Is any child of this process a zombie? Asked of the kernel without reaping it
    (``waitid`` with ``WNOWAIT``): a few µs, where listing the children with psutil reads
    every process's ``/proc`` entry — ~2 ms of CPU holding the GIL, which the supervisor's
    loop paid every 20 ms while its hub thread waited to route the next frame (issue 13)."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        return True
    try:
        return waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:   # no children at all
        return False


def reap_zombies(protect: Iterable[int] = ()) -> list[int]:
    """Reap this process's children that are already zombies; returns their pids.

    It must not steal an exit status someone else waits for: a Popen whose child was reaped
    here would report returncode 0 for a crash. So it reaps only children that are zombies
    now, and never one spawned by :func:`spawn` and not yet stopped, nor one in ``protect``
    (pass the pids of any child started with plain ``subprocess`` in this process).
    ``os.waitpid(-1, WNOHANG)`` would take whichever child came first, tracked or not.
    """
    if not _any_child_exited():
        return []
    keep = set(protect)
    reaped = []
    try:
        children = psutil.Process().children()
    except psutil.NoSuchProcess:
        return []
    for child in children:
        if child.pid in keep or _is_tracked(child.pid):
            continue
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                continue
            pid, _status = os.waitpid(child.pid, os.WNOHANG)
        except (psutil.NoSuchProcess, ChildProcessError):
            continue
        if pid:
            reaped.append(pid)
    return reaped


def end_adopted(protect: Iterable[int] = (), timeout: float = 1.0) -> list[int]:
    """SIGKILL every live child of this process that it did not spawn, with all their
    descendants, then reap them: the orphans a subreaper adopted — a helper that cleared its
    environment (no cookie to sweep it by), called setsid and double-forked. A child whose
    tree holds a pid of ``protect`` (another Rio instance this one started) is left alone.
    For a supervisor's last step, when every child of its own is stopped already."""
    keep = set(protect) | {s.pid for s in live_spawned()}
    try:
        children = psutil.Process().children()
    except psutil.NoSuchProcess:
        return []
    victims: list[psutil.Process] = []
    for child in children:
        if child.pid in keep or not _alive(child):
            continue
        try:
            tree = [child, *child.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        if not keep.intersection(p.pid for p in tree):
            victims += tree
    for proc in victims:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            proc.kill()
    _wait_gone(victims, time.monotonic() + timeout)
    for proc in victims:
        _reap_if_child(proc.pid)
    if victims:
        log.warning("ended %d process(es) that had escaped to us: %s", len(victims),
                    sorted(p.pid for p in victims))
    return sorted(p.pid for p in victims)


# -------------------------------------------------------------------------------- sweep

def _wait_gone(procs: Iterable[psutil.Process], deadline: float) -> None:
    pending = list(procs)
    while pending:
        pending = [p for p in pending if _alive(p)]
        if not pending or time.monotonic() >= deadline:
            return
        time.sleep(_POLL_S)


def _sweep(cookie: str, timeout: float) -> dict[int, int | None]:
    """SIGKILL everything carrying ``cookie``, repeatedly until a scan finds none (a process
    may fork between our scan and our kill), then wait for them and reap our own.
    Returns {pid: its process group when found}."""
    deadline = time.monotonic() + timeout
    killed: dict[int, int | None] = {}
    for _ in range(3):
        found = _with_cookie(cookie)
        if not found:
            break
        for proc in found:
            killed.setdefault(proc.pid, _pgid(proc.pid))
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        _wait_gone(found, deadline)
    for pid in killed:
        _reap_if_child(pid)
    return killed


def sweep(cookie: str, *, timeout: float = 1.0) -> list[int]:
    """Kill every process, whoever its parent now is, whose environment carries ``cookie``
    (own cookie or lineage); wait for them; return their pids. Processes of other users are
    skipped (their environment is unreadable)."""
    return sorted(_sweep(_check_cookie(cookie), timeout))


# --------------------------------------------------------------------------------- stop

def _main_exited(popen: subprocess.Popen[bytes]) -> bool:
    """Has the main process exited? Looks without reaping (WNOWAIT): while it is an unreaped
    zombie its pid -- and so the group id we signal -- cannot be reused."""
    if popen.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, popen.pid,
                         os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # someone else reaped it
        return True


def _group_signallable(spawned: Spawned) -> bool:
    """killpg is safe while the main process is unreaped (its pid, hence the group id, cannot
    be reused) and the group is not our own (new_session=False)."""
    return spawned.pgid != os.getpgrp() and spawned.popen.returncode is None


def _signal_tree(spawned: Spawned, tree: Sequence[psutil.Process], sig: int) -> None:
    if _group_signallable(spawned):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(spawned.pgid, sig)
    # Members that left the group (setsid) but are still in the snapshot, and the whole tree
    # when the child shares our group (new_session=False: killpg would hit us).
    for proc in tree:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if proc.is_running():
                proc.send_signal(sig)


def _tree_done(spawned: Spawned, tree: Sequence[psutil.Process]) -> bool:
    return _main_exited(spawned.popen) and not any(_alive(p) for p in tree)


def stop(spawned: Spawned, *, stdin_grace: float = 1.0, term_grace: float = 1.0,
         kill_grace: float = 1.0) -> StopReport:
    """End ``spawned`` and everything it started. Never raises for a process already gone.

    close stdin → wait ``stdin_grace`` → SIGTERM the group → wait ``term_grace`` → SIGKILL the
    group → wait ``kill_grace`` → sweep the cookie → reap. Each wait ends early once the main
    process and every process of the tree snapshot (taken before any signal, since a signalled
    parent's children reparent out of sight) are gone.
    """
    started = time.monotonic()
    popen = spawned.popen
    tree = [p for p in [_process(spawned.pid), *descendants(spawned.pid)] if p is not None]
    how: StopHow | None = "exited" if _main_exited(popen) else None
    steps: list[tuple[int | None, float, StopHow]] = [
        (signal.SIGTERM, term_grace, "terminated"),
        (signal.SIGKILL, kill_grace, "killed"),
    ]
    if popen.stdin is not None:  # without a stdin pipe the child cannot see it close: skip
        steps.insert(0, (None, stdin_grace, "stdin_closed"))
    last: StopHow = "killed"
    for sig, grace, label in steps:
        if _tree_done(spawned, tree):
            break
        # Each step's action is taken here, after the check above, so a child that ends at
        # once (stdin closed, a quick exit) is labelled by this step below, not left "killed".
        if sig is None:
            assert popen.stdin is not None
            with contextlib.suppress(OSError):  # BrokenPipe when it is gone already
                popen.stdin.close()
        else:
            _signal_tree(spawned, tree, sig)
        last = label
        deadline = time.monotonic() + grace
        while not _tree_done(spawned, tree) and time.monotonic() < deadline:
            if how is None and _main_exited(popen):
                how = label
            time.sleep(_POLL_S)
        if how is None and _main_exited(popen):
            how = label
    if how is None:
        how = last
    # Group members born after the snapshot: the main process is gone, they go too.
    if _group_signallable(spawned):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(spawned.pgid, signal.SIGKILL)
    swept = [pid for pid, pgid in _sweep(spawned.cookie, kill_grace).items()
             if pgid != spawned.pgid]
    returncode: int | None
    try:
        returncode = popen.wait(timeout=kill_grace)
    except subprocess.TimeoutExpired:  # uninterruptible sleep (D state): nothing more to do
        returncode = None
    for proc in tree[1:]:
        _reap_if_child(proc.pid)
    with _live_lock:
        _live.pop(spawned.pid, None)
    survivors = sorted({p.pid for p in tree if _alive(p)} | set(live_with_cookie(spawned.cookie)))
    if survivors:
        log.error("stop left survivors %s of %s (cookie %s)", survivors, spawned.argv,
                  spawned.cookie)
    return StopReport(how=how, returncode=returncode, swept=sorted(swept),
                      elapsed=time.monotonic() - started, survivors=survivors)


def stop_all(**graces: float) -> list[StopReport]:
    """Stop every child this process spawned, all at once (one thread each), so the graces
    are paid once, not once per child."""
    targets = live_spawned()
    reports: list[StopReport | None] = [None] * len(targets)

    def run(i: int, target: Spawned) -> None:
        reports[i] = stop(target, **graces)

    threads = [threading.Thread(target=run, args=(i, s), name=f"rio-stop-{s.pid}", daemon=True)
               for i, s in enumerate(targets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for r in reports if r is not None]


def kill_all_now() -> None:
    """SIGKILL the process group of every live child this process spawned, without waiting,
    scanning or reaping: the last step of a process that must exit *now* (its parent is
    gone and the orderly :func:`stop_all` has had its time). Never blocks, never raises."""
    with _live_lock:
        targets = list(_live.values())
    for spawned in targets:
        if _group_signallable(spawned):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(spawned.pgid, signal.SIGKILL)


def sweep_all_spawned() -> None:
    """:func:`sweep` the cookie of every child this process spawned (escaped helpers too)."""
    with _live_lock:
        cookies = [s.cookie for s in _live.values()]
    for cookie in cookies:
        with contextlib.suppress(psutil.Error, OSError):
            _sweep(cookie, 0.5)


# ------------------------------------------------------------------ when the parent vanishes

_orphan_lock = threading.Lock()


def _stop_children_and_exit(code: int = EXIT_PARENT_GONE) -> None:
    """Default reaction to losing the parent: stop our own spawned tree, then exit at once.
    Runs once even when the signal handler and the watchdog both fire."""
    if not _orphan_lock.acquire(blocking=False):
        return  # the other path is already doing it, and will exit
    try:
        stop_all(**ORPHAN_GRACES)
    finally:
        os._exit(code)


def watchdog_from_parent(on_parent_gone: Callable[[], None] | None = None, *,
                         lifeline_fd: int | None = None,
                         poll_interval: float = 0.2) -> Watchdog:
    """Start a daemon thread that runs ``on_parent_gone`` when the parent process vanishes
    (:func:`actors.bus.parent_watch.watch_parent`). For Rio's own child processes; default
    reaction: stop our spawned children, ``os._exit``."""
    return watch_parent(on_parent_gone or _stop_children_and_exit, lifeline_fd=lifeline_fd,
                        poll_interval=poll_interval)


def stop_children_on_signal(signums: Iterable[int] = PARENT_SIGNALS) -> None:
    """Install handlers (main thread only) that stop our spawned children, then exit.

    PDEATHSIG delivers SIGTERM to a Rio child when its parent dies; the default action would
    end the child at once and orphan its agent, which may ignore SIGTERM (stubborn agents)."""
    on_parent_signals(_stop_children_and_exit, signums)


def exit_with_parent() -> Watchdog:
    """Everything a Rio child process calls at start-up so that it, and the tree it spawned,
    end with its parent: signal handlers (when on the main thread) plus the watchdog."""
    if threading.current_thread() is threading.main_thread():
        stop_children_on_signal()
    return watchdog_from_parent()
