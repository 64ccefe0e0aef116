"""Files an ACP agent changed on disk behind Rio's back, during one turn.

An ACP agent runs its own shell and file tools: ``fs/write_text_file`` comes to Rio as a
proposal, but ``sed -i`` in the agent's shell does not. So the turn owner takes a
:class:`Snapshot` of the project when the turn starts and compares at its end:

* the fingerprint is cheap — ``stat`` size and ``mtime_ns`` of the files
  :meth:`rio.files.workspace.Workspace.walk_files` yields (``.gitignore`` and Rio's ignore rules
  respected, symlinks never followed, capped at ``max_files``);
* for the diff, the text of small files is kept too (each up to ``max_file_bytes``, all
  together up to ``max_total_bytes``); a changed file beyond those caps is listed without a
  diff, and says so.

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
        # takes the diff back from the text fs.read gives (ui/tk/agent_changed.py).
        return decode_bytes(data)
    except RioError:           # binary
        return None


def take(root: Path, *, max_files: int = MAX_FILES, max_file_bytes: int = MAX_FILE_BYTES,
         max_total_bytes: int = MAX_TOTAL_BYTES) -> Snapshot:
    """The project's fingerprint (and the text of its small files) right now."""
    snap = Snapshot(Path(root))
    ws = Workspace(root)
    total = 0
    count = 0
    for rel in ws.walk_files(".", max_files=max_files + 1):
        count += 1
        if count > max_files:
            snap.capped = True
            break
        path = snap.root / rel
        st = _stat(path)
        if st is None:
            continue
        snap.stats[rel] = st
        if st[0] <= max_file_bytes and total + st[0] <= max_total_bytes:
            got = _read_as_stored(path, max_file_bytes)
            if got is not None:
                snap.texts[rel], snap.formats[rel] = got
                total += st[0]
    return snap


def changes(before: Snapshot, *, max_listed: int = MAX_LISTED) -> dict[str, Any]:
    """What changed on disk since ``before``: ``{files: [{path, change, diff?, note?,
    stored_as?}], more: N}`` where change is ``modified``, ``created`` or ``deleted``; a deleted
    file whose text was kept has ``stored_as: {encoding, newline}``, what buffer.save takes to
    write it back as it was."""
    after = take(before.root, max_files=len(before.stats) + MAX_LISTED + 1, max_file_bytes=0,
                 max_total_bytes=0)
    files: list[dict[str, Any]] = []
    touched = sorted(set(before.stats) | set(after.stats))
    for rel in touched:
        old, new = before.stats.get(rel), after.stats.get(rel)
        if old == new:
            continue
        change = "created" if old is None else "deleted" if new is None else "modified"
        files.append(_entry(before, rel, change))
    more = max(0, len(files) - max_listed)
    return {"files": files[:max_listed], "more": more}


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
