"""The journal: every unsaved edit of a document, on disk, so a killed core loses nothing.

Swap files, the '90s way (ADR-0006). One journal per open document with unsaved edits:

    MAGIC  record(header)  record(change)  record(change) ...

A record is ``>II`` (body length, CRC32 of the body) then a msgpack body. The header body is
``{"journal": 1, "header": {...}, "base": text or None, "base_version": n}`` where ``header`` is
the caller's plain dict (buffer id, path or None, file format info, disk fingerprint). A change
body is ``[start, end, text, version]``.

The writer appends one record per change (one ``write``, no fsync) and the actor calls
:meth:`JournalWriter.flush` in batches (a timer, or every N edits): the OS survives a killed
process, so only a machine crash can lose the last batch. A record cut short by a crash, or one
whose CRC does not match, ends the replay: a torn tail is detected and dropped, never misread.
The header is always written with :meth:`JournalStore.replace_atomically`, so it is never torn.

All file access goes through :class:`JournalStore`, a small port with an OS implementation and
an in-memory one that can simulate a crash (only fsynced bytes survive).
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import msgpack

from rio.errors import FileError
from rio.text import ChunkedText

MAGIC = b"RIOJ\x00\x01"
FORMAT_VERSION = 1
#: Files up to this size keep their text in the header; bigger ones keep only a fingerprint and
#: are read back from disk at recovery (copying 100 MB into a journal on every open is not free).
BASE_TEXT_LIMIT = 16 * 1024 * 1024
#: A journal is compacted when its change records outgrow the text, but never below this.
COMPACT_FLOOR = 1024 * 1024

_FRAME = struct.Struct(">II")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def encode_record(body: Any) -> bytes:
    payload = msgpack.packb(body, use_bin_type=True)
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def keeps_base_text(path: str | None, size_bytes: int) -> bool:
    """Should the header carry the base text? Untitled documents always; files up to 16 MiB."""
    return path is None or size_bytes <= BASE_TEXT_LIMIT


# --- the port -------------------------------------------------------------------------------


class JournalStore(Protocol):
    """Where journals live. Names are plain file names (letters, digits, ``._-``)."""

    def append_bytes(self, name: str, data: bytes) -> None: ...
    def fsync(self, name: str) -> None: ...
    def read(self, name: str) -> bytes: ...
    def remove(self, name: str) -> None: ...
    def list(self) -> list[str]: ...
    def replace_atomically(self, name: str, data: bytes) -> None: ...
    def close(self, name: str) -> None: ...
    def location(self, name: str) -> str: ...


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name) or name.endswith(".tmp"):
        raise FileError("file.bad_journal_name", f"{name!r} is not a usable journal name.",
                        "Report this as a bug with the log from `rio status`.")


class MemoryJournalStore:
    """Journals in memory. ``crash()`` keeps only what was fsynced, like a power cut."""

    def __init__(self) -> None:
        self.files: dict[str, bytearray] = {}
        self.durable: dict[str, bytes] = {}

    def append_bytes(self, name: str, data: bytes) -> None:
        _check_name(name)
        self.files.setdefault(name, bytearray()).extend(data)

    def fsync(self, name: str) -> None:
        if name in self.files:
            self.durable[name] = bytes(self.files[name])

    def read(self, name: str) -> bytes:
        if name not in self.files:
            raise FileError("file.read_failed", f"There is no journal {name!r}.",
                            "Refresh the list of journals.")
        return bytes(self.files[name])

    def remove(self, name: str) -> None:
        self.files.pop(name, None)
        self.durable.pop(name, None)

    def list(self) -> list[str]:
        return sorted(self.files)

    def replace_atomically(self, name: str, data: bytes) -> None:
        _check_name(name)
        self.files[name] = bytearray(data)
        self.durable[name] = bytes(data)

    def close(self, name: str) -> None:
        pass

    def location(self, name: str) -> str:
        return f"memory:{name}"

    def crash(self) -> None:
        self.files = {name: bytearray(data) for name, data in self.durable.items()}


class OsJournalStore:
    """Journals as files in one folder (0700), each file 0600: they hold unsaved text."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = os.fspath(directory)
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        os.chmod(self.directory, 0o700)  # makedirs' mode is masked by umask and skips existing
        self._fds: dict[str, int] = {}

    def _path(self, name: str) -> str:
        _check_name(name)
        return os.path.join(self.directory, name)

    def location(self, name: str) -> str:
        return self._path(name)

    def append_bytes(self, name: str, data: bytes) -> None:
        fd = self._fds.get(name)
        if fd is None:
            fd = os.open(self._path(name), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                         0o600)
            self._fds[name] = fd
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    def fsync(self, name: str) -> None:
        fd = self._fds.get(name)
        if fd is not None:
            os.fsync(fd)

    def read(self, name: str) -> bytes:
        try:
            with open(self._path(name), "rb") as f:
                return f.read()
        except OSError as exc:
            raise FileError("file.read_failed", f"Cannot read the journal {name!r}: "
                            f"{exc.strerror}.", "Check the state folder's permissions.") from exc

    def remove(self, name: str) -> None:
        self.close(name)
        try:
            os.unlink(self._path(name))
        except FileNotFoundError:
            pass

    def list(self) -> list[str]:
        return sorted(n for n in os.listdir(self.directory)
                      if _NAME.match(n) and not n.endswith(".tmp")
                      and os.path.isfile(os.path.join(self.directory, n)))

    def replace_atomically(self, name: str, data: bytes) -> None:
        path = self._path(name)
        self.close(name)
        temp = path + ".tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the rename itself must survive a crash
        finally:
            os.close(dir_fd)

    def close(self, name: str) -> None:
        fd = self._fds.pop(name, None)
        if fd is not None:
            os.close(fd)

    def close_all(self) -> None:
        for name in list(self._fds):
            self.close(name)


