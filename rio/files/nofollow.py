"""File I/O that never follows a symbolic link (ADR-0019), for :class:`rio.files.files.OsFilePort`.

A folder is opened from "/" one component at a time with ``O_PATH|O_DIRECTORY|O_NOFOLLOW``
(:func:`open_dir_nofollow`); everything after — stat, open, create, rename, fsync — happens
relative to that one handle with ``dir_fd``, so no component swapped for a link can redirect
it, and a link anywhere on the way (or at the end) is ``OSError(ELOOP)``. Rio's paths are real
paths the workspace confined when they were opened, so "no component is a link now" means
"still the same place inside the project".
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
from pathlib import Path

#: Opens a folder as a handle for *at calls only (no read permission needed on Linux).
_DIR_HANDLE = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) \
    | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def open_nofollow(path: Path, flags: int) -> int:
    """Open ``path`` through a folder handle walked without following links, and never
    through a link at the end either (``O_NOFOLLOW``): a file swapped for a link since it was
    opened is not read (revert, conflict checks, fs.read)."""
    path = Path(os.path.abspath(path))
    dfd = open_dir_nofollow(path.parent)
    try:
        return os.open(path.name, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                       dir_fd=dfd)
    finally:
        os.close(dfd)


def open_dir_nofollow(folder: Path) -> int:
    """A handle on ``folder`` (absolute), walked from "/" one component at a time, refusing any
    component that is a symbolic link with ``OSError(ELOOP)``. The caller closes it."""
    folder = Path(os.path.abspath(folder))
    fd = os.open(folder.anchor or os.sep, _DIR_HANDLE)
    try:
        for part in folder.parts[1:]:
            try:
                child = os.open(part, _DIR_HANDLE, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link_at(fd, part):
                    raise OSError(errno.ELOOP, "a folder on the way is a symbolic link",
                                  str(folder)) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_link_at(dfd: int, name: str) -> bool:
    try:
        return stat_module.S_ISLNK(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def lstat_at(dfd: int, name: str, path: Path) -> os.stat_result | None:
    """The entry ``name`` in the folder ``dfd`` without following it; None when absent.
    A link there is refused with ``OSError(ELOOP)``."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat_module.S_ISLNK(st.st_mode):
        raise OSError(errno.ELOOP, "the file is a symbolic link", str(path))
    return st


def fsync_dir_fd(dfd: int) -> None:
    """Make the rename durable. Best effort: the new file is already in place, so a folder that
    cannot be fsynced (some network and FUSE file systems say EINVAL) must not report a failure."""
    try:
        rfd = os.open(".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0), dir_fd=dfd)
    except OSError:
        return
    try:
        os.fsync(rfd)
    except OSError:
        pass
    finally:
        os.close(rfd)
