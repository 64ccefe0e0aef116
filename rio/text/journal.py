"""The journal: every unsaved edit of a document, on disk, so a killed core loses nothing.

Swap files, the '90s way (ADR-0006). One journal per open document with unsaved edits:

    MAGIC  record(header)  record(change)  record(change) ...

A record is ``>II`` (body length, CRC32 of the body) then a msgpack body. The header body is
``{"journal": 1, "header": {...}, "base": text or None, "base_version": n}`` where ``header`` is
the caller's plain dict (buffer id, path or None, file format info, disk fingerprint). A change
body is ``[start, end, text, version]``, or ``[start, end, text, version, request]`` for the
last change of a client's request (its request id, so a resend after a restart is recognised).

The writer appends the records of one op in one ``write`` (no fsync) and the actor calls
:meth:`JournalWriter.flush` in batches (a timer, or every N edits): the OS survives a killed
process, so only a machine crash can lose the last batch. The header is always written with
:meth:`JournalStore.replace_atomically`, together with any first changes, so it is never torn.
An append that fails (a full disk) is cut back to the last good record (``truncate``) and
raises ``file.journal_write_failed``: the caller takes the edit back (ADR-0006, revised).

Reading: a record cut short or whose CRC does not match is never misread. Recovery scans past
it for the next intact record; records after a gap are replayed only while their versions follow
on without a hole (changes are positional: one replayed after a missing one would garble the
text). What could not be replayed is counted in :class:`Recovered` so the caller can say so.

All file access goes through :class:`JournalStore` (rio/text/journal_store.py, re-exported here), a
small port with an OS implementation, an in-memory one that can simulate a crash (only fsynced
bytes survive) and a faulty one that fails writes part-way like a full disk.
"""

from __future__ import annotations

import errno
import os
import re
import struct
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import msgpack

from rio.protocol.errors import FileError
from rio.text.journal_store import (  # noqa: F401
    DAMAGED,
    FaultyJournalStore,
    JournalStore,
    MemoryJournalStore,
    OsJournalStore,
    damaged_name,
    is_journal_name,
)
from rio.text.text import ChunkedText

MAGIC = b"RIOJ\x00\x01"
FORMAT_VERSION = 1
#: Files up to this size keep their text in the header; bigger ones keep only a fingerprint and
#: are read back from disk at recovery (copying 100 MB into a journal on every open is not free).
BASE_TEXT_LIMIT = 16 * 1024 * 1024
#: A journal is compacted when its change records outgrow the text, but never below this.
COMPACT_FLOOR = 1024 * 1024

_FRAME = struct.Struct(">II")
#: The first byte of a change body (a msgpack array of 4 or 5 items, the shapes recover()
#: replays): where a scan past damage looks for the next record.
_BODY_START = re.compile(rb"[\x94\x95]")


def encode_record(body: Any) -> bytes:
    payload: bytes = msgpack.packb(body, use_bin_type=True)   # msgpack is untyped
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def change_body(change: Any, request: str | None = None) -> list[Any]:
    """The record body of one applied change (anything with start, end, text and version)."""
    body = [change.start, change.end, change.text, change.version]
    if request is not None:
        body.append(request)
    return body


def disk_of(location: str) -> str:
    """The mount point holding ``location`` (what a user frees space on); itself if unknown."""
    if not os.path.isabs(location):
        return location
    path = os.path.dirname(location)
    while path != os.path.dirname(path) and not os.path.ismount(path):
        path = os.path.dirname(path)
    return path


def journal_write_failed(location: str, exc: OSError, label: str | None = None) -> FileError:
    """``file.journal_write_failed``: the buffer ``label`` is not protected against a crash."""
    who = label or "this document"
    folder = os.path.dirname(location) if os.path.isabs(location) else location
    return FileError(
        "file.journal_write_failed",
        f"The journal of {who} could not be written ({exc.strerror or exc}) at {location}: the "
        f"edit was not applied, and {who} is not protected against a crash until the journal "
        f"can be written again.",
        f"Free disk space on {disk_of(location)} (the journal folder is {folder}); Rio retries "
        f"the journal with your next edit, or save {who} to a disk with room.",
        journal=location, buffer_name=who, errno=errno.errorcode.get(exc.errno or 0, ""))


