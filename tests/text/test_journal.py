"""The journal: round trip, torn tails, corruption, compaction, discard, permissions, crashes."""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rio.protocol.errors import FileError
from rio.text.document import Document
from rio.text.journal import (
    MAGIC,
    JournalWriter,
    MemoryJournalStore,
    OsJournalStore,
    encode_record,
    keeps_base_text,
    peek_header,
    recover,
    same_content,
)

HEADER = {"buffer": "b1", "path": "src/a.py", "format": {"encoding": "utf-8", "newline": "lf"},
          "fingerprint": {"size": 5, "mtime_ns": 123, "sha256": "ab"}}


def edit_session(store, name="b1", base="hello", header=HEADER, keep_base=True):
    """A document whose every change goes to a journal, like the document actor does."""
    doc = Document(base)
    writer = JournalWriter(store, name, header, base if keep_base else None)
    return doc, writer


def do(doc, writer, start, end, text):
    change = doc.replace(start, end, text)
    writer.append(change)
    return change


def test_round_trip_recovers_text_version_and_header():
    store = MemoryJournalStore()
    doc, writer = edit_session(store)
    do(doc, writer, 5, 5, " world")
    do(doc, writer, 0, 1, "J")
    for change in doc.undo():
        writer.append(change)
    writer.flush()
    got = recover(store.read("b1"))
    assert got.text == doc.text() == "hello world"
    assert got.version == doc.version == 3
    assert got.header == HEADER and not got.dropped_tail and got.replayed == 3


def test_untitled_unicode_round_trip():
    store = MemoryJournalStore()
    doc, writer = edit_session(store, header={"buffer": "u1", "path": None}, base="")
    do(doc, writer, 0, 0, "😀 naïve\n中文")
    assert recover(store.read("b1")).text == "😀 naïve\n中文"


def full_journal() -> tuple[bytes, list[tuple[int, str]]]:
    """A journal and, for each record boundary, (offset, text recovered up to there)."""
    store = MemoryJournalStore()
    doc, writer = edit_session(store, base="abc")
    boundaries = [(len(store.read("b1")), doc.text())]
    for start, end, text in [(3, 3, "d"), (0, 1, "😀"), (1, 3, ""), (0, 0, "x\ny"), (2, 4, "Z")]:
        do(doc, writer, start, end, text)
        boundaries.append((len(store.read("b1")), doc.text()))
    return store.read("b1"), boundaries


def test_torn_tail_at_every_byte_recovers_the_prefix_exactly():
    data, boundaries = full_journal()
    header_end = boundaries[0][0]
    for cut in range(len(data) + 1):
        if cut < header_end:
            with pytest.raises(FileError) as caught:
                recover(data[:cut])
            assert caught.value.kind == "file.journal_unreadable"
            continue
        got = recover(data[:cut])
        complete = [(off, text) for off, text in boundaries if off <= cut]
        offset, expected = complete[-1]
        assert got.text == expected
        assert got.version == len(complete) - 1
        assert got.dropped_tail == (cut != offset)


def test_flipped_byte_is_caught_by_the_crc():
    data, boundaries = full_journal()
    second_change = boundaries[1][0]
    corrupt = bytearray(data)
    corrupt[second_change + 10] ^= 0xFF          # inside the second change's body
    got = recover(bytes(corrupt))
    assert got.text == boundaries[1][1] and got.version == 1 and got.dropped_tail


def test_a_record_out_of_order_is_not_replayed():
    data, boundaries = full_journal()
    bad = data + encode_record([0, 0, "late", 99])
    got = recover(bad)
    assert got.text == boundaries[-1][1] and got.dropped_tail


@given(st.binary(max_size=64))
@settings(max_examples=200, deadline=None)
def test_garbage_after_the_journal_never_changes_what_is_recovered(junk):
    data, boundaries = full_journal()
    got = recover(data + junk)
    assert got.text == boundaries[-1][1]
    assert got.dropped_tail == bool(junk)


def test_garbage_is_not_a_journal():
    with pytest.raises(FileError) as caught:
        recover(b"not a journal at all", location="/state/journals/b1")
    assert caught.value.kind == "file.journal_unreadable"
    assert "/state/journals/b1" in caught.value.next


