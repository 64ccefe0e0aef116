"""actors/runtime/process_control.py against real processes: the fake agents in tests/fakes/.

Every test starts its children through the ``fleet`` fixture, whose finalizer stops what is
still running and sweeps each cookie, so a failing test leaves no orphan behind. Zombies count
as gone: PID 1 in some containers never reaps, and a zombie holds nothing.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from actors.runtime import process_control as pc
from tests.support import REPO, wait_for

FAKES = Path(__file__).parent.parent / "fakes"
PY = sys.executable
FAST = {"stdin_grace": 0.3, "term_grace": 0.3, "kill_grace": 2.0}
# For children expected to end at stdin close: a generous grace (a busy CI machine can take a
# while to run interpreter shutdown); a stop ends as soon as the child does, so it costs nothing.
POLITE = {**FAST, "stdin_grace": 10.0}


def read_line(popen: subprocess.Popen[bytes], timeout: float = 15.0) -> list[str]:
    """The next stdout line of ``popen``, split in words; fails instead of hanging."""
    assert popen.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(popen.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            pytest.fail(f"no line from pid {popen.pid} within {timeout} s")
    line = popen.stdout.readline().decode()
    if not line:
        pytest.fail(f"pid {popen.pid} closed stdout without a line (rc {popen.poll()})")
    return line.split()


def read_ready(popen: subprocess.Popen[bytes]) -> list[int]:
    """The pids of a fake's ``ready <pid> <helper pids…>`` line."""
    words = read_line(popen)
    assert words[0] == "ready", words
    return [int(w) for w in words[1:]]


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    return bool(wait_for(condition, timeout))


class Fleet:
    def __init__(self) -> None:
        self.spawned: list[pc.Spawned] = []

    def start(self, argv: list[str], **kwargs: object) -> pc.Spawned:
        kwargs.setdefault("stderr", None)  # a fake's traceback lands in pytest's output
        spawned = pc.spawn(argv, **kwargs)  # type: ignore[arg-type]
        self.spawned.append(spawned)
        return spawned

    def fake(self, name: str, *args: str, **kwargs: object) -> tuple[pc.Spawned, list[int]]:
        spawned = self.start([PY, str(FAKES / name), *args], **kwargs)
        return spawned, read_ready(spawned.popen)


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    """Children of one test; the finalizer stops them and sweeps their cookies."""
    fleet = Fleet()
    try:
        yield fleet
    finally:
        for spawned in fleet.spawned:
            if spawned in pc.live_spawned():
                pc.stop(spawned, stdin_grace=0, term_grace=0, kill_grace=2.0)
            pc.sweep(spawned.cookie)
            for stream in (spawned.popen.stdin, spawned.popen.stdout):
                if stream is not None:
                    stream.close()
        left = {s.cookie: pc.live_with_cookie(s.cookie) for s in fleet.spawned}
        assert not any(left.values()), f"orphans left behind: {left}"


def assert_no_survivors(report: pc.StopReport, spawned: pc.Spawned, pids: list[int]) -> None:
    assert report.survivors == []
    assert pc.live_with_cookie(spawned.cookie) == []
    assert [p for p in pids if alive(p)] == []
    assert spawned not in pc.live_spawned()


# ------------------------------------------------------------------------------- spawn

def test_spawn_rejects_a_shell_string() -> None:
    with pytest.raises(TypeError):
        pc.spawn("echo hi")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pc.spawn(b"echo hi")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pc.spawn([])


@pytest.mark.timeout(30)
def test_spawn_gives_a_cookie_a_group_and_pdeathsig(fleet: Fleet) -> None:
    probe = textwrap.dedent("""
        import ctypes, json, os
        value = ctypes.c_int()
        ctypes.CDLL(None).prctl(2, ctypes.byref(value), 0, 0, 0)  # PR_GET_PDEATHSIG
        print(json.dumps({"cookie": os.environ.get("RIO_SPAWN_COOKIE"), "pid": os.getpid(),
                          "pgid": os.getpgrp(), "sid": os.getsid(0),
                          "pdeathsig": value.value, "extra": os.environ.get("EXTRA")}))
    """)
    spawned = fleet.start([PY, "-c", probe], env={**os.environ, "EXTRA": "yes"})
    seen = json.loads(spawned.popen.stdout.readline())  # type: ignore[union-attr]
    assert len(spawned.cookie) == 32 and seen["cookie"] == spawned.cookie
    assert seen["pid"] == seen["pgid"] == seen["sid"] == spawned.pid == spawned.pgid
    assert seen["pdeathsig"] == signal.SIGTERM
    assert seen["extra"] == "yes"
    assert spawned.argv == (PY, "-c", probe)

    mine = f"chosen-{os.getpid()}-{time.monotonic_ns()}"  # unique: other runs sweep theirs
    plain = fleet.start([PY, "-c", probe], cookie=mine, die_with_parent=False,
                        new_session=False)
    seen = json.loads(plain.popen.stdout.readline())  # type: ignore[union-attr]
    assert seen["cookie"] == mine and seen["pdeathsig"] == 0
    assert seen["pgid"] == os.getpgrp() == plain.pgid


