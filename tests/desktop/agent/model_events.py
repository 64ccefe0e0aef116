"""The agent panel model's tests' events (tests/desktop/agent/test_agent_model*.py): one
conversation, its first turn, and a way to apply events and collect what the view is told."""

from __future__ import annotations

from typing import Any

from ui.tk.agent.model import Conversation

C = "3f9a0c12b7de"
T1 = f"{C}.1"
DIFF = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+gamma\n"


def ev(topic: str, **data: Any) -> tuple[str, dict[str, Any]]:
    """An ``agent.*`` event of the conversation's first turn."""
    return topic, {"conversation": C, "turn": T1, **data}


def run(conv: Conversation, *events: tuple[str, dict[str, Any]]) -> list[Any]:
    """Apply ``events`` in order; what the view is told to draw."""
    out: list[Any] = []
    for topic, data in events:
        out += conv.apply(topic, data)
    return out
