"""The buffer ops as the core runs them, without any actor or socket."""


import pytest

import rio.text.buffer_state as bs
from rio.protocol.errors import DocumentError, FileError, PathError
from rio.text.buffer_state import BufferFactory
from tests.buffer_ops import args


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_bytes(b"alpha\r\nbeta\r\n")
    return root


@pytest.fixture
def factory(project, tmp_path):
    return BufferFactory(project, tmp_path / "journal")


def test_replace_emits_a_change_event_and_undo_returns_to_clean(factory, project):
    buf = factory.open(project / "a.txt")
    result, events = buf.handle("buffer.replace", args(start=0, end=5, text="ALPHA"))
    assert result == {"version": 1, "start": 0, "end": 5}
    topic, data = events[0]
    assert topic == "buffer.changed" and data["text"] == "ALPHA" and data["kind"] == "edit"
    assert buf.summary()["dirty"]
    result, events = buf.handle("buffer.undo", args())
    assert [c["kind"] for c in result["changes"]] == ["undo"]
    assert not buf.summary()["dirty"]


def test_apply_is_one_undo_step(factory, project):
    buf = factory.open(project / "a.txt")
    buf.handle("buffer.apply", args(edits=[[0, 1, "A"], [6, 7, "B"]], label="Replace All"))
    assert buf.document.text() == "Alpha\nBeta\n"
    assert buf.summary()["undo_label"] == "Replace All"
    buf.handle("buffer.undo", args())
    assert buf.document.text() == "alpha\nbeta\n"


def test_save_keeps_crlf_and_save_as_changes_format(factory, project):
    buf = factory.open(project / "a.txt")
    buf.handle("buffer.replace", args(start=0, end=0, text=">"))
    summary, events = buf.handle("buffer.save", args())
    assert (project / "a.txt").read_bytes() == b">alpha\r\nbeta\r\n"
    assert events[0][0] == "buffer.saved" and not summary["dirty"]
    buf.handle("buffer.save", args(path="b.txt", newline="lf", encoding="utf-16-le"))
    data = (project / "b.txt").read_bytes()
    assert data.startswith(b"\xff\xfe") and data.decode("utf-16") == ">alpha\nbeta\n"
    assert buf.summary()["path"] == "b.txt"


def test_save_outside_the_project_is_refused(factory, project):
    buf = factory.new("x")
    with pytest.raises(PathError):
        buf.handle("buffer.save", args(path="../evil.txt"))
    with pytest.raises(DocumentError) as info:
        buf.handle("buffer.save", args())
    assert info.value.kind == "buffer.untitled"


def test_conflict_is_reported_once_and_never_overwritten(factory, project):
    buf = factory.open(project / "a.txt")
    buf.handle("buffer.replace", args(start=0, end=0, text="mine "))
    (project / "a.txt").write_text("theirs, longer than before\n")
    events = buf.check_disk()
    assert events and events[0][0] == "buffer.conflict"
    assert buf.check_disk() == []
    with pytest.raises(FileError) as info:
        buf.handle("buffer.save", args())
    assert info.value.kind == "file.conflict"
    assert (project / "a.txt").read_text() == "theirs, longer than before\n"
    buf.handle("buffer.revert", args())
    assert buf.document.text() == "theirs, longer than before\n" and not buf.document.dirty
    buf.handle("buffer.undo", args())       # the reload is undoable
    assert buf.document.text().startswith("mine alpha")


def test_close_refuses_unsaved_unless_discard(factory, project, tmp_path):
    buf = factory.open(project / "a.txt")
    buf.handle("buffer.replace", args(start=0, end=0, text="x"))
    with pytest.raises(DocumentError) as info:
        buf.handle("buffer.close", args())
    assert info.value.kind == "buffer.dirty" and "discard" in info.value.next
    buf.handle("buffer.close", args(discard=True))
    assert factory.journal_store.list() == []


def test_crash_recovery_brings_back_file_and_untitled_buffers(project, tmp_path):
    first = BufferFactory(project, tmp_path / "journal")
    buf = first.open(project / "a.txt")
    for i in range(5):
        buf.handle("buffer.replace", args(start=0, end=0, text=f"{i}"))
    scratch = first.new("draft")
    scratch.handle("buffer.replace", args(start=5, end=5, text="!"))
    # the process dies here: no save, no close; a new core starts on the same project
    second = BufferFactory(project, tmp_path / "journal")
    report = second.recover_all()
    texts = sorted(b.document.text() for b in report.buffers)
    assert texts == ["43210alpha\nbeta\n", "draft!"]
    assert all(b.recovered and b.document.dirty for b in report.buffers)
    recovered = next(b for b in report.buffers if b.path is not None)
    recovered.handle("buffer.undo", args())     # one step back to the file on disk
    assert recovered.document.text() == "alpha\nbeta\n"
    assert report.to_wire()["count"] == 2


def test_big_file_journal_keeps_a_fingerprint_and_refuses_a_changed_file(project, tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr(bs, "JOURNAL_BASE_TEXT_LIMIT", 4)
    first = BufferFactory(project, tmp_path / "journal")
    buf = first.open(project / "a.txt")
    buf.handle("buffer.replace", args(start=0, end=0, text="x"))
    assert BufferFactory(project, tmp_path / "journal").recover_all().buffers[0].document.text() \
        == "xalpha\nbeta\n"
    (project / "a.txt").write_text("changed on disk\n")
    report = BufferFactory(project, tmp_path / "journal").recover_all()
    assert report.buffers == ()
    assert report.failures[0]["kind"] == "file.conflict"
    assert "journal" in report.failures[0]["message"]


def test_text_and_lines_ranges(factory, project):
    buf = factory.open(project / "a.txt")
    assert buf.handle("buffer.text", args(start=6, end=10))[0]["text"] == "beta"
    assert buf.handle("buffer.lines", args(first=1, last=9))[0]["lines"] == ["beta", ""]
    with pytest.raises(DocumentError):
        buf.handle("buffer.text", args(start=5, end=500))
