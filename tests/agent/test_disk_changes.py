"""Files changed on disk during an ACP turn (rio/agent/disk_changes.py), without processes."""

from __future__ import annotations

import os

import pytest

from rio.agent import disk_changes


def _bump(path, text):
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))


def test_created_modified_and_deleted_files_are_listed_with_diffs(tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "gone.txt").write_text("bye\n")
    (tmp_path / "same.txt").write_text("same\n")
    before = disk_changes.take(tmp_path)
    _bump(tmp_path / "a.txt", "two\n")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "new.txt").write_text("hello\n")
    got = disk_changes.changes(before)
    by_path = {f["path"]: f for f in got["files"]}
    assert set(by_path) == {"a.txt", "gone.txt", "new.txt"}
    assert by_path["a.txt"]["change"] == "modified"
    assert "-one" in by_path["a.txt"]["diff"] and "+two" in by_path["a.txt"]["diff"]
    assert by_path["gone.txt"]["change"] == "deleted" and "-bye" in by_path["gone.txt"]["diff"]
    assert by_path["new.txt"]["change"] == "created" and "+hello" in by_path["new.txt"]["diff"]
    assert got["more"] == 0


def test_ignored_files_are_not_fingerprinted(tmp_path):
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.txt").write_text("x\n")
    (tmp_path / "run.log").write_text("x\n")
    before = disk_changes.take(tmp_path)
    assert "build/out.txt" not in before.stats and "run.log" not in before.stats
    _bump(tmp_path / "build" / "out.txt", "y\n")
    (tmp_path / "other.log").write_text("z\n")
    assert disk_changes.changes(before)["files"] == []


def test_a_file_beyond_the_text_cap_is_listed_without_a_diff(tmp_path):
    (tmp_path / "big.txt").write_text("a" * 100 + "\n")
    before = disk_changes.take(tmp_path, max_file_bytes=10)
    _bump(tmp_path / "big.txt", "b" * 100 + "\n")
    [entry] = disk_changes.changes(before)["files"]
    assert entry["change"] == "modified" and "diff" not in entry and "no diff" in entry["note"]


