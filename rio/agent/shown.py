"""What a turn showed, kept for its history: the turn's ``agent.*`` events, compacted and bounded.

A conversation's messages are what the model (or ACP agent) is sent again; they are not what
the user saw. An ACP agent's reply is one text however many tool calls split it; tool lines,
plans, proposal and permission cards, the files an agent changed on disk are in no message.
So the core's conversations actor (actors/agent/conversations_actor.py) feeds every event of a
running turn to a :class:`ShownRecorder`, and the store appends its :meth:`ShownRecorder.record`
to the turn's log once the turn has ended (``{"t": "shown", …}``, rio/agent/conversations.py).
A client draws a reloaded turn from those events the way it drew them live (the desktop:
ui/tk/agent/history.py). ADR-0024 "What history keeps".

Compacted, in order: consecutive text (``agent.delta``) and reasoning (``agent.thought``) are
one event each — a tool call between two texts keeps them two, as they were shown; a tool
call's updates are folded into its ``agent.tool``; a plan is kept once, where it first
appeared, with its last entries. Left out: what shows nothing lasting (``agent.silent``, usage,
session ids, the agent's modes, options and commands, ``agent.message`` when text streamed).
Bounded: :data:`MAX_CHARS` of JSON per turn, :data:`MAX_EVENTS` events; a proposal's diff or
a changed file's diff over :data:`MAX_DIFF_CHARS` is dropped with a note. Past the bound, text
and outputs are left out and ``cut`` says the record is not whole; a turn's start and end
are always kept.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

#: Topics whose events a reloaded turn draws again.
KEPT = frozenset({
    "agent.turn", "agent.delta", "agent.thought", "agent.tool", "agent.tool_update",
    "agent.tool_result", "agent.propose", "agent.permission", "agent.permission_closed",
    "agent.plan", "agent.note", "agent.restarted", "agent.changed_files", "agent.sign_in",
    "agent.error", "agent.message"})
#: Merged with the event before when it is of the same topic.
_STREAMED = ("agent.delta", "agent.thought")
#: A turn's record is at most this many characters of JSON …
MAX_CHARS = 256 * 1024
#: … and this many events.
MAX_EVENTS = 2000
#: A diff longer than this is not kept in the history (the live card had it).
MAX_DIFF_CHARS = 64 * 1024
DIFF_LEFT_OUT = "The diff was too long to keep in the history."


def _size(value: Any) -> int:
    try:
        return len(json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return MAX_CHARS


class ShownRecorder:
    """One running turn's events, as its history keeps them (see the module docstring)."""

    def __init__(self, *, max_chars: int = MAX_CHARS, max_events: int = MAX_EVENTS) -> None:
        self.events: list[dict[str, Any]] = []
        self.chars = 0
        self.cut = False
        self.max_chars = max_chars
        self.max_events = max_events
        self._tools: dict[str, dict[str, Any]] = {}     # call → its agent.tool data
        self._plan: dict[str, Any] | None = None
        self._streamed = False

    def add(self, topic: str, data: Mapping[str, Any]) -> None:
        if topic not in KEPT:
            return
        body = {k: v for k, v in data.items() if k not in ("conversation", "turn")}
        if topic == "agent.message":
            if self._streamed:
                return          # the text is in the deltas, split where it was shown
        elif topic in _STREAMED:
            self._streamed = self._streamed or topic == "agent.delta"
            self._stream(topic, str(body.get("text") or ""))
            return
        elif topic == "agent.tool_update":
            tool = self._tools.get(str(body.get("call")))
            if tool is not None:
                before = _size(tool)
                tool.update({k: v for k, v in body.items() if k != "call" and v is not None})
                self.chars += _size(tool) - before
                return
        elif topic == "agent.plan" and self._plan is not None:
            self._plan["entries"] = body.get("entries") or []
            return
        body = _trimmed(topic, body)
        structural = topic in ("agent.turn", "agent.propose", "agent.permission",
                               "agent.permission_closed", "agent.error", "agent.tool",
                               "agent.tool_result", "agent.changed_files")
        size = _size(body) + len(topic) + 24
        if self.chars + size > self.max_chars or len(self.events) >= self.max_events:
            self.cut = True
            if not structural:
                return
            body = _bare(topic, body)
            size = _size(body) + len(topic) + 24
            if topic != "agent.turn" and (self.chars + size > self.max_chars * 1.25
                                          or len(self.events) >= self.max_events * 1.25):
                return
        self.events.append({"topic": topic, "data": body})
        self.chars += size
        if topic == "agent.tool":
            self._tools[str(body.get("call"))] = body
        elif topic == "agent.plan":
            self._plan = body

    def _stream(self, topic: str, text: str) -> None:
        if not text:
            return
        last = self.events[-1] if self.events else None
        if self.chars + len(text) > self.max_chars:
            self.cut = True
            return
        self.chars += len(text)
        if last is not None and last["topic"] == topic:
            last["data"]["text"] += text
        else:
            self.events.append({"topic": topic, "data": {"text": text}})
            self.chars += len(topic) + 24

    def record(self) -> dict[str, Any]:
        """What the store appends: ``{"events": […], "cut": bool}``."""
        return {"events": self.events, "cut": self.cut}


def _trimmed(topic: str, body: dict[str, Any]) -> dict[str, Any]:
    """Long diffs left out (the rest of the event kept); a turn's end without the list of
    changed files (``agent.changed_files`` drew their card)."""
    if topic == "agent.propose" and len(str(body.get("diff") or "")) > MAX_DIFF_CHARS:
        return {**body, "diff": DIFF_LEFT_OUT}
    if topic == "agent.turn":
        return {k: v for k, v in body.items() if k != "changed_files"}
    if topic == "agent.changed_files":
        files = []
        for f in body.get("files") or ():
            f = dict(f)
            if len(str(f.get("diff") or "")) > MAX_DIFF_CHARS:
                f.pop("diff", None)
                f.pop("stored_as", None)
                f["note"] = DIFF_LEFT_OUT
            files.append(f)
        return {**body, "files": files}
    return body


def _bare(topic: str, body: dict[str, Any]) -> dict[str, Any]:
    """A structural event past the bound: what draws its line or card, without bulk."""
    drop = {"agent.tool": ("input",), "agent.tool_result": ("output",),
            "agent.propose": ("diff",), "agent.permission": ("input",),
            "agent.error": ("details",)}.get(topic, ())
    out = {k: v for k, v in body.items() if k not in drop}
    if topic == "agent.propose":
        out["diff"] = DIFF_LEFT_OUT
    if topic == "agent.permission":
        out["input"] = {}
    if topic == "agent.tool":
        out["input"] = {}
    if topic == "agent.changed_files":
        out["files"] = [{k: v for k, v in f.items() if k in ("path", "change")}
                        for f in body.get("files") or ()]
    return out