def keeps_base_text(path: str | None, size_bytes: int) -> bool:
    """Should the header carry the base text? Untitled documents always; files up to 16 MiB."""
    return path is None or size_bytes <= BASE_TEXT_LIMIT


# --- writing --------------------------------------------------------------------------------


class JournalWriter:
    """Appends one document's changes; see the module docstring for the format and batching."""

    def __init__(self, store: JournalStore, name: str, header: dict[str, Any],
                 base_text: str | None, *, base_version: int = 0, changes: Any = (),
                 request: str | None = None, label: str | None = None) -> None:
        """Write the header (and ``changes``, the first ones) as one atomic, fsynced file.

        ``request`` goes on the last of ``changes``; ``label`` names the document in errors.
        A write that fails raises ``file.journal_write_failed`` and leaves whatever journal was
        there before.
        """
        self.store = store
        self.name = name
        self.header = dict(header)
        self.label = label
        self.unsynced = 0        # changes appended since the last flush
        self.change_bytes = 0    # bytes of change records since the last snapshot
        self.size = 0            # bytes of intact records: where a failed append is cut back to
        self.needs_rewrite = False   # an fsync failed: only a fresh snapshot is trustworthy
        self._torn = False       # a failed append could not be cut back yet
        self._compact_after = 0  # a compaction that failed is retried only after more changes
        self._closed = False
        self._snapshot(base_text, base_version, changes, request)

    def _failed(self, exc: OSError) -> FileError:
        return journal_write_failed(self.store.location(self.name), exc, self.label)

    def _snapshot(self, base_text: str | None, base_version: int, changes: Any = (),
                  request: str | None = None) -> None:
        body = {"journal": FORMAT_VERSION, "header": self.header, "base": base_text,
                "base_version": base_version}
        changes = list(changes)
        records = [encode_record(change_body(c, request if i == len(changes) - 1 else None))
                   for i, c in enumerate(changes)]
        data = MAGIC + encode_record(body) + b"".join(records)
        try:
            self.store.replace_atomically(self.name, data)
        except OSError as exc:
            raise self._failed(exc) from exc
        self.size = len(data)
        self.unsynced = 0
        self.change_bytes = sum(map(len, records))
        self.needs_rewrite = self._torn = False
        self._compact_after = 0

    def append(self, change: Any, request: str | None = None) -> None:
        """Record one applied change (anything with start, end, text and version).

        ``request`` names the request that this change completes (a fifth field), so a resend
        of it after a restart is recognised instead of applied twice (ADR-0020).
        """
        self.append_many([change], request)

    def append_many(self, changes: Any, request: str | None = None) -> None:
        """Record the changes of one op in one write; all of them land, or none.

        ``request`` goes on the last change. A write that fails part-way (a full disk) is cut
        back to the last intact record, so records appended once space returns never follow a
        torn one; the failure is ``file.journal_write_failed``.
        """
        self._check_open()
        changes = list(changes)
        data = b"".join(encode_record(change_body(c, request if i == len(changes) - 1 else None))
                        for i, c in enumerate(changes))
        if not data:
            return
        try:
            if self._torn:
                self.store.truncate(self.name, self.size)
                self._torn = False
            self.store.append_bytes(self.name, data)
        except OSError as exc:
            self._torn = True
            try:
                self.store.truncate(self.name, self.size)
                self._torn = False
            except OSError:
                pass   # cut back before the next append, which fails until it can be
            raise self._failed(exc) from exc
        self.size += len(data)
        self.unsynced += len(changes)
        self.change_bytes += len(data)

    def flush(self) -> None:
        """Make every appended change durable (fsync)."""
        self._check_open()
        if self.unsynced:
            try:
                self.store.fsync(self.name)
            except OSError as exc:
                # After a failed fsync the kernel may have dropped the unwritten pages; a
                # retried fsync can then succeed with the records gone. Only a rewrite is safe.
                self.needs_rewrite = True
                raise self._failed(exc) from exc
            self.unsynced = 0

    def should_compact(self, text_chars: int) -> bool:
        return self.change_bytes > max(COMPACT_FLOOR, text_chars, self._compact_after)

    def defer_compaction(self) -> None:
        """A compaction failed (no room for the snapshot): try again after as many changes."""
        self._compact_after = 2 * self.change_bytes

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
    requests: tuple[str, ...] = ()   # request ids of the replayed changes, oldest first
    skipped: int = 0          # intact change records after a gap, which could not be replayed
    damaged_bytes: int = 0    # bytes that are no intact record (torn, flipped, garbage)
    damage_at: int | None = None   # offset of the first damaged byte


