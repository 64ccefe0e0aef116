"""Temp files a killed save left in the project, removed when the core starts.

A save writes ``.<name>.rio-<12 hex>.tmp`` beside the file, fsyncs it and renames it over the
file (:meth:`rio.files.files.OsFilePort.write_atomic`); a core killed in between leaves the temp
file behind — each ``kill -9`` during a 50 MB save left 50 MB in the project (issue 22). The
documents process sweeps the project once it is ready (actors/runtime/factories.py, off the start path).

Only Rio's own temp files go, and only ones nobody is writing:

* the name: exactly the pattern above (:data:`TEMP_NAME`) — nothing else is ever touched;
* a regular file (never a link: every step works on a descriptor opened with ``O_NOFOLLOW``
  and removes the name only while it still names that same file), owned by this user;
* not being written: a save holds an exclusive ``flock`` on its temp file for as long as it
  has it open, so a lock this sweep can take means its writer is gone — another Rio on the
  same project mid-save keeps its file;
* and older than :data:`MIN_AGE_S` (a save by an older Rio, which did not lock, is at least
  not pulled from under it). A younger one is looked at again once it is old enough.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import stat as stat_module
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

log = logging.getLogger("rio.files.sweep")

#: A save's temp file (rio/files/files.py ``_write_in``): ``.<name cut to 200>.rio-<hex>.tmp``.
TEMP_NAME = re.compile(r"^\..{1,200}\.rio-[0-9a-f]{12}\.tmp$", re.DOTALL)
def _min_age() -> float:
    try:
        return max(0.0, float(os.environ.get("RIO_TEMP_MIN_AGE_S", "30")))
    except ValueError:
        return 30.0


#: A temp file younger than this is left for now (looked at again later);
#: ``RIO_TEMP_MIN_AGE_S`` sets it (the tests make it short).
MIN_AGE_S = _min_age()
#: Directory entries looked at, at most (a project of millions of files is swept in part).
MAX_ENTRIES = 2_000_000


class Waiter(Protocol):
    """What a sweep waits on between passes (a ``threading.Event``: set means stop)."""

    def wait(self, timeout: float | None = None) -> bool: ...


@dataclass
class Swept:
    removed: list[str] = field(default_factory=list)
    bytes: int = 0
    #: candidates left for now: being written, or too young (project-relative paths)
    left: list[str] = field(default_factory=list)


def is_save_temp(name: str) -> bool:
    return bool(TEMP_NAME.match(name))


def _candidates(root: Path, max_entries: int) -> list[Path]:
    found: list[Path] = []
    stack = [str(root)]
    seen = 0
    while stack and seen < max_entries:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.name.endswith(".tmp") and is_save_temp(entry.name):
                            found.append(Path(entry.path))
                    except OSError:
                        continue
        except OSError:
            continue
    return found


def remove_if_abandoned(path: Path, *, now: float | None = None,
                        min_age_s: float = MIN_AGE_S) -> tuple[bool, int, str]:
    """Remove ``path`` if it is an abandoned save temp file (see the module docstring).
    Returns (removed, its size, why not)."""
    if not is_save_temp(path.name):
        return False, 0, "not a save's temp file"
    try:
        dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return False, 0, str(exc)
    try:
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=dfd)
        except OSError as exc:
            return False, 0, str(exc)
        try:
            st = os.fstat(fd)
            if not stat_module.S_ISREG(st.st_mode):
                return False, 0, "not a regular file"
            if st.st_uid != os.getuid():
                return False, 0, "owned by someone else"
            if (time.time() if now is None else now) - st.st_mtime < min_age_s:
                return False, 0, "too young"
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False, 0, "a save is writing it"
            again = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
            if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
                return False, 0, "replaced meanwhile"
            os.unlink(path.name, dir_fd=dfd)
            return True, st.st_size, ""
        except OSError as exc:
            return False, 0, str(exc)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def sweep(root: Path, *, now: float | None = None, min_age_s: float = MIN_AGE_S,
          max_entries: int = MAX_ENTRIES, only: list[Path] | None = None) -> Swept:
    """One pass over ``root`` (or over ``only``): remove every abandoned save temp file."""
    root = Path(root)
    out = Swept()
    for path in only if only is not None else _candidates(root, max_entries):
        removed, size, why = remove_if_abandoned(path, now=now, min_age_s=min_age_s)
        rel = os.path.relpath(path, root)
        if removed:
            out.removed.append(rel)
            out.bytes += size
        elif why in ("too young", "a save is writing it"):
            out.left.append(rel)
    return out


def sweep_project(root: Path, *, stopping: Waiter | None = None,
                  min_age_s: float = MIN_AGE_S) -> Swept:
    """Sweep ``root`` at start, then once more the candidates that were too young or in
    use, when they are old enough (unless ``stopping`` is set first)."""
    root = Path(root)
    result = sweep(root, min_age_s=min_age_s)
    _said(result)
    if result.left and stopping is not None and not stopping.wait(min_age_s + 1):
        again = sweep(root, min_age_s=min_age_s, only=[root / rel for rel in result.left])
        _said(again)
        result.removed += again.removed
        result.bytes += again.bytes
        result.left = again.left
    return result


def _said(result: Swept) -> None:
    if result.removed:
        log.warning("removed %d temp file(s) of killed saves (%d bytes): %s",
                    len(result.removed), result.bytes, ", ".join(result.removed[:10]))
