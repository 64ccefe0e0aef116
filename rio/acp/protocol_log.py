"""The protocol log of one conversation's agent: every JSON-RPC line both ways, the agent's
stderr, and what the client noticed (a malformed line, a silence, a stop) — bounded.

Kept in memory (the last :data:`MAX_ENTRIES` entries, each cut at :data:`MAX_LINE_CHARS`)
and, when a path is given, appended to a 0600 file that is cut back to its newer half once
it passes ``max_bytes`` — so an agent flooding stderr cannot fill the disk. The agent's stderr
comes in line by line (:class:`StderrLines`): every line, each cut at :data:`STDERR_LINE_BYTES`,
up to :data:`STDERR_BUDGET` per process, then counted and said once. Values under keys
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
#: One stderr line is logged up to this many bytes, then "[… N more bytes]".
STDERR_LINE_BYTES = 1000
#: The stderr one agent process may put into its log, in bytes (each line also counts
#: STDERR_LINE_COST for its stamp): an eighth of the file, so a flood cannot push the JSON-RPC
#: lines out of it. What is over is counted and said once, when its stderr ends.
STDERR_BUDGET = 128 << 10
STDERR_LINE_COST = 16
#: The tail for error messages keeps at most this many of a chunk's last lines once the budget
#: is spent (it needs the last words only, and a flood must stay cheap).
TAIL_LINES_PER_CHUNK = 50
_SECRET_KEY = re.compile(r"(api[-_]?key|token|secret|password|authorization|x-api-key)", re.IGNORECASE)


def log_path(root: Path, conversation: str) -> Path:
    """Where a conversation's protocol log lives: beside its messages, in the project's state
    folder (``~/.local/state/rio/projects/<hash>/conversations/<id>.acp.log``)."""
    from rio.config.instance import project_state_dir
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", conversation) or conversation.startswith("."):
        raise ValueError(f"not a conversation id: {conversation!r}")
    return project_state_dir(root) / "conversations" / f"{conversation}.acp.log"


def redact(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("name"), str) \
            and _SECRET_KEY.search(value["name"]) and isinstance(value.get("value"), str):
        # a header as ACP's mcpServers carry it: {"name": "Authorization", "value": "Bearer …"}
        return {**value, "value": "[redacted]"}
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


class StderrLines:
    """The agent's stderr, split into lines for the protocol log and the tail — every line,
    bounded by bytes.

    claude-agent-acp writes a multi-line error to stderr in one write; logging only the last
    line of each chunk kept ``stderr }`` of it. Each line is logged up to
    :data:`STDERR_LINE_BYTES` (then ``[… N more bytes]``) until the process has spent
    :data:`STDERR_BUDGET`; after that lines are only counted, and :meth:`close` says how many
    bytes were left out. A line split across chunks is joined first."""

    def __init__(self, log: ProtocolLog, tail: StderrTail, *,
                 line_bytes: int = STDERR_LINE_BYTES, budget: int = STDERR_BUDGET) -> None:
        self.log = log
        self.tail = tail
        self.line_bytes = line_bytes
        self.budget = budget
        self.spent = 0
        self.unlogged = 0
        self._line = bytearray()     # the line being read, up to line_bytes
        self._line_cut = 0           # …and how many more bytes it had

    def feed(self, chunk: bytes) -> None:
        self.tail.total_bytes += len(chunk)
        start = 0
        while self.spent < self.budget:
            end = chunk.find(b"\n", start)
            if end < 0:
                self._hold(chunk[start:])
                return
            self._hold(chunk[start:end])
            self._end_line(newline=True)
            start = end + 1
        self._count_only(chunk[start:])

    def close(self) -> None:
        """stderr ended: its last line (without a newline), and what was not logged."""
        if self._line or self._line_cut:
            self._end_line(newline=False)
        if self.unlogged:
            self.log.note("stderr", f"… {self.unlogged} bytes of stderr not logged (over the "
                          f"{self.budget}-byte budget of one agent process)")
            self.unlogged = 0

    def _hold(self, piece: bytes) -> None:
        room = max(0, self.line_bytes - len(self._line))
        self._line += piece[:room]
        self._line_cut += max(0, len(piece) - room)

    def _take_line(self) -> tuple[str, int]:
        raw, cut = bytes(self._line), self._line_cut
        self._line.clear()
        self._line_cut = 0
        text = raw.decode("utf-8", "replace").rstrip("\r")
        return text + (f" [… {cut} more bytes]" if cut else ""), len(raw) + cut

    def _end_line(self, *, newline: bool) -> None:
        shown, size = self._take_line()
        self.tail.add(shown)
        cost = min(size, self.line_bytes) + STDERR_LINE_COST     # what the log keeps of it
        if self.spent + cost > self.budget:
            self.spent = self.budget
            self.unlogged += size + newline
            return
        self.spent += cost
        self.log.note("stderr", shown)

    def _count_only(self, chunk: bytes) -> None:
        """Over budget: count the bytes; the tail still gets the chunk's last lines (split in
        C, at most one chunk at a time), for the error message of an exit."""
        end = chunk.rfind(b"\n")
        if end < 0:
            self._hold(chunk)
            return
        lines = chunk[:end].split(b"\n")
        self._hold(lines[0])
        first, size = self._take_line()
        self.unlogged += size + (end + 1 - len(lines[0]))
        self.tail.add(first)
        for raw in lines[1:][-TAIL_LINES_PER_CHUNK:]:
            self.tail.add(raw[:self.line_bytes].decode("utf-8", "replace").rstrip("\r"))
        self._hold(chunk[end + 1:])
