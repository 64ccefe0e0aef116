"""The agent panel's state, display-free: conversations built from the core's ``agent.*`` events.

The panel (ui/tk/agent/panel.py) is a *view* of the core's conversations: it renders the same
events the terminal client renders (ui/term/chat.py) and sends the same ops. Everything that
can be decided without Tk lives here and is tested without a display
(tests/desktop/agent/test_agent_model.py):

* :class:`Conversation` turns events into a list of :class:`Block` s (a user message, the
  assistant's streamed text, a tool card, a proposal card, an error line, a turn's end) and
  says what changed, so the view appends a delta to the end instead of redrawing the history;
* :class:`AgentModel` keeps every conversation of the project seen so far and the live state
  the status bar shows (idle, thinking, waiting for you, error);
* light Markdown for streamed text lives in :mod:`ui.tk.agent.text` (re-exported here);
* :func:`ui.tk.agent.history.blocks_from_history` rebuilds the blocks of a conversation from
  ``agent.history``;
* the events only ACP agents send are handled in :mod:`ui.tk.agent.extras`; the panel's
  preferences and picker live in :mod:`ui.tk.agent.settings`.

Which provider (or, later, which ACP agent) is behind a conversation does not matter here: the
events are the same.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Iterable, Mapping

from rio.agent.conversations import DEFAULT_TITLE, short_title
from ui.tk.agent import extras, pickers
from ui.tk.agent.blocks import Block as Block
from ui.tk.agent.blocks import Change as Change
from ui.tk.agent.text import (  # noqa: F401
    MarkdownStream,
    Span,
    diff_line_tag,
    fold_output,
    inline_spans,
    markdown_line,
    render_markdown,
)

#: What the status bar shows for each state (its cell is 12 characters wide).
STATE_LABELS = {"idle": "Agent idle", "thinking": "Thinking…", "waiting": "Waiting",
                "error": "Agent error", "off": "No agent"}

log = logging.getLogger("rio.ui.agent")


# --- conversations -----------------------------------------------------------------------------

# Block and Change live in ui/tk/agent/blocks.py (the model's helpers name them too).

#: How each agent titles its own line for a call of Rio's MCP tools (server ``rio``): claude
#: ``mcp__rio__<tool>``, codex ``Tool: rio/<tool>``, opencode ``rio_<tool>``. Rio publishes
#: its own line for the same call (``agent.tool {source: mcp}``): the two are shown as one.
_MCP_TITLE = re.compile(r"(?:mcp__rio__|Tool: rio/|rio_)([A-Za-z0-9_]+)")
#: What a proposal's tool result says when it was not applied (rio/agent/turn.py,
#: acp_turn.py: "<tool or path>: rejected" …) → the card's decision.
_NOT_APPLIED = {"rejected": "rejected", "interrupted": "interrupted", "stopped": "stopped",
                "not answered": "timed_out"}


def mcp_tool_of(title: Any, kind: Any = None) -> str | None:
    """The Rio MCP tool an agent's own tool line is about, or None: its title is exactly the
    agent's name for one of Rio's tools, and its kind the one the adapters give an MCP tool
    ("other"). A shell command whose text a model made look like that (claude titles a
    command with the command itself, kind "execute") keeps its own line: it is never hidden
    behind Rio's (as rio.mcp.entry.rio_tool_of_question reads a permission question)."""
    if kind not in (None, "", "other"):
        return None
    m = _MCP_TITLE.fullmatch(str(title or ""))
    if m is None:
        return None
    from rio.agent.gate import AGENT_TOOLS
    return m.group(1) if m.group(1) in AGENT_TOOLS else None


def result_decision(ok: bool, summary: str) -> tuple[str, str]:
    """A proposal's decision and reason from its tool's result (answered elsewhere, or a
    conversation reloaded from history): applied, rejected, interrupted … or not applied."""
    if ok:
        return "applied", ""
    tail = summary.rsplit(":", 1)[-1].strip().rstrip(".")
    if tail in _NOT_APPLIED:
        return _NOT_APPLIED[tail], ""
    return "not applied", summary


