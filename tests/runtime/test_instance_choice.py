"""Which instance a client command talks to (issue 18, point 13): the one named, else the one
whose project holds the current folder. In a folder no instance serves, `rio call` and `rio
stop` refuse — naming the instances that run elsewhere — instead of acting on another
project's instance; `rio status`, `rio events` and `rio health` (they only look) may take the
only one running, and say on stderr which answered."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rio.cli import main as cli
from rio.config.instance import InstanceInfo, InstancePaths, find_instance
from rio.protocol.errors import BusError
from tests.support import rio_env


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> tuple[Path, Path, InstanceInfo]:
    """One instance (this test process stands in for its supervisor: a live pid) on the
    project ``proj``; the current folder is ``other``, which no instance serves."""
    # a short runtime folder (ipc paths ≤ 107 bytes), removed when the session ends
    monkeypatch.setenv("RIO_RUNTIME_DIR", rio_env(tmp_path)["RIO_RUNTIME_DIR"])
    project, other = tmp_path / "proj", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    paths = InstancePaths.for_name("proj-abc123")
    paths.create()
    info = InstanceInfo("proj-abc123", str(project), os.getpid(), paths.requests_endpoint,
                        paths.events_endpoint, time.time())
    paths.write_info(info)
    monkeypatch.chdir(other)
    return project, other, info


def test_a_folder_no_instance_serves_is_refused_naming_the_others(elsewhere):
    project, other, info = elsewhere
    with pytest.raises(BusError) as err:
        find_instance(None, other)
    assert err.value.kind == "bus.unreachable"
    assert str(other) in err.value.message and "proj-abc123" in err.value.message
    assert str(project) in err.value.message and "--instance" in err.value.next
    # its own folder, a folder inside it and the name find it as before
    assert find_instance(None, project) == info
    (project / "src").mkdir()
    assert find_instance(None, project / "src") == info
    assert find_instance("proj-abc123", other) == info
    # a command that only looks may take the only one running
    assert find_instance(None, other, elsewhere=True) == info


def test_rio_call_and_stop_in_another_folder_refuse_before_sending_anything(elsewhere, capsys):
    for argv in (["call", "buffer.list"], ["stop"]):
        assert cli.main(argv) == cli.EXIT_UNREACHABLE
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0, err                   # one line, as every rio error
        assert err.startswith("rio: bus.unreachable: No Rio instance runs on ")
        assert "proj-abc123" in err and "--instance" in err


def test_rio_status_in_another_folder_says_which_instance_answered(elsewhere, capsys):
    project, other, info = elsewhere
    # Nothing listens on the instance's socket here: the command ends unreachable, but it
    # has said first, on stderr, which instance it went to and that this folder has none.
    code = cli.main(["status", "--timeout", "0.3"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_UNREACHABLE
    assert f"rio: no instance runs on {other}; instance proj-abc123 (on {project}) answered" \
        in err