def _frame_at(data: bytes, offset: int) -> tuple[Any, int] | None:
    """The intact record at ``offset`` as (body, end), or None (short, CRC, undecodable)."""
    if len(data) - offset < _FRAME.size:
        return None
    length, crc = _FRAME.unpack_from(data, offset)
    start = offset + _FRAME.size
    if start + length > len(data):
        return None
    payload = data[start:start + length]
    if zlib.crc32(payload) != crc:
        return None
    try:
        # Header dicts are the caller's: accept any key type msgpack can carry.
        body = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None
    return body, start + length


def _int_size(marker: int) -> int:
    """Bytes of a msgpack int starting with ``marker`` (0: not an int)."""
    if marker <= 0x7f or marker >= 0xe0:
        return 1
    return {0xcc: 2, 0xcd: 3, 0xce: 5, 0xcf: 9, 0xd0: 2, 0xd1: 3, 0xd2: 5, 0xd3: 9}.get(marker, 0)


def _str_size(data: bytes, pos: int) -> int:
    """Bytes of a msgpack str starting at ``pos``, header included (0: not a str)."""
    marker = data[pos]
    if 0xa0 <= marker <= 0xbf:
        return 1 + (marker & 0x1f)
    width = {0xd9: 1, 0xda: 2, 0xdb: 4}.get(marker)
    if width is None or pos + 1 + width > len(data):
        return 0
    return 1 + width + int.from_bytes(data[pos + 1:pos + 1 + width], "big")


def _change_shaped(data: bytes, start: int, end: int) -> bool:
    """Does ``data[start:end]`` parse as [int, int, str, int(, str)] ending exactly at ``end``?

    A cheap test before the CRC when scanning past damage: random bytes almost never pass it,
    so a scan through megabytes of garbage does not CRC megabytes at every candidate.
    """
    items = {0x94: 4, 0x95: 5}.get(data[start])
    pos = start + 1
    for kind in ("int", "int", "str", "int", "str")[:items or 0]:
        if pos >= end:
            return False
        size = _int_size(data[pos]) if kind == "int" else _str_size(data, pos)
        if not size:
            return False
        pos += size
    return items is not None and pos == end


def _scan(data: bytes, offset: int) -> Iterator[tuple[str, Any, int]]:
    """Yield ("record", body, end) for intact records and ("damage", start, end) between them.

    Past damage, the next intact record is found by trying each offset whose body would be a
    change ([start, end, text, version(, request)], parsed to its exact length before any CRC:
    13 MB of random garbage is scanned in about 0.35 s); a CRC32 match there by chance is a 1
    in 2**32 event, and the version check in :func:`recover` stands behind it.
    """
    while offset < len(data):
        found = _frame_at(data, offset)
        if found is not None:
            yield "record", found[0], found[1]
            offset = found[1]
            continue
        resume = len(data)
        for match in _BODY_START.finditer(data, offset + 1 + _FRAME.size):
            candidate = match.start() - _FRAME.size
            length = _FRAME.unpack_from(data, candidate)[0]
            if (match.start() + length <= len(data)
                    and _change_shaped(data, match.start(), match.start() + length)
                    and _frame_at(data, candidate) is not None):
                resume = candidate
                break
        yield "damage", offset, resume
        offset = resume


def _records(data: bytes, offset: int) -> Iterator[tuple[Any, int]]:
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
    if (isinstance(now, dict) and isinstance(then, dict)
            and now.get("sha256") and then.get("sha256")):
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


