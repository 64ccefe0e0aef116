"""Start and end real ``rio serve`` instances for tests and benchmarks.

Every instance gets its own runtime, state and config folders under the test's tmp path, so tests
never see the user's Rio nor each other. Its processes check every event they publish against
the catalogue (``RIO_CHECK_EVENTS=1``, rio/protocol/events.py). :meth:`RioServer.stop` ends the
whole tree and checks that nothing with the instance's processes survived and that no process
logged a malformed event.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import psutil

from actors.runtime import process_control

REPO = Path(__file__).resolve().parent.parent
T = TypeVar("T")


#: The short runtime folders rio_env handed out; tests/conftest.py removes them when the
#: session ends (instances living in module fixtures still use theirs until then).
RUNTIME_DIRS: list[Path] = []


def remove_runtime_dirs() -> None:
    """Remove every runtime folder this session made (``/tmp/rio-t-*``)."""
    import shutil
    while RUNTIME_DIRS:
        shutil.rmtree(RUNTIME_DIRS.pop(), ignore_errors=True)


def relax_hang_detection(env: dict[str, str]) -> None:
    """A loaded test machine (2 cores, other suites) can miss 3 pings of 1 s: a session killed
    as "hung" would fail a test for a reason it is not about. ``env``'s config folder gets a
    supervisor.toml that allows 30 misses."""
    folder = Path(env["RIO_CONFIG_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "supervisor.toml").write_text("[defaults]\nping_misses = 30\n")


def rio_env(base: Path) -> dict[str, str]:
    """The environment of a Rio process a test starts: its own folders, no API keys, and
    every published event checked (``RIO_CHECK_EVENTS``: 1 unless the caller's environment
    says otherwise — ``RIO_CHECK_EVENTS=0 python -m tests.bench`` measures without it)."""
    env = dict(os.environ)
    env.setdefault("RIO_CHECK_EVENTS", "1")
    runtime = Path("/tmp") / f"rio-t-{uuid.uuid4().hex[:8]}"   # short: ipc paths ≤ 107 bytes
    RUNTIME_DIRS.append(runtime)
    env.update({"RIO_RUNTIME_DIR": str(runtime), "RIO_STATE_DIR": str(base / "state"),
                "RIO_CONFIG_DIR": str(base / "config"), "PYTHONPATH": str(REPO),
                # Rio's cache folder too: an agent's box hides (and so makes) it (ADR-0038)
                "RIO_CACHE_DIR": str(base / "cache"),
                "RIO_LOG_LEVEL": env.get("RIO_LOG_LEVEL", "WARNING")})
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        env.pop(key, None)
    return env


class RioServer:
    """One ``rio serve`` process tree on ``root``."""

    def __init__(self, root: Path, base: Path, *, name: str | None = None,
                 extra_args: list[str] | None = None, env: dict[str, str] | None = None):
        self.root = root
        self.base = base
        self.name = name or f"t{uuid.uuid4().hex[:8]}"
        self.env = env or rio_env(base)
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen | None = None
        self.known_pids: set[int] = set()

    @property
    def runtime(self) -> Path:
        return Path(self.env["RIO_RUNTIME_DIR"]) / self.name

    def start(self, timeout: float = 30.0, wait_ready: tuple[str, ...] = ("core",)) -> "RioServer":
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rio.cli", "serve", "--root", str(self.root), "--instance",
             self.name, *self.extra_args],
            env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=str(self.root),
            # Ends with this process even when no finalizer runs (a fatal X I/O error).
            preexec_fn=process_control.dies_with_this_process())
        self.known_pids.add(self.proc.pid)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                raise RuntimeError(f"rio serve exited {self.proc.returncode}: {err.decode()}")
            if (self.runtime / "instance.json").exists():
                try:
                    status = self.call("system.status", timeout=2)
                except Exception:  # noqa: BLE001 -- not up yet
                    time.sleep(0.05)
                    continue
                ready = {p["name"] for p in status["processes"] if p.get("ready")}
                for p in status["processes"]:
                    if p.get("pid"):
                        self.known_pids.add(p["pid"])
                if all(w in ready for w in wait_ready):
                    return self
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"rio serve did not become ready in {timeout} s")

    def info(self) -> dict[str, Any]:
        return json.loads((self.runtime / "instance.json").read_text())

    def connect(self, name: str = "test", subscribe: tuple[str, ...] = ()):
        from actors.bus.client import Endpoints, connect
        info = self.info()
        return connect(Endpoints(info["requests"], info["events"]), name=name,
                       subscribe=subscribe)

    def call(self, op: str, args: dict | None = None, timeout: float = 10.0) -> Any:
        conn = self.connect("call")
        try:
            return conn.call(op, args or {}, timeout=timeout)
        finally:
            conn.close()

    def cli(self, *args: str, input: str | None = None, timeout: float = 30) -> \
            subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "rio.cli", *args], env=self.env,
                              capture_output=True, text=True, input=input, timeout=timeout,
                              cwd=str(self.root))

    def journaled(self, text: str) -> bool:
        """True once one of the instance's journals on disk recovers to ``text``: what a
        killed core would bring back (journals of small files keep their base text)."""
        from rio.protocol.errors import RioError
        from rio.text.journal import recover
        for path in Path(self.env["RIO_STATE_DIR"]).glob("projects/*/journal/*"):
            try:
                if recover(path.read_bytes()).text == text:
                    return True
            except (OSError, RioError):   # removed while we looked, or no base text
                continue
        return False

    def pids(self) -> dict[str, int]:
        status = self.call("system.status")
        out = {p["name"]: p["pid"] for p in status["processes"] if p.get("pid")}
        self.known_pids.update(out.values())
        return out

    def tree(self) -> list[psutil.Process]:
        if self.proc is None:
            return []
        try:
            return [psutil.Process(self.proc.pid)] + psutil.Process(self.proc.pid).children(
                recursive=True)
        except psutil.NoSuchProcess:
            return []

    def kill9(self) -> None:
        """SIGKILL the supervisor alone (its children must then end by themselves)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout: float = 20.0) -> int | None:
        if self.proc is None:
            return None
        tree = self.tree()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        code = self.proc.returncode
        said = _drain(self.proc.stderr)   # the supervisor's own log (the hub's checks)
        for pipe in (self.proc.stdout, self.proc.stderr):   # None: the test took them itself
            if pipe is not None:
                pipe.close()
        survivors = wait_gone(tree + [p for p in map(_proc, self.known_pids) if p], 10)
        for p in survivors:
            try:
                p.kill()
            except psutil.Error:
                pass
        self.proc = None
        try:
            self.runtime.parent.rmdir()
        except OSError:
            pass
        if survivors:
            raise AssertionError(f"processes survived rio serve: {survivors}")
        bad = self.bad_events(said)
        if bad:
            raise AssertionError("malformed events were published (rio/protocol/events.py):\n"
                                 + "\n".join(bad))
        return code

    def bad_events(self, supervisor_log: str = "") -> list[str]:
        """Every line a process of this instance logged about an event that failed its
        check (:data:`rio.protocol.events.MARKER`): the per-process logs in the state folder
        (``logs/<instance>.<process>.log``, spares' included) and the supervisor's own."""
        from rio.protocol.events import MARKER
        found = [f"rio serve: {line.strip()}" for line in supervisor_log.splitlines()
                 if MARKER in line]
        logs = Path(self.env["RIO_STATE_DIR"]) / "logs"
        for path in sorted(logs.glob(f"{self.name}.*.log")):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            found += [f"{path.name}: {line.strip()}" for line in text.splitlines()
                      if MARKER in line]
        return found

    def logs_tail(self, chars: int = 3000) -> str:
        """The end of each process's log of this instance (``logs/<instance>.*.log``) and
        the services the hub has registered: what a failed assertion about a running
        instance should show."""
        parts = []
        try:
            services = self.call("bus.services", timeout=5)
            parts.append(f"bus.services: {services!r}")
        except Exception as exc:  # noqa: BLE001 -- diagnostics: whatever went wrong is said
            parts.append(f"bus.services failed: {exc!r}")
        logs = Path(self.env["RIO_STATE_DIR"]) / "logs"
        for path in sorted(logs.glob(f"{self.name}.*.log")):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            parts.append(f"--- {path.name}\n{text[-chars:]}")
        return "\n".join(parts)