class Conversation:
    def __init__(self, cid: str, *, title: str = "", provider: str = ""):
        self.id = cid
        self.title = title
        self.provider = provider
        self.blocks: list[Block] = []
        self.turn: str | None = None            # the running turn
        self.pending: dict[str, int] = {}       # proposal id → block index, while it waits
        self.error: dict[str, Any] | None = None
        self.loaded = False                     # history fetched (or started here)
        self.commands: list[dict[str, Any]] = []  # an ACP agent's slash commands
        #: what an ACP agent offers for its own pickers (ui/tk/agent/pickers.py)
        self.agent_modes: dict[str, Any] = {}
        self.agent_config: list[dict[str, Any]] = []
        self._tools: dict[str, int] = {}        # call id → block index
        #: an agent's own calls of Rio's MCP tools shown on Rio's line (their updates and
        #: results are Rio's to show: the line says what Rio did)
        self._absorbed: set[str] = set()
        self._errored: set[str] = set()         # turns whose error is already shown

    # --- state -------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        if self.pending:
            return "waiting"
        if self.turn is not None:
            return "thinking"
        if self.error is not None:
            return "error"
        return "idle"

    def messages(self) -> list[dict[str, str]]:
        """``[{role, text}]`` as ``ui.state`` reports them: the user's and the agent's text,
        errors as ``role: error``."""
        out = []
        for b in self.blocks:
            if b.data.get("hidden"):
                continue
            if b.kind in ("user", "assistant"):
                out.append({"role": b.kind, "text": b.text})
            elif b.kind == "error":
                out.append({"role": "error", "text": b.text})
        return out

    def pending_list(self) -> list[dict[str, Any]]:
        out = []
        for pid, i in self.pending.items():
            d = self.blocks[i].data
            item = {"proposal": pid, "path": d.get("path"), "turn": self.blocks[i].turn,
                    "kind": d.get("kind")}
            if d.get("kind") == "permission":
                item["options"] = [o.get("kind") for o in d.get("options") or ()]
            out.append(item)
        return out

    def last_turn_end(self) -> Block | None:
        for b in reversed(self.blocks):
            if b.kind == "turn_end":
                return b
            if b.kind == "user":
                return None
        return None

    # --- events ------------------------------------------------------------------------------
    def _add(self, block: Block) -> list[Change]:
        self.blocks.append(block)
        return [("block", len(self.blocks) - 1)]

    def add_block(self, kind: str, turn: Any, text: str = "",
                  data: dict[str, Any] | None = None) -> list[Change]:
        return self._add(Block(kind, turn, text, data or {}))

    def apply(self, topic: str, data: Mapping[str, Any]) -> list[Change]:
        turn = data.get("turn")
        if topic == "agent.turn":
            return self._on_turn(data)
        if topic == "agent.delta":
            text = str(data.get("text") or "")
            if not text:
                return []
            self.turn = self.turn or turn
            last = self.blocks[-1] if self.blocks else None
            if last is not None and last.kind == "assistant" and last.turn == turn:
                last.text += text
                return [("text", len(self.blocks) - 1, text)]
            late = self._late_text(turn, text)
            if late is not None:
                return late
            return self._add(Block("assistant", turn, text))
        if topic == "agent.tool":
            self.turn = self.turn or turn
            merged = self._merge_mcp_line(turn, data)
            if merged is not None:
                return merged
            block = Block("tool", turn, str(data.get("name") or ""),
                          {"name": data.get("name"), "input": data.get("input") or {},
                           "status": "running", "title": data.get("title"),
                           "kind": data.get("kind"), "call": str(data.get("call"))})
            if data.get("source") == "mcp":
                block.data["source"] = "mcp"
            elif mcp_tool_of(data.get("title"), data.get("kind")):
                block.data["mcp_tool"] = mcp_tool_of(data.get("title"), data.get("kind"))
            changes = self._add(block)
            self._tools[str(data.get("call"))] = len(self.blocks) - 1
            return changes
        if topic == "agent.tool_result":
            call = str(data.get("call"))
            if call in self._absorbed:
                return []       # Rio's own line shows this MCP call and its result
            changes = []
            for pid, at in list(self.pending.items()):
                # Answered elsewhere (rio chat, rio call), or a turn replayed from history:
                # the tool's result says how.
                if self.blocks[at].data.get("call") == call:
                    changes += self.decided(pid, *result_decision(
                        bool(data.get("ok")), str(data.get("summary") or "")))
            i = self._tools.get(call)
            result = {"status": "ok" if data.get("ok") else "failed",
                      "summary": str(data.get("summary") or ""),
                      "truncated": bool(data.get("truncated")),
                      "output": data.get("output")}
            if i is None:
                block = Block("tool", turn, str(data.get("name") or ""),
                              {"name": data.get("name"), "input": {}, **result})
                return changes + self._add(block)
            self.blocks[i].data.update(result)
            return changes + [("update", i)]
        if topic == "agent.propose":
            self.turn = self.turn or turn
            pid = str(data.get("proposal"))
            block = Block("proposal", turn, str(data.get("path") or ""),
                          {"proposal": pid, "path": data.get("path"),
                           "kind": data.get("kind") or "edit", "diff": data.get("diff") or "",
                           "command": data.get("command"), "cwd": data.get("cwd"),
                           "danger": data.get("danger"), "decision": None,
                           "call": str(data.get("call"))})
            changes = self._add(block)
            self.pending[pid] = len(self.blocks) - 1
            return changes
        if topic in extras.TOPICS:
            return extras.apply(self, topic, data)
        if topic in pickers.TOPICS:
            return pickers.apply(self, topic, data)
        if topic == "agent.message":
            # The turn's whole text, once it ended: shown only when no delta showed it.
            if any(b.kind == "assistant" and b.turn == turn for b in self.blocks):
                return []
            text = str(data.get("text") or "")
            return self._add(Block("assistant", turn, text)) if text else []
        if topic == "agent.error":
            return self._error(turn, data)
        return []

    # --- an agent's own line for a call of Rio's MCP tools, and Rio's line for it -----------
    def _merge_mcp_line(self, turn: Any, data: Mapping[str, Any]) -> list[Change] | None:
        """One line per call of Rio's MCP tools: Rio's ``agent.tool {source: mcp}`` and the
        agent's own tool call titled after it (``mcp__rio__propose_edit``, ``Tool:
        rio/propose_edit``, ``rio_propose_edit``) are the same call, in either order. The line
        shows Rio's name, input and result. None: not such a pair, a line of its own."""
        call = str(data.get("call"))
        if data.get("source") == "mcp":
            name = str(data.get("name") or "")
            i = self._unpaired(turn, lambda b: b.data.get("mcp_tool") == name)
            if i is None:
                return None
            d = self.blocks[i].data
            self._absorbed.add(str(d.get("call")))
            d.update({"name": name, "input": data.get("input") or {}, "title": None,
                      "kind": None, "status": "running", "source": "mcp", "paired": True,
                      "agent_call": d.get("call"), "call": call})
            d.pop("output", None)
            self.blocks[i].text = name
            self._tools[call] = i
            return [("update", i)]
        tool = mcp_tool_of(data.get("title"), data.get("kind"))
        if tool is None:
            return None
        i = self._unpaired(turn, lambda b: b.data.get("source") == "mcp"
                           and b.data.get("name") == tool)
        if i is None:
            return None
        self.blocks[i].data["paired"] = True
        self._absorbed.add(call)
        self._tools[call] = i
        return []

    def _unpaired(self, turn: Any, match: Any) -> int | None:
        """The first tool line of ``turn`` not yet paired that ``match`` accepts."""
        for i, b in enumerate(self.blocks):
            if b.kind == "tool" and b.turn == turn and not b.data.get("paired") \
                    and not b.data.get("hidden") and match(b):
                return i
        return None

    def tool_update(self, call: str, data: Mapping[str, Any]) -> list[Change]:
        """An agent's update of its own tool call (agent.tool_update): redrawn in place. One
        whose title now names one of Rio's MCP tools joins Rio's line for that call."""
        if call in self._absorbed:
            return []
        i = self._tools.get(call)
        if i is None:
            return []
        block = self.blocks[i]
        tool = mcp_tool_of(data.get("title"), data.get("kind") or block.data.get("kind"))
        if tool and block.data.get("source") != "mcp" and not block.data.get("paired"):
            j = self._unpaired(block.turn, lambda b: b.data.get("source") == "mcp"
                               and b.data.get("name") == tool)
            if j is not None:
                self.blocks[j].data["paired"] = True
                self._absorbed.add(call)
                self._tools[call] = j
                block.data["hidden"] = True      # drawn as nothing: Rio's line says it
                return [("update", i)]
            block.data["mcp_tool"] = tool
        d = block.data
        for key in ("title", "kind", "input", "status"):
            if data.get(key) is not None:
                d[key] = data[key]
        if d.get("status") in ("completed",):
            d["status"] = "ok"
        elif d.get("status") in ("failed",):
            d["status"] = "failed"
        return [("update", i)]

    # --- text that comes late -----------------------------------------------------------------
    def _late_text(self, turn: Any, text: str) -> list[Change] | None:
        """Text of a turn that arrives while one of its cards waits for the user was written
        before that card's call: an agent waits on the call, so it cannot have written it
        after (opencode sends a text part's first chunk late, after the tool call it
        preceded). It goes before the call's line. None: not such text."""
        waiting = [i for i in self.pending.values() if self.blocks[i].turn == turn]
        if not waiting:
            return None
        card = min(waiting)
        line = self._tools.get(str(self.blocks[card].data.get("call")))
        at = line if line is not None and line < card else card
        while at > 0 and self.blocks[at - 1].turn == turn and self.blocks[at - 1].kind == \
                "tool" and self.blocks[at - 1].data.get("hidden"):
            at -= 1
        before = self.blocks[at - 1] if at else None
        if before is not None and before.kind == "assistant" and before.turn == turn:
            before.text += text
            return [("update", at - 1)]
        self.blocks.insert(at, Block("assistant", turn, text))
        self.pending = {pid: i + (i >= at) for pid, i in self.pending.items()}
        self._tools = {c: i + (i >= at) for c, i in self._tools.items()}
        return [("reset",)]

    def _error(self, turn: Any, data: Mapping[str, Any]) -> list[Change]:
        key = str(turn)
        err = {"kind": data.get("kind"), "message": data.get("message"),
               "next": data.get("next")}
        if isinstance(data.get("details"), Mapping) and data["details"]:
            err["details"] = dict(data["details"])   # an ACP agent's words (error_lines)
        self.error = err
        if key in self._errored:
            return []
        self._errored.add(key)
        text = f"{err['message']} — {err['next']}" if err.get("next") else str(err["message"])
        if err["kind"] == "agent.sign_in_needed" and any(b.kind == "sign_in"
                                                         for b in self.blocks):
            # the card above says how, method by method: the line only points at it
            text = "Sign-in needed: use the card above, then send your message again."
        return self._add(Block("error", turn, text, dict(err)))

    def prepend_history(self, history: Mapping[str, Any], blocks: list[Block]) -> None:
        """Put the conversation's earlier history (``agent.history``, drawn as ``blocks`` by
        :func:`ui.tk.agent.history.blocks_from_history`) before the blocks the events built;
        turns the events already showed are not repeated."""
        seen = {b.turn for b in self.blocks if b.turn}
        earlier = [b for b in blocks if b.turn not in seen]
        n = len(earlier)
        self.blocks = earlier + self.blocks
        self.pending = {pid: i + n for pid, i in self.pending.items()}
        self._tools = {call: i + n for call, i in self._tools.items()}
        self.provider = self.provider or who(history)
        self.loaded = True

    def note_error(self, kind: str, message: str, next_: str = "") -> list[Change]:
        """A failure of the panel's own request (agent.busy, not_configured …): one line."""
        err = {"kind": kind, "message": message, "next": next_}
        text = f"{message} — {next_}" if next_ else message
        return self._add(Block("error", self.turn, text, err))

    def _on_turn(self, data: Mapping[str, Any]) -> list[Change]:
        turn = data.get("turn")
        state = data.get("state")
        if state == "started":
            changes: list[Change] = []
            if self.turn is not None and self.turn != turn:
                changes += self._close_pending("interrupted")
            self.turn = turn
            self.error = None
            text = str(data.get("text") or "")
            if not self.title or self.title == DEFAULT_TITLE:
                self.title = short_title(text)      # the store names it after this message
            return changes + self._add(Block("user", turn, text))
        if state not in ("done", "stopped", "error"):
            return []
        last = len(self.blocks) - 1
        changes = [("finish", last)] if last >= 0 and self.blocks[last].kind == "assistant" \
            and self.blocks[last].turn == turn else []
        changes += self._close_pending("closed" if state != "stopped" else "stopped")
        if self.turn == turn:
            self.turn = None
        if state == "error" and data.get("error"):
            changes += self._error(turn, data["error"])
        elif state == "stopped":
            changes += self._add(Block("note", turn, "Stopped."))
        buffers = [str(b) for b in data.get("buffers") or ()]
        if buffers:
            changes += self._add(Block("turn_end", turn, "", {
                "state": state, "buffers": buffers, "names": {}, "undo": "available",
                "saved": False}))
        return changes

    def _close_pending(self, why: str) -> list[Change]:
        changes = []
        for i in list(self.pending.values()):
            if self.blocks[i].data.get("decision") is None:
                self.blocks[i].data["decision"] = why
            changes.append(("update", i))
        self.pending.clear()
        # A permission question answered here whose closing never came (a stopped turn ends
        # without agent.permission_closed): it must not say "Answering…" for ever.
        for i, b in enumerate(self.blocks):
            if b.kind == "permission" and b.data.get("decision") == "answering":
                b.data["decision"] = why
                changes.append(("update", i))
        return changes

    def decided(self, proposal: str, decision: str, reason: str = "") -> list[Change]:
        """The user answered a proposal (here or elsewhere): it waits no more."""
        i = self.pending.pop(str(proposal), None)
        if i is None:
            # No longer waiting (answered here, "Answering…"): found by its id — a permission
            # question's is "perm:<request>" (ui/tk/agent/extras.py).
            i = next((n for n, b in enumerate(self.blocks) if (b.kind == "proposal"
                      and b.data.get("proposal") == str(proposal)) or (b.kind == "permission"
                      and f"{extras.PERMISSION}{b.data.get('request')}" == str(proposal))),
                     None)
            if i is None:
                return []
        self.blocks[i].data["decision"] = decision
        if reason:
            self.blocks[i].data["reason"] = reason
        return [("update", i)]

    def buffer_changed(self, buffer: str, origin: str, kind: str = "edit",
                       label: str = "") -> list[Change]:
        """Another change to a buffer the last turn changed. The turn's own step taken back
        (Edit → Undo, ``rio chat``'s /undo: an undo step labelled "Agent: …") marks that
        buffer undone — all of them: the card says so; put back (redo), it is the latest
        change again. Any other change: the turn's step is not the latest any more, so the
        panel's Undo is withdrawn (Edit → Undo still reaches it)."""
        end = self.last_turn_end()
        if end is None or buffer not in end.data["buffers"]:
            return []
        d = end.data
        undone = d.setdefault("undone", [])
        agent_step = label.startswith("Agent")
        if kind == "undo" and agent_step:
            if buffer not in undone:
                undone.append(buffer)
            if set(undone) >= set(d["buffers"]):
                d["undo"] = "undone"
        elif kind == "redo" and agent_step:
            if buffer in undone:
                undone.remove(buffer)
            if d["undo"] in ("undone", "undoing"):
                d["undo"] = "available"
            d["saved"] = False
        elif d["undo"] == "available":
            d["undo"] = "superseded"
        else:
            return []
        return [("update", self.blocks.index(end))]

    def buffer_saved(self, buffer: str) -> list[Change]:
        """A buffer the last turn changed was saved (File → Save, Save all, rio chat's
        /save): the card says so once every one of them is."""
        end = self.last_turn_end()
        if end is None or buffer not in end.data["buffers"]:
            return []
        saved = end.data.setdefault("saved_buffers", [])
        if buffer not in saved:
            saved.append(buffer)
        if set(saved) >= set(end.data["buffers"]) and not end.data.get("saved"):
            end.data["saved"] = True
            return [("update", self.blocks.index(end))]
        return []


