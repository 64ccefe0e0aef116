"""One open buffer as the core holds it, and the ``buffer.*`` ops on it — without any actor.

:class:`OpenBuffer` joins a :class:`~rio.text.document.Document` to its file (path, format,
fingerprint) and its journal, and answers each op with ``(result, events)``; the
:class:`~actors.core.documents_actor.DocumentActor` only delivers them. :class:`BufferFactory` opens files
through the workspace (confined) and brings buffers back from journals after a crash.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rio.files.chunked_load import Digest, load_file_chunks, sha256_now
from rio.files.files import (
    DEFAULT_MAX_BYTES,
    FileFormat,
    Fingerprint,
    OsFilePort,
    disk_changed,
    load_file,
    save_file,
)
from rio.files.owner_only import OwnerOnlyPaths
from rio.files.workspace import Workspace
from rio.protocol.errors import DocumentError, FileError, RioError
from rio.protocol.op_table import OpTable
from rio.protocol.ops import unknown_op
from rio.text.document import Change, Document
from rio.text.journal import JournalWriter, damage_report, journal_write_failed, recover
from rio.text.journal_store import JournalStore, OsJournalStore, damaged_name
from rio.text.text import CHUNK_CHARS, ChunkedText

log = logging.getLogger("rio.buffers")

#: Files up to this size keep their base text in the journal; bigger ones keep a fingerprint.
JOURNAL_BASE_TEXT_LIMIT = 16 * 1024 * 1024
NEWLINES = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}
#: A version is ``epoch << EPOCH_BITS | count``: every recovery starts a new epoch, so a version
#: handed out before a restart never names a text after it (ADR-0020).
EPOCH_BITS = 32
#: How many recent request ids a buffer remembers (in memory and in its journal): a resend of
#: one of them is answered instead of applied twice (ADR-0020).
REQUEST_MEMORY = 256
#: The ops a resent request id must not apply twice.
DEDUPED_OPS = frozenset({"buffer.replace", "buffer.apply", "buffer.undo", "buffer.redo"})
#: The ops that change a buffer's text (a key below owner may not, in a file it may not save).
TEXT_CHANGING_OPS = DEDUPED_OPS
#: After a journal rewrite failed (a full disk), the flush timer tries again this much later.
REWRITE_RETRY_S = 2.0
Events = list[tuple[str, dict[str, Any]]]


def change_event(buffer_id: str, change: Change) -> tuple[str, dict[str, Any]]:
    return ("buffer.changed", {"buffer": buffer_id, "version": change.version,
                               "start": change.start, "end": change.end, "text": change.text,
                               "origin": change.origin, "label": change.label,
                               "kind": change.kind})


def stale_base(name: str, base: int) -> DocumentError:
    return DocumentError("stale_base", f"{name} was recovered after a restart; your copy "
                       f"(version {base}) is out of date.",
                       "Fetch the text again (buffer.text) and resend the edit on it.")


def change_wire(change: Change) -> dict[str, Any]:
    return {"version": change.version, "start": change.start, "end": change.end,
            "text": change.text, "origin": change.origin, "kind": change.kind}


@dataclass(frozen=True)
class RecoveryReport:
    buffers: tuple["OpenBuffer", ...]
    failures: tuple[dict[str, Any], ...]

    def to_wire(self) -> dict[str, Any]:
        return {"buffers": [b.summary() for b in self.buffers], "failures": list(self.failures),
                "count": len(self.buffers)}


class OpenBuffer:
    """One open buffer's state and its per-buffer ``buffer.*`` ops (:meth:`handle`)."""

    handles: OpTable[OpenBuffer] = OpTable()

    def __init__(self, buffer_id: str, document: Document, *, path: Path | None,
                 workspace: Workspace, fmt: FileFormat, fingerprint: Fingerprint | None,
                 journal_store: JournalStore, file_port: Any,
                 owner_only: OwnerOnlyPaths | None = None):
        self.id = buffer_id
        self.document = document
        self.path = path
        self.workspace = workspace
        self.format = fmt
        self.fingerprint = fingerprint
        self.journal_store = journal_store
        self.file_port = file_port
        self.journal: JournalWriter | None = None
        self.conflict_reported: Fingerprint | None = None
        self.recovered = False
        #: the first version of this epoch: a base_version below it predates a recovery
        self.epoch_start = document.version
        #: the version right after recovery (merge_undo never reaches back past it)
        self.first_version = document.version
        #: recent request ids → their result, oldest first (ADR-0020)
        self.requests: OrderedDict[str, Any] = OrderedDict()
        self._request: str | None = None
        #: the journal failure while this buffer's edits cannot be journaled (ADR-0006 revised)
        self.unprotected: FileError | None = None
        #: events that are not any op's answer (journal failed / restored), for the actor to send
        self.notices: Events = []
        self._rewrite_after = 0.0   # clock time before which no rewrite is tried again
        self.clock: Callable[[], float] = time.monotonic
        #: what a key below owner may not write (ADR-0019); the factory shares one
        self.owner_only = owner_only or OwnerOnlyPaths(workspace.root)
        #: the role of the request being served (:meth:`handle`)
        self._role = "owner"
        #: resolves a save-as path (set by whoever holds the workspace; default: ours)
        self.factory_resolve: Callable[[str], Path] = (
            lambda p: self.workspace.resolve(p, must_exist=False, kind="file"))

    # --- facts ----------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else f"Untitled-{self.id[-4:]}"

    def summary(self) -> dict[str, Any]:
        doc = self.document
        where = self.workspace.where(self.path) if self.path is not None else {"path": None}
        return {"buffer": self.id, "name": self.name, "path": where["path"],
                "path_error": where.get("path_error"),
                "version": doc.version, "dirty": doc.dirty, "length": len(doc.buffer),
                "line_count": doc.buffer.line_count, "format": self.format.to_dict(),
                "can_undo": doc.can_undo, "can_redo": doc.can_redo,
                "undo_label": doc.undo_label, "redo_label": doc.redo_label,
                "epoch": doc.version >> EPOCH_BITS,
                "recovered": self.recovered}

    # --- the ops --------------------------------------------------------------------------------
    def handle(self, op: str, args: dict[str, Any], request: str | None = None, *,
               role: str = "owner") -> tuple[Any, Events]:
        """Serve one op. ``request`` names the request (client and id): a change op whose
        request was already applied — before a restart too — is answered, not applied again;
        that check comes before the epoch check, so such a resend is never refused. ``role`` is
        the sender's (rio/protocol/roles.py): a save by a key below owner is held to
        rio/files/owner_only.py."""
        self._role = role
        try:
            return self._handle(op, args, request)
        finally:
            self._role = "owner"

    def _handle(self, op: str, args: dict[str, Any],
                request: str | None) -> tuple[Any, Events]:
        if op in TEXT_CHANGING_OPS and self._role != "owner" and self.path is not None:
            # The text of a file an editor may not save is not the editor's to change either:
            # the owner's next save (Save All before a run) would write it (ADR-0019).
            refused = self.owner_only.refusal(self.path, self._role, self.file_port,
                                              doing="editing")
            if refused is not None:
                raise refused
        method: Callable[[dict[str, Any]], tuple[Any, Events]] | None = self.handles.method(
            self, op)
        if method is None:
            raise unknown_op(op)
        if op in DEDUPED_OPS:
            method = self._all_or_nothing(method)
        if request is None or op not in DEDUPED_OPS:
            return method(args)
        done = self.requests.get(request)
        if done is not None:
            return done, []
        self._request = request
        try:
            result, events = method(args)
        finally:
            self._request = None
        self.remember(request, result)
        return result, events

    def _all_or_nothing(self, method: Callable[[dict[str, Any]], tuple[Any, Events]]
                        ) -> Callable[[dict[str, Any]], tuple[Any, Events]]:
        """An edit is acknowledged only once it is journaled: if the journal cannot be written
        the document is put back as it was and the op fails with file.journal_write_failed."""
        def run(args: dict[str, Any]) -> tuple[Any, Events]:
            with self.document.atomic():
                return method(args)
        return run

    def take_notices(self) -> Events:
        notices, self.notices = self.notices, []
        return notices

    def remember(self, request: str, result: Any) -> None:
        self.requests[request] = result
        while len(self.requests) > REQUEST_MEMORY:
            self.requests.popitem(last=False)

    def _request_ids(self) -> list[str]:
        """The ids to keep in a journal header: the remembered ones and the one being applied
        (a snapshot drops the records that carried them)."""
        return [*self.requests, *filter(None, [self._request])][-REQUEST_MEMORY:]

    def _check_base(self, base: int | None) -> None:
        if base is not None and base < self.epoch_start:
            raise stale_base(self.name, base)

    @handles("buffer.replace")
    def op_replace(self, args: dict[str, Any]) -> tuple[Any, Events]:
        self._check_base(args["base_version"])
        change = self.document.replace(args["start"], args["end"], args["text"],
                                       origin=args["origin"], base_version=args["base_version"],
                                       label=args["label"])
        self._journal([change])
        return ({"version": change.version, "start": change.start, "end": change.end},
                [change_event(self.id, change)])

    @handles("buffer.apply")
    def op_apply(self, args: dict[str, Any]) -> tuple[Any, Events]:
        self._check_base(args["base_version"])
        changes = self.document.apply([tuple(e) for e in args["edits"]], origin=args["origin"],
                                      base_version=args["base_version"],
                                      label=args["label"] or "Replace All")
        self._journal(changes)
        return ({"version": self.document.version, "count": len(changes)},
                [change_event(self.id, c) for c in changes])

    @handles("buffer.undo")
    def op_undo(self, args: dict[str, Any]) -> tuple[Any, Events]:
        return self._stepped(self.document.undo(origin=args["origin"]))

    @handles("buffer.redo")
    def op_redo(self, args: dict[str, Any]) -> tuple[Any, Events]:
        return self._stepped(self.document.redo(origin=args["origin"]))

    def _stepped(self, changes: list[Change]) -> tuple[Any, Events]:
        """An undo or redo step's changes, journaled: the reply names them, as the events do."""
        self._journal(changes)
        return ({"version": self.document.version, "changes": [change_wire(c) for c in changes]},
                [change_event(self.id, c) for c in changes])

    @handles("buffer.merge_undo")
    def op_merge_undo(self, args: dict[str, Any]) -> tuple[Any, Events]:
        # A turn begun before a recovery merges only what came after it.
        self.document.merge_since(max(args["since_version"], self.first_version), args["label"])
        # the path: a turn's record names the files it changed (agent.history)
        path = self.workspace.where(self.path)["path"] if self.path is not None else None
        return {"version": self.document.version, "undo_label": self.document.undo_label,
                "path": path}, []

    @handles("buffer.text")
    def op_text(self, args: dict[str, Any]) -> tuple[Any, Events]:
        length = len(self.document.buffer)
        start = args["start"]
        end = length if args["end"] is None else args["end"]
        if start > end or end > length:
            raise DocumentError("bad_range", f"Range [{start}, {end}) is outside the buffer "
                              f"(length {length}).", "Ask for a range within buffer.info's length.")
        return ({"text": self.document.buffer.slice(start, end), "version": self.document.version,
                 "start": start, "end": end, "length": length}, [])

    @handles("buffer.lines")
    def op_lines(self, args: dict[str, Any]) -> tuple[Any, Events]:
        count = self.document.buffer.line_count
        first, last = min(args["first"], count), min(args["last"], count)
        return ({"lines": self.document.buffer.lines(first, max(first, last)), "first": first,
                 "line_count": count, "version": self.document.version}, [])

    @handles("buffer.info")
    def op_info(self, args: dict[str, Any]) -> tuple[Any, Events]:
        return self.summary(), []

    @handles("buffer.save")
    def op_save(self, args: dict[str, Any]) -> tuple[Any, Events]:
        target = self.path
        fmt = self.format
        if args["path"]:
            target = self.workspace.resolve(args["path"], must_exist=False, kind="file")
        if target is None:
            raise DocumentError("untitled", f"{self.name} has no file name yet.",
                              "Save it with a path (File > Save As).")
        if args["encoding"] or args["newline"]:
            encoding = args["encoding"] or fmt.encoding
            try:
                fmt = FileFormat(encoding=encoding, bom=encoding in ("utf-8-sig", "utf-16-le",
                                                                     "utf-16-be", "utf-32-le",
                                                                     "utf-32-be"),
                                 newline=NEWLINES.get(args["newline"] or "", fmt.newline),
                                 final_newline=fmt.final_newline)
            except ValueError as exc:
                raise DocumentError("bad_format", f"Cannot save as {encoding}: {exc}.",
                                    "Pick utf-8, utf-8-sig, utf-16-le, utf-16-be or "
                                    "latin-1.") from None
        expected = self.fingerprint if target == self.path else None
        if target == self.path:
            self.workspace.check_unmoved(target)  # swapped for a link since: refused, kept dirty
        owner = self._role == "owner"
        if not owner:   # code that runs later, executables: the owner's (ADR-0019)
            refused = self.owner_only.refusal(target, self._role, self.file_port)
            if refused is not None:
                raise refused
        fingerprint = save_file(target, self.document.buffer.iter_chunks(), fmt,
                                expected=expected, port=self.file_port, force=args["force"],
                                keep_exec=owner)
        self.path, self.format, self.fingerprint = target, fmt, fingerprint
        self.conflict_reported = None
        self.document.mark_saved()
        self._drop_journal()
        self.recovered = False
        summary = self.summary()
        return summary, [("buffer.saved", summary)]

    @handles("buffer.close")
    def op_close(self, args: dict[str, Any]) -> tuple[Any, Events]:
        if self.document.dirty and not args["discard"]:
            raise DocumentError("dirty", f"{self.name} has unsaved changes.",
                              "Save it (buffer.save), or close it with discard: true.")
        self._drop_journal()
        return {"closed": self.id}, [("buffer.closed", {"buffer": self.id, "name": self.name})]

    @handles("buffer.revert")
    def op_revert(self, args: dict[str, Any]) -> tuple[Any, Events]:
        if self.path is None:
            raise DocumentError("untitled", f"{self.name} was never saved.", "Nothing to revert to.")
        loaded = load_file(self.path, port=self.file_port)
        change = self.document.replace(0, len(self.document.buffer), loaded.text, origin="revert",
                                       label="Revert")
        self.format, self.fingerprint = loaded.format, loaded.fingerprint
        self.document.mark_saved()
        self._drop_journal()
        self.conflict_reported = None
        return self.summary(), [change_event(self.id, change), ("buffer.saved", self.summary())]

    # --- the journal and the disk ---------------------------------------------------------------
    def _journal(self, changes: list[Change], carry: dict[str, Any] | None = None) -> None:
        if not changes:
            return
        try:
            if self.journal is None:
                self._start_journal(changes, carry)
            else:
                self._append(changes)
        except FileError as err:
            if err.kind == "file.journal_write_failed":
                self._journal_failed(err)
            raise
        self._journal_ok()
        assert self.journal is not None
        if self.journal.should_compact(len(self.document.buffer)):
            # The request ids of the records compaction drops live on in the header.
            self.journal.header["requests"] = self._request_ids()
            try:
                self.journal.compact(self.document.text(), self.document.version)
            except FileError as err:   # the journal as it was still holds every change
                log.warning("%s: compaction deferred: %s", self.name, err.message)
                self.journal.defer_compaction()

    def _journal_failed(self, err: FileError) -> None:
        if self.unprotected is None:
            self.notices.append(("buffer.journal_failed",
                                 {"buffer": self.id, "name": self.name, **err.to_wire()}))
        self.unprotected = err

    def _journal_ok(self) -> None:
        if self.unprotected is not None:
            self.unprotected = None
            self.notices.append(("buffer.journal_restored", {"buffer": self.id,
                                                             "name": self.name}))

    def _append(self, changes: list[Change]) -> None:
        """Journal the changes; the last one carries the request it completes."""
        assert self.journal is not None
        self.journal.append_many(changes, self._request)

    def _start_journal(self, changes: list[Change],
                       carry: dict[str, Any] | None = None) -> None:
        # The base is the text before these changes: rebuild it by undoing them on a copy.
        text = self.document.text()
        for change in reversed(changes):
            text = text[:change.start] + change.removed + text[change.start + len(change.text):]
        header = {"buffer": self.id, "path": str(self.path) if self.path else None,
                  "format": self.format.to_dict(),
                  "fingerprint": self.fingerprint.to_dict() if self.fingerprint else None,
                  "base_version": changes[0].version - 1,
                  "epoch": self.epoch_start >> EPOCH_BITS, "requests": self._request_ids()}
        # ``carry``: a recovered journal's header fields, kept (fields this code does not know
        # included) under the ones set here.
        header = {**(carry or {}), **header}
        keep_text = self.path is None or len(text) <= JOURNAL_BASE_TEXT_LIMIT
        # Header and first changes in one atomic, fsynced write: never a journal without them.
        self.journal = JournalWriter(self.journal_store, self.id, header,
                                     text if keep_text else None,
                                     base_version=changes[0].version - 1, changes=changes,
                                     request=self._request, label=self.name)

    def flush_journal(self) -> None:
        """fsync the journal; after a failed fsync, rewrite it whole (retried every flush)."""
        if self.journal is None:
            return
        rewrite = self.journal.needs_rewrite
        if rewrite and self.clock() < self._rewrite_after:
            return   # a big text is not re-encoded every tick while the disk is full
        try:
            if rewrite:
                self.journal.header["requests"] = self._request_ids()
                self.journal.compact(self.document.text(), self.document.version)
            else:
                self.journal.flush()
        except FileError as err:
            if rewrite:
                self._rewrite_after = self.clock() + REWRITE_RETRY_S
            self._journal_failed(err)
            return
        self._journal_ok()

    def _drop_journal(self) -> None:
        if self.journal is not None:
            self.journal.discard()
            self.journal = None
        else:
            self.journal_store.remove(self.id)

    def check_disk(self) -> Events:
        """A ``buffer.conflict`` event, once, when the file changed on disk under us."""
        if self.path is None or self.fingerprint is None:
            return []
        if self.conflict_reported == self.fingerprint:
            return []
        if disk_changed(self.path, self.fingerprint, self.file_port):
            self.conflict_reported = self.fingerprint
            return [("buffer.conflict", {"buffer": self.id, "name": self.name,
                                         "path": self.workspace.where(self.path)["path"],
                                         "dirty": self.document.dirty,
                                         "next": "Reload it (buffer.revert), keep yours "
                                                 "(buffer.save with force), or compare them."})]
        return []


