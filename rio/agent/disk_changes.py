"""Files an ACP agent changed on disk behind Rio's back, during one turn.

An ACP agent runs its own shell and file tools: ``fs/write_text_file`` comes to Rio as a
proposal, but ``sed -i`` in the agent's shell does not. So the turn owner takes a
:class:`Snapshot` of the project when the turn starts and compares at its end:

* the fingerprint is cheap — ``stat`` size and ``mtime_ns`` of the files
  :meth:`rio.files.workspace.Workspace.walk_files` yields (``.gitignore`` and Rio's ignore rules
  respected, symlinks never followed, files with a binary extension left out; large files
  included), at most ``max_files`` of them;
* for the diff, the text of small files is kept too (each up to ``max_file_bytes``, all
  together up to ``max_total_bytes``, at most ``max_texts`` files read); a changed file beyond
  those caps is listed without a diff, and says so.

**The cap is said, never guessed past (ADR-0042).** The walk goes in one fixed order — sorted,
depth first: a file's place is the tuple of its path's parts — so a snapshot that stopped at
``max_files`` covers exactly the files up to its last one (:attr:`Snapshot.last`). The
comparison walks the project again in the same order, up to that same place, and looks at
nothing past it: it lists what changed among the files it covered (created ones included), and
``unchecked: {after, note}`` says that no file sorting after ``after`` was compared. Before, the
second walk took a different number of files than the first: in a 200,000-file project ~200
files past the first walk's end were reported "created", and real changes past it were not
listed, with nothing saying so. (The core's project watcher, rio/files/watch.py, was not used
instead: it reports folder entries, not content changes, and is capped too.)

Open buffers of the changed files are not touched here: the core's documents notice the
change on disk by themselves and publish ``buffer.conflict`` (never a silent overwrite).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rio.agent.proposals import unified_diff
from rio.files.files import FileFormat, decode_bytes
from rio.files.workspace import Workspace
from rio.protocol.errors import RioError

MAX_FILES = 20_000
MAX_FILE_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 4 * 1024 * 1024
#: Files whose text is read at the turn's start, at most (each read is an open: 20,000 empty
#: files cost 20,000 opens).
MAX_TEXTS = 4_000
#: Files the second walk may find that the first did not have (created during the turn) before
#: it stops; past them it says where it stopped, as the first walk's cap does.
MAX_CREATED = 20_000
#: Every file is listed whatever its size (its size and time stamp are compared; its text is
#: kept only under MAX_FILE_BYTES).
ANY_SIZE = 1 << 62
#: The longest diff one changed file gets in the event (the file itself is on disk).
MAX_DIFF_CHARS = 20_000
#: At most this many changed files are listed (with the count of the rest).
MAX_LISTED = 200
#: A text's line ends as buffer.save names them.
NEWLINE_NAMES = {"\n": "lf", "\r\n": "crlf", "\r": "cr"}


@dataclass
class Snapshot:
    root: Path
    stats: dict[str, tuple[int, int]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    #: how each kept text was stored (encoding, line ends): a deleted file is put back so
    formats: dict[str, FileFormat] = field(default_factory=dict)
    capped: bool = False
    #: when capped: the last file listed — every file after it (in :func:`place` order) was
    #: not looked at
    last: str | None = None


def place(rel: str) -> tuple[str, ...]:
    """A file's place in the walk's order (sorted, depth first): its path's parts."""
    return tuple(rel.split("/"))


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _read(path: Path, limit: int) -> str | None:
    got = _read_as_stored(path, limit)
    return None if got is None else got[0]


def _read_as_stored(path: Path, limit: int) -> tuple[str, FileFormat] | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    try:
        # As fs.read and a buffer see it (newlines as "\n", BOM or Latin-1 decoded): Revert
        # takes the diff back from the text fs.read gives (ui/tk/agent/changed.py).
        return decode_bytes(data)
    except RioError:           # binary
        return None


