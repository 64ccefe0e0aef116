"""The sha256 of an opened file, computed on a thread of its own while the core decodes the
text (:data:`rio.files.chunked_load.Digest`): hashlib releases the GIL for big inputs, so on a
second core the 100 MB hash (~170 ms) overlaps the decoding instead of following it (ADR-0030).
``rio/`` starts no threads, so the core passes this in."""

from __future__ import annotations

import threading
from typing import Callable

from rio.files.digest import sha256

#: Smaller inputs are hashed at once: a thread costs more than it saves.
THREAD_ABOVE_BYTES = 4 * 1024 * 1024


def sha256_on_a_thread(data: bytes) -> Callable[[], str]:
    """Start hashing ``data``; the returned function waits for the hex digest."""
    if len(data) <= THREAD_ABOVE_BYTES:
        digest = sha256(data).hexdigest()
        return lambda: digest
    box: list[str] = []
    worker = threading.Thread(target=lambda: box.append(sha256(data).hexdigest()),
                              name="rio-sha256", daemon=True)
    worker.start()

    def result() -> str:
        worker.join()
        return box[0] if box else sha256(data).hexdigest()   # the thread failed
    return result
