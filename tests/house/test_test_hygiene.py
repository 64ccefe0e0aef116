"""The test suite cleans up after itself: no runtime folders or fixed-name files left in the
temp folder (issue 9); and it uses or touches nothing of the user's — Rio's state, config and
cache folders, the desktop's display, a SIGINT the runner ignores (issue 18;
tests/session_env.py)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests import support
from tests.support import REPO


def test_runtime_folders_handed_out_are_removed(tmp_path):
    env = support.rio_env(tmp_path)
    runtime = Path(env["RIO_RUNTIME_DIR"])
    (runtime / "inst").mkdir(parents=True)
    (runtime / "inst" / "instance.json").write_text("{}")
    assert runtime in support.RUNTIME_DIRS
    support.remove_runtime_dirs()
    assert not runtime.exists() and not support.RUNTIME_DIRS


def test_no_test_writes_fixed_names_into_the_temp_folder():
    """Files go under tmp_path; a fixed /tmp name is left behind and shared between runs."""
    fixed = re.compile(r"""(?:Path|open)\(\s*f?["']/tmp/""")
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if fixed.search(line) and ".exists()" not in line:   # looking is fine
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_helpers_are_imported_one_way():
    """``from tests.support import …``, never ``from support import …``: both work (pytest puts
    tests/ on sys.path), but they load the module twice, and the second copy's RUNTIME_DIRS
    is never cleaned up by conftest.py — its ``/tmp/rio-t-*`` folders were left behind."""
    helpers = {p.stem for p in (REPO / "tests").glob("*.py") if not p.stem.startswith("test_")}
    helpers |= {"fakes", "bench"}
    bare = re.compile(r"^\s*(?:from|import)\s+(" + "|".join(sorted(helpers)) + r")\b")
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if bare.match(line):
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_every_short_runtime_folder_is_removed():
    """A test that makes its own ``/tmp/rio-*`` folder (ipc paths must be short, so not under
    tmp_path) hands it to RUNTIME_DIRS or removes it itself."""
    makes = re.compile(r"""Path\(\s*["']/tmp["']\s*\)\s*/\s*f?["']rio-""")
    offenders = [str(path.relative_to(REPO)) for path in sorted((REPO / "tests").rglob("*.py"))
                 if path.name != Path(__file__).name and makes.search(text := path.read_text())
                 and "RUNTIME_DIRS" not in text and "rmtree" not in text]
    assert not offenders, offenders


# --- nothing of the user's is used or touched (tests/session_env.py; issue 18, 18–20) -----------

def test_rios_own_folders_point_into_the_sessions_trap():
    """Rio's state, config and cache folders are never the user's (~/.local/state/rio …)
    while the tests run: a test points them at its tmp_path, else they are the trap's."""
    from rio.config.instance import config_base, state_base
    from tests import session_env
    for name, sub in session_env.TRAPPED.items():
        assert Path(os.environ[name]) == session_env.TRAP / sub
    assert state_base().is_relative_to(session_env.TRAP)
    assert config_base().is_relative_to(session_env.TRAP)


def test_a_write_outside_the_tests_tmp_path_is_caught():
    """What tests/house/test_project_modules.py did on every run (a token file in the real
    ~/.local/state/rio): written into the trap, it is named, and conftest fails the test."""
    from rio.config.instance import project_state_dir
    from rio.mcp.entry import issue_token
    from tests import session_env
    # the trap first: a run without it (RIO_STATE_DIR unset) must not write the probe home
    assert project_state_dir(REPO).is_relative_to(session_env.TRAP)
    token = issue_token(REPO, "hygiene-probe")
    assert token.is_relative_to(session_env.TRAP)
    assert any(p.endswith("hygiene-probe.token") for p in session_env.trap_leftovers())
    session_env.clear_trap()          # caught: this test wrote there on purpose
    assert session_env.trap_leftovers() == []


def test_the_users_display_is_used_only_when_asked_for():
    from tests.session_env import given_display
    assert given_display({"DISPLAY": ":0"}) is None
    assert given_display({"DISPLAY": ":0", "RIO_TEST_DISPLAY": "0"}) is None
    assert given_display({"DISPLAY": ":0", "RIO_TEST_DISPLAY": "1"}) == ":0"
    assert given_display({"RIO_TEST_DISPLAY": "1"}) is None


@pytest.mark.gui
@pytest.mark.timeout(30)
def test_gui_tests_run_on_the_sessions_own_xvfb(display):
    """Not on a desktop user's screen: the display is an Xvfb this process started (unless
    RIO_TEST_DISPLAY=1 asked for $DISPLAY), and the user's is not in the environment."""
    from tests import session_env
    if session_env.given_display({**os.environ, "DISPLAY": session_env.USER_DISPLAY or ""}):
        pytest.skip("RIO_TEST_DISPLAY=1: the tests run on $DISPLAY, as asked")
    assert display != session_env.USER_DISPLAY
    ours = [p for p in psutil.Process().children() if p.name() == "Xvfb"]
    assert ours, "no Xvfb of this session"


def test_probe_children_start_with_sigint_at_its_default():
    """The probe the test below runs in a pytest that ignores SIGINT (in a normal run it
    checks the same of this one): a child a test starts can be interrupted."""
    out = subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal("
                          "signal.SIGINT) is signal.SIG_IGN, signal.getsignal("
                          "signal.SIGQUIT) is signal.SIG_IGN)"],
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_runner_that_ignores_sigint_does_not_hand_it_to_the_tests_children(tmp_path):
    """CI runs the suite as a background job of a non-interactive shell, which ignores
    SIGINT and SIGQUIT; every child inherited that, and the Ctrl+C tests
    (tests/cli/test_chat_cli.py, tests/acp/test_acp_session.py) timed out."""
    def ignoring() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    probe = f"{Path(__file__).resolve().relative_to(REPO)}::test_probe_children_start_with_sigint_at_its_default"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                           f"--basetemp={tmp_path / 'inner'}", probe],
                          cwd=REPO, capture_output=True, text=True, timeout=100,
                          preexec_fn=ignoring)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


@pytest.mark.slow
@pytest.mark.gui
@pytest.mark.timeout(120)
def test_a_desktop_users_display_is_left_alone(tmp_path):
    """With $DISPLAY set to a live display (here an Xvfb standing for a user's desktop), a
    session's GUI tests still run on an Xvfb of their own; RIO_TEST_DISPLAY=1 uses it."""
    from tests.session_env import start_xvfb
    user, name = start_xvfb()
    try:
        probe = f"{Path(__file__).resolve().relative_to(REPO)}::test_gui_tests_run_on_the_sessions_own_xvfb"
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-rs", probe]
        env = {**os.environ, "DISPLAY": name}
        env.pop("RIO_TEST_DISPLAY", None)
        private = subprocess.run([*argv, f"--basetemp={tmp_path / 'a'}"], cwd=REPO, env=env,
                                 capture_output=True, text=True, timeout=100)
        assert private.returncode == 0 and "1 passed" in private.stdout, private.stdout[-2000:]
        given = subprocess.run([*argv, f"--basetemp={tmp_path / 'b'}"], cwd=REPO,
                               env={**env, "RIO_TEST_DISPLAY": "1"}, capture_output=True,
                               text=True, timeout=100)
        assert given.returncode == 0 and "1 skipped" in given.stdout, given.stdout[-2000:]
    finally:
        user.terminate()
        user.wait(10)