def _drain(pipe: Any) -> str:
    """What is left in a child's pipe, without waiting for a writer that is still alive."""
    if pipe is None or pipe.closed:
        return ""
    os.set_blocking(pipe.fileno(), False)
    chunks: list[bytes] = []
    try:
        while True:   # ends: the pipe is non-blocking, so EOF or BlockingIOError comes
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except BlockingIOError:
        pass
    except OSError:
        pass
    return b"".join(chunks).decode("utf-8", "replace")


def _proc(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """The processes of ``procs`` still alive after waiting up to ``timeout`` for them to end."""
    alive = list(procs)

    def all_gone() -> bool:
        alive[:] = [p for p in alive if _alive(p)]
        return not alive

    wait_for(all_gone, timeout, 0.05)
    return alive


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, step: float = 0.02, *,
             what: str = "", seen: Callable[[], object] | None = None,
             ignore: tuple[type[BaseException], ...] = (),
             pause: Callable[[float], object] = time.sleep) -> T | None:
    """Ask ``predicate`` every ``step`` seconds until it answers something true, and return
    that answer — the one way the tests poll, so every wait is bounded by ``timeout``
    (tests/house/test_bounded_waits.py refuses a ``while True`` that is not).

    After ``timeout`` the predicate is asked once more. Without ``what`` a timeout returns its
    last (false) answer, for ``assert wait_for(…)``; with ``what`` it raises AssertionError
    saying what was awaited and what was last seen: ``seen()``, else the last answer. An
    exception of a type in ``ignore`` counts as "not yet" (a server still starting) and is
    what was last seen. ``pause`` is how to spend a step: ``time.sleep``, or a bus
    connection's ``wait`` so that its events are read meanwhile.
    """
    deadline = time.monotonic() + timeout
    last: T | BaseException | None = None
    while True:   # ends: the deadline below
        try:
            answer = predicate()
        except ignore as exc:
            last = exc
        else:
            if answer:
                return answer
            last = answer
        if time.monotonic() >= deadline:
            break
        pause(step)
    if not what:
        return None if isinstance(last, BaseException) else last
    said = seen() if seen is not None else last
    raise AssertionError(f"waited {timeout:g} s for {what}; last seen: {said!r}")


async def wait_for_async(predicate: Callable[[], T], timeout: float = 10.0, step: float = 0.0,
                         *, what: str = "") -> T:
    """:func:`wait_for` inside an asyncio loop: the predicate is asked between the loop's other
    tasks (``step`` 0: every turn of the loop), and a timeout always fails, saying ``what``
    was awaited — a coroutine waiting on a turn's state has nothing else to return."""
    import asyncio
    deadline = time.monotonic() + timeout
    while not (answer := predicate()):
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {what or repr(predicate)}; "
                                 f"last seen: {answer!r}")
        await asyncio.sleep(step)
    return answer
