"""Closing a large document gives its memory back to the system (rio/memory.py): the core's
and the window's resident size fall back near where they were, instead of keeping the freed
chunks in the allocator's heap (before: the window kept +106 MB and the core +86 MB after a
100 MB file was closed)."""

from __future__ import annotations

import gc
from pathlib import Path

import psutil
import pytest

from rio.memory import LARGE, LargeFlow, give_back
from tests.desktop_support import InProcessApp
from tests.support import RioServer, wait_for

SIZE = 48 * 1024 * 1024     # large (over the window's 8 MiB big-file mode), quick to open


def _write_big(path: Path, size: int = SIZE) -> None:
    block = ("the quick brown fox jumps over the lazy dog %06d\n" % 1) * 4096
    with open(path, "w") as fh:
        written = 0
        while written < size:
            fh.write(block)
            written += len(block)


def test_a_flow_of_sizeable_messages_is_due_a_trim_once_large() -> None:
    assert LargeFlow().add(LARGE, 0.0)                   # one message alone can be large
    flow = LargeFlow()
    assert not flow.add(1000, 0.0)                       # small messages never count
    piece = LARGE // 4
    assert [flow.add(piece, t) for t in (1.0, 2.0, 3.0)] == [False, False, False]
    assert flow.add(piece, 4.0)                          # the fourth piece makes it large
    assert flow.add(piece, 5.0)                          # and each later one pushes the trim
    assert not flow.add(piece, 5.0 + LargeFlow.GAP + 1)  # after a gap: a new flow


def test_give_back_trims_on_glibc() -> None:
    assert give_back(collect=True) is True


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_core_gives_a_closed_large_buffer_back(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _write_big(root / "big.txt")
    srv = RioServer(root, tmp_path).start()
    try:
        core = psutil.Process(srv.pids()["core"])
        idle = core.memory_info().rss
        opened = srv.call("buffer.open", {"path": "big.txt"}, timeout=60)
        assert opened["length"] >= SIZE
        held = core.memory_info().rss
        assert held - idle > SIZE * 0.8          # the document is in the core's memory
        srv.call("buffer.close", {"buffer": opened["buffer"]}, timeout=30)
        assert wait_for(lambda: core.memory_info().rss - idle < SIZE * 0.3, 15), \
            (idle, held, core.memory_info().rss)
    finally:
        srv.stop()


@pytest.mark.slow
@pytest.mark.gui
@pytest.mark.timeout(120)
def test_the_window_gives_a_closed_large_tab_back(tk_root, tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _write_big(root / "big.txt")
    (root / "small.txt").write_text("small\n")
    srv = RioServer(root, tmp_path).start()
    for key in ("RIO_STATE_DIR", "RIO_CONFIG_DIR", "RIO_RUNTIME_DIR"):
        monkeypatch.setenv(key, srv.env[key])
    me = psutil.Process()
    desk = InProcessApp(tk_root, srv)
    try:
        desk.open(str(root / "small.txt"))
        gc.collect()
        give_back()
        before = me.memory_info().rss
        ed = desk.open(str(root / "big.txt"))
        assert ed.replica is not None and len(ed.replica.buffer) >= SIZE
        held = me.memory_info().rss
        assert held - before > SIZE * 0.8         # the window's replica of the document
        desk.app.close_editor(ed)
        del ed
        assert desk.pump(lambda: me.memory_info().rss - before < SIZE * 0.3, 20), \
            (before, held, me.memory_info().rss)
    finally:
        desk.close()
        srv.stop()
