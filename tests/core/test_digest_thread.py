"""The core hashes an opened file on a thread of its own while it decodes it (ADR-0030): the
same hex digest as hashlib, for inputs above and below the size that gets a thread."""

from __future__ import annotations

import hashlib
import threading

import pytest

from actors.core.digest_thread import THREAD_ABOVE_BYTES, sha256_on_a_thread


@pytest.mark.parametrize("size", [0, 10, THREAD_ABOVE_BYTES, THREAD_ABOVE_BYTES + 1,
                                  3 * THREAD_ABOVE_BYTES])
def test_same_digest_as_hashlib(size: int) -> None:
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    assert sha256_on_a_thread(data)() == hashlib.sha256(data).hexdigest()


def test_a_big_input_is_hashed_on_another_thread(monkeypatch) -> None:
    threads: list[str] = []
    real = hashlib.sha256

    def spy(data: bytes):
        threads.append(threading.current_thread().name)
        return real(data)

    monkeypatch.setattr(hashlib, "sha256", spy)
    sha256_on_a_thread(b"y" * (THREAD_ABOVE_BYTES + 1))()
    sha256_on_a_thread(b"y" * 100)()
    assert threads == ["rio-sha256", threading.current_thread().name]