def test_compaction_rewrites_a_snapshot():
    store = MemoryJournalStore()
    doc, writer = edit_session(store, base="x")
    for i in range(200):
        do(doc, writer, 0, len(doc), f"text {i}")
    before = len(store.read("b1"))
    writer.compact(doc.text(), doc.version)
    assert len(store.read("b1")) < before / 10
    do(doc, writer, 0, 0, ">")
    got = recover(store.read("b1"))
    assert got.text == ">text 199" and got.version == 201 and got.replayed == 1


def test_should_compact_once_changes_outgrow_the_text(monkeypatch):
    import rio.text.journal as journal
    monkeypatch.setattr(journal, "COMPACT_FLOOR", 100)
    store = MemoryJournalStore()
    doc, writer = edit_session(store, base="x")
    assert not writer.should_compact(len(doc))
    for i in range(20):
        do(doc, writer, 0, len(doc), f"text {i}")
    assert writer.should_compact(len(doc))
    writer.compact(doc.text(), doc.version)
    assert not writer.should_compact(len(doc))


def test_big_file_keeps_only_a_fingerprint_and_reads_the_base():
    assert keeps_base_text(None, 10**9) and keeps_base_text("a", 16 * 1024 * 1024)
    assert not keeps_base_text("a", 16 * 1024 * 1024 + 1)
    store = MemoryJournalStore()
    doc, writer = edit_session(store, keep_base=False)
    do(doc, writer, 0, 0, ">")
    assert b"hello" not in store.read("b1")
    got = recover(store.read("b1"), read_base=lambda: ("hello", dict(HEADER["fingerprint"])))
    assert got.text == ">hello"


def test_changed_file_under_a_fingerprint_journal_is_a_conflict():
    store = MemoryJournalStore()
    doc, writer = edit_session(store, keep_base=False)
    do(doc, writer, 0, 0, ">")
    with pytest.raises(FileError) as caught:
        recover(store.read("b1"), read_base=lambda: ("HELLO", {"size": 5, "mtime_ns": 999}),
                location="/state/journals/b1")
    assert caught.value.kind == "file.conflict"
    assert "/state/journals/b1" in caught.value.message
    assert store.read("b1")                                  # the journal is still there
    with pytest.raises(FileError) as caught:
        recover(store.read("b1"))
    assert caught.value.kind == "file.journal_needs_base"


def test_touched_but_unchanged_file_still_replays():
    store = MemoryJournalStore()
    doc, writer = edit_session(store, keep_base=False)
    do(doc, writer, 0, 0, ">")
    touched = dict(HEADER["fingerprint"], mtime_ns=456)
    assert recover(store.read("b1"), read_base=lambda: ("hello", touched)).text == ">hello"
    assert not same_content({"size": 5, "sha256": "ab"}, {"size": 5, "sha256": "cd"})
    assert not same_content({"size": 5, "mtime_ns": 1}, {"size": 5, "mtime_ns": 2})
    assert same_content(None, None)


def test_peek_header_gives_the_callers_header_without_replaying():
    store = MemoryJournalStore()
    doc, writer = edit_session(store, keep_base=False)
    do(doc, writer, 0, 0, ">")
    assert peek_header(store.read("b1")) == HEADER
    assert peek_header(b"RIOJ") == {} and peek_header(b"garbage") == {}


def test_crash_keeps_exactly_what_was_flushed():
    store = MemoryJournalStore()
    doc, writer = edit_session(store)
    do(doc, writer, 5, 5, "!")
    writer.flush()
    flushed = doc.text()
    do(doc, writer, 0, 0, "lost ")
    store.crash()
    got = recover(store.read("b1"))
    assert got.text == flushed and not got.dropped_tail


def test_discard_removes_the_journal():
    store = MemoryJournalStore()
    doc, writer = edit_session(store)
    do(doc, writer, 0, 0, "x")
    writer.discard()
    assert store.list() == []
    with pytest.raises(FileError):
        writer.append(doc.replace(0, 0, "y"))


def test_bad_names_are_refused():
    for name in ["../escape", "a/b", "", ".hidden", "x.tmp"]:
        with pytest.raises(FileError) as caught:
            MemoryJournalStore().append_bytes(name, b"x")
        assert caught.value.kind == "file.bad_journal_name"


# --- the OS store ---------------------------------------------------------------------------


