"""Versions and request ids across a core restart (ADR-0020), without processes.

A "crash" here is what a killed core leaves behind: the journal folder as it is, read by a new
:class:`BufferFactory` on the same project.
"""

import pytest

import rio.text.journal as journal_mod
from rio.protocol.errors import DocumentError
from rio.text.buffer_state import EPOCH_BITS, BufferFactory
from rio.text.document import Change
from rio.text.journal import JournalWriter, MemoryJournalStore, recover
from tests.buffer_ops import args


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    return root


def crash(project, tmp_path):
    """A new core on the same project and journal folder; its one recovered buffer."""
    report = BufferFactory(project, tmp_path / "journal").recover_all()
    assert len(report.buffers) == 1, report.failures
    return report.buffers[0]


def test_a_pre_crash_base_is_refused_never_transformed(project, tmp_path):
    buf = BufferFactory(project, tmp_path / "journal").open(project / "a.txt")
    buf.handle("buffer.replace", args(start=0, end=3, text="ONE"))            # v1
    buf.handle("buffer.replace", args(start=4, end=7, text="TWO"))            # v2
    again = crash(project, tmp_path)
    assert again.document.text() == "ONE\nTWO\nthree\n"
    summary = again.summary()
    assert summary["epoch"] == 1 and summary["version"] == (1 << EPOCH_BITS) + 1
    # "two" at version 1 was 4..7; transformed over the recovery step it would hit other text.
    with pytest.raises(DocumentError) as info:
        again.handle("buffer.replace", args(start=4, end=7, text="2", base_version=1), "c 9")
    assert info.value.kind == "buffer.stale_base"
    assert "buffer.text" in info.value.next
    with pytest.raises(DocumentError) as info:
        again.handle("buffer.apply", args(edits=[[0, 1, "x"]], base_version=2))
    assert info.value.kind == "buffer.stale_base"
    assert again.document.text() == "ONE\nTWO\nthree\n"
    # The version the recovered buffer reports is a good base.
    result, _ = again.handle("buffer.replace",
                             args(start=8, end=13, text="3", base_version=summary["version"]))
    assert result["version"] == summary["version"] + 1
    assert again.document.text() == "ONE\nTWO\n3\n"


def test_every_recovery_starts_a_new_epoch(project, tmp_path):
    buf = BufferFactory(project, tmp_path / "journal").open(project / "a.txt")
    buf.handle("buffer.replace", args(start=0, end=0, text="a"))
    first = crash(project, tmp_path)
    first.handle("buffer.replace", args(start=0, end=0, text="b"))
    seen = first.document.version
    second = crash(project, tmp_path)
    assert second.summary()["epoch"] == 2 and second.document.version > seen
    with pytest.raises(DocumentError) as info:
        second.handle("buffer.replace", args(start=0, end=0, text="c", base_version=seen))
    assert info.value.kind == "buffer.stale_base"


def test_a_request_resent_after_a_crash_is_answered_not_applied_again(project, tmp_path):
    buf = BufferFactory(project, tmp_path / "journal").open(project / "a.txt")
    buf.handle("buffer.replace", args(start=0, end=0, text=">", base_version=0), "ui:1 r1")
    buf.handle("buffer.undo", args(), "ui:1 r2")
    buf.handle("buffer.redo", args(), "ui:1 r3")
    assert buf.document.text() == ">one\ntwo\nthree\n"
    again = crash(project, tmp_path)
    # The same ids again: dedupe comes before the epoch check, so the old base is no refusal.
    for rid, op, extra in (("ui:1 r1", "buffer.replace", dict(start=0, end=0, text=">",
                                                               base_version=0)),
                           ("ui:1 r2", "buffer.undo", {}), ("ui:1 r3", "buffer.redo", {})):
        result, events = again.handle(op, args(**extra), rid)
        assert result == {"version": again.document.version, "already_applied": True}
        assert events == []
    assert again.document.text() == ">one\ntwo\nthree\n"
    # Another client's id is a new request (and its pre-crash base is stale).
    with pytest.raises(DocumentError):
        again.handle("buffer.replace", args(start=0, end=0, text=">", base_version=0), "ui:2 r1")


def test_request_ids_survive_a_second_crash_and_compaction(project, tmp_path, monkeypatch):
    monkeypatch.setattr(journal_mod, "COMPACT_FLOOR", 0)   # compact on (almost) every edit
    buf = BufferFactory(project, tmp_path / "journal").open(project / "a.txt")
    for i in range(30):
        buf.handle("buffer.replace", args(start=0, end=0, text="x" * 5), f"c r{i}")
    first = crash(project, tmp_path)
    first.handle("buffer.replace", args(start=0, end=0, text="y"), "c s1")
    second = crash(project, tmp_path)
    text = second.document.text()
    assert text.count("x") == 150 and text.startswith("y")
    for rid in ("c r0", "c r29", "c s1"):
        assert second.handle("buffer.replace", args(start=0, end=0, text="z"),
                             rid)[0]["already_applied"]
    assert second.document.text() == text


def test_the_same_request_in_one_epoch_gets_its_first_result(project, tmp_path):
    buf = BufferFactory(project, tmp_path / "journal").open(project / "a.txt")
    first, events = buf.handle("buffer.replace", args(start=0, end=0, text="!"), "c 1")
    again, none = buf.handle("buffer.replace", args(start=0, end=0, text="!"), "c 1")
    assert again == first and events and none == []
    assert buf.document.text().count("!") == 1


def test_a_turn_begun_before_a_crash_does_not_swallow_the_recovery_step(project, tmp_path):
    buf = BufferFactory(project, tmp_path / "journal").open(project / "a.txt")
    buf.handle("buffer.replace", args(start=0, end=0, text="a", label="A"))
    again = crash(project, tmp_path)
    again.handle("buffer.replace", args(start=0, end=0, text="agent ", label="Agent edit"))
    again.handle("buffer.merge_undo", args(since_version=1, label="Agent: hi"))
    again.handle("buffer.undo", args())
    assert again.document.text() == "aone\ntwo\nthree\n"   # the recovered text is still there
    assert again.summary()["undo_label"] == "Recovered unsaved changes"


def test_journal_records_carry_request_ids_and_old_records_still_replay():
    store = MemoryJournalStore()
    writer = JournalWriter(store, "j", {"buffer": "b"}, "abc", base_version=0)
    writer.append(Change(1, 0, 0, "x", "", "o", "l"))                      # an old-style record
    writer.append(Change(2, 0, 1, "y", "x", "o", "l"), request="c r7")
    rec = recover(store.read("j"))
    assert rec.text == "yabc" and rec.version == 2 and rec.requests == ("c r7",)
    assert not rec.dropped_tail
