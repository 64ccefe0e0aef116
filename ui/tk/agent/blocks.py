"""A conversation's pieces as the panel shows them (:class:`Block`) and the changes the view
draws (:data:`Change`). Their own module so that the helpers :mod:`ui.tk.agent.model` hands
events to (extras.py, pickers.py) can name them without importing the model back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class Block:
    """One piece of the conversation as the panel shows it.

    ``kind``: ``user`` | ``assistant`` | ``tool`` | ``proposal`` | ``error`` | ``note`` |
    ``turn_end``. ``data`` holds the event fields the view needs (tool name/input/result,
    proposal id/path/diff/decision, error kind/message/next, a turn's buffers)."""

    kind: str
    turn: str | None = None
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


#: A change for the view: ("block", index) a new block; ("text", index, delta) text appended
#: to a block (always the last one); ("update", index) a block's data changed; ("finish",
#: index) the block's text is complete (its last line is drawn as Markdown now); ("reset",)
#: a block was put before others: the conversation is drawn again.
Change = tuple[Any, ...]


class Blocks(Protocol):
    """What the model's helpers (extras.py, pickers.py) use of a
    :class:`ui.tk.agent.model.Conversation`: its blocks and waiting questions, what the agent
    offers, and the ways it adds and settles blocks."""

    blocks: list[Block]
    turn: str | None
    pending: dict[str, int]
    commands: list[dict[str, Any]]
    agent_modes: dict[str, Any]
    agent_config: list[dict[str, Any]]

    def add_block(self, kind: str, turn: Any, text: str = "",
                  data: dict[str, Any] | None = None) -> list[Change]: ...
    def tool_update(self, call: str, data: Any) -> list[Change]: ...
    def decided(self, proposal: str, decision: str, reason: str = "") -> list[Change]: ...
