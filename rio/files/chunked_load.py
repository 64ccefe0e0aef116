"""Load a file for a document straight into the chunks its text is kept in.

:func:`rio.files.files.load_file` decodes a file into one ``str``; a document then cuts that
into chunks (``rio.text.text``) — a second full copy, made one slice at a time. For the common
file (UTF-8, no BOM, ``\\n`` line endings) :func:`load_file_chunks` decodes the bytes slice by
slice instead, each slice ending on a character boundary: the whole text never exists as one
``str`` (no 100 MB allocation to fault in, no slicing pass over it). A 100 MB open in the core
went from 2.7–3.7× a bare read + decode to 1.6–1.7× (ADR-0030). The peak memory is the same
(the file's bytes and the chunks, where it was the whole str and the chunks).
Every other file (a BOM, CR line endings, Latin-1, binary) goes through :func:`decode_bytes`
exactly as before and is cut afterwards, so the format, the warnings and the errors are the
same whichever way a file is loaded.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rio.files import digest as digests
from rio.files.files import (
    FileFormat,
    FilePort,
    Fingerprint,
    OsFilePort,
    decode_for_load,
    looks_binary,
    read_for_load,
    starts_with_bom,
)


@dataclass(frozen=True, slots=True)
class LoadedChunks:
    """A file's text as chunks of at most ``chunk_chars`` characters (none empty; no chunk
    at all for an empty file), with what :class:`~rio.files.files.LoadedFile` keeps."""
    chunks: list[str]
    format: FileFormat
    fingerprint: Fingerprint
    mode: int


#: Starts the sha256 of a file's bytes and returns what gives its hex digest when called. The
#: default hashes at once; the core passes one that hashes on another thread while the text is
#: decoded (hashlib releases the GIL), since ``rio/`` itself starts no threads.
Digest = Callable[[bytes], Callable[[], str]]


def sha256_now(data: bytes) -> Callable[[], str]:
    digest = digests.sha256(data).hexdigest()
    return lambda: digest


def load_file_chunks(path: str | os.PathLike[str], *, chunk_chars: int,
                     port: FilePort | None = None, max_bytes: int,
                     digest: Digest = sha256_now) -> LoadedChunks:
    """:func:`~rio.files.files.load_file`, the text returned as chunks (module docstring)."""
    path = Path(path)
    data, st = read_for_load(path, port or OsFilePort(), max_bytes)
    sha256 = digest(data)   # started before the decoding, finished after it
    fast = utf8_chunks(data, chunk_chars)
    if fast is not None:
        chunks, fmt = fast
    else:
        text, fmt = decode_for_load(path, data)
        chunks = [text[i:i + chunk_chars] for i in range(0, len(text), chunk_chars)]
        del text
    fingerprint = Fingerprint(size=len(data), mtime_ns=st.mtime_ns, sha256=sha256())
    return LoadedChunks(chunks, fmt, fingerprint, st.mode)


def utf8_chunks(data: bytes, chunk_chars: int) -> tuple[list[str], FileFormat] | None:
    """``data`` decoded as UTF-8 into chunks of at most ``chunk_chars`` characters, cut
    between characters; None unless it is the plain case :func:`decode_bytes` would read as
    strict UTF-8 with ``\\n`` line endings and no BOM (the caller then decodes it the
    general way)."""
    if starts_with_bom(data) or b"\r" in data or looks_binary(data) is not None:
        return None
    view = memoryview(data)
    decode = codecs.utf_8_decode
    chunks: list[str] = []
    size, start = len(data), 0
    try:
        while start < size:
            # chunk_chars bytes hold at most chunk_chars characters; step back off a
            # continuation byte so no character is split between two slices
            end = min(start + chunk_chars, size)
            while end < size and end > start and (data[end] & 0xC0) == 0x80:
                end -= 1
            if end == start:    # no character starts in the next chunk_chars bytes
                return None
            chunks.append(decode(view[start:end], "strict", True)[0])
            start = end
    except UnicodeDecodeError:
        return None
    finally:
        view.release()
    fmt = FileFormat(encoding="utf-8", bom=False, newline="\n", mixed_newlines=False,
                     final_newline=data.endswith(b"\n"), warning=None)
    return chunks, fmt