def test_spawn_rejects_a_cookie_that_would_break_the_lineage() -> None:
    with pytest.raises(ValueError):
        pc.spawn([PY, "-c", "pass"], cookie="a:b")


@pytest.mark.timeout(10)
def test_the_child_step_gives_up_when_the_parent_is_already_gone() -> None:
    # The race PDEATHSIG leaves open: the parent died before prctl ran. Simulated by telling
    # the step to expect a parent that is not ours; the child must exit before exec.
    done = subprocess.run([PY, "-c", "print('ran')"], capture_output=True, timeout=5,
                          preexec_fn=pc._make_preexec(os.getpid() + 1_000_000))
    assert done.stdout == b""
    assert done.returncode == pc.EXIT_PARENT_GONE


# -------------------------------------------------------------------------------- stop

@pytest.mark.timeout(30)
def test_a_polite_agent_ends_when_stdin_closes(fleet: Fleet) -> None:
    spawned, pids = fleet.fake("polite_agent.py")
    report = pc.stop(spawned, **POLITE)
    assert (report.how, report.returncode, report.swept) == ("stdin_closed", 0, [])
    assert_no_survivors(report, spawned, pids)


@pytest.mark.timeout(30)
def test_helpers_left_by_a_polite_agent_are_ended_with_its_group(fleet: Fleet) -> None:
    spawned, pids = fleet.fake("polite_agent.py", "--helpers", "2")
    report = pc.stop(spawned, **{**POLITE, "stdin_grace": 1.0})  # the helpers wait it out
    assert report.how == "stdin_closed" and report.returncode == 0
    assert_no_survivors(report, spawned, pids)


@pytest.mark.timeout(30)
def test_an_agent_that_ignores_stdin_is_terminated(fleet: Fleet) -> None:
    spawned = fleet.start([PY, "-c", "import time; print('ready', flush=True); time.sleep(99)"])
    read_line(spawned.popen)
    report = pc.stop(spawned, **FAST)
    assert (report.how, report.returncode) == ("terminated", -signal.SIGTERM)
    assert_no_survivors(report, spawned, [spawned.pid])


@pytest.mark.timeout(30)
def test_a_stubborn_agent_and_its_helpers_are_killed(fleet: Fleet) -> None:
    spawned, pids = fleet.fake("stubborn_agent.py", "--helpers", "3")
    assert len(pids) == 4
    report = pc.stop(spawned, **FAST)
    assert (report.how, report.returncode, report.swept) == ("killed", -signal.SIGKILL, [])
    assert_no_survivors(report, spawned, pids)


@pytest.mark.timeout(30)
def test_a_helper_that_escaped_the_group_is_found_by_the_cookie(fleet: Fleet) -> None:
    spawned, (agent, helper) = fleet.fake("forking_agent.py")
    assert os.getsid(helper) != os.getsid(agent)            # it really left the session
    assert helper not in [p.pid for p in pc.descendants(agent)]  # and psutil lost it
    report = pc.stop(spawned, **FAST)
    assert report.how == "killed"
    assert report.swept == [helper]
    assert_no_survivors(report, spawned, [agent, helper])


@pytest.mark.timeout(30)
def test_stopping_a_child_that_already_exited(fleet: Fleet) -> None:
    spawned = fleet.start([PY, "-c", "import sys; sys.exit(3)"])
    assert wait_until(lambda: not alive(spawned.pid))
    report = pc.stop(spawned, **FAST)
    assert (report.how, report.returncode, report.swept) == ("exited", 3, [])
    again = pc.stop(spawned, **FAST)  # stopping twice is harmless
    assert again.returncode == 3


@pytest.mark.timeout(30)
def test_a_child_in_our_own_group_is_stopped_without_signalling_us(fleet: Fleet) -> None:
    spawned, pids = fleet.fake("stubborn_agent.py", "--helpers", "1", new_session=False)
    assert spawned.pgid == os.getpgrp()
    report = pc.stop(spawned, **FAST)
    assert report.how == "killed"
    assert_no_survivors(report, spawned, pids)


