"""A document's file is decoded straight into its chunks (rio/files/chunked_load.py, ADR-0030):
the same text, format and fingerprint as load_file, chunks cut between characters, and the
plain UTF-8 file never decoded into one whole str."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rio.files import files
from rio.files.chunked_load import load_file_chunks, utf8_chunks
from rio.files.files import load_file
from rio.protocol.errors import FileError
from rio.text.buffer_state import BufferFactory
from rio.text.text import ChunkedText

# Characters of 1, 2, 3 and 4 UTF-8 bytes, newlines of every kind, and a control byte.
CHARS = st.sampled_from(["a", "z", " ", "\n", "\r", "\r\n", "é", "ß", "€", "中", "😀", "\t"])
TEXTS = st.lists(CHARS, max_size=60).map("".join)
BOMS = st.sampled_from([b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"])


def _payloads() -> st.SearchStrategy[bytes]:
    encoded = st.tuples(BOMS, TEXTS).map(lambda bt: bt[0] + bt[1].encode("utf-8"))
    raw = st.binary(max_size=40)            # Latin-1 fallbacks, NULs, cut sequences
    return st.one_of(encoded, encoded, raw)


@settings(max_examples=300, deadline=None)
@given(data=_payloads(), chunk=st.integers(1, 9))
def test_chunks_hold_what_load_file_reads(tmp_path_factory, data: bytes, chunk: int) -> None:
    path = tmp_path_factory.mktemp("f") / "f.txt"
    path.write_bytes(data)
    try:
        whole = load_file(path)
    except FileError as err:
        with pytest.raises(FileError) as again:
            load_file_chunks(path, chunk_chars=chunk, max_bytes=1 << 20)
        assert again.value.kind == err.kind
        return
    loaded = load_file_chunks(path, chunk_chars=chunk, max_bytes=1 << 20)
    assert "".join(loaded.chunks) == whole.text
    assert loaded.format == whole.format
    assert loaded.fingerprint == whole.fingerprint and loaded.mode == whole.mode
    assert all(0 < len(c) <= chunk for c in loaded.chunks)
    text = ChunkedText.from_chunks(loaded.chunks)
    assert text.text() == whole.text and len(text) == len(whole.text)
    assert text.line_count == whole.text.count("\n") + 1


def test_only_the_plain_utf8_case_is_cut_from_bytes() -> None:
    assert utf8_chunks("héllo\nwörld\n".encode(), 3) == (
        ["hé", "llo", "\nw", "ör", "ld\n"],   # 3 bytes each, cut between characters
        files.FileFormat(encoding="utf-8", bom=False, newline="\n", mixed_newlines=False,
                         final_newline=True, warning=None))
    assert utf8_chunks(b"a\r\nb", 4) is None            # CR: the general way
    assert utf8_chunks(b"\xef\xbb\xbfab", 4) is None    # a BOM
    assert utf8_chunks(b"caf\xe9", 4) is None            # not UTF-8 (Latin-1 later)
    assert utf8_chunks(b"a\x00b", 4) is None             # binary (refused later)
    assert utf8_chunks("😀".encode(), 3) is None         # no character fits a chunk


def test_opening_a_utf8_file_never_decodes_it_whole(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "p"
    root.mkdir()
    text = "línea ünïcödé 😀\n" * 5000
    (root / "f.txt").write_text(text, encoding="utf-8")

    def whole_decode(data: bytes):
        raise AssertionError("decoded into one str")

    monkeypatch.setattr(files, "decode_bytes", whole_decode)
    factory = BufferFactory(root, tmp_path / "j", undo_text_limit=1 << 20)
    buf = factory.open(factory.resolve("f.txt"))
    assert buf.document.text() == text
    assert buf.document.buffer.line_count == 5001
    assert buf.format.encoding == "utf-8" and buf.format.final_newline


def test_the_fingerprint_comes_from_the_digest_started_before_decoding(tmp_path: Path,
                                                                        monkeypatch) -> None:
    root = tmp_path / "p"
    root.mkdir()
    data = "héllo\n".encode() * 1000
    (root / "f.txt").write_bytes(data)
    order: list[str] = []
    real = files.decode_bytes

    def digest(got: bytes):
        order.append("digest started")
        assert got == data

        def finish() -> str:
            order.append("digest read")
            return "f" * 64
        return finish

    def decode(raw: bytes):
        order.append("decoded")
        return real(raw)

    monkeypatch.setattr(files, "decode_bytes", decode)
    monkeypatch.setattr("rio.files.chunked_load.utf8_chunks", lambda d, n: None)  # general way
    factory = BufferFactory(root, tmp_path / "j", undo_text_limit=1 << 20, digest=digest)
    buf = factory.open(factory.resolve("f.txt"))
    assert buf.fingerprint is not None and buf.fingerprint.sha256 == "f" * 64
    assert order == ["digest started", "decoded", "digest read"]