def take(root: Path, *, max_files: int = MAX_FILES, max_file_bytes: int = MAX_FILE_BYTES,
         max_total_bytes: int = MAX_TOTAL_BYTES, max_texts: int = MAX_TEXTS) -> Snapshot:
    """The project's fingerprint (and the text of its small files) right now."""
    snap = Snapshot(Path(root))
    ws = Workspace(root)
    total = 0
    previous: str | None = None
    for count, rel in enumerate(ws.walk_files(".", max_files=max_files + 1,
                                              max_file_bytes=ANY_SIZE), start=1):
        if count > max_files:
            snap.capped, snap.last = True, previous
            break
        previous = rel
        path = snap.root / rel
        st = _stat(path)
        if st is None:
            continue
        snap.stats[rel] = st
        if (st[0] <= max_file_bytes and total + st[0] <= max_total_bytes
                and len(snap.texts) < max_texts):
            got = _read_as_stored(path, max_file_bytes)
            if got is not None:
                snap.texts[rel], snap.formats[rel] = got
                total += st[0]
    return snap


def changes(before: Snapshot, *, max_listed: int = MAX_LISTED,
            max_created: int = MAX_CREATED) -> dict[str, Any]:
    """What changed on disk since ``before``: ``{files: [{path, change, diff?, note?,
    stored_as?}], more: N}`` where change is ``modified``, ``created`` or ``deleted``; a deleted
    file whose text was kept has ``stored_as: {encoding, newline}``, what buffer.save takes to
    write it back as it was. When not every file could be compared, ``unchecked: {after,
    note}``: no file that sorts after ``after`` (see :func:`place`) was."""
    end = place(before.last) if before.capped and before.last is not None else None
    if before.capped and before.last is None:
        end = ()        # the first walk listed nothing: nothing can be compared
    seen: set[str] = set()
    changed: list[tuple[str, str]] = []
    created = 0
    stopped_at: str | None = None
    last_seen: str | None = None
    ws = Workspace(before.root)
    for rel in ws.walk_files(".", max_files=1 << 62, max_file_bytes=ANY_SIZE):
        if end is not None and place(rel) > end:
            break
        old = before.stats.get(rel)
        if old is None:
            if created >= max_created:     # past it, what this walk finds is not compared
                stopped_at = last_seen
                break
            created += 1
            changed.append((rel, "created"))
        else:
            seen.add(rel)
            if _stat(before.root / rel) != old:
                changed.append((rel, "modified"))
        last_seen = rel
    boundary = place(stopped_at) if stopped_at is not None else end
    for rel in before.stats:
        if rel not in seen and (boundary is None or place(rel) <= boundary):
            changed.append((rel, "deleted"))
    changed.sort(key=lambda item: place(item[0]))
    files = [_entry(before, rel, change) for rel, change in changed[:max_listed]]
    out: dict[str, Any] = {"files": files, "more": max(0, len(changed) - max_listed)}
    if boundary is not None:
        after = stopped_at if stopped_at is not None else before.last
        out["unchecked"] = {"after": after or "", "note": _unchecked_note(
            after, len(before.stats) if stopped_at is None else None)}
    return out


def _unchecked_note(after: str | None, listed: int | None) -> str:
    why = (f"the project has more than {listed} files, the most compared in one turn"
           if listed is not None else
           f"the agent made more than {MAX_CREATED} files, the most compared in one turn")
    if not after:
        return f"No file was compared: {why}."
    return (f"Files after {after} (in path order) were not compared: {why}. Changes to them "
            "are not listed here.")


def _entry(before: Snapshot, rel: str, change: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": rel, "change": change}
    old_text = "" if change == "created" else before.texts.get(rel)
    new_text = "" if change == "deleted" else _read(before.root / rel, MAX_FILE_BYTES)
    if old_text is None or new_text is None:
        entry["note"] = ("no diff: the file is large, binary or was not read at the turn's "
                         "start")
        return entry
    if old_text == new_text and change == "modified":
        entry["note"] = ("no diff: its text is the same; only its line endings, encoding or "
                         "time stamp changed")
        return entry
    diff = unified_diff(rel, old_text, new_text, created=change == "created")
    fmt = before.formats.get(rel)
    if change == "deleted" and fmt is not None:
        # What buffer.save needs to write it back as it was (the panel's Restore).
        entry["stored_as"] = {"encoding": fmt.encoding,
                              "newline": NEWLINE_NAMES.get(fmt.newline, "lf")}
    # A deleted file's diff is its whole text (at most MAX_FILE_BYTES; MAX_TOTAL_BYTES for all
    # of them): kept whole, so that it can be restored.
    if len(diff) > MAX_DIFF_CHARS and change != "deleted":
        diff = diff[:MAX_DIFF_CHARS] + f"\n[… {len(diff) - MAX_DIFF_CHARS} more characters]\n"
    entry["diff"] = diff
    return entry