# --- writing --------------------------------------------------------------------------------


class JournalWriter:
    """Appends one document's changes; see the module docstring for the format and batching."""

    def __init__(self, store: JournalStore, name: str, header: dict[str, Any],
                 base_text: str | None, *, base_version: int = 0) -> None:
        self.store = store
        self.name = name
        self.header = dict(header)
        self.unsynced = 0        # changes appended since the last flush
        self.change_bytes = 0    # bytes of change records since the last snapshot
        self._closed = False
        self._snapshot(base_text, base_version)

    def _snapshot(self, base_text: str | None, base_version: int) -> None:
        body = {"journal": FORMAT_VERSION, "header": self.header, "base": base_text,
                "base_version": base_version}
        self.store.replace_atomically(self.name, MAGIC + encode_record(body))
        self.unsynced = 0
        self.change_bytes = 0

    def append(self, change: Any) -> None:
        """Record one applied change (anything with start, end, text and version)."""
        self._check_open()
        record = encode_record([change.start, change.end, change.text, change.version])
        self.store.append_bytes(self.name, record)
        self.unsynced += 1
        self.change_bytes += len(record)

    def flush(self) -> None:
        """Make every appended change durable (fsync)."""
        self._check_open()
        if self.unsynced:
            self.store.fsync(self.name)
            self.unsynced = 0

    def should_compact(self, text_chars: int) -> bool:
        return self.change_bytes > max(COMPACT_FLOOR, text_chars)

    def compact(self, text: str, version: int) -> None:
        """Replace the journal by a snapshot of ``text`` at ``version`` (atomically)."""
        self._check_open()
        self._snapshot(text, version)

    def close(self) -> None:
        """Flush and let go of the file; the journal stays (the edits are still unsaved)."""
        if not self._closed:
            self.flush()
            self.store.close(self.name)
            self._closed = True

    def discard(self) -> None:
        """Remove the journal: the document was saved or its edits thrown away."""
        self.store.remove(self.name)
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise FileError("file.journal_closed", f"The journal {self.name!r} is closed.",
                            "Report this as a bug with the log from `rio status`.")


# --- reading --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Recovered:
    """A document brought back from its journal."""

    header: dict[str, Any]
    text: str
    version: int
    dropped_tail: bool   # a torn or corrupt end was found and ignored
    replayed: int = 0    # how many changes were applied onto the base


