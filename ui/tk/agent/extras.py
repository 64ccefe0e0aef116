"""The events only ACP agents send (docs/protocol.md "ACP agents"), as panel blocks — so the
panel shows an ACP conversation the way it shows an API provider's, whatever is behind it.

* ``agent.thought`` — the agent's reasoning, streamed into a ``thought`` block the view shows
  folded (a click unfolds it);
* ``agent.tool_update`` — a running tool call changed (title, kind, input, status): its card
  is redrawn in place;
* ``agent.plan`` — the whole plan each time it changes: one ``plan`` block per turn, updated;
* ``agent.silent`` — no word from the agent for a while: one ``note`` per turn, updated, and
  cleared when it speaks again;
* ``agent.permission`` — the agent asks before one of its own tools: a ``permission`` card
  with the agent's own options; it waits like a proposal (the status bar counts it);
* ``agent.permission_closed`` — the question was answered (here or elsewhere), declined or
  timed out: its card stops asking and says how (ui/tk/agent/permission_model.py);
* ``agent.commands`` — the agent's slash commands, kept on the conversation for the input's
  ``/`` completion (no block);
* ``agent.sign_in`` — the agent needs a sign-in: a ``sign_in`` card with its own ways (a
  terminal command with Copy, a variable to set, a sign-in the agent does itself); no key
  field, ever. ``{state: signed_in}`` turns the card into a note.
* ``agent.restarted`` — the agent had died and was started again (its session resumed where it
  offers that): its one line, as a note;
* ``agent.changed_files`` — files the agent changed on disk itself, behind Rio's back: a note
  naming them, so nothing happens to the user's files out of sight (open buffers of those files
  get the usual conflict prompt);
* ``agent.note`` — one line to show as is (e.g. a question about one of Rio's own tools that
  Rio answered "allow once" itself): a note.

Display-free, like :mod:`ui.tk.agent.model`; :meth:`Conversation.apply` hands these here.
"""

from __future__ import annotations

import shlex
from typing import Any, Mapping

from ui.tk.agent.blocks import Blocks, Change
from ui.tk.agent.permission_model import closed_decision

TOPICS = ("agent.thought", "agent.tool_update", "agent.plan", "agent.silent", "agent.sign_in",
          "agent.permission", "agent.permission_closed", "agent.commands", "agent.restarted",
          "agent.changed_files", "agent.note")
#: At most this many changed files are named in the note (the rest are counted).
CHANGED_FILES_SHOWN = 12
#: A permission question waits in ``Conversation.pending`` under this prefix + its request id.
PERMISSION = "perm:"
#: A plan entry's status → its check box on the plan card.
PLAN_MARKS = {"completed": "☑", "in_progress": "◐", "pending": "☐"}


