"""How much an agent may stream in one turn, and how much of it is kept (issue 22, ADR-0041).

An ACP agent that streamed 70 MB in a turn killed the core's conversations actor (publishing
``agent.message`` raised ``protocol.oversize_frame``), and the 70 MB message on disk then made
that conversation's history fail to load for good. Below the frame limit nothing was bounded
either (core 318 MB, session 217 MB at peak). So, everywhere the text of a turn passes:

* **A turn streams at most** :data:`TURN_CHARS` (text, reasoning and tool output together).
  Past it the turn is stopped — an ACP agent's prompt is cancelled, a model's stream ended —
  with ``agent.output_limit``; a note says so (``agent.note {note: "output_cut"}``) and what
  was kept stays in the history.
* **A message keeps at most** :data:`MESSAGE_CHARS` of text: the rest is cut, and the cut is
  marked in the text itself (:func:`cut_text`), so the history says what is missing. Deltas past
  it are not published (the user has seen a megabyte; the rest is not shown either).
* **The store cuts too** (rio/agent/conversations.py): a message recorded or read back from an
  older log longer than the bound is cut the same way, and ``agent.history`` (and the history a
  session is given) keeps at most :data:`HISTORY_CHARS` of message text, cutting the oldest
  messages first — a conversation always loads, whatever is on disk.

Cut, not spilled to a file: an agent that streams megabytes in one turn is broken or hostile,
not writing something the user will read, and a spill file would let it fill the disk instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rio.protocol.errors import AgentError
from rio.providers.base import Message, TextBlock, ToolResultBlock

MIB = 1024 * 1024
#: Characters of text one message keeps (an agent's whole reply, in ACP).
MESSAGE_CHARS = 1 * MIB
#: Characters a turn may stream (text, reasoning, tool output) before Rio stops it.
TURN_CHARS = 4 * MIB
#: Characters of message text ``agent.history`` (and a turn's history) carries at most.
HISTORY_CHARS = 24 * MIB
#: ``agent.note``'s ``note`` when a turn's stream is cut.
OUTPUT_CUT = "output_cut"


def cut_mark(dropped: int) -> str:
    return (f"\n\n[… cut by Rio: {dropped} more characters were not kept — a message keeps "
            f"at most {MESSAGE_CHARS // MIB} MiB of text]")


def cut_text(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text``, or its first ``limit`` characters and a mark saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + cut_mark(len(text) - limit)


def bounded_message(message: Message, limit: int = MESSAGE_CHARS) -> Message:
    """``message`` with every text (and tool result) cut to ``limit`` characters."""
    if not any(_long(b, limit) for b in message.content):
        return message
    blocks = []
    for block in message.content:
        if isinstance(block, TextBlock) and len(block.text) > limit:
            block = replace(block, text=cut_text(block.text, limit))
        elif isinstance(block, ToolResultBlock) and len(block.content) > limit:
            block = replace(block, content=cut_text(block.content, limit))
        blocks.append(block)
    return Message(message.role, tuple(blocks))


def _long(block: object, limit: int) -> bool:
    if isinstance(block, TextBlock):
        return len(block.text) > limit
    if isinstance(block, ToolResultBlock):
        return len(block.content) > limit
    return False


def _chars(message: Message) -> int:
    return sum(len(b.text) if isinstance(b, TextBlock) else
               len(b.content) if isinstance(b, ToolResultBlock) else 0
               for b in message.content)


def bounded_history(messages: Sequence[Message], budget: int = HISTORY_CHARS
                    ) -> list[Message]:
    """``messages`` whose text adds up to at most ``budget`` characters: the newest are kept
    whole, older ones past the budget keep a line saying their text was left out (their tool
    calls and results stay, so the history still pairs them)."""
    total = sum(_chars(m) for m in messages)
    if total <= budget:
        return list(messages)
    out: list[Message] = []
    left = budget
    for message in reversed(messages):
        size = _chars(message)
        if size <= left:
            left -= size
            out.append(message)
            continue
        left = 0
        blocks = []
        for block in message.content:
            if isinstance(block, TextBlock) and block.text:
                block = replace(block, text=f"[left out of this history: {len(block.text)} "
                                            "characters]")
            elif isinstance(block, ToolResultBlock) and block.content:
                block = replace(block, content=f"[left out of this history: "
                                               f"{len(block.content)} characters]")
            blocks.append(block)
        out.append(Message(message.role, tuple(blocks)))
    out.reverse()
    return out


def output_limit() -> AgentError:
    return AgentError("output_limit", f"The agent streamed more than {TURN_CHARS // MIB} MiB "
                      f"in this turn, so Rio stopped it; the first {MESSAGE_CHARS // MIB} MiB "
                      "of its reply are kept.", "Ask for a shorter answer, or for the output "
                      "in a file in the project.")


class StreamBudget:
    """What one turn has streamed so far (:data:`TURN_CHARS` at most) and whether the reply
    it keeps (:data:`MESSAGE_CHARS` at most) is full."""

    def __init__(self, turn_chars: int = TURN_CHARS, message_chars: int = MESSAGE_CHARS):
        self.turn_chars = turn_chars
        self.message_chars = message_chars
        self.streamed = 0
        self.kept = 0         # characters of reply text kept (and published)
        self.dropped = 0      # characters of reply text past the message bound
        self.exceeded = False

    def take(self, chars: int) -> bool:
        """Count ``chars`` more streamed; False once the turn is over its bound."""
        self.streamed += chars
        if self.streamed > self.turn_chars:
            self.exceeded = True
        return not self.exceeded

    def keep(self, text: str) -> str:
        """The part of ``text`` (reply text) that is kept and shown: "" once the message is
        full."""
        room = self.message_chars - self.kept
        if room <= 0:
            self.dropped += len(text)
            return ""
        if len(text) > room:
            self.dropped += len(text) - room
            text = text[:room]
        self.kept += len(text)
        return text

    def mark(self) -> str:
        """The mark that ends a cut reply ("" when nothing was cut)."""
        return cut_mark(self.dropped) if self.dropped else ""
