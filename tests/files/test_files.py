"""rio.files.files: format-keeping decode/encode, atomic save, conflicts, faults."""

from __future__ import annotations

import codecs
import errno
import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rio.files.files import (
    LATIN1_WARNING,
    FileFormat,
    Fingerprint,
    OsFilePort,
    decode_bytes,
    disk_changed,
    encode_text,
    iter_encode,
    load_file,
    looks_binary,
    save_file,
)
from rio.files.write_faults import FaultyFilePort
from rio.protocol.errors import FileError, PathError, ProtocolError


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".rio-" in p.name)


# ---------------------------------------------------------------- decoding


@pytest.mark.parametrize(("data", "encoding", "bom"), [
    (codecs.BOM_UTF8 + "héllo\n".encode(), "utf-8-sig", True),
    (codecs.BOM_UTF16_LE + "héllo\n".encode("utf-16-le"), "utf-16-le", True),
    (codecs.BOM_UTF16_BE + "héllo\n".encode("utf-16-be"), "utf-16-be", True),
    (codecs.BOM_UTF32_LE + "héllo\n".encode("utf-32-le"), "utf-32-le", True),
    (codecs.BOM_UTF32_BE + "héllo\n".encode("utf-32-be"), "utf-32-be", True),
    ("héllo\n".encode(), "utf-8", False),
])
def test_decode_detects_bom_and_encoding(data: bytes, encoding: str, bom: bool) -> None:
    text, fmt = decode_bytes(data)
    assert text == "héllo\n"
    assert (fmt.encoding, fmt.bom, fmt.warning) == (encoding, bom, None)
    assert encode_text(text, fmt) == data


def test_invalid_utf8_opens_as_latin1_with_warning() -> None:
    text, fmt = decode_bytes(b"caf\xe9 \xff\n")
    assert text == "café ÿ\n"
    assert fmt.encoding == "latin-1" and fmt.warning == LATIN1_WARNING


def test_utf16_text_with_nul_characters_is_not_binary() -> None:
    data = codecs.BOM_UTF16_LE + "a\x00b".encode("utf-16-le")
    assert decode_bytes(data)[0] == "a\x00b"


def test_bad_utf32_body_falls_back_to_utf16() -> None:
    # FF FE 00 00 is UTF-32-LE's BOM, but the body is not valid UTF-32: UTF-16-LE it is.
    data = codecs.BOM_UTF16_LE + "\x00ab".encode("utf-16-le")
    text, fmt = decode_bytes(data)
    assert fmt.encoding == "utf-16-le" and text == "\x00ab"


@pytest.mark.parametrize(("data", "newline", "mixed", "final"), [
    (b"a\nb\n", "\n", False, True),
    (b"a\r\nb\r\n", "\r\n", False, True),
    (b"a\rb\r", "\r", False, True),
    (b"a\r\nb\r\nc\nd", "\r\n", True, False),
    (b"a\nb\r\n", "\n", True, True),  # a tie goes to "\n"
    (b"no newline", "\n", False, False),
    (b"", "\n", False, False),
])
def test_newlines_detected_and_normalised(data: bytes, newline: str, mixed: bool,
                                          final: bool) -> None:
    text, fmt = decode_bytes(data)
    assert "\r" not in text
    assert (fmt.newline, fmt.mixed_newlines, fmt.final_newline) == (newline, mixed, final)


def test_mixed_newlines_save_as_the_dominant_one() -> None:
    text, fmt = decode_bytes(b"a\r\nb\r\nc\n")
    assert encode_text(text, fmt) == b"a\r\nb\r\nc\r\n"


@pytest.mark.parametrize("data", [b"PNG\x00\x01\x02", b"text\n" * 100 + b"\x00",
                                  bytes(range(1, 32)) * 10, codecs.BOM_UTF8 + b"a\x00b"])
def test_binary_data_is_refused_with_next_action(data: bytes) -> None:
    with pytest.raises(FileError) as caught:
        decode_bytes(data)
    assert caught.value.kind == "file.binary"
    assert "hex viewer" in caught.value.next


def test_text_with_a_few_controls_and_ansi_colour_is_text() -> None:
    data = b"\x1b[31mred\x1b[0m\tok\x0c\n" * 50 + b"\x07bell\n"
    assert looks_binary(data) is None
    assert decode_bytes(data)[0].startswith("\x1b[31mred")


