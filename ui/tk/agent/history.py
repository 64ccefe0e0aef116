"""A conversation's history (``agent.history``) as the panel's blocks, display-free (tested in
tests/desktop/agent/test_agent_model.py).

What the core keeps of a turn (ADR-0024 "What history keeps"): its messages — what the model
or agent is sent again — and, for turns recorded since, the events that were shown (``shown``),
compacted by :mod:`rio.agent.shown`. A turn with ``shown`` is drawn again from those events
through the same :class:`~ui.tk.agent.model.Conversation` as live events, so a reloaded
conversation shows the blocks it showed: text segments as tool calls split them, tool lines
with their results, the plan, proposal and permission cards as answered, the files-changed
and end-of-turn cards. An older turn is rebuilt from its messages (text and tool lines only).
"""

from __future__ import annotations

from typing import Any, Mapping

from ui.tk.agent.model import Block, Conversation


def blocks_from_history(history: Mapping[str, Any]) -> list[Block]:
    """``agent.history`` → the blocks the panel shows (finished turns: no pending proposals).

    A turn the core recorded as it was shown (its ``shown`` events, ADR-0024 "What history
    keeps") is drawn again from those events, through the same :class:`Conversation` as live
    events: its text segments as tool calls split them, tool lines with their results, the
    plan, proposal and permission cards as they were answered, the files-changed and
    end-of-turn cards. A turn recorded before that (or cut short) is rebuilt from its
    messages, as before. A reloaded end-of-turn card offers Undo only for the last turn,
    once the panel has checked the buffers (``undo: check``)."""
    cid = str(history.get("conversation") or "")
    turns = [t for t in history.get("turns") or () if isinstance(t, Mapping)]
    from_messages = _blocks_from_messages(history)
    if not any(isinstance(t.get("shown"), list) for t in turns):
        blocks = from_messages
    else:
        blocks = [b for b in from_messages if b.turn is None]
        for t in turns:
            shown = t.get("shown")
            if isinstance(shown, list):
                blocks += _replay_turn(cid, t, shown)
            else:
                blocks += [b for b in from_messages if b.turn == t.get("turn")]
    ends = [b for b in blocks if b.kind == "turn_end"]
    for b in ends:
        b.data["undo"] = "superseded"
        b.data["past"] = True       # what it changed; not where that stands now
    if ends and not any(b.kind == "user" for b in blocks[blocks.index(ends[-1]):]):
        ends[-1].data["undo"] = "check"
    return blocks


def _replay_turn(cid: str, record: Mapping[str, Any], shown: list[Any]) -> list[Block]:
    """One turn's recorded events → its blocks, as the live events drew them."""
    conv = Conversation(cid)
    turn = record.get("turn")
    events = [e for e in shown if isinstance(e, Mapping) and isinstance(e.get("data"), Mapping)]
    if not events or events[0].get("topic") != "agent.turn":
        conv.apply("agent.turn", {"conversation": cid, "turn": turn, "state": "started",
                                  "text": str(record.get("text") or "")})
    for e in events:
        conv.apply(str(e.get("topic") or ""), {**e["data"], "conversation": cid, "turn": turn})
    if conv.turn is not None:      # its end was not recorded with it: the record says how
        status = record.get("status") if record.get("status") in ("done", "stopped",
                                                                   "error") else "error"
        end: dict[str, Any] = {"conversation": cid, "turn": turn, "state": status}
        if isinstance(record.get("error"), Mapping):
            end["error"] = dict(record["error"])
        conv.apply("agent.turn", end)
    if record.get("shown_cut"):
        conv.add_block("note", turn, "Part of this turn was too long to keep in the history.")
    paths = (record.get("changes") or {}).get("paths") if isinstance(
        record.get("changes"), Mapping) else None
    for b in conv.blocks:
        if b.kind == "turn_end" and paths:
            b.data["paths"] = [str(p) for p in paths]
        if b.kind == "sign_in" and b.data.get("state") == "needed":
            b.data["state"] = "past"      # asked then; a new message asks again if need be
    return conv.blocks


def _blocks_from_messages(history: Mapping[str, Any]) -> list[Block]:
    """The blocks of turns recorded without what was shown: from their messages (text and
    tool calls; no cards)."""
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