def test_os_store_files_are_private_and_round_trip(tmp_path):
    folder = tmp_path / "journals"
    store = OsJournalStore(folder)
    try:
        doc, writer = edit_session(store)
        do(doc, writer, 5, 5, " there")
        writer.flush()
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(folder / "b1").st_mode) == 0o600
        assert store.list() == ["b1"]
        assert recover(store.read("b1"), location=store.location("b1")).text == "hello there"
        writer.compact(doc.text(), doc.version)
        assert stat.S_IMODE(os.stat(folder / "b1").st_mode) == 0o600
        do(doc, writer, 0, 0, "¡")
        writer.close()
        assert recover(store.read("b1")).text == "¡hello there"
        assert store.list() == ["b1"]                      # close keeps it; discard removes it
        writer.discard()
        assert store.list() == [] and not (folder / "b1").exists()
    finally:
        store.close_all()


def test_os_store_tightens_an_existing_folder(tmp_path):
    folder = tmp_path / "journals"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    OsJournalStore(folder)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700


def test_os_store_torn_file_recovers_prefix(tmp_path):
    store = OsJournalStore(tmp_path / "j")
    try:
        doc, writer = edit_session(store)
        do(doc, writer, 0, 0, "a")
        writer.flush()
        do(doc, writer, 0, 0, "b")
        writer.close()
        path = tmp_path / "j" / "b1"
        data = path.read_bytes()
        path.write_bytes(data[:-2])                        # kill -9 in the middle of a write
        got = recover(store.read("b1"))
        assert got.text == "ahello" and got.dropped_tail
    finally:
        store.close_all()


def test_reading_a_missing_journal_is_a_file_error(tmp_path):
    with pytest.raises(FileError) as caught:
        OsJournalStore(tmp_path).read("nothing")
    assert caught.value.kind == "file.read_failed"


def test_magic_is_first():
    store = MemoryJournalStore()
    edit_session(store)
    assert store.read("b1").startswith(MAGIC)


@given(st.lists(st.one_of(
    st.tuples(st.just("edit"), st.integers(0, 20), st.integers(0, 3),
              st.text("ab\n😀", max_size=3)),
    st.tuples(st.just("undo")), st.tuples(st.just("redo")), st.tuples(st.just("flush")),
    st.tuples(st.just("compact"))), max_size=30))
@settings(max_examples=200, deadline=None)
@pytest.mark.slow
def test_journaled_document_recovers_exactly(ops):
    """What the document actor does: every change, undo and redo included, goes to the journal."""
    store = MemoryJournalStore()
    doc, writer = edit_session(store, base="base\ntext")
    for op in ops:
        if op[0] == "edit":
            at = min(op[1], len(doc))
            changes = [doc.replace(at, min(at + op[2], len(doc)), op[3])]
        elif op[0] == "undo" and doc.can_undo:
            changes = doc.undo()
        elif op[0] == "redo" and doc.can_redo:
            changes = doc.redo()
        elif op[0] == "flush":
            writer.flush()
            changes = []
        elif op[0] == "compact":
            writer.compact(doc.text(), doc.version)
            changes = []
        else:
            changes = []
        for change in changes:
            writer.append(change)
    got = recover(store.read("b1"))
    assert (got.text, got.version, got.dropped_tail) == (doc.text(), doc.version, False)


# --- a full disk, damage past the tail (Rio issue 8) -------------------------------------------


def test_the_disk_that_fills_halfway_cuts_the_record_back():
    """ENOSPC after part of a record was written: the journal ends at the last intact record,
    and records appended once space returns follow it directly (no torn record between)."""
    from rio.text.journal import FaultyJournalStore
    store = FaultyJournalStore(MemoryJournalStore())
    doc, writer = edit_session(store)
    do(doc, writer, 5, 5, " one")
    intact = store.read("b1")
    store.fill(space=7)                                   # the frame header and a bit fit
    with pytest.raises(FileError) as caught, doc.atomic():
        do(doc, writer, 0, 0, "lost ")
    assert caught.value.kind == "file.journal_write_failed"
    assert "Free disk space" in caught.value.next and "memory:b1" in caught.value.message
    assert store.read("b1") == intact                     # cut back, not torn
    store.free()
    for word in ["a", "b", "c"]:
        do(doc, writer, 0, 0, word)
    got = recover(store.read("b1"))
    assert got.text == "cbahello one" and not got.dropped_tail and got.replayed == 4


