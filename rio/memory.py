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
