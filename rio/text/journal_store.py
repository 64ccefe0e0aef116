"""Where journals live: the :class:`JournalStore` port and its stores (ADR-0006).

* :class:`OsJournalStore` — files in one folder (0700), each 0600: they hold unsaved text.
* :class:`MemoryJournalStore` — in memory; ``crash()`` keeps only what was fsynced.
* :class:`FaultyJournalStore` — wraps another and fails its writes part-way, as a full disk does.

Names are plain file names (letters, digits, ``._-``). A damaged journal is kept beside the
others as ``<name>.damaged-<UTC time>``, which :meth:`JournalStore.list` never lists.
"""

from __future__ import annotations

import errno
import os
import re
import time
from typing import Protocol

from rio.protocol.errors import FileError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
#: A damaged journal is kept beside the others under ``<name>.damaged-<UTC time>``.
DAMAGED = ".damaged-"


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
    def truncate(self, name: str, size: int) -> None: ...


def is_journal_name(name: str) -> bool:
    """A live journal, not a temp file nor a kept damaged copy."""
    return bool(_NAME.match(name)) and not name.endswith(".tmp") and DAMAGED not in name


def damaged_name(name: str, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return f"{name}{DAMAGED}{stamp}"


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
        return sorted(n for n in self.files if is_journal_name(n))

    def truncate(self, name: str, size: int) -> None:
        if name in self.files:
            del self.files[name][size:]

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


_FAULT_ERRNO = {"enospc": errno.ENOSPC, "eio": errno.EIO}


class FaultyJournalStore:
    """A journal store on a disk that fills up (tests and the fault harness).

    ``space`` is how many more bytes fit (``None``: plenty). A write that does not fit lands as
    far as it fits and then fails with ENOSPC (or EIO), cutting a record part-way as a real full
    disk does; ``replace_atomically`` fails before it replaces anything (its temp copy fails).
    ``fail_fsync`` makes fsync fail, as delayed allocation can report a full disk only then.
    """

    def __init__(self, inner: JournalStore, *, space: int | None = None, fail: str = "enospc",
                 fail_fsync: bool = False) -> None:
        if fail not in _FAULT_ERRNO:
            raise ValueError(f"fail must be one of {sorted(_FAULT_ERRNO)}, not {fail!r}")
        self.inner = inner
        self.space = space
        self.fail = fail
        self.fail_fsync = fail_fsync
        self.writes_failed = 0

    def _error(self) -> OSError:
        self.writes_failed += 1
        code = _FAULT_ERRNO[self.fail]
        return OSError(code, os.strerror(code))

    def fill(self, space: int = 0) -> None:
        self.space = space

    def free(self) -> None:
        self.space = None
        self.fail_fsync = False

    def append_bytes(self, name: str, data: bytes) -> None:
        if self.space is not None and len(data) > self.space:
            if self.space:
                self.inner.append_bytes(name, data[:self.space])
            self.space = 0
            raise self._error()
        if self.space is not None:
            self.space -= len(data)
        self.inner.append_bytes(name, data)

    def replace_atomically(self, name: str, data: bytes) -> None:
        if self.space is not None:
            if len(data) > self.space:
                raise self._error()
            self.space -= len(data)
        self.inner.replace_atomically(name, data)

    def fsync(self, name: str) -> None:
        if self.fail_fsync:
            raise self._error()
        self.inner.fsync(name)

    def read(self, name: str) -> bytes:
        return self.inner.read(name)

    def remove(self, name: str) -> None:
        self.inner.remove(name)

    def list(self) -> list[str]:
        return self.inner.list()

    def close(self, name: str) -> None:
        self.inner.close(name)

    def location(self, name: str) -> str:
        return self.inner.location(name)

    def truncate(self, name: str, size: int) -> None:
        self.inner.truncate(name, size)


class OsJournalStore:
    """Journals as files in one folder (0700), each file 0600: they hold unsaved text.

    A journal is open only between its appends and the next fsync (:meth:`fsync` closes it):
    10,000 edited buffers are not 10,000 open files (issue 22), and a journal is only ever
    touched by its own buffer's thread, so no descriptor is shared.
    """

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
        """fsync what was appended since the last fsync, and close the journal until its next
        append."""
        fd = self._fds.pop(name, None)
        if fd is not None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

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
                      if is_journal_name(n) and os.path.isfile(os.path.join(self.directory, n)))

    def truncate(self, name: str, size: int) -> None:
        fd = self._fds.get(name)
        if fd is not None:
            os.ftruncate(fd, size)   # O_APPEND: the next write lands at the new end
            return
        try:
            os.truncate(self._path(name), size)
        except FileNotFoundError:
            pass

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
        except BaseException:
            os.close(fd)
            try:
                os.unlink(temp)   # a full disk must not also keep a half-written copy
            except OSError:
                pass
            raise
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

