"""A test's connection to an instance that records the ``agent.*`` events it sees.

Shared by the tests that drive conversations through a real ``rio serve``
(tests/agent/test_agent_session.py, test_mcp_endpoint.py, test_mcp_session.py): ``wait`` for an
event whose fields match (a value may be a predicate), ``of`` a topic, ``said`` — the text a
turn streamed.
"""

from __future__ import annotations

from typing import Any

from rio.protocol.errors import RioError
from rio.protocol.frames import thaw
from tests.support import RioServer, wait_for


class AgentEvents:
    def __init__(self, server: RioServer, name: str, prefixes: tuple[str, ...] = ("agent.",)):
        self.server = server
        self.conn = server.connect(name, subscribe=prefixes)
        self.events: list[tuple[str, dict]] = []
        for prefix in prefixes:
            self.conn.subscribe(prefix, lambda e: self.events.append((e.topic, thaw(e.data))))

    def call(self, op: str, args: dict | None = None, timeout: float = 15.0) -> Any:
        return self.conn.call(op, args or {}, timeout=timeout)

    def wait(self, topic: str, timeout: float = 60.0, **match: Any) -> dict:
        """The first ``topic`` event whose fields match (``value`` or ``predicate(value)``)."""
        def matching() -> dict | None:
            return next((data for t, data in self.events
                         if t == topic and all(v(data.get(k)) if callable(v) else data.get(k) == v
                                               for k, v in match.items())), None)
        return wait_for(matching, timeout, 0.02, pause=self.conn.wait, what=f"{topic} {match}",
                        seen=lambda: [t for t, _ in self.events])

    def of(self, topic: str) -> list[dict]:
        self.conn.drain()
        return [d for t, d in self.events if t == topic]

    def said(self, turn: str) -> str:
        """The text ``turn`` streamed (its agent.delta events, in order)."""
        return "".join(d.get("text", "") for d in self.of("agent.delta") if d.get("turn") == turn)

    def end_session(self, conversation: str) -> None:
        """Stop the conversation's session process for good (the supervisor caps live ones)."""
        try:
            self.server.call("system.restart", {"process": f"agent:{conversation}",
                                                "again": False}, timeout=20)
        except RioError:
            pass

    def close(self) -> None:
        self.conn.close()
