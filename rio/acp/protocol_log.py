"""The protocol log of one conversation's agent: every JSON-RPC line both ways, the agent's
stderr, and what the client noticed (a malformed line, a silence, a stop) — bounded.

Kept in memory (the last :data:`MAX_ENTRIES` entries, each cut at :data:`MAX_LINE_CHARS`)
and, when a path is given, appended to a 0600 file that is cut back to its newer half once
it passes ``max_bytes`` — so an agent flooding stderr cannot fill the disk. Values under keys
that name a secret (``key``, ``token``, ``secret``, ``password``, ``authorization``) are
replaced by ``"[redacted]"`` before anything is kept: a gateway login passes headers.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

MAX_ENTRIES = 2000
MAX_LINE_CHARS = 2000
MAX_FILE_BYTES = 1 << 20
_SECRET_KEY = re.compile(r"(api[-_]?key|token|secret|password|authorization|x-api-key)", re.IGNORECASE)


def log_path(root: Path, conversation: str) -> Path:
    """Where a conversation's protocol log lives: beside its messages, in the project's state
    folder (``~/.local/state/rio/projects/<hash>/conversations/<id>.acp.log``)."""
    from rio.config.instance import project_state_dir
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", conversation) or conversation.startswith("."):
        raise ValueError(f"not a conversation id: {conversation!r}")
    return project_state_dir(root) / "conversations" / f"{conversation}.acp.log"


def redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "[redacted]" if isinstance(k, str) and _SECRET_KEY.search(k)
                and isinstance(v, str) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


class ProtocolLog:
    def __init__(self, path: Path | None = None, *, max_entries: int = MAX_ENTRIES,
                 max_bytes: int = MAX_FILE_BYTES, clock: Callable[[], float] = time.time
                 ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.clock = clock
        self.entries: deque[str] = deque(maxlen=max_entries)
        self.dropped = 0
        self._file_bytes = 0
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.close(fd)
            self._file_bytes = path.stat().st_size

    def message(self, direction: str, message: Any) -> None:
        """A JSON-RPC message; ``direction`` is ``"→"`` (to the agent) or ``"←"``."""
        try:
            text = json.dumps(redact(message), ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):
            text = repr(message)
        self.note(direction, text)

    def note(self, kind: str, text: str) -> None:
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f"[… {len(text) - MAX_LINE_CHARS} more characters]"
        stamp = time.strftime("%H:%M:%S", time.localtime(self.clock()))
        line = f"{stamp} {kind} {text}"
        if len(self.entries) == self.entries.maxlen:
            self.dropped += 1
        self.entries.append(line)
        if self.path is not None:
            self._append(line + "\n")

    def _append(self, line: str) -> None:
        data = line.encode("utf-8", "replace")
        try:
            if self._file_bytes + len(data) > self.max_bytes:
                self._cut_back()
            # note() calls this only while self.path is set; only the except below clears it.
            with open(cast(Path, self.path), "ab") as fh:
                fh.write(data)
            self._file_bytes += len(data)
        except OSError:
            self.path = None  # a log that cannot be written must not break the turn

    def _cut_back(self) -> None:
        assert self.path is not None
        data = self.path.read_bytes()
        keep = data[len(data) // 2:]
        cut = keep.find(b"\n")
        keep = "[… older lines cut …]\n".encode() + (keep[cut + 1:] if cut >= 0 else keep)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(keep)
        os.replace(tmp, self.path)
        self._file_bytes = len(keep)

    def lines(self) -> list[str]:
        return list(self.entries)

    def text(self) -> str:
        return "\n".join(self.entries)


class StderrTail:
    """The last lines of the agent's stderr, for error messages (bounded by characters)."""

    def __init__(self, max_chars: int = 4000) -> None:
        self.max_chars = max_chars
        self.lines: deque[str] = deque()
        self.chars = 0
        self.total_bytes = 0

    def add(self, line: str) -> None:
        self.lines.append(line)
        self.chars += len(line)
        while self.chars > self.max_chars and len(self.lines) > 1:
            self.chars -= len(self.lines.popleft())

    def text(self) -> str:
        return "\n".join(self.lines)[-self.max_chars:]