def apply(conv: Blocks, topic: str, data: Mapping[str, Any]) -> list[Change]:
    turn = data.get("turn")
    if topic == "agent.thought":
        text = str(data.get("text") or "")
        if not text:
            return []
        conv.turn = conv.turn or turn
        last = conv.blocks[-1] if conv.blocks else None
        if last is not None and last.kind == "thought" and last.turn == turn:
            last.text += text
            return [("text", len(conv.blocks) - 1, text)]
        return conv.add_block("thought", turn, text)
    if topic == "agent.tool_update":
        return conv.tool_update(str(data.get("call")), data)
    if topic == "agent.plan":
        entries = [dict(e) for e in data.get("entries") or () if isinstance(e, Mapping)]
        for i, b in enumerate(conv.blocks):
            if b.kind == "plan" and b.turn == turn:
                b.data["entries"] = entries
                return [("update", i)]
        return conv.add_block("plan", turn, "", {"entries": entries})
    if topic == "agent.silent":
        seconds = int(data.get("seconds") or 0)
        text = "" if data.get("resumed") or seconds <= 0 else \
            f"No word from the agent for {seconds} s" + (
                f" (Rio gives up after {int(data['give_up_after_s'])} s; Stop ends it now)."
                if data.get("give_up_after_s") else ".")
        for i, b in enumerate(conv.blocks):
            if b.kind == "note" and b.turn == turn and b.data.get("silent"):
                b.text = text or "The agent is answering again."
                return [("update", i)]
        return conv.add_block("note", turn, text, {"silent": True}) if text else []
    if topic == "agent.permission":
        conv.turn = conv.turn or turn
        key = f"{PERMISSION}{data.get('request')}"
        changes = conv.add_block("permission", turn, str(data.get("title") or ""), {
            "request": data.get("request"), "call": str(data.get("call")), "kind": "permission",
            "title": data.get("title"),
            "tool_kind": data.get("tool_kind") or data.get("kind"),
            "input": data.get("input") or {}, "decision": None,
            "options": [dict(o) for o in data.get("options") or () if isinstance(o, Mapping)]})
        conv.pending[key] = len(conv.blocks) - 1
        return changes
    if topic == "agent.permission_closed":
        # Answered (here or elsewhere), declined or timed out: the card stops asking — also
        # one this panel answered and still shows "Answering…" (the session's word is final).
        key = f"{PERMISSION}{data.get('request')}"
        return conv.decided(key, closed_decision(data.get("how") or "answered",
                                                 data.get("kind")))
    if topic == "agent.commands":
        conv.commands = [dict(c) for c in data.get("commands") or () if isinstance(c, Mapping)
                         and c.get("name")]
        return []
    if topic == "agent.restarted":
        text = str(data.get("message") or "The agent stopped and was started again.")
        return conv.add_block("note", turn, text, {"restarted": True})
    if topic == "agent.note":
        text = str(data.get("text") or "")
        return conv.add_block("note", turn, text, {"note": data.get("note")}) if text else []
    if topic == "agent.changed_files":
        files = [dict(f) for f in data.get("files") or () if isinstance(f, Mapping)]
        unchecked = data.get("unchecked")
        # what the comparison could not look at (a project past its cap, ADR-0042): said
        # with the list, or alone when nothing it compared changed
        note = str(unchecked.get("note") or "") if isinstance(unchecked, Mapping) else ""
        if not files:
            return conv.add_block("note", turn, note, {"note": "unchecked"}) if note else []
        text = changed_files_text(files, int(data.get("more") or 0))
        return conv.add_block("note", turn, f"{text} {note}" if note else text,
                              {"changed_files": files, "more": int(data.get("more") or 0),
                               "unchecked": note})
    if topic == "agent.sign_in":
        for i, b in enumerate(conv.blocks):
            if b.kind == "sign_in" and b.data.get("state") == "needed":
                b.data.update({k: v for k, v in data.items()
                               if k in ("state", "agent", "methods", "method")})
                return [("update", i)]
        if data.get("state") != "needed":
            return []
        return conv.add_block("sign_in", turn, "", {
            "state": "needed", "agent": data.get("agent"),
            "methods": [dict(m) for m in data.get("methods") or () if isinstance(m, Mapping)]})
    return []


def sign_in_lines(method: Mapping[str, Any]) -> tuple[str, str]:
    """(what it is, what to do) for one sign-in method, as the card shows it."""
    kind = method.get("type")
    name = str(method.get("name") or method.get("id") or "")
    if kind == "terminal":
        # The exact command: ``shell`` (variables and quoting included), else the argv.
        command = method.get("shell")
        if not command:
            argv = method.get("command") or ()
            argv = [argv] if isinstance(argv, str) else [shlex.quote(str(a)) for a in argv]
            command = " ".join(argv + [shlex.quote(str(a)) for a in method.get("args") or ()])
        return f"{name}: run in a terminal, then send your message again", str(command)
    if kind == "env_var":
        names = ", ".join(str(v.get("name", v)) if isinstance(v, Mapping) else str(v)
                          for v in method.get("vars") or ())
        return f"{name}: set {names or 'the variable'} and restart Rio", ""
    return f"{name}: {method.get('description') or 'the agent signs you in itself'} — "\
        "press Sign in, then send your message again", ""


def plan_lines(entries: list[dict[str, Any]]) -> list[str]:
    """The plan as a checklist, one line per entry."""
    return [f"{PLAN_MARKS.get(str(e.get('status')), '☐')} {e.get('content', '')}"
            for e in entries]


def changed_files_text(files: list[dict[str, Any]], more: int = 0) -> str:
    """One note for the files an agent changed on disk itself."""
    named = [f"{f.get('path')} ({f.get('change') or 'modified'})"
             for f in files[:CHANGED_FILES_SHOWN]]
    rest = len(files) - len(named) + more
    tail = f" and {rest} more" if rest > 0 else ""
    n = len(files) + more
    return (f"The agent changed {n} file{'s' if n != 1 else ''} on disk itself: "
            f"{', '.join(named)}{tail}. Open documents of these files ask before anything is "
            "overwritten.")