def test_a_failed_cut_back_is_retried_before_the_next_append():
    from rio.text.journal import FaultyJournalStore

    class NoTruncate(FaultyJournalStore):
        refuse = True

        def truncate(self, name, size):
            if self.refuse:
                raise OSError(28, "No space left on device")
            super().truncate(name, size)

    store = NoTruncate(MemoryJournalStore())
    doc, writer = edit_session(store)
    store.fill(space=3)
    with pytest.raises(FileError), doc.atomic():
        writer.append(doc.replace(0, 0, "x"))             # torn, and cannot be cut back yet
    assert doc.version == 0 and len(store.read("b1")) > writer.size
    store.free()
    store.refuse = False
    do(doc, writer, 0, 0, "y")
    got = recover(store.read("b1"))
    assert got.text == "yhello" and got.replayed == 1     # the torn bytes were cut first
    assert not got.dropped_tail and got.damaged_bytes == 0


def test_one_flipped_byte_in_the_middle_is_reported_not_silent():
    store = MemoryJournalStore()
    doc, writer = edit_session(store, base="")
    offsets = []
    for i in range(20):
        offsets.append(len(store.read("b1")))
        do(doc, writer, len(doc), len(doc), f"edit{i:02d} ")
    data = bytearray(store.read("b1"))
    data[offsets[2] + 12] ^= 0x01                         # inside the 3rd change
    got = recover(bytes(data))
    assert got.text == "edit00 edit01 " and got.replayed == 2
    assert got.dropped_tail and got.skipped == 17         # resynchronised: 17 intact, unusable
    assert got.damaged_bytes == offsets[3] - offsets[2] and got.damage_at == offsets[2]


def test_a_cut_tail_is_reported():
    store = MemoryJournalStore()
    doc, writer = edit_session(store, base="")
    for i in range(20):
        do(doc, writer, len(doc), len(doc), f"edit{i:02d} ")
    got = recover(store.read("b1")[:-3])
    assert got.replayed == 19 and got.dropped_tail and got.damaged_bytes > 0


def test_records_after_a_torn_one_are_replayed_when_the_versions_follow_on():
    """The journals the old full-disk bug left: a torn record then good ones. When no change
    is missing (the failed edit was never applied) replaying past the damage is safe."""
    store = MemoryJournalStore()
    doc, writer = edit_session(store)
    do(doc, writer, 0, 0, "1")
    torn = encode_record([0, 0, "never applied", 2])[:-4]
    store.append_bytes("b1", torn)
    do(doc, writer, 0, 0, "2")
    got = recover(store.read("b1"))
    assert got.text == "21hello" and got.replayed == 2 and got.skipped == 0
    assert got.damaged_bytes == len(torn) and got.dropped_tail


@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), min_size=1, max_size=4))
@settings(max_examples=300, deadline=None)
@pytest.mark.slow
def test_damage_anywhere_recovers_some_exact_earlier_state(flips):
    """Safety of the resync rule: whatever bytes are flipped, the text recovered is exactly the
    document as it was at the version recovered, never a garbled mix."""
    store = MemoryJournalStore()
    doc, writer = edit_session(store, base="0123456789")
    states = {0: doc.text()}
    for i in range(25):
        at = (i * 7) % (len(doc) + 1)
        do(doc, writer, at, min(at + i % 3, len(doc)), "xyz"[: i % 4])
        states[doc.version] = doc.text()
    original = store.read("b1")
    data = bytearray(original)
    header_end = len(MAGIC) + 8 + int.from_bytes(data[len(MAGIC):len(MAGIC) + 4], "big")
    for offset, mask in flips:
        data[header_end + offset % (len(data) - header_end)] ^= mask
    got = recover(bytes(data))
    assert got.text == states[got.version]
    assert got.dropped_tail == (bytes(data) != original)


def test_a_scan_through_megabytes_of_garbage_stays_fast():
    """Resynchronising tries every candidate offset; a cheap shape check before the CRC keeps
    random bytes from costing a CRC of megabytes each (it was quadratic: 13 MB took ~10 s)."""
    import random
    import time
    store = MemoryJournalStore()
    doc, writer = edit_session(store, base="")
    do(doc, writer, 0, 0, "kept")
    garbage = random.Random(8).randbytes(8_000_000)   # was 3.7 s, now about 0.2 s
    started = time.perf_counter()
    got = recover(store.read("b1") + garbage)
    assert time.perf_counter() - started < 2.0
    assert got.text == "kept" and got.damaged_bytes == len(garbage)