@pytest.mark.timeout(30)
def test_stop_all_ends_every_child_at_once(fleet: Fleet) -> None:
    started = [fleet.fake("stubborn_agent.py")[0], fleet.fake("polite_agent.py")[0]]
    reports = pc.stop_all(**{**FAST, "stdin_grace": 2.0})
    assert sorted(r.how for r in reports) == ["killed", "stdin_closed"]
    for spawned in started:
        assert pc.live_with_cookie(spawned.cookie) == []


# ------------------------------------------------------------------------------- sweep

@pytest.mark.timeout(30)
def test_sweep_kills_everything_carrying_the_cookie(fleet: Fleet) -> None:
    spawned, (agent, helper) = fleet.fake("forking_agent.py")
    assert pc.live_with_cookie(spawned.cookie) == sorted([agent, helper])
    assert pc.sweep(spawned.cookie) == sorted([agent, helper])
    assert pc.live_with_cookie(spawned.cookie) == []
    report = pc.stop(spawned, **FAST)  # reaps the main process
    assert (report.how, report.returncode) == ("exited", -signal.SIGKILL)


@pytest.mark.timeout(30)
def test_grandchildren_carry_the_cookie_of_every_rio_process_above_them(fleet: Fleet,
                                                                         tmp_path: Path) -> None:
    middle = tmp_path / "middle.py"
    middle.write_text(textwrap.dedent(f"""
        import sys, time
        from actors.runtime import process_control as pc
        agent = pc.spawn([sys.executable, {str(FAKES / "stubborn_agent.py")!r}])
        sys.stdout.write(agent.popen.stdout.readline().decode().strip() + " " + agent.cookie + "\\n")
        sys.stdout.flush()
        time.sleep(99)
    """))
    outer = fleet.start([PY, str(middle)])
    words = read_line(outer.popen)
    agent, inner_cookie = int(words[1]), words[2]
    assert inner_cookie != outer.cookie
    assert pc.live_with_cookie(inner_cookie) == [agent]
    assert pc.live_with_cookie(outer.cookie) == sorted([outer.pid, agent])
    # The middle process dies first: its agent, orphaned, is out of any tree snapshot and
    # in a group of its own. Only the outer cookie, in its lineage, still finds it.
    os.kill(outer.pid, signal.SIGKILL)
    assert wait_until(lambda: not alive(outer.pid))
    assert pc.descendants(outer.pid) == []
    report = pc.stop(outer, **FAST)
    assert (report.how, report.returncode) == ("exited", -signal.SIGKILL)
    assert report.swept == [agent]
    assert report.survivors == [] and not alive(agent)


# --------------------------------------------------------------------- subreaper, reaping

@pytest.mark.timeout(60)
def test_a_subreaper_sees_escaped_helpers_and_reaps_only_what_is_not_tracked(
        fleet: Fleet, tmp_path: Path) -> None:
    # In a child process: a subreaper changes where every orphan of pytest would go.
    script = tmp_path / "subreaper.py"
    script.write_text(textwrap.dedent(f"""
        import json, os, subprocess, sys, time
        import psutil
        from actors.runtime import process_control as pc
        assert pc.become_subreaper()
        agent = pc.spawn([sys.executable, {str(FAKES / "forking_agent.py")!r}])
        _, agent_pid, helper = agent.popen.stdout.readline().split()
        helper = int(helper)
        seen = helper in [p.pid for p in psutil.Process().children(recursive=True)]
        tracked = pc.spawn([sys.executable, "-c", "import sys; sys.exit(3)"])
        plain = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(4)"])
        stray = subprocess.Popen([sys.executable, "-c", "pass"])
        def zombie(pid):
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        while not all(zombie(p) for p in (tracked.pid, plain.pid, stray.pid)):
            time.sleep(0.01)
        reaped = pc.reap_zombies(protect=[plain.pid])
        report = pc.stop(agent, stdin_grace=0.2, term_grace=0.2, kill_grace=2)
        rcs = [tracked.popen.wait(), plain.wait()]
        zombies = [c.pid for c in psutil.Process().children()
                   if c.status() == psutil.STATUS_ZOMBIE]
        print(json.dumps({{"seen": seen, "helper": helper, "swept": report.swept,
                          "reaped": reaped, "stray": stray.pid, "rcs": rcs,
                          "zombies": zombies}}), flush=True)
    """))
    runner = fleet.start([PY, str(script)])
    result = json.loads(" ".join(read_line(runner.popen, timeout=30)))
    assert result["seen"], "the escaped helper reparents to the subreaper"
    assert result["reaped"] == [result["stray"]]
    assert result["rcs"] == [3, 4]  # exit statuses not stolen

    assert result["swept"] == [result["helper"]]
    assert result["zombies"] == []