def turn_end_text(d: Mapping[str, Any]) -> str:
    """The end-of-turn card's line: what the turn changed and where that stands now —
    undone (the panel's Undo, Edit → Undo), saved, or changed and not saved yet."""
    buffers = list(d.get("buffers") or ())
    names = [d.get("names", {}).get(b) for b in buffers]
    paths = d.get("paths") or []
    if None in names and len(paths) == len(buffers):
        names = list(paths)     # a turn from the history: its buffers may be gone
    shown = [n or b for n, b in zip(names, buffers)]
    undone = set(d.get("undone") or ())
    if d.get("undo") == "undone" or (buffers and undone >= set(buffers)):
        return "Undone: " + ", ".join(shown)
    if d.get("past"):       # from the history, no longer the latest change: no claim
        return "Changed in this turn: " + ", ".join(shown)
    if d.get("saved"):
        return "Saved: " + ", ".join(shown)
    return "Changed, not saved yet: " + ", ".join(
        n + (" (undone)" if b in undone else "") for n, b in zip(shown, buffers))


def error_lines(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What the panel shows under an error line, as (label, text): an ACP agent's own words
    when the message does not hold them whole, and its error's details
    (:func:`rio.agent.failures.shown_details`, the same as ``rio chat`` prints)."""
    from rio.agent.failures import shown_details
    return shown_details(str(data.get("message") or ""), data.get("details"))


def who(record: Mapping[str, Any]) -> str:
    """Who answers a conversation, as the picker names it: ``claude (ACP)`` for an ACP agent,
    else the provider (from agent.new, agent.list or agent.history)."""
    agent = record.get("agent")
    return f"{agent} (ACP)" if agent else str(record.get("provider") or "")


class AgentModel:
    """Every conversation of the project seen so far, and which one the panel shows."""

    def __init__(self) -> None:
        self.conversations: dict[str, Conversation] = {}
        self.current: str | None = None
        self.listing: list[dict[str, Any]] = []   # agent.list, most recent first

    def get(self, cid: str) -> Conversation:
        conv = self.conversations.get(cid)
        if conv is None:
            known = next((c for c in self.listing if c.get("conversation") == cid), {})
            conv = Conversation(cid, title=str(known.get("title") or ""), provider=who(known))
            self.conversations[cid] = conv
        return conv

    @property
    def shown(self) -> Conversation | None:
        return self.conversations.get(self.current) if self.current else None

    def apply(self, topic: str, data: Mapping[str, Any]) -> tuple[Conversation | None,
                                                                list[Change]]:
        cid = data.get("conversation")
        if not cid:
            return None, []
        conv = self.get(str(cid))
        return conv, conv.apply(topic, data)

    def unseen(self, events: Iterable[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        """``agent.pending``'s events that this model has not drawn yet: a window started
        after them draws them; one that saw them live (or already drew the snapshot) skips
        them, so nothing is drawn twice."""
        out: list[tuple[str, dict[str, Any]]] = []
        for e in events:
            topic, data = str(e.get("topic") or ""), dict(e.get("data") or {})
            conv = self.conversations.get(str(data.get("conversation")))
            blocks = conv.blocks if conv is not None else []
            if topic == "agent.turn":
                seen = any(b.turn == data.get("turn") for b in blocks)
            elif topic == "agent.propose":
                seen = any(b.kind == "proposal" and b.data.get("proposal") ==
                           str(data.get("proposal")) for b in blocks)
            elif topic == "agent.permission":
                seen = any(b.kind == "permission" and b.data.get("request") ==
                           data.get("request") for b in blocks)
            elif topic in ("agent.modes", "agent.config", "agent.commands"):
                # what the agent offers: drawn unless a live update already gave it (newer)
                key = {"agent.modes": "agent_modes", "agent.config": "agent_config",
                       "agent.commands": "commands"}[topic]
                seen = bool(getattr(conv, key, None)) if conv is not None else False
            else:
                seen = True
            if not seen:
                out.append((topic, data))
        return out

    def set_listing(self, listing: Iterable[Mapping[str, Any]]) -> None:
        self.listing = [dict(c) for c in listing]
        for c in self.listing:
            conv = self.conversations.get(str(c.get("conversation")))
            if conv is not None:
                conv.title = conv.title or str(c.get("title") or "")
                conv.provider = conv.provider or who(c)

    @property
    def state(self) -> str:
        """The status bar's state: a question waiting anywhere first, then work, then the shown
        conversation's error."""
        states = {c.state for c in self.conversations.values()}
        if "waiting" in states:
            return "waiting"
        if "thinking" in states:
            return "thinking"
        shown = self.shown
        if shown is not None and shown.state == "error":
            return "error"
        return "idle"

    def waiting_count(self) -> int:
        return sum(len(c.pending) for c in self.conversations.values())

    def waiting_elsewhere(self) -> Conversation | None:
        """A conversation (not the shown one) where a proposal waits — the panel switches to
        it when the shown one has nothing waiting, so nothing happens out of sight."""
        for c in self.conversations.values():
            if c.pending and c.id != self.current:
                return c
        return None

    def status_tip(self) -> str:
        """The status cell's tooltip: the state in words, and what a click does."""
        state = self.state
        if state == "waiting":
            n = self.waiting_count()
            return (f"The agent waits for you: {n} question{'s' if n != 1 else ''}. "
                    "Click to answer in the agent panel.")
        if state == "thinking":
            return "The agent is working. Click to watch it in the agent panel."
        if state == "error":
            err = self.shown.error if self.shown is not None else None
            what = f": {str(err.get('message')).rstrip('.')}" if err and err.get("message") \
                else ""
            return f"The agent's last turn failed{what}. Click to see what to do next."
        return "The agent is idle. Click to open the agent panel (Ctrl+Shift+A)."

    def status_text(self) -> str:
        state = self.state
        if state == "waiting":
            return f"Waiting ({self.waiting_count()})"
        return STATE_LABELS[state]
