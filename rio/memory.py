"""Giving memory back to the system once a large document is gone.

glibc's allocator keeps what Python frees in its heap for the next allocation: a document is
held in thousands of chunks of a few kilobytes (rio/text/text.py), each below the allocator's
mmap threshold, so closing a 100 MB file freed its objects but left the process's resident
size where it was — measured: the window 154 MB after closing it (53 MB once trimmed), the
core +86 MB over its idle size. ``malloc_trim(0)`` hands the free pages back. It walks the
heap (milliseconds for a few hundred megabytes), so it is called only after something large
went: :data:`LARGE` bytes or more.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable
from functools import cache

#: What counts as large: a document, frame or reply of this many bytes (or characters) or more
#: is followed by a trim once it is gone.
LARGE = 8 * 1024 * 1024


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        fn = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):    # not glibc (musl, macOS): nothing to trim
        return None
    if fn is not None:
        fn.argtypes = [ctypes.c_size_t]
        fn.restype = ctypes.c_int
    return fn


def give_back(*, collect: bool = False) -> bool:
    """Return the allocator's free pages to the system; False where there is no way to.
    ``collect``: run the cyclic garbage collector first (a closed editor's widgets and
    callbacks hold each other: its text is freed only by a collection)."""
    if collect:
        gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


#: mallopt's M_MMAP_THRESHOLD (glibc's malloc.h).
_M_MMAP_THRESHOLD = -3


def map_large_allocations(threshold: int = 1024 * 1024) -> bool:
    """Serve every allocation of ``threshold`` bytes or more with its own mapping, returned to
    the system when freed, for the rest of the process; False where there is no way to.

    glibc starts at 128 KiB but raises the threshold to the size of each mapped block freed (up
    to 32 MiB), so after the first large message every later one comes from a thread's arena
    and stays resident after it is freed, arena by arena — the hub's, the remote bridge's and
    each ZeroMQ I/O thread's. Measured in ``rio serve --listen`` (ADR-0021): replies of 10 MB a
    remote client never read left the supervisor at 95 MB resident (after trims), with 30 MB of
    them really held; with the threshold fixed, 65 MB, and 35 MB once they were read. Setting
    it turns glibc's adjustment off; a large message then costs one mmap/munmap pair."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):    # not glibc: its own policy stays
        return False
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))


def is_large(size: int) -> bool:
    return size >= LARGE


class LargeFlow:
    """Counts the bytes of sizeable messages (64 KiB or more) passing through a process — a
    file read in 4 MiB pieces is as large as one read whole — and says, for each sizeable
    message once :data:`LARGE` of them have passed in one flow (no gap over :attr:`GAP`
    seconds), that a trim is due after it: the caller's trim then waits for the flow's end."""

    SIZEABLE = 64 * 1024
    GAP = 5.0

    def __init__(self) -> None:
        self.passed = 0
        self.last = float("-inf")

    def add(self, size: int, now: float) -> bool:
        if size < self.SIZEABLE:
            return False
        if now - self.last > self.GAP:
            self.passed = 0                  # a new flow
        self.last = now
        self.passed += size
        return self.passed >= LARGE
