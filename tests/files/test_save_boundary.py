"""The project boundary holds at save time: an open file swapped for a symbolic link is refused.

Before the fix the save followed the link and overwrote the file outside the project (with force,
as "Keep Mine" does, and without force when the bytes matched), then failed with
``path.outside_root`` *after* dropping the journal and marking the buffer saved; ``buffer.list``
failed for every buffer from then on.
"""

import os

import pytest

from rio.protocol.errors import PathError, RioError
from rio.text.buffer_state import BufferFactory
from tests.buffer_ops import args
from tests.support import RioServer


@pytest.fixture
def swapped(tmp_path):
    """A buffer on proj/a.txt with unsaved edits, then a.txt swapped for a link to a file
    outside the project holding the same bytes (so the conflict check alone cannot catch it)."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("alpha\n")
    os.utime(outside, ns=(os.stat(root / "a.txt").st_atime_ns,
                          os.stat(root / "a.txt").st_mtime_ns))
    factory = BufferFactory(root, tmp_path / "journal")
    buf = factory.open(root / "a.txt")
    buf.handle("buffer.replace", args(start=0, end=0, text="mine "))
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(outside)
    return factory, buf, root, outside


@pytest.mark.parametrize("force", [False, True])
def test_a_file_swapped_for_a_link_out_is_not_written_and_stays_dirty(swapped, force):
    factory, buf, root, outside = swapped
    with pytest.raises(PathError) as info:
        buf.handle("buffer.save", args(force=force))
    assert info.value.kind in ("path.outside_root", "path.symlink_refused")
    assert info.value.next
    assert outside.read_text() == "alpha\n"
    assert (root / "a.txt").is_symlink()
    assert buf.document.dirty and buf.journal is not None
    buf.flush_journal()
    assert factory.journal_store.list() == [buf.id]


def test_a_swapped_buffer_is_listed_with_its_problem(swapped):
    _factory, buf, _root, _outside = swapped
    summary = buf.summary()     # used by buffer.list: raised path.outside_root before the fix
    assert summary["path"] == "a.txt" and summary["dirty"]
    assert summary["path_error"]["kind"] == "path.outside_root"


def test_a_link_inside_the_project_is_refused_too(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta\n")
    factory = BufferFactory(root, tmp_path / "journal")
    buf = factory.open(root / "a.txt")
    buf.handle("buffer.replace", args(start=0, end=0, text="x"))
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(root / "b.txt")
    with pytest.raises(PathError) as info:
        buf.handle("buffer.save", args(force=True))
    assert info.value.kind == "path.symlink_refused"
    assert (root / "b.txt").read_text() == "beta\n" and buf.document.dirty


def test_an_untouched_file_still_saves_and_keeps_no_journal(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    factory = BufferFactory(root, tmp_path / "journal")
    buf = factory.open(root / "a.txt")
    buf.handle("buffer.replace", args(start=0, end=0, text="x"))
    summary, _ = buf.handle("buffer.save", args())
    assert (root / "a.txt").read_text() == "xalpha\n"
    assert not summary["dirty"] and summary["path_error"] is None
    assert factory.journal_store.list() == []


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_through_the_core_the_save_is_refused_and_buffer_list_still_works(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("theirs\n")
    srv = RioServer(root, tmp_path / "base").start()
    try:
        a = srv.call("buffer.open", {"path": "a.txt"})
        srv.call("buffer.open", {"path": "b.txt"})
        srv.call("buffer.replace", {"buffer": a["buffer"], "start": 0, "end": 0, "text": "x"})
        (root / "a.txt").unlink()
        (root / "a.txt").symlink_to(outside)
        with pytest.raises(RioError) as info:
            srv.call("buffer.save", {"buffer": a["buffer"], "force": True})
        assert info.value.kind in ("path.outside_root", "path.symlink_refused")
        assert outside.read_text() == "theirs\n"
        listed = {b["path"]: b for b in srv.call("buffer.list")}
        assert set(listed) == {"a.txt", "b.txt"}
        assert listed["a.txt"]["dirty"] and listed["a.txt"]["path_error"]
        assert listed["b.txt"]["path_error"] is None
    finally:
        srv.stop()


def test_revert_after_a_swap_never_reads_the_file_outside(swapped):
    _factory, buf, _root, outside = swapped
    outside.write_text("secret outside the project\n")
    with pytest.raises(PathError) as info:
        buf.handle("buffer.revert", args())
    assert info.value.kind == "path.symlink_refused"
    assert "secret" not in buf.document.text() and buf.document.dirty


def test_the_conflict_check_does_not_hash_through_a_link(swapped):
    """The on-disk check of an open buffer sees a link, not the file it leads to."""
    _factory, buf, _root, _outside = swapped
    events = buf.check_disk()
    assert events and events[0][0] == "buffer.conflict"
