"""Temp files of killed saves are swept at start (issue 22, point 7), and a core stuck in one
save is still caught by its liveness check (ADR-0040 keeps what ADR-0013 wants of the ping).

Before: each kill -9 during a 50 MB save left a 50 MB ``.name.rio-<hex>.tmp`` in the project,
never cleaned.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from rio.files.temp_sweep import is_save_temp, sweep
from rio.protocol.errors import RioError
from tests.support import RioServer, rio_env, wait_for

TEMP = ".big.txt.rio-0123456789ab.tmp"


def _old(path: Path, age: float = 3600) -> Path:
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_only_rio_save_temp_names_match() -> None:
    assert is_save_temp(TEMP)
    assert is_save_temp(".a b.rio-ffffffffffff.tmp")
    for name in ("big.txt.rio-0123456789ab.tmp", ".big.txt.rio-0123456789a.tmp",
                 ".big.txt.rio-0123456789AB.tmp", ".big.txt.rio-0123456789ab.tmp.bak",
                 ".big.txt-0123456789ab.tmp", ".x.tmp", "notes.tmp"):
        assert not is_save_temp(name), name


def test_the_sweep_removes_abandoned_ones_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    gone = [tmp_path / TEMP, tmp_path / "sub" / "deep" / ".a.py.rio-aaaaaaaaaaaa.tmp"]
    for path in gone:
        path.write_bytes(b"x" * 1000)
        _old(path)
    kept = {
        "user's file": tmp_path / "notes.tmp",
        "young": tmp_path / ".young.rio-bbbbbbbbbbbb.tmp",
    }
    kept["user's file"].write_text("mine")
    _old(kept["user's file"])
    kept["young"].write_text("being written")
    # a link with the pattern's name is never followed nor removed
    target = tmp_path / "target.txt"
    target.write_text("keep")
    link = tmp_path / ".link.rio-cccccccccccc.tmp"
    link.symlink_to(target)
    # one a save holds (another Rio saving now): locked, so left alone however old
    held = tmp_path / ".held.rio-dddddddddddd.tmp"
    held.write_text("in progress")
    _old(held)
    fd = os.open(held, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        result = sweep(tmp_path, min_age_s=30)
    finally:
        os.close(fd)
    assert sorted(result.removed) == sorted(str(p.relative_to(tmp_path)) for p in gone)
    assert result.bytes == 2000
    assert all(not p.exists() for p in gone)
    assert all(p.exists() for p in kept.values())
    assert link.is_symlink() and target.read_text() == "keep" and held.exists()
    assert sorted(result.left) == sorted([".young.rio-bbbbbbbbbbbb.tmp",
                                          ".held.rio-dddddddddddd.tmp"])
    # once the save is over (its lock gone), the next sweep takes it
    assert sweep(tmp_path, min_age_s=30).removed == [".held.rio-dddddddddddd.tmp"]


def test_a_save_holds_its_temp_file_locked_while_it_writes(tmp_path: Path) -> None:
    from rio.files.files import OsFilePort
    seen: list[bool] = []

    def chunks():
        yield b"first "
        temp = next(p for p in tmp_path.iterdir() if is_save_temp(p.name))
        fd = os.open(temp, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append(False)
        except BlockingIOError:
            seen.append(True)
        finally:
            os.close(fd)
        yield b"second"

    OsFilePort().write_atomic(tmp_path / "f.txt", chunks())
    assert seen == [True]
    assert (tmp_path / "f.txt").read_bytes() == b"first second"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_hung_save_is_caught_and_its_temp_file_swept_after_the_restart(tmp_path: Path
                                                                           ) -> None:
    """A 50 MB save that hangs part-way (a stuck disk): the worker serving it is busy past
    RIO_HUNG_AFTER_S, so the core misses its pings and is restarted — its unsaved edit comes
    back from the journal — and the restarted core removes the 50 MB temp file the hung save
    left in the project."""
    root = tmp_path / "proj"
    root.mkdir()
    big = root / "big.txt"
    big.write_bytes(b"0123456789abcdef\n" * (50_000_000 // 17))
    env = rio_env(tmp_path)
    env.update({"RIO_HUNG_AFTER_S": "2", "RIO_TEMP_MIN_AGE_S": "1"})
    server = RioServer(root, tmp_path, env=env, extra_args=["--fault-injection"]).start()
    try:
        opened = server.call("buffer.open", {"path": "big.txt"}, timeout=60)
        server.call("buffer.replace", {"buffer": opened["buffer"], "start": 0, "end": 0,
                                       "text": "unsaved\n"}, timeout=30)
        old_pid = server.pids()["core"]
        server.call("system.fault", {"fault": "save_fail", "params": {
            "errno": "EIO", "after_bytes": 30_000_000, "hang_s": 3600}})
        conn = server.connect("saver")
        conn.request("buffer.save", {"buffer": opened["buffer"]}, lambda reply: None,
                     timeout=60)
        assert wait_for(lambda: _temp(root) is not None, 30)
        temp = _temp(root)
        assert temp is not None
        assert wait_for(lambda: temp.stat().st_size >= 20_000_000, 30)
        # pings go unanswered once the save is stuck for 2 s: the supervisor restarts the core
        assert wait_for(lambda: server.pids().get("core") not in (None, old_pid), 60)
        core = next(p for p in server.call("system.status")["processes"]
                    if p["name"] == "core")
        assert core["last_exit"].startswith("hung"), core
        conn.close()
        # the edit is back, the file untouched, and the hung save's temp file swept
        listed = wait_for(lambda: any(b.get("recovered") for b in _buffers(server)), 60)
        assert listed
        assert big.stat().st_size == 50_000_000 // 17 * 17
        assert wait_for(lambda: not temp.exists(), 30), "the temp file was not swept"
        assert not any(is_save_temp(p.name) for p in root.iterdir())
    finally:
        server.stop()


def _buffers(server: RioServer) -> list[dict]:
    try:
        return server.call("buffer.list", timeout=10)
    except RioError:
        return []


def _temp(root: Path) -> Path | None:
    return next((p for p in root.iterdir() if is_save_temp(p.name)), None)