class BufferFactory:
    def __init__(self, root: Path, journal_dir: Path, *, file_port: Any = None,
                 max_file_bytes: int | None = None, journal_store: JournalStore | None = None,
                 undo_text_limit: int | None = None, digest: Digest = sha256_now):
        self.workspace = Workspace(root)
        self.owner_only = OwnerOnlyPaths(self.workspace.root)
        self.digest = digest   # how an opened file's sha256 is computed (chunked_load.Digest)
        self.journal_store = journal_store or OsJournalStore(journal_dir)
        self.file_port = file_port or OsFilePort()
        self.max_file_bytes = max_file_bytes or DEFAULT_MAX_BYTES
        if undo_text_limit is None:
            from rio.config.editor import undo_text_limit as configured
            undo_text_limit = configured()
        self.undo_text_limit = undo_text_limit

    def resolve(self, path: str, *, must_exist: bool = True) -> Path:
        return self.workspace.resolve(path, must_exist=must_exist, kind="file")

    def _new_id(self) -> str:
        return "b" + uuid.uuid4().hex[:10]

    def open(self, path: Path) -> OpenBuffer:
        loaded = load_file_chunks(path, port=self.file_port, max_bytes=self.max_file_bytes,
                                  chunk_chars=CHUNK_CHARS,   # never one str of the whole file
                                  digest=self.digest)
        text = ChunkedText.from_chunks(loaded.chunks)
        return OpenBuffer(self._new_id(), Document(text, undo_text_limit=self.undo_text_limit),
                          path=path,
                          workspace=self.workspace, fmt=loaded.format,
                          fingerprint=loaded.fingerprint, journal_store=self.journal_store,
                          file_port=self.file_port, owner_only=self.owner_only)

    def new(self, text: str) -> OpenBuffer:
        buf = OpenBuffer(self._new_id(), Document("", undo_text_limit=self.undo_text_limit),
                         path=None, workspace=self.workspace,
                         fmt=FileFormat(), fingerprint=None, journal_store=self.journal_store,
                         file_port=self.file_port, owner_only=self.owner_only)
        if text:
            change = buf.document.replace(0, 0, text, origin="new", label="New")
            buf._journal([change])
        return buf

    def recover_all(self) -> RecoveryReport:
        buffers: list[OpenBuffer] = []
        failures: list[dict[str, Any]] = []
        for name in self.journal_store.list():
            buf = self.recover_one(name, failures)
            if buf is not None:
                buffers.append(buf)
        return RecoveryReport(tuple(buffers), tuple(failures))

    def recover_one(self, name: str, failures: list[dict[str, Any]]) -> OpenBuffer | None:
        """The buffer of journal ``name``, or None (nothing unsaved after all, or it failed:
        then why is in ``failures``). One bad journal never stops the others."""
        try:
            return self._recover_one(name, failures)
        except RioError as err:
            failures.append({"journal": name, **err.to_wire()})
        except Exception as exc:  # one bad journal must not stop the rest
            log.exception("journal %s", name)
            failures.append({"journal": name, "kind": "internal.unexpected",
                             "message": f"Journal {name} could not be read: {exc}",
                             "next": "It is kept in the state folder; report it."})
        return None

    def _recover_one(self, name: str, failures: list[dict[str, Any]]) -> OpenBuffer | None:
        """Bring one journal back as a buffer; damage is reported in ``failures``.

        Crash-safe at every step (ADR-0006 revised): a damaged journal is first copied aside,
        then the new journal (header + the recovered text as one change) replaces the old one
        in one atomic, fsynced write, so a kill at any point leaves the old or the new journal
        complete. The buffer keeps the fingerprint its edits were made against: a file changed
        on disk while Rio was down makes the next save a conflict, never an overwrite.
        """
        data = self.journal_store.read(name)
        location = self.journal_store.location(name)
        header_holder: dict[str, Any] = {}

        def read_base() -> tuple[str, dict[str, Any]]:
            path = Path(header_holder["path"])
            loaded = load_file(path, port=self.file_port, max_bytes=self.max_file_bytes)
            return loaded.text, loaded.fingerprint.to_dict()

        from rio.text.journal import peek_header
        header_holder.update(peek_header(data))
        rec = recover(data, read_base=read_base, location=location)
        header = rec.header
        path = Path(header["path"]) if header.get("path") else None
        fmt = FileFormat.from_dict(header.get("format") or {})
        fingerprint = (Fingerprint.from_dict(header["fingerprint"])
                       if header.get("fingerprint") else None)
        base_text = ""
        base_fingerprint: Fingerprint | None = None
        if path is not None:
            try:
                loaded = load_file(path, port=self.file_port, max_bytes=self.max_file_bytes)
                base_text, base_fingerprint = loaded.text, loaded.fingerprint
                fingerprint = fingerprint or base_fingerprint
            except RioError:
                base_text = ""        # deleted since: the recovered text is all we have
        if rec.dropped_tail:
            kept = damaged_name(name)
            try:   # the evidence first: the new journal below replaces the damaged one
                self.journal_store.replace_atomically(kept, data)
            except OSError as exc:   # kept as it is, and tried again at the next start
                raise journal_write_failed(self.journal_store.location(kept), exc,
                                           header.get("path") or name) from exc
            failures.append(damage_report(name, header, rec, self.journal_store.location(kept)))
        if path is not None and rec.text == base_text:
            self.journal_store.remove(name)   # nothing unsaved after all
            return None
        # A new epoch: no version from before the crash names a text after it (ADR-0020).
        epoch = max(int(header.get("epoch") or 0), rec.version >> EPOCH_BITS) + 1
        doc = Document(base_text, version=epoch << EPOCH_BITS,
                       undo_text_limit=self.undo_text_limit)
        buf = OpenBuffer(header.get("buffer") or name, doc, path=path, workspace=self.workspace,
                         fmt=fmt, fingerprint=fingerprint, journal_store=self.journal_store,
                         file_port=self.file_port, owner_only=self.owner_only)
        if path is None and base_text == "":
            doc.mark_saved()
        # One undoable step back to the file as it is on disk.
        change = doc.replace(0, len(base_text), rec.text, origin="recovery",
                             label="Recovered unsaved changes")
        buf.first_version = doc.version
        # The requests already in the text: a resend of one is answered, not applied again.
        for request in [*(header.get("requests") or ()), *rec.requests][-REQUEST_MEMORY:]:
            if isinstance(request, str):
                buf.remember(request, {"version": doc.version, "already_applied": True})
        # The old header's fields go on (the ones this code does not know too); the base of the
        # new journal is the file as it is now, which the edits' fingerprint may not describe.
        carry = {**header, "base_fingerprint": (base_fingerprint.to_dict()
                                                if base_fingerprint else None)}
        # Rewritten now, not at the buffer's first edit: every recovery starts a new epoch
        # only if its journal says so (ADR-0020) — a journal left as it was would bring the
        # next recovery back into this same epoch, and a version a client saw after this one
        # could then name another text.
        buf._journal([change], carry)       # replaces the journal `name` atomically
        if name != buf.id:
            self.journal_store.remove(name)
        buf.recovered = True
        return buf