# ------------------------------------------------------------------ the parent vanishing

SUPERVISOR = """
import sys, time
from actors.runtime import process_control as pc
child_script, mode = sys.argv[1], sys.argv[2]
child = pc.spawn([sys.executable, child_script, mode], die_with_parent=(mode != "ppid"),
                 stderr=None)
sys.stdout.write(child.popen.stdout.readline().decode())
sys.stdout.flush()
while True:
    time.sleep(60)
"""

RIO_CHILD = """
import os, signal, sys, time
from actors.runtime import process_control as pc
mode = sys.argv[1]
if mode == "signal":
    pc.stop_children_on_signal()
    method = "signal"
elif mode == "lifeline":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # so only the watchdog can act
    method = pc.watchdog_from_parent().method
elif mode == "ppid":
    method = pc.watchdog_from_parent(poll_interval=0.05).method
else:
    method = pc.exit_with_parent().method
agent = pc.spawn([sys.executable, AGENT, "--helpers", "2"], stderr=None)
pids = agent.popen.stdout.readline().split()[1:]
print("ready", method, os.getpid(), *[p.decode() for p in pids], flush=True)
while True:
    time.sleep(60)
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("mode", "method"), [
    ("signal", "signal"),        # PDEATHSIG TERM -> handler stops the tree
    ("lifeline", "lifeline"),    # TERM ignored; the lifeline pipe reads EOF
    ("ppid", "ppid"),            # no PDEATHSIG, no lifeline: getppid() changes
    ("both", "lifeline"),        # exit_with_parent(): what Rio's children call
])
def test_when_the_supervisor_is_killed_its_children_and_their_agents_end(
        fleet: Fleet, tmp_path: Path, mode: str, method: str) -> None:
    supervisor = tmp_path / "supervisor.py"
    supervisor.write_text(SUPERVISOR)
    child = tmp_path / "rio_child.py"
    child.write_text(f"AGENT = {str(FAKES / 'stubborn_agent.py')!r}\n" + RIO_CHILD)
    spawned = fleet.start([PY, str(supervisor), str(child), mode])
    words = read_line(spawned.popen)
    assert words[:2] == ["ready", method]
    rio_child, agent, *helpers = (int(w) for w in words[2:])
    assert len(helpers) == 2
    tree = [rio_child, agent, *helpers]
    assert all(alive(p) for p in tree)

    os.kill(spawned.pid, signal.SIGKILL)
    spawned.popen.wait(timeout=10)

    assert wait_until(lambda: not any(alive(p) for p in tree), timeout=15), \
        f"still alive: {[p for p in tree if alive(p)]}"
    assert pc.live_with_cookie(spawned.cookie) == []


@pytest.mark.timeout(30)
def test_without_a_stdin_pipe_the_stdin_grace_is_not_waited(fleet: Fleet) -> None:
    spawned = fleet.start([PY, "-c", "import time; print('ready', flush=True); time.sleep(99)"],
                          stdin=pc.DEVNULL)
    read_line(spawned.popen)
    # Were the stdin grace waited, the test's own timeout would fail it long before.
    report = pc.stop(spawned, stdin_grace=3600.0, term_grace=5.0, kill_grace=2.0)
    assert report.how == "terminated"


@pytest.mark.timeout(30)
def test_a_child_reaped_by_its_owner_is_forgotten(fleet: Fleet) -> None:
    spawned = fleet.start([PY, "-c", "pass"])
    assert spawned in pc.live_spawned()
    assert spawned.popen.wait(timeout=10) == 0   # a monitor loop's poll()/wait()
    assert spawned not in pc.live_spawned()
    report = pc.stop(spawned, **FAST)            # still harmless afterwards
    assert (report.how, report.returncode, report.survivors) == ("exited", 0, [])


def _fork_child(body: Callable[[int], None]) -> pc.Spawned:
    """Fork a child in a session of its own that runs ``body(stdin_fd)`` then exits 0, adopted
    the way `rio FILE` adopts its forked window."""
    stdin_r, stdin_w = os.pipe()
    pid = os.fork()
    if pid == 0:   # pragma: no cover -- the child
        try:
            os.setsid()
            os.close(stdin_w)
            body(stdin_r)
        finally:
            os._exit(0)
    os.close(stdin_r)
    child = pc.ForkedChild(pid, ["forked-test-child"], os.fdopen(stdin_w, "wb"), None)
    return pc.adopt(child, cookie=pc.new_cookie(), argv=["forked-test-child"])


@pytest.mark.timeout(30)
def test_a_forked_child_adopted_is_stopped_like_a_spawned_one() -> None:
    def polite(stdin_fd: int) -> None:
        while os.read(stdin_fd, 1):
            pass

    def deaf(_stdin_fd: int) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:   # ends: pc.stop's SIGKILL, which the test checks
            time.sleep(1)

    first = _fork_child(polite)
    assert first.popen.poll() is None and first in pc.live_spawned()
    report = pc.stop(first, stdin_grace=5, term_grace=5, kill_grace=5)
    assert (report.how, report.returncode, report.survivors) == ("stdin_closed", 0, [])
    assert first not in pc.live_spawned()

    second = _fork_child(deaf)
    report = pc.stop(second, stdin_grace=0.2, term_grace=0.3, kill_grace=5)
    assert (report.how, report.returncode, report.survivors) == ("killed", -9, [])
    with pytest.raises(ProcessLookupError):
        os.kill(second.pid, 0)          # reaped: no zombie left behind


@pytest.mark.timeout(30)
def test_a_forked_childs_wait_times_out_and_then_sees_the_exit() -> None:
    spawned = _fork_child(lambda fd: time.sleep(0.5))
    with pytest.raises(subprocess.TimeoutExpired):
        spawned.popen.wait(0.05)
    assert spawned.popen.wait(10) == 0 and spawned.popen.returncode == 0
    pc.stop(spawned)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("die_with_parent", [True, False])
def test_a_child_does_not_inherit_an_ignored_sigint(fleet: Fleet, die_with_parent: bool) -> None:
    """Started by a runner that ignores SIGINT and SIGQUIT (a background job of a
    non-interactive shell, as CI runs it), Rio would hand that to every child — an agent's
    helpers, a Run command — which then cannot be interrupted: a child in a session of its own
    starts with both at their default action. The parent keeps ignoring them."""
    probe = ("import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN, "
             "signal.getsignal(signal.SIGQUIT) is signal.SIG_IGN)")
    before = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGQUIT)}
    try:
        spawned = fleet.start([PY, "-c", probe], die_with_parent=die_with_parent)
        words = read_line(spawned.popen)
        plain = subprocess.run([PY, "-c", probe], capture_output=True, text=True, timeout=10,
                               preexec_fn=pc.dies_with_this_process())
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    assert words == ["False", "False"]
    assert plain.stdout.split() == ["False", "False"]      # a test harness's child too


END_ADOPTED = textwrap.dedent("""
    import json, os, subprocess, sys, time
    from actors.runtime import process_control as pc
    pc.become_subreaper()
    ESCAPE = ("import os, sys, subprocess, time\\n"
              "if os.fork(): os._exit(0)\\n"
              "os.setsid()\\n"
              "if os.fork(): os._exit(0)\\n"
              "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\\n"
              "os.write(int(sys.argv[1]), f'{os.getpid()} {kid.pid}'.encode())\\n"
              "time.sleep(60)\\n")

    def escaped():
        r, w = os.pipe()
        subprocess.run([sys.executable, "-c", ESCAPE, str(w)], pass_fds=[w], env={})
        os.close(w)
        return [int(p) for p in os.read(r, 64).split()]

    stray, kept = escaped(), escaped()
    ended = pc.end_adopted(protect={kept[1]})     # a pid deep in the second tree
    alive = [os.path.exists(f"/proc/{p}") for p in kept]
    print(json.dumps({"stray": stray, "kept": kept, "ended": ended, "kept_alive": alive}))
    for pid in kept:
        os.kill(pid, 9)
""")


@pytest.mark.timeout(60)
def test_the_last_sweep_ends_what_escaped_without_a_cookie_and_spares_a_protected_tree() -> None:
    """A helper that cleared its environment, setsid and double-forked is adopted by the
    supervisor (a subreaper) and ended at its last step (``end_adopted``), its own children
    with it; a tree holding a protected pid — another Rio instance File → Open Folder
    started — is left alone. In a process of its own: the sweep ends *every* child."""
    done = subprocess.run([sys.executable, "-c", END_ADOPTED], capture_output=True, text=True,
                          timeout=45, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert sorted(out["ended"]) == sorted(out["stray"])
    assert out["kept_alive"] == [True, True]
    for pid in out["stray"]:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
