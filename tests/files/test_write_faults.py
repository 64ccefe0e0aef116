"""Saves that fail part-way (rio/files/write_faults.py): the one pass-through port the tests'
FaultyFilePort and the fault harness's switchable port are both made of."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from rio.files.files import FileFormat, OsFilePort, load_file, save_file
from rio.files.write_faults import FailingSaves, FaultyFilePort, WriteFault
from rio.protocol.errors import FileError


class ArmedOnce(FailingSaves):
    """Like the fault harness's port: one armed fault, taken by the next save."""

    def __init__(self, fault: WriteFault) -> None:
        super().__init__(OsFilePort())
        self.armed: WriteFault | None = fault

    def fault(self) -> WriteFault | None:
        fault, self.armed = self.armed, None
        return fault


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_reads_and_stats_are_the_inner_ports(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("hello\n")
    port, disk = FaultyFilePort(OsFilePort(), "eio", 0), OsFilePort()
    assert port.stat(path) == disk.stat(path)
    assert port.read_bytes(path, 100) == disk.read_bytes(path, 100)
    assert port.sha256(path) == disk.sha256(path)
    assert load_file(path, port=port).text == "hello\n"


def test_an_armed_fault_fails_one_save_part_way_and_the_next_save_is_clean(
        tmp_path: Path) -> None:
    path = tmp_path / "doc.txt"
    path.write_text("precious\n")
    loaded = load_file(path)
    port = ArmedOnce(WriteFault(errno.ENOSPC, after_bytes=3))
    with pytest.raises(FileError) as caught:
        save_file(path, "new text\n", loaded.format, expected=loaded.fingerprint, port=port)
    assert caught.value.kind == "file.save_failed"
    assert os.strerror(errno.ENOSPC) in caught.value.message
    assert path.read_text() == "precious\n" and _leftovers(tmp_path) == [] and port.failed == 1
    save_file(path, "new text\n", loaded.format, expected=loaded.fingerprint, port=port)
    assert path.read_text() == "new text\n" and port.failed == 1


@pytest.mark.parametrize("at_end", [False, True])
def test_a_save_within_the_budget_fails_only_when_the_disk_fills_at_the_end(
        tmp_path: Path, at_end: bool) -> None:
    path = tmp_path / "small.txt"
    port = ArmedOnce(WriteFault(errno.EIO, after_bytes=100, at_end=at_end))
    if at_end:
        with pytest.raises(FileError):
            save_file(path, "small", FileFormat(), expected=None, port=port)
        assert not path.exists() and _leftovers(tmp_path) == []
    else:
        save_file(path, "small", FileFormat(), expected=None, port=port)
        assert path.read_text() == "small"
    assert port.failed == int(at_end)


def test_faulty_port_fails_every_save_and_counts_them(tmp_path: Path) -> None:
    port = FaultyFilePort(OsFilePort(), fail="enospc", after_bytes=2)
    for n in range(2):
        with pytest.raises(FileError):
            save_file(tmp_path / "f.txt", "abcdef", FileFormat(), expected=None, port=port)
        assert port.writes_failed == port.failed == n + 1
    with pytest.raises(ValueError):
        FaultyFilePort(OsFilePort(), fail="full")  # type: ignore[arg-type]