# ---------------------------------------------------------------- encoding


def test_encode_unencodable_latin1_names_the_line() -> None:
    fmt = FileFormat(encoding="latin-1", newline="\r\n")
    with pytest.raises(FileError) as caught:
        encode_text("ok\nstill ok\ncafé Ω\n", fmt)
    err = caught.value
    assert err.kind == "file.unencodable"
    assert "line 3" in err.message and "U+03A9" in err.message
    assert err.next == "Save as UTF-8 (File > Save As)"


def test_encode_lone_surrogate_is_unencodable_in_utf8() -> None:
    with pytest.raises(FileError) as caught:
        encode_text("a\n\ud800", FileFormat())
    assert caught.value.kind == "file.unencodable" and "line 2" in caught.value.message.lower()


@given(st.text(), st.lists(st.integers(min_value=0, max_value=50), max_size=8),
       st.sampled_from(["utf-8", "utf-8-sig", "utf-16-le", "utf-32-be"]),
       st.sampled_from(["\n", "\r\n", "\r"]))
@pytest.mark.slow
def test_encoding_chunks_equals_encoding_the_whole(text: str, cuts: list[int], encoding: str,
                                                   newline: str) -> None:
    assume(not any(0xD800 <= ord(c) <= 0xDFFF for c in text))
    fmt = FileFormat(encoding=encoding, bom=encoding.startswith(("utf-8-sig", "utf-16", "utf-32")),
                     newline=newline)
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]
    assert b"".join(iter_encode(pieces, fmt)) == encode_text(text, fmt)


# The property from the brief: every byte string that decodes without a mixed-newline flag
# comes back byte-exactly.
_texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)


@st.composite
def file_bytes(draw: st.DrawFn) -> bytes:
    choice = draw(st.integers(0, 2))
    if choice == 0:
        return draw(st.binary(max_size=300))
    text = draw(_texts)
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = text.replace("\r", "").replace("\n", newline)
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16-le", "utf-16-be",
                                     "utf-32-le", "utf-32-be", "latin-1"]))
    if encoding == "latin-1":
        return text.encode("latin-1", errors="replace")
    bom = {"utf-8": b"", "utf-8-sig": codecs.BOM_UTF8, "utf-16-le": codecs.BOM_UTF16_LE,
           "utf-16-be": codecs.BOM_UTF16_BE, "utf-32-le": codecs.BOM_UTF32_LE,
           "utf-32-be": codecs.BOM_UTF32_BE}[encoding]
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    return bom + text.encode(codec)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(file_bytes())
@pytest.mark.slow
def test_decode_encode_round_trips_byte_exactly(data: bytes) -> None:
    try:
        text, fmt = decode_bytes(data)
    except FileError as exc:
        assert exc.kind == "file.binary"
        return
    assume(not fmt.mixed_newlines)
    assert encode_text(text, fmt) == data
    assert decode_bytes(encode_text(text, fmt)) == (text, fmt)


@given(st.binary(max_size=200))
def test_decode_never_raises_anything_but_binary(data: bytes) -> None:
    try:
        text, _ = decode_bytes(data)
    except FileError as exc:
        assert exc.kind == "file.binary"
    else:
        assert "\r" not in text


# ---------------------------------------------------------------- records


def test_format_and_fingerprint_dicts_round_trip() -> None:
    fmt = FileFormat(encoding="utf-16-be", bom=True, newline="\r\n", mixed_newlines=True,
                     final_newline=False, warning="w")
    assert FileFormat.from_dict(fmt.to_dict()) == fmt
    fp = Fingerprint(size=3, mtime_ns=12345, sha256="ab" * 32)
    assert Fingerprint.from_dict(fp.to_dict()) == fp


@pytest.mark.parametrize("data", [
    "utf-8", {"encoding": "ebcdic"}, {"encoding": "utf-8", "bom": True},
    {"encoding": "utf-8-sig", "bom": False}, {"newline": "\n\n"}, {"bom": "yes"},
])
def test_bad_format_dicts_are_bad_args(data: object) -> None:
    with pytest.raises(ProtocolError) as caught:
        FileFormat.from_dict(data)
    assert caught.value.kind == "protocol.bad_args"