def test_the_fingerprint_is_capped(tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text(str(i))
    snap = disk_changes.take(tmp_path, max_files=3)
    assert len(snap.stats) == 3 and snap.capped


def test_line_endings_are_read_as_rio_reads_them_and_binary_files_get_no_diff(tmp_path):
    """The diff is of the text fs.read and a buffer give (newlines as "\\n"), so Revert can take
    it back; a change of line endings alone says so instead of an empty diff."""
    (tmp_path / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (tmp_path / "ends.txt").write_bytes(b"one\ntwo\n")
    (tmp_path / "blob.dat").write_bytes(b"\x00\x01\x02" * 10)
    before = disk_changes.take(tmp_path)
    for name, data in (("crlf.txt", b"one\r\n2\r\n"), ("ends.txt", b"one\r\ntwo\r\n"),
                       ("blob.dat", b"\x00\x03" * 10)):
        (tmp_path / name).write_bytes(data)
        st = (tmp_path / name).stat()
        os.utime(tmp_path / name, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    by_path = {f["path"]: f for f in disk_changes.changes(before)["files"]}
    assert "\r" not in by_path["crlf.txt"]["diff"] and "-two\n+2\n" in by_path["crlf.txt"]["diff"]
    assert "diff" not in by_path["ends.txt"] and "line endings" in by_path["ends.txt"]["note"]
    assert "diff" not in by_path.get("blob.dat", {"path": "blob.dat"})


def test_a_deleted_file_says_how_it_was_stored_so_it_can_be_written_back(tmp_path):
    from rio.agent.unpatch import text_before
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\r\nend\r\n")
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfone\ntwo")
    (tmp_path / "kept.txt").write_text("stays\n")
    before = disk_changes.take(tmp_path)
    os.remove(tmp_path / "latin.txt")
    os.remove(tmp_path / "bom.txt")
    (tmp_path / "kept.txt").write_text("changed\n")
    got = {f["path"]: f for f in disk_changes.changes(before)["files"]}
    assert got["latin.txt"]["stored_as"] == {"encoding": "latin-1", "newline": "crlf"}
    assert got["bom.txt"]["stored_as"] == {"encoding": "utf-8-sig", "newline": "lf"}
    assert "stored_as" not in got["kept.txt"]          # only a deleted file needs it
    # Its whole text is in the diff, as Rio reads it.
    assert text_before(got["latin.txt"]["diff"], "") == "caf\u00e9\nend\n"
    assert text_before(got["bom.txt"]["diff"], "") == "one\ntwo"


def test_a_deleted_files_diff_is_never_cut_so_it_can_be_restored(tmp_path):
    from rio.agent.unpatch import text_before
    text = "".join(f"line {n}\n" for n in range(10_000))       # ~89 KB: over the diff cap
    assert len(text) > disk_changes.MAX_DIFF_CHARS
    (tmp_path / "long.txt").write_text(text)
    (tmp_path / "edited.txt").write_text(text)
    before = disk_changes.take(tmp_path)
    os.remove(tmp_path / "long.txt")
    (tmp_path / "edited.txt").write_text("")
    got = {f["path"]: f for f in disk_changes.changes(before)["files"]}
    assert text_before(got["long.txt"]["diff"], "") == text
    assert "more characters]" in got["edited.txt"]["diff"]      # a modified file's is cut


def _files(root, folders: int, each: int) -> None:
    """``folders`` × ``each`` empty files, cheaply (no write, one open each)."""
    for d in range(folders):
        folder = root / f"d{d:03d}"
        folder.mkdir()
        for f in range(each):
            os.close(os.open(folder / f"f{f:04d}.txt", os.O_CREAT | os.O_WRONLY, 0o644))


@pytest.mark.slow
def test_a_200000_file_project_lists_exactly_what_changed_or_says_what_it_did_not_check(
        tmp_path):
    """Issue 22: in a 200,000-file project ~200 existing files were reported "created" and a
    real change to a late file and a created file were not listed, with nothing saying so.
    Now: what the snapshot covered is compared exactly, and the rest is named."""
    _files(tmp_path, 200, 1000)
    before = disk_changes.take(tmp_path)
    assert before.capped and len(before.stats) == disk_changes.MAX_FILES
    assert before.last == "d019/f0999.txt"
    # inside what the snapshot covered: one modified, one created, one deleted
    _bump(tmp_path / "d000" / "f0005.txt", "changed\n")
    (tmp_path / "d003" / "new.txt").write_text("new\n")
    (tmp_path / "d001" / "f0003.txt").unlink()
    # past it: a change and a creation it cannot see
    _bump(tmp_path / "d150" / "f0001.txt", "late change\n")
    (tmp_path / "d199" / "late.txt").write_text("late\n")
    got = disk_changes.changes(before)
    assert [(f["path"], f["change"]) for f in got["files"]] == [
        ("d000/f0005.txt", "modified"), ("d001/f0003.txt", "deleted"),
        ("d003/new.txt", "created")]
    assert got["more"] == 0
    assert got["unchecked"]["after"] == "d019/f0999.txt"
    assert "d019/f0999.txt" in got["unchecked"]["note"]
    # what it says it did not check is exactly where the unlisted changes are
    after = disk_changes.place(got["unchecked"]["after"])
    for late in ("d150/f0001.txt", "d199/late.txt"):
        assert disk_changes.place(late) > after


def test_an_uncapped_snapshot_says_nothing_is_unchecked(tmp_path):
    _files(tmp_path, 3, 10)
    before = disk_changes.take(tmp_path)
    (tmp_path / "d002" / "z.txt").write_text("z\n")
    got = disk_changes.changes(before)
    assert [(f["path"], f["change"]) for f in got["files"]] == [("d002/z.txt", "created")]
    assert "unchecked" not in got


def test_a_turn_that_creates_too_many_files_says_where_it_stopped(tmp_path):
    _files(tmp_path, 2, 5)
    before = disk_changes.take(tmp_path)
    for i in range(30):
        (tmp_path / "d000" / f"g{i:02d}.txt").write_text("x")
    got = disk_changes.changes(before, max_created=10)
    created = [f["path"] for f in got["files"] if f["change"] == "created"]
    assert created == [f"d000/g{i:02d}.txt" for i in range(10)]
    assert got["unchecked"]["after"] == "d000/g09.txt"
    # a file past that place was not compared, and is not reported deleted either
    assert not [f for f in got["files"] if f["change"] == "deleted"]


def test_a_large_file_changed_is_listed(tmp_path):
    big = tmp_path / "big.bin.txt"
    big.write_bytes(b"a" * (9 * 1024 * 1024))
    before = disk_changes.take(tmp_path)
    with open(big, "ab") as fh:
        fh.write(b"more")
    [entry] = disk_changes.changes(before)["files"]
    assert entry["path"] == "big.bin.txt" and entry["change"] == "modified"
