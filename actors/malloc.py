"""glibc malloc: a fixed mmap threshold in every Rio process, so big buffers go back to the OS.

glibc serves an allocation over ``M_MMAP_THRESHOLD`` (128 KiB at start) with its own ``mmap``
and unmaps it when freed — but the first time such a block is freed it raises the threshold (and
the heap's trim threshold with it) to that block's size, up to 32 MiB, and from then on freed
memory of that size stays in the heap. Rio moves a big document in 4 MiB slices (``buffer.text``),
so after a 100 MB open the hub (the supervisor) kept +12.6 MB, the window and the core ~+11–16 MB
beyond the text they hold. Setting the threshold explicitly turns that adjustment off
(mallopt(3)). It is fixed at 8 MiB, not 128 KiB: a 4 MiB slice (and its frame) still comes from
the heap and reuses the same pages — at 128 KiB every slice was a fresh ``mmap`` whose pages the
kernel zeroes again, and a 100 MB file took ~1 s longer to become editable. Measured in
docs/adr/0026-start-path-and-long-line-keys.md ("e").

The supervisor (the ``rio`` process, with the hub) and every host (core, agent session, spare)
set it at start with :func:`fix_mmap_threshold`; every process an instance starts, the window
among them (``ui/`` reaches ``actors/`` only through the bus client), also gets it as
``MALLOC_MMAP_THRESHOLD_`` in its environment (:func:`child_env_value`), which glibc reads at
start. A user's own ``MALLOC_MMAP_THRESHOLD_`` wins. Elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import os

M_MMAP_THRESHOLD = -3            # <malloc.h>
MMAP_THRESHOLD = 8 * 1024 * 1024  # twice a buffer.text slice (module docstring)


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes; False where there is no glibc
    ``mallopt`` or the user set ``MALLOC_MMAP_THRESHOLD_``."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    import ctypes   # here: actors.window_first imports this module on the window-first path
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_MMAP_THRESHOLD, threshold))


def child_env_value() -> dict[str, str]:
    """The environment entry that sets the same threshold in a child (glibc reads it at start);
    empty when the user set their own."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return {}
    return {"MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD)}
