"""``session/update`` notifications → Rio's ``agent.*`` events (the same ones as the API path).

:class:`UpdateTranslator` is synchronous on purpose: the SDK runs every notification in a
task of its own, and updates keep their order only while the handler records them before
its first ``await`` (SDK 0.12.1: every notification runs in its own task; reproduced, ADR-0023). Mapping:

============================  ===============================================================
``agent_message_chunk``       ``agent.delta {text}`` (empty chunks dropped: claude's first)
``agent_thought_chunk``       ``agent.thought {text}``
``tool_call``                 ``agent.tool {call, name, title, kind, status, input}``
``tool_call_update``          ``agent.tool_update {call, …changes}``; on ``completed`` or
                              ``failed``: ``agent.tool_result {call, name, ok, summary,
                              truncated, output?}``
``plan``                      ``agent.plan {entries: [{content, priority, status}]}``
``available_commands_update`` ``agent.commands {commands: [{name, description, hint}]}``
``current_mode_update``       ``agent.modes {current, available}``
``config_option_update``      ``agent.config {options}``
``usage_update``              ``agent.usage {used, size, cost?}``
``session_info_update``       ``agent.session_info {title?, updated_at?}``
============================  ===============================================================

Tool calls often open with ``rawInput: {}`` and ``status: pending`` and get their real input
in an update (observed with all three real agents), so the input is merged, never replaced
by an empty one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rio.agent.output_limits import StreamBudget
from rio.agent.tools import SHOWN_OUTPUT_CHARS
from rio.agent.turn import shown_input

Publish = Callable[[str, Mapping[str, Any]], None]


@dataclass
class ToolState:
    call: str
    title: str = ""
    kind: str = "other"
    status: str = "pending"
    input: Any = None
    ended: bool = False


def content_text(block: Any) -> str:
    """The text of a content block (text, or a resource's text); "" for images and the rest."""
    text = getattr(block, "text", None)
    if isinstance(text, str):
        return text
    resource = getattr(block, "resource", None)
    text = getattr(resource, "text", None)
    return text if isinstance(text, str) else ""


def tool_content_text(items: Any) -> str:
    out = []
    for item in items or ():
        inner = getattr(item, "content", None)
        if inner is not None:
            out.append(content_text(inner))
        elif getattr(item, "type", "") == "diff":
            out.append(f"[diff of {getattr(item, 'path', '')}]")
        elif getattr(item, "type", "") == "terminal":
            out.append(f"[terminal {getattr(item, 'terminal_id', '')}]")
    return "\n".join(t for t in out if t)


@dataclass
class UpdateTranslator:
    publish: Publish
    tools: dict[str, ToolState] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)
    #: the session's state for a UI that connects later
    modes: dict[str, Any] = field(default_factory=dict)
    commands: list[dict[str, Any]] = field(default_factory=list)
    config: list[Any] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    plan: list[dict[str, Any]] = field(default_factory=list)
    #: during session/load the agent replays the history: state kept, nothing re-published
    replaying: bool = False
    #: what this turn streamed, and how much of its reply is kept (rio/agent/output_limits.py)
    budget: StreamBudget = field(default_factory=StreamBudget)
    #: called once when the turn streams past its bound (the client stops the prompt)
    on_exceeded: Callable[[], None] | None = None

    def start_turn(self) -> None:
        self.text = []
        self.budget = StreamBudget()

    def reply_text(self) -> str:
        """The reply as kept: at most the message bound, its cut marked."""
        return "".join(self.text) + self.budget.mark()

    def _streamed(self, chars: int) -> bool:
        """Count what the agent streamed; False once the turn is past its bound (then nothing
        more is shown, and the client is told once)."""
        if self.budget.exceeded:
            return False
        if self.budget.take(chars):
            return True
        if self.on_exceeded is not None:
            self.on_exceeded()
        return False

    def handle(self, update: Any) -> None:
        kind = getattr(update, "session_update", "")
        handler = getattr(self, "_" + kind, None)
        if handler is not None:
            handler(update)

    # --- text -------------------------------------------------------------------------
    def _agent_message_chunk(self, u: Any) -> None:
        text = content_text(u.content)
        if text and not self.replaying and self._streamed(len(text)):
            text = self.budget.keep(text)
            if text:
                self.text.append(text)
                self.publish("agent.delta", {"text": text})

    def _agent_thought_chunk(self, u: Any) -> None:
        text = content_text(u.content)
        if text and not self.replaying and self._streamed(len(text)):
            self.publish("agent.thought", {"text": text})

    # --- tools ------------------------------------------------------------------------
    def _tool_call(self, u: Any) -> None:
        state = self.tools.get(u.tool_call_id) or ToolState(u.tool_call_id)
        self.tools[u.tool_call_id] = state
        state.title = u.title or state.title
        state.kind = u.kind or state.kind
        state.status = u.status or state.status
        if u.raw_input not in (None, {}):
            state.input = u.raw_input
        if self.replaying:
            return
        self.publish("agent.tool", {"call": state.call, "name": state.kind,
                                    "title": state.title, "kind": state.kind,
                                    "status": state.status,
                                    "input": shown_input(state.input or {})})
        if state.status in ("completed", "failed"):
            self._ended(state, u)

    def _tool_call_update(self, u: Any) -> None:
        state = self.tools.get(u.tool_call_id)
        if state is None:  # an update for a call never opened: open it first
            state = ToolState(u.tool_call_id, u.title or "", u.kind or "other")
            self.tools[u.tool_call_id] = state
            if not self.replaying:
                self.publish("agent.tool", {"call": state.call, "name": state.kind,
                                            "title": state.title, "kind": state.kind,
                                            "status": u.status or "pending", "input": {}})
        changes: dict[str, Any] = {}
        if u.title and u.title != state.title:
            state.title = changes["title"] = u.title
        if u.kind and u.kind != state.kind:
            state.kind = changes["kind"] = u.kind
        if u.raw_input not in (None, {}) and u.raw_input != state.input:
            state.input = u.raw_input
            changes["input"] = shown_input(u.raw_input)
        if u.status and u.status != state.status:
            state.status = changes["status"] = u.status
        if self.replaying:
            return
        if state.status in ("completed", "failed") and not state.ended:
            self._ended(state, u)
        elif changes:
            self.publish("agent.tool_update", {"call": state.call, **changes})

    def _ended(self, state: ToolState, u: Any) -> None:
        state.ended = True
        output = tool_content_text(getattr(u, "content", None))
        if not output and getattr(u, "raw_output", None) is not None:
            output = u.raw_output if isinstance(u.raw_output, str) else repr(u.raw_output)
        if not self._streamed(len(output)):
            output = ""       # the turn is past its bound: the line, not its output
        ok = state.status == "completed"
        result: dict[str, Any] = {
            "call": state.call, "name": state.kind, "ok": ok,
            "summary": f"{state.title or state.kind}: {'done' if ok else 'failed'}",
            "truncated": len(output) > SHOWN_OUTPUT_CHARS}
        if output:
            result["output"] = output[-SHOWN_OUTPUT_CHARS:]
        self.publish("agent.tool_result", result)

    # --- session state ----------------------------------------------------------------
    def _plan(self, u: Any) -> None:
        self.plan = [{"content": e.content, "priority": e.priority, "status": e.status}
                     for e in u.entries]
        if not self.replaying:
            self.publish("agent.plan", {"entries": self.plan})

    def _available_commands_update(self, u: Any) -> None:
        self.commands = [{"name": c.name, "description": c.description,
                          "hint": getattr(getattr(c, "input", None), "root", None) and
                          getattr(c.input.root, "hint", None) or ""}
                         for c in u.available_commands]
        self.publish("agent.commands", {"commands": self.commands})

    def set_modes(self, modes: Any) -> None:
        """From session/new or session/load's answer."""
        if modes is None:
            return
        self.modes = {"current": modes.current_mode_id,
                      "available": [{"id": m.id, "name": m.name,
                                     "description": m.description or ""}
                                    for m in modes.available_modes]}
        self.publish("agent.modes", self.modes)

    def _current_mode_update(self, u: Any) -> None:
        self.modes = {**self.modes, "current": u.current_mode_id}
        self.publish("agent.modes", {"current": u.current_mode_id,
                                     "available": self.modes.get("available", [])})

    def set_config(self, options: Any) -> None:
        if options is None:
            return
        self.config = [o.model_dump(mode="json", by_alias=True, exclude_none=True)
                       if hasattr(o, "model_dump") else o for o in options]
        self.publish("agent.config", {"options": self.config})

    def _config_option_update(self, u: Any) -> None:
        self.set_config(u.config_options)

    def _usage_update(self, u: Any) -> None:
        self.usage = {"used": u.used, "size": u.size}
        if u.cost is not None:
            self.usage["cost"] = {"amount": u.cost.amount, "currency": u.cost.currency}
        self.publish("agent.usage", self.usage)

    def _session_info_update(self, u: Any) -> None:
        info = {k: v for k, v in (("title", u.title), ("updated_at", u.updated_at)) if v}
        if info:
            self.publish("agent.session_info", info)

    def open_calls(self) -> list[str]:
        return [s.call for s in self.tools.values() if not s.ended]
