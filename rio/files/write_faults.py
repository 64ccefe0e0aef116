"""File ports whose saves fail part-way, as a full or failing disk makes them fail.

Two places want one: the tests (:class:`FaultyFilePort`: every save fails at byte N) and the
fault harness inside an instance (``actors/faults/injection.py``: a failure armed from
outside, taken by the next save). Both are the real disk but for the bytes of a save, so one
class, :class:`FailingSaves`, forwards stats and reads to the port it wraps and cuts a save's
chunks where :meth:`FailingSaves.fault` says; a kind of fault is only that method. The bytes
before the cut really reach the temp file: the failure happens part-way through the write,
and what :func:`rio.files.files.save_file` promises (the old file untouched, no temp file
left) is tested against it.
"""

from __future__ import annotations

import errno as errno_codes
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NoReturn

from rio.files.files import FilePort, FileStat


@dataclass(frozen=True)
class WriteFault:
    """How one save fails: with ``errno`` once more than ``after_bytes`` bytes were given."""

    errno: int
    after_bytes: int = 0
    #: seconds the failing write hangs first (a disk that stalls, then fails)
    hang_s: float = 0.0
    #: a save that fits in ``after_bytes`` fails too, at its end (the disk "fills" there);
    #: False: a save within the budget succeeds
    at_end: bool = False


class FailingSaves:
    """The disk of ``inner``, except for the saves :meth:`fault` names a fault for."""

    def __init__(self, inner: FilePort) -> None:
        self.inner = inner
        #: saves failed so far
        self.failed = 0

    def fault(self) -> WriteFault | None:
        """The fault for the save about to start; None: it is a clean save."""
        return None

    def stat(self, path: Path) -> FileStat:
        return self.inner.stat(path)

    def read_bytes(self, path: Path, limit: int) -> tuple[bytes, FileStat]:
        return self.inner.read_bytes(path, limit)

    def sha256(self, path: Path) -> str:
        return self.inner.sha256(path)

    def write_atomic(self, path: Path, chunks: Iterable[bytes], mode: int | None = None, *,
                     before_replace: Callable[[], None] | None = None,
                     keep_exec: bool = True) -> FileStat:
        fault = self.fault()
        if fault is not None:
            chunks = self._failing(chunks, fault)
        return self.inner.write_atomic(path, chunks, mode, before_replace=before_replace,
                                       keep_exec=keep_exec)

    def _failing(self, chunks: Iterable[bytes], fault: WriteFault) -> Iterator[bytes]:
        budget = fault.after_bytes
        for chunk in chunks:
            if len(chunk) > budget:
                if budget:
                    yield chunk[:budget]
                self._fail(fault)
            budget -= len(chunk)
            yield chunk
        if fault.at_end:
            self._fail(fault)

    def _fail(self, fault: WriteFault) -> NoReturn:
        self.failed += 1
        if fault.hang_s:
            time.sleep(fault.hang_s)
        raise OSError(fault.errno, os.strerror(fault.errno))


FaultKind = Literal["enospc", "eio"]
_FAULT_ERRNO = {"enospc": errno_codes.ENOSPC, "eio": errno_codes.EIO}


class FaultyFilePort(FailingSaves):
    """A port whose every save fails with ENOSPC or EIO after ``after_bytes`` bytes; a save
    that fits in the budget succeeds (the disk fills up at byte N)."""

    def __init__(self, inner: FilePort, fail: FaultKind = "enospc", after_bytes: int = 0):
        if fail not in _FAULT_ERRNO:
            raise ValueError(f"fail must be one of {sorted(_FAULT_ERRNO)}, not {fail!r}")
        super().__init__(inner)
        self.fail = fail
        self.after_bytes = after_bytes

    def fault(self) -> WriteFault:
        return WriteFault(_FAULT_ERRNO[self.fail], self.after_bytes)

    @property
    def writes_failed(self) -> int:
        return self.failed


__all__ = ["FailingSaves", "FaultKind", "FaultyFilePort", "WriteFault"]
