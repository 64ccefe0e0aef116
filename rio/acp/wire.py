"""The agent's stdio as Rio reads it, before the SDK does (mixed into AcpClient).

stdout is read line by line: every line goes to the protocol log, a malformed one is logged,
counted and dropped (the SDK never sees it), and any line is a sign of life for the silence
watchdog; valid lines are fed to the SDK's reader. stderr is drained all the time — an
undrained pipe freezes the agent once the kernel buffer is full (the SDK leaves stderr undrained,
reproduced with 5 MB) — every line of it logged within a byte budget, its tail kept for error
messages.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

from rio.acp.protocol_log import StderrLines

if TYPE_CHECKING:
    from rio.acp.port import AgentProcess
    from rio.acp.protocol_log import ProtocolLog, StderrTail

#: Lines longer than this from the agent are dropped (and logged).
LINE_LIMIT = 16 << 20
_STDERR_CHUNK = 64 << 10


def _unusable_usage(message: dict[str, Any]) -> bool:
    """claude-agent-acp 0.23 sends ``usage_update`` with ``used: null``; the SDK's model
    rejects it with a logged traceback at every turn. It carries nothing usable: drop it."""
    if message.get("method") != "session/update":
        return False
    params = message.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    return isinstance(update, dict) and update.get("sessionUpdate") == "usage_update" \
        and not isinstance(update.get("used"), int)


class AgentWire:
    # The state of the client this is mixed into (set in AcpClient.__init__ and start()).
    log: ProtocolLog
    stderr: StderrTail
    process: AgentProcess | None
    malformed_lines: int
    last_activity: float

    def _observe(self, event: Any) -> None:
        if getattr(event.direction, "value", "") == "outgoing":
            self.log.message("→", event.message)

    async def _pump_stdout(self, reader: asyncio.StreamReader) -> None:
        """Agent stdout → log → the SDK's reader; malformed lines stop here."""
        assert self.process is not None
        source = self.process.stdout
        try:
            while True:
                try:
                    line = await source.readline()
                except ValueError:   # longer than LINE_LIMIT: the rest of it was dropped
                    self.malformed_lines += 1
                    self.log.note("!", f"a line over {LINE_LIMIT} bytes from the agent, dropped")
                    continue
                if not line:
                    break
                self.last_activity = time.monotonic()
                stripped = line.strip()
                if not stripped:
                    continue
                try:
                    message = json.loads(stripped)
                    if not isinstance(message, dict):
                        raise ValueError("not an object")
                except ValueError:
                    self.malformed_lines += 1
                    self.log.note("!", "malformed line from the agent, dropped: "
                                  + stripped[:300].decode("utf-8", "replace"))
                    continue
                self.log.message("←", message)
                if _unusable_usage(message):
                    self.log.note("!", "usage_update without 'used' dropped (the SDK's schema "
                                  "requires it)")
                    continue
                reader.feed_data(line if line.endswith(b"\n") else line + b"\n")
        except (ConnectionError, OSError) as exc:
            self.log.note("!", f"reading the agent failed: {exc}")
        finally:
            reader.feed_eof()

    async def _drain_stderr(self) -> None:
        """stderr → every line into the protocol log (bounded: StderrLines) and the tail."""
        assert self.process is not None
        lines = StderrLines(self.log, self.stderr)
        try:
            while True:
                chunk = await self.process.stderr.read(_STDERR_CHUNK)
                if not chunk:
                    break
                lines.feed(chunk)
        except (ConnectionError, OSError):
            pass
        finally:     # also when the client closes first: the last line and the count
            lines.close()
