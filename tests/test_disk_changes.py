"""Files changed on disk during an ACP turn (rio/agent/disk_changes.py), without processes."""

from __future__ import annotations

import os

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