def recover(data: bytes, *, read_base: Callable[[], tuple[str, dict[str, Any]]] | None = None,
            location: str = "the journal folder") -> Recovered:
    """Rebuild a document from journal bytes.

    When the header holds no base text, ``read_base()`` must give the file's current text and
    fingerprint; a fingerprint that differs from the header's means the edits cannot be
    replayed, and ``file.conflict`` is raised (the journal is left where it is).
    """
    head, end = _read_head(data, location)
    header = head["header"]
    base = head.get("base")
    version = int(head.get("base_version", 0))
    if base is None:
        if read_base is None:
            raise FileError("file.journal_needs_base",
                            f"The journal at {location} keeps only a fingerprint of its file.",
                            "Recover it with the file at hand.")
        base, fingerprint = read_base()
        # A journal written at recovery onto a file that had changed meanwhile says which file
        # its base is (base_fingerprint); "fingerprint" stays the one the edits were made on.
        if not same_content(fingerprint, header.get("base_fingerprint")
                            or header.get("fingerprint")):
            raise FileError("file.conflict",
                            f"The file {header.get('path')!r} changed on disk after its unsaved "
                            f"edits were journaled, so they cannot be replayed onto it. The "
                            f"journal is kept at {location}.",
                            "Open the file as it is now, redo the edits by hand, then delete "
                            "the journal.", journal=location)
    text = ChunkedText(base)
    replayed = skipped = damaged = 0
    damage_at: int | None = None
    requests: list[str] = []
    chain = True      # every change so far followed on from the one before
    for kind, *item in _scan(data, end):
        if kind == "damage":
            damaged += item[1] - item[0]
            damage_at = item[0] if damage_at is None else damage_at
            continue
        body = item[0]
        # The safe rule: a change is replayed only onto the exact text it was made on, i.e.
        # when its version follows the last replayed one. Past damage that held no change (a
        # torn append cut back late) the chain goes on; after a lost change it is broken for
        # good, because positional edits replayed onto the wrong text would garble it.
        ok = (chain and isinstance(body, list) and len(body) in (4, 5)
              and body[3] == version + 1
              and isinstance(body[0], int) and isinstance(body[1], int)
              and isinstance(body[2], str) and 0 <= body[0] <= body[1] <= len(text))
        if not ok:
            chain = False
            skipped += 1
            continue
        text.replace(body[0], body[1], body[2])
        version += 1
        replayed += 1
        if len(body) == 5 and isinstance(body[4], str):
            requests.append(body[4])
    dropped = bool(skipped or damaged)
    return Recovered(header, text.text(), version, dropped, replayed, tuple(requests),
                     skipped, damaged, damage_at)


def damage_report(name: str, header: dict[str, Any], rec: Recovered, kept: str
                  ) -> dict[str, Any]:
    """The recovery failure for the journal ``name``, replayed only in part: a
    ``file.journal_damaged`` naming the document, what was and was not replayed, and ``kept``,
    the damaged copy."""
    who = (os.path.basename(header["path"]) if header.get("path")
           else f"Untitled-{str(header.get('buffer') or name)[-4:]}")
    lost = []
    if rec.damaged_bytes:
        lost.append(f"{rec.damaged_bytes} bytes of it were unreadable")
    if rec.skipped:
        lost.append(f"{rec.skipped} recorded edit(s) after the damage could not be replayed "
                    f"(an edit is replayed only onto the exact text it was made on)")
    err = FileError("file.journal_damaged",
                    f"The journal of {who} was damaged: {rec.replayed} edit(s) were brought "
                    f"back, but {' and '.join(lost)}. The damaged journal is kept at {kept}.",
                    f"Check {who} before saving it and redo what is missing; keep {kept} for a "
                    f"bug report, then delete it.",
                    kept=kept, replayed=rec.replayed, skipped=rec.skipped,
                    damaged_bytes=rec.damaged_bytes, damage_at=rec.damage_at)
    return {"journal": name, "buffer": header.get("buffer") or name, "name": who,
            **err.to_wire()}


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