@pytest.mark.parametrize("data", [
    {"size": 1, "mtime_ns": 2}, {"size": True, "mtime_ns": 2, "sha256": "a" * 64},
    {"size": 1, "mtime_ns": 2, "sha256": "xyz"}, {"size": -1, "mtime_ns": 2, "sha256": "a" * 64},
])
def test_bad_fingerprint_dicts_are_bad_args(data: dict[str, object]) -> None:
    with pytest.raises(ProtocolError):
        Fingerprint.from_dict(data)


# ---------------------------------------------------------------- load


def test_load_keeps_format_and_fingerprint(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(codecs.BOM_UTF8 + b"one\r\ntwo\r\n")
    os.chmod(path, 0o640)
    loaded = load_file(path)
    assert loaded.text == "one\ntwo\n"
    assert loaded.format.encoding == "utf-8-sig" and loaded.format.newline == "\r\n"
    assert loaded.mode == 0o640
    assert loaded.fingerprint.size == path.stat().st_size
    assert loaded.fingerprint.mtime_ns == path.stat().st_mtime_ns
    assert not disk_changed(path, loaded.fingerprint, thorough=True)


def test_load_refuses_too_large_naming_the_setting(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    path.write_bytes(b"x" * 2048)
    with pytest.raises(FileError) as caught:
        load_file(path, max_bytes=1024)
    assert caught.value.kind == "file.too_large"
    assert "2.0 KiB" in caught.value.message and "1.0 KiB" in caught.value.message
    assert "files.max_bytes" in caught.value.next


def test_load_refuses_folder_missing_and_binary(tmp_path: Path) -> None:
    with pytest.raises(PathError) as caught:
        load_file(tmp_path)
    assert caught.value.kind == "path.not_a_file"
    with pytest.raises(PathError) as caught:
        load_file(tmp_path / "nope.txt")
    assert caught.value.kind == "path.not_found"
    (tmp_path / "img.png").write_bytes(b"\x89PNG\x00\x00")
    with pytest.raises(FileError) as caught_file:
        load_file(tmp_path / "img.png")
    assert caught_file.value.kind == "file.binary" and "img.png" in caught_file.value.message


@pytest.mark.timeout(10)
def test_load_refuses_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(PathError) as caught:
        load_file(fifo)
    assert caught.value.kind == "path.special_file"


@pytest.mark.timeout(10)
def test_port_read_of_a_fifo_does_not_block(tmp_path: Path) -> None:
    # The race where a file is swapped for a FIFO between stat and read.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as caught:
        OsFilePort().read_bytes(fifo, 100)
    assert caught.value.errno == errno.EINVAL


def test_load_unreadable_is_read_failed(tmp_path: Path) -> None:
    path = tmp_path / "secret.txt"
    path.write_text("x")

    class Denied(OsFilePort):
        def read_bytes(self, path: Path, limit: int) -> tuple[bytes, object]:  # type: ignore[override]
            raise PermissionError(errno.EACCES, "Permission denied")

    with pytest.raises(FileError) as caught:
        load_file(path, port=Denied())
    assert caught.value.kind == "file.read_failed"
    assert "Permission denied" in caught.value.message and "permissions" in caught.value.next


# ---------------------------------------------------------------- save


def test_save_new_file_then_load_gives_same_text(tmp_path: Path) -> None:
    path = tmp_path / "new.txt"
    fmt = FileFormat(encoding="utf-16-le", bom=True, newline="\r\n")
    fp = save_file(path, "héllo\nworld\n", fmt, expected=None)
    assert path.read_bytes() == codecs.BOM_UTF16_LE + "héllo\r\nworld\r\n".encode("utf-16-le")
    loaded = load_file(path)
    assert loaded.fingerprint == fp and loaded.format.encoding == "utf-16-le"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("data", [
    b"plain\n", b"crlf\r\nfile\r\n", codecs.BOM_UTF8 + b"bom\n", b"latin \xe9\xff\n",
    codecs.BOM_UTF32_BE + "x\ry\r".encode("utf-32-be"), b"no final newline",
])
def test_load_then_save_unchanged_is_byte_identical(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f"
    path.write_bytes(data)
    loaded = load_file(path)
    save_file(path, loaded.text, loaded.format, expected=loaded.fingerprint)
    assert path.read_bytes() == data


def test_save_keeps_mode_and_refuses_to_write_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.sh"
    real.write_text("echo 1\n")
    os.chmod(real, 0o751)
    loaded = load_file(real)
    save_file(real, "echo 2\n", loaded.format, expected=loaded.fingerprint)
    assert stat.S_IMODE(real.stat().st_mode) == 0o751
    # The workspace hands save_file real paths; a link at that name now is a swap, not a file.
    link = tmp_path / "link.sh"
    link.symlink_to(real)
    now = load_file(real).fingerprint  # the bytes match: only the link check stands in the way
    for force in (False, True):
        with pytest.raises(PathError) as info:
            save_file(link, "echo 3\n", loaded.format, expected=now, force=force)
        assert info.value.kind == "path.symlink_refused"
    assert link.is_symlink() and real.read_text() == "echo 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.sh", "real.sh"]  # no temp left


def test_save_refuses_a_folder_on_the_way_swapped_for_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("theirs\n")
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "sub" / "a.txt").write_text("theirs\n")
    loaded = load_file(proj / "sub" / "a.txt")
    (proj / "sub" / "a.txt").unlink()
    (proj / "sub").rmdir()
    (proj / "sub").symlink_to(outside)
    with pytest.raises(PathError) as info:
        save_file(proj / "sub" / "a.txt", "mine\n", loaded.format, expected=loaded.fingerprint,
                  force=True)
    assert info.value.kind == "path.symlink_refused"
    assert (outside / "a.txt").read_text() == "theirs\n"
    assert sorted(p.name for p in outside.iterdir()) == ["a.txt"]


def test_save_new_file_gets_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        save_file(tmp_path / "n.txt", "x", FileFormat(), expected=None)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "n.txt").stat().st_mode) == 0o640


