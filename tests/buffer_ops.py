"""The arguments of a ``buffer.*`` op as the core's actor hands them to
:meth:`rio.text.buffer_state.Buffer.handle`: every field present (the protocol layer fills the
defaults before the op reaches the buffer), so tests that call ``handle`` directly — without an
actor or a socket — name only what their case is about."""

from __future__ import annotations

from typing import Any


def args(**kw: Any) -> dict[str, Any]:
    """The op's arguments with every field at its default, ``kw`` on top."""
    base: dict[str, Any] = {"origin": "test", "base_version": None, "label": None, "start": 0,
                            "end": None, "path": None, "force": False, "encoding": None,
                            "newline": None, "discard": False}
    return {**base, **kw}
