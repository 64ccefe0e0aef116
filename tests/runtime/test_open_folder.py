"""File → Open Folder: the supervisor starts `rio FOLDER` (system.open_folder), an instance of
its own that lives on when the one that opened it stops; a remote caller is refused."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import psutil
import pytest

from actors.runtime import process_control
from actors.runtime.open_folder import TIES, instance_env, open_folder
from rio.config.instance import default_name
from rio.protocol.errors import BusError, PathError
from tests.desktop_support import RioDesktop
from tests.support import RioServer, wait_for, wait_gone


def test_the_new_instance_carries_none_of_this_ones_ties():
    environ = {process_control.COOKIE_ENV: "c1", process_control.LINEAGE_ENV: "c0",
               process_control.LIFELINE_ENV: "1:5", process_control.PARENT_ENV: "1",
               "RIO_INSTANCE": "first", "RIO_RUNTIME_DIR": "/tmp/r", "HOME": "/home/u",
               "DISPLAY": ":0"}
    env = instance_env(environ, ":7")
    assert not any(tie in env for tie in TIES)
    assert env == {"RIO_RUNTIME_DIR": "/tmp/r", "HOME": "/home/u", "DISPLAY": ":7"}
    assert instance_env(environ, None)["DISPLAY"] == ":0"


def test_refusals_name_the_next_step(tmp_path):
    (tmp_path / "f.txt").write_text("")
    cases = [({"path": str(tmp_path)}, True, {"DISPLAY": ":0"}, "bus.remote_not_allowed"),
             ({"path": "relative/dir"}, False, {"DISPLAY": ":0"}, "path.invalid"),
             ({"path": str(tmp_path / "f.txt")}, False, {"DISPLAY": ":0"},
              "path.not_a_directory"),
             ({"path": str(tmp_path)}, False, {}, "bus.no_display")]
    for args, remote, environ, kind in cases:
        with pytest.raises((BusError, PathError)) as err:
            open_folder(args, remote=remote, environ=environ)
        assert err.value.kind == kind and err.value.next


def _instance(runtime_base: Path, root: Path) -> dict | None:
    info = runtime_base / default_name(root.resolve()) / "instance.json"
    try:
        return json.loads(info.read_text())
    except (OSError, ValueError):
        return None


@pytest.mark.slow
@pytest.mark.gui
@pytest.mark.timeout(150)
def test_open_folder_starts_an_instance_that_outlives_the_first_window(tmp_path, display):
    first_root = tmp_path / "first"
    first_root.mkdir()
    second_root = tmp_path / "second"
    second_root.mkdir()
    (second_root / "b.txt").write_text("b\n")
    first = RioDesktop(first_root, tmp_path / "base", display).start()
    runtime_base = first.runtime.parent
    second_pid: int | None = None
    try:
        first.call("ui.dialog", {"name": "open_folder"})
        first.call("ui.dialog_answer", {"name": "open_folder", "button": "Open",
                                        "fields": {"folder": str(second_root)}})
        assert wait_for(lambda: _instance(runtime_base, second_root) is not None, 40, 0.1), \
            "the second instance never started"
        second_pid = int(_instance(runtime_base, second_root)["pid"])
        second = psutil.Process(second_pid)
        assert process_control.COOKIE_ENV not in second.environ()
        # The first window's instance stops; the second is nobody's child in Rio's sense.
        theirs = {p.pid for p in [second, *second.children(recursive=True)]}
        first.tree = lambda: [p for p in RioServer.tree(first) if p.pid not in theirs]
        first.stop()
        assert second.is_running() and second.status() != psutil.STATUS_ZOMBIE
        assert _instance(runtime_base, second_root) is not None
    finally:
        if first.proc is not None:
            first.stop()
        if second_pid is not None and psutil.pid_exists(second_pid):
            proc = psutil.Process(second_pid)
            family = [proc, *proc.children(recursive=True)]
            proc.send_signal(signal.SIGTERM)
            left = wait_gone(family, 30)
            for p in left:
                p.kill()
            assert not left, f"the second instance left {left}"
