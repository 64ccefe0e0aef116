"""The agent panel's state, display-free: conversations built from the core's ``agent.*`` events.

The panel (ui/tk/agent_panel.py) is a *view* of the core's conversations: it renders the same
events the terminal client renders (ui/term/chat.py) and sends the same ops. Everything that
can be decided without Tk lives here and is tested without a display
(tests/test_agent_model.py):

* :class:`Conversation` turns events into a list of :class:`Block` s (a user message, the
  assistant's streamed text, a tool card, a proposal card, an error line, a turn's end) and
  says what changed, so the view appends a delta to the end instead of redrawing the history;
* :class:`AgentModel` keeps every conversation of the project seen so far and the live state
  the status bar shows (idle, thinking, waiting for you, error);
* light Markdown for streamed text lives in :mod:`ui.tk.agent_text` (re-exported here);
* :func:`blocks_from_history` rebuilds the blocks of a conversation from ``agent.history``;
* the events only ACP agents send are handled in :mod:`ui.tk.agent_extras`; the panel's
  preferences and picker live in :mod:`ui.tk.agent_settings`.

Which provider (or, later, which ACP agent) is behind a conversation does not matter here: the
events are the same.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ui.tk import agent_extras as extras
from ui.tk import agent_pickers as pickers
from ui.tk.agent_text import (  # noqa: F401
    MarkdownStream,
    Span,
    diff_line_tag,
    fold_output,
    inline_spans,
    markdown_line,
    render_markdown,
    short_input,
)

#: What the status bar shows for each state (its cell is 12 characters wide).
STATE_LABELS = {"idle": "Agent idle", "thinking": "Thinking…", "waiting": "Waiting",
                "error": "Agent error", "off": "No agent"}

log = logging.getLogger("rio.ui.agent")


# --- conversations -----------------------------------------------------------------------------

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
#: to a block (always the last one); ("update", index) a block's data changed.
Change = tuple


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
        #: what an ACP agent offers for its own pickers (ui/tk/agent_pickers.py)
        self.agent_modes: dict[str, Any] = {}
        self.agent_config: list[dict[str, Any]] = []
        self._tools: dict[str, int] = {}        # call id → block index
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
            return self._add(Block("assistant", turn, text))
        if topic == "agent.tool":
            self.turn = self.turn or turn
            block = Block("tool", turn, str(data.get("name") or ""),
                          {"name": data.get("name"), "input": data.get("input") or {},
                           "status": "running", "title": data.get("title"),
                           "kind": data.get("kind")})
            changes = self._add(block)
            self._tools[str(data.get("call"))] = len(self.blocks) - 1
            return changes
        if topic == "agent.tool_result":
            call = str(data.get("call"))
            changes: list[Change] = []
            for pid, at in list(self.pending.items()):
                # Answered elsewhere (rio chat, rio call): the tool's result says how.
                if self.blocks[at].data.get("call") == call:
                    changes += self.decided(pid, "applied" if data.get("ok") else "not applied",
                                            "" if data.get("ok") else str(data.get("summary")))
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

    def prepend_history(self, history: Mapping[str, Any]) -> None:
        """Put the conversation's earlier history (``agent.history``) before the blocks the
        events built; turns the events already showed are not repeated."""
        seen = {b.turn for b in self.blocks if b.turn}
        earlier = [b for b in blocks_from_history(history) if b.turn not in seen]
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
            return changes + self._add(Block("user", turn, str(data.get("text") or "")))
        if state not in ("done", "stopped", "error"):
            return []
        changes = self._close_pending("closed" if state != "stopped" else "stopped")
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
            # question's is "perm:<request>" (ui/tk/agent_extras.py).
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

    def buffer_changed(self, buffer: str, origin: str) -> list[Change]:
        """Another change to a buffer the last turn changed: its undo step is not the latest
        any more, so the panel's Undo is withdrawn (Edit → Undo still reaches it)."""
        end = self.last_turn_end()
        if end is None or buffer not in end.data["buffers"] or end.data["undo"] != "available":
            return []
        end.data["undo"] = "superseded"
        return [("update", self.blocks.index(end))]


def error_lines(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What the panel shows under an error line, as (label, text): an ACP agent's own words
    when the message does not hold them whole, and its error's details
    (:func:`rio.agent.failures.shown_details`, the same as ``rio chat`` prints)."""
    from rio.agent.failures import shown_details
    return shown_details(str(data.get("message") or ""), data.get("details"))


def blocks_from_history(history: Mapping[str, Any]) -> list[Block]:
    """``agent.history`` → the blocks the panel shows (finished turns: no pending proposals)."""
    blocks: list[Block] = []
    turns = list(history.get("turns") or ())
    tools: dict[str, Block] = {}
    n_user = 0
    for message in history.get("messages") or ():
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        texts = [c.get("text", "") for c in content or () if c.get("type") == "text"]
        results = [c for c in content or () if c.get("type") == "tool_result"]
        turn = turns[n_user - 1]["turn"] if 0 < n_user <= len(turns) else None
        if role == "user" and texts and not results:
            turn = turns[n_user]["turn"] if n_user < len(turns) else None
            n_user += 1
            blocks.append(Block("user", turn, "".join(texts)))
            continue
        for r in results:
            block = tools.get(str(r.get("tool_use_id")))
            if block is not None:
                body = r.get("content")
                if isinstance(body, list):
                    body = "".join(c.get("text", "") for c in body if isinstance(c, dict))
                first = str(body or "").strip().splitlines()[:1]
                block.data.update({"status": "failed" if r.get("is_error") else "ok",
                                   "summary": first[0][:120] if first else ""})
        if role == "assistant":
            for c in content or ():
                if c.get("type") == "text" and c.get("text"):
                    blocks.append(Block("assistant", turn, c["text"]))
                elif c.get("type") == "tool_use":
                    block = Block("tool", turn, str(c.get("name")), {
                        "name": c.get("name"), "input": c.get("input") or {},
                        "status": "ok", "summary": ""})
                    tools[str(c.get("id"))] = block
                    blocks.append(block)
    # Errors of finished turns go after that turn's last block.
    for t in turns:
        err = t.get("error")
        if t.get("status") == "error" and isinstance(err, Mapping):
            text = f"{err.get('message')} — {err.get('next')}" if err.get("next") \
                else str(err.get("message"))
            at = max((i for i, b in enumerate(blocks) if b.turn == t.get("turn")),
                     default=len(blocks) - 1) + 1
            blocks.insert(at, Block("error", t.get("turn"), text, dict(err)))
    return blocks


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