def _records(data: bytes, offset: int):
    """Yield (body, end offset) for each intact record; stop at the first torn or corrupt one."""
    while offset < len(data):
        if len(data) - offset < _FRAME.size:
            return
        length, crc = _FRAME.unpack_from(data, offset)
        start = offset + _FRAME.size
        payload = data[start:start + length]
        if len(payload) < length or zlib.crc32(payload) != crc:
            return
        try:
            # Header dicts are the caller's: accept any key type msgpack can carry.
            body = msgpack.unpackb(payload, raw=False, strict_map_key=False)
        except (ValueError, TypeError, msgpack.UnpackException):
            return
        offset = start + length
        yield body, offset


def same_content(now: dict[str, Any] | None, then: dict[str, Any] | None) -> bool:
    """Do two disk fingerprints describe the same bytes?

    With a content hash on both sides only size and hash count: a file touched but unchanged
    (a checkout, a backup tool) still replays. Otherwise every field must match.
    """
    hashed = isinstance(now, dict) and isinstance(then, dict)
    if hashed and now.get("sha256") and then.get("sha256"):
        return now.get("sha256") == then.get("sha256") and now.get("size") == then.get("size")
    return now == then


def _read_head(data: bytes, location: str) -> tuple[dict[str, Any], int]:
    """The header record's body and where it ends; ``file.journal_unreadable`` if there is none."""
    unreadable = FileError("file.journal_unreadable",
                           f"The journal at {location} has no readable header, so it holds no "
                           f"edits that can be brought back.",
                           f"Delete the journal at {location}.")
    if not data.startswith(MAGIC):
        raise unreadable
    first = next(_records(data, len(MAGIC)), None)
    if first is None or not isinstance(first[0], dict) or "header" not in first[0]:
        raise unreadable
    head, end = first
    if head.get("journal") != FORMAT_VERSION:
        raise FileError("file.journal_unreadable",
                        f"The journal at {location} is format {head.get('journal')!r}; this Rio "
                        f"reads format {FORMAT_VERSION}.", "Open it with the Rio that wrote it.")
    return head, end


def recover(data: bytes, *, read_base: Callable[[], tuple[str, dict]] | None = None,
            location: str = "the journal folder") -> Recovered:
    """Rebuild a document from journal bytes.

    When the header holds no base text, ``read_base()`` must give the file's current text and
    fingerprint; a fingerprint that differs from the header's means the edits cannot be
    replayed, and ``file.conflict`` is raised (the journal is left where it is).
    """
    head, end = _read_head(data, location)
    records = _records(data, end)
    header = head["header"]
    base = head.get("base")
    version = int(head.get("base_version", 0))
    if base is None:
        if read_base is None:
            raise FileError("file.journal_needs_base",
                            f"The journal at {location} keeps only a fingerprint of its file.",
                            "Recover it with the file at hand.")
        base, fingerprint = read_base()
        if not same_content(fingerprint, header.get("fingerprint")):
            raise FileError("file.conflict",
                            f"The file {header.get('path')!r} changed on disk after its unsaved "
                            f"edits were journaled, so they cannot be replayed onto it. The "
                            f"journal is kept at {location}.",
                            "Open the file as it is now, redo the edits by hand, then delete "
                            "the journal.", journal=location)
    text = ChunkedText(base)
    replayed = 0
    position = end    # the end of the last record that was used
    clean = True
    for body, record_end in records:
        ok = (isinstance(body, list) and len(body) == 4 and body[3] == version + 1
              and isinstance(body[0], int) and isinstance(body[1], int)
              and isinstance(body[2], str) and 0 <= body[0] <= body[1] <= len(text))
        if not ok:  # out of order or out of range: not this document's next change
            clean = False
            break
        text.replace(body[0], body[1], body[2])
        version += 1
        replayed += 1
        position = record_end
    # Stopping short of the end means a torn or corrupt record: everything after it is dropped.
    dropped = not clean or position != len(data)
    return Recovered(header, text.text(), version, dropped, replayed)


def peek_header(data: bytes) -> dict[str, Any]:
    """The caller's header dict (buffer id, path, format, fingerprint) without replaying.

    Recovery of a big file needs the path to read the base from before calling :func:`recover`.
    An unreadable journal gives ``{}``; :func:`recover` then says why.
    """
    try:
        header = _read_head(data, "the journal")[0]["header"]
    except FileError:
        return {}
    return header if isinstance(header, dict) else {}