def test_save_streams_chunks_and_fsyncs_file_and_folder(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    seen: list[list[str]] = []

    def chunks():  # type: ignore[no-untyped-def]
        for i in range(3):
            # While chunks are produced, the temp file sits beside the target.
            seen.append(leftovers(tmp_path))
            yield f"chunk {i}\n"

    path = tmp_path / "s.txt"
    fp = save_file(path, chunks(), FileFormat(newline="\r\n"), expected=None)
    assert path.read_bytes() == b"chunk 0\r\nchunk 1\r\nchunk 2\r\n"
    assert fp.size == len(path.read_bytes())
    assert synced == ["file", "dir"]
    assert len(seen[1]) == 1 and seen[1][0].startswith(".s.txt.rio-")
    assert seen[1][0].endswith(".tmp") and leftovers(tmp_path) == []


def test_conflict_when_changed_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    path.write_text("one\n")
    loaded = load_file(path)
    path.write_text("other content\n")
    with pytest.raises(FileError) as caught:
        save_file(path, "mine\n", loaded.format, expected=loaded.fingerprint)
    assert caught.value.kind == "file.conflict"
    assert caught.value.message == "x.py changed on disk since it was opened"
    assert "force" in caught.value.next
    assert path.read_text() == "other content\n"
    save_file(path, "mine\n", loaded.format, expected=loaded.fingerprint, force=True)
    assert path.read_text() == "mine\n"


def test_conflict_same_size_and_mtime_is_caught_by_hash(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    path.write_text("aaaa\n")
    loaded = load_file(path)
    mtime = path.stat().st_mtime_ns
    path.write_text("bbbb\n")
    os.utime(path, ns=(mtime, mtime))  # a coarse clock: same size, same mtime
    assert not disk_changed(path, loaded.fingerprint)  # the cheap check cannot see it
    assert disk_changed(path, loaded.fingerprint, thorough=True)
    with pytest.raises(FileError) as caught:
        save_file(path, "mine\n", loaded.format, expected=loaded.fingerprint)
    assert caught.value.kind == "file.conflict"


def test_touch_without_change_is_no_conflict(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    path.write_text("same\n")
    loaded = load_file(path)
    os.utime(path, ns=(1, 1))
    assert not disk_changed(path, loaded.fingerprint)
    save_file(path, "new\n", loaded.format, expected=loaded.fingerprint)
    assert path.read_text() == "new\n"


def test_existing_file_without_expected_is_a_conflict_unless_forced(tmp_path: Path) -> None:
    path = tmp_path / "there.txt"
    path.write_text("keep\n")
    with pytest.raises(FileError) as caught:
        save_file(path, "x", FileFormat(), expected=None)
    assert caught.value.kind == "file.conflict" and path.read_text() == "keep\n"
    save_file(path, "x", FileFormat(), expected=None, force=True)
    assert path.read_text() == "x"


def test_deleted_since_opened_just_saves(tmp_path: Path) -> None:
    path = tmp_path / "gone.txt"
    path.write_text("a\n")
    loaded = load_file(path)
    path.unlink()
    assert disk_changed(path, loaded.fingerprint)
    save_file(path, "back\n", loaded.format, expected=loaded.fingerprint)
    assert path.read_text() == "back\n"


def test_change_during_a_long_write_is_caught_before_replace(tmp_path: Path) -> None:
    path = tmp_path / "race.txt"
    path.write_text("v1\n")
    loaded = load_file(path)

    def chunks():  # type: ignore[no-untyped-def]
        yield "mine part 1\n"
        path.write_text("someone else\n")  # another program writes while we stream
        yield "mine part 2\n"

    with pytest.raises(FileError) as caught:
        save_file(path, chunks(), loaded.format, expected=loaded.fingerprint)
    assert caught.value.kind == "file.conflict"
    assert path.read_text() == "someone else\n" and leftovers(tmp_path) == []


@pytest.mark.parametrize("fail", ["enospc", "eio"])
@pytest.mark.parametrize("after", [0, 5, 1_000_000])
def test_fault_mid_write_leaves_old_file_and_no_temp(tmp_path: Path, fail: str,
                                                     after: int) -> None:
    path = tmp_path / "doc.txt"
    path.write_text("precious\n")
    loaded = load_file(path)
    port = FaultyFilePort(OsFilePort(), fail=fail, after_bytes=after)  # type: ignore[arg-type]
    produced: list[int] = []

    def chunks():  # type: ignore[no-untyped-def]
        for i in range(4):
            produced.append(i)
            yield "x" * 1_000_000

    with pytest.raises(FileError) as caught:
        save_file(path, chunks(), loaded.format, expected=loaded.fingerprint, port=port)
    err = caught.value
    assert err.kind == "file.save_failed"
    assert os.strerror(errno.ENOSPC if fail == "enospc" else errno.EIO) in err.message
    assert "unchanged" in err.message
    if fail == "enospc":
        assert "disk space" in err.next
    assert path.read_text() == "precious\n" and leftovers(tmp_path) == []
    assert port.writes_failed == 1
    assert len(produced) < 4  # streamed: the failure stopped the producer


def test_faulty_port_write_within_budget_succeeds(tmp_path: Path) -> None:
    port = FaultyFilePort(OsFilePort(), fail="eio", after_bytes=100)
    save_file(tmp_path / "ok.txt", "small", FileFormat(), expected=None, port=port)
    assert (tmp_path / "ok.txt").read_text() == "small" and port.writes_failed == 0


def test_unencodable_save_leaves_old_file(tmp_path: Path) -> None:
    path = tmp_path / "l1.txt"
    path.write_bytes(b"caf\xe9\n")
    loaded = load_file(path)
    with pytest.raises(FileError) as caught:
        save_file(path, "café ✓\n", loaded.format, expected=loaded.fingerprint)
    assert caught.value.kind == "file.unencodable"
    assert path.read_bytes() == b"caf\xe9\n" and leftovers(tmp_path) == []


def test_save_into_readonly_folder_is_save_failed(tmp_path: Path) -> None:
    class ReadOnly(OsFilePort):
        def write_atomic(self, *args: object, **kw: object):  # type: ignore[no-untyped-def, override]
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    with pytest.raises(FileError) as caught:
        save_file(tmp_path / "r.txt", "x", FileFormat(), expected=None, port=ReadOnly())
    assert caught.value.kind == "file.save_failed" and "read-only" in caught.value.next


def test_save_over_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(PathError) as caught:
        save_file(tmp_path / "d", "x", FileFormat(), expected=None, force=True)
    assert caught.value.kind == "path.not_a_file"


def test_error_survives_the_wire(tmp_path: Path) -> None:
    from rio.protocol.errors import error_from_wire

    path = tmp_path / "c.txt"
    path.write_text("x")
    try:
        save_file(path, "y", FileFormat(), expected=None)
    except FileError as exc:
        back = error_from_wire(exc.to_wire())
    assert isinstance(back, FileError) and back.kind == "file.conflict"
