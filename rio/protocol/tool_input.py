"""A tool call's ``input`` (the ``agent.tool`` and ``agent.permission`` events' field) on one
line, as every client shows it: ``path=src/a.py text=…`` rather than a JSON blob.

It lives with the messages because both clients show it — the desktop's tool cards
(ui/tk/agent/view.py) and the terminal's tool lines (ui/term/chat.py) — and neither client
may import the other; one copy keeps them showing a call the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: A value longer than this is cut inside the line, so one long argument leaves room for the rest.
VALUE_CHARS = 40


def short_input(value: Any, limit: int = 80) -> str:
    """``value`` (any msgpack value, as the agent sent it) as at most ``limit`` characters:
    a map as ``key=value`` pairs, each value on one line and cut at :data:`VALUE_CHARS`."""
    if isinstance(value, Mapping):
        parts = []
        for k, v in value.items():
            shown = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
            shown = " ".join(str(shown).split())
            parts.append(f"{k}={shown[:VALUE_CHARS] + '…' if len(shown) > VALUE_CHARS else shown}")
        text = " ".join(parts)
    else:
        text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
