"""What the agent panel does after a turn (Save all, Undo) and the ``ui.agent`` control op.

Undo is the turn's single undo step (``Agent: …``, merged by the core) in each buffer the turn
changed, and only while it is still the latest change there — the same check as ``rio chat``'s
``/undo``: ``buffer.info``'s ``undo_label`` must be the agent's.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from rio.agent.conversations import DEFAULT_TITLE, undo_label
from rio.protocol.errors import ProtocolError, RioError
from ui.tk.agent import pickers as agent_pickers
from ui.tk.agent.model import Block, Conversation, turn_end_text
from ui.tk.agent.permission_model import closed_decision

Respond = Callable[[Any], None]
#: What :func:`control` returns when it answers later through ``respond``.
DEFER = None
ACTIONS = ("open", "close", "minimise", "send", "type", "approve", "reject", "always",
           "answer", "stop", "undo", "new", "mode", "tick", "agent_setting",
           "sign_in", "review", "revert", "provider")


def turn_end_of(conv: Conversation | None) -> Block | None:
    return conv.last_turn_end() if conv is not None else None


def save_turn(panel: Any, block: Block | None, respond: Respond | None = None) -> None:
    """Save every buffer the turn left unsaved (``buffer.save``, as File → Save does)."""
    if block is None:
        if respond is not None:
            respond({"saved": [], "failed": []})
        return
    buffers = list(block.data["buffers"])
    left = {"n": len(buffers), "failed": []}

    def one_done() -> None:
        left["n"] -= 1
        if left["n"] == 0:
            block.data["saved"] = not left["failed"]
            panel.refresh_block(block)
            if respond is not None:
                respond({"saved": [b for b in buffers if b not in left["failed"]],
                         "failed": left["failed"]})

    for bid in buffers:
        def fail(err: RioError, bid: str = bid) -> None:
            left["failed"].append(bid)
            panel.app.show_error(err)
            one_done()
        panel.request("buffer.save", {"buffer": bid}, lambda _s: one_done(), fail)


def undo_turn(panel: Any, block: Block | None, respond: Respond | None = None) -> None:
    """The turn's one undo step in each buffer it changed, while it is the latest change."""
    if block is None or block.data.get("undo") != "available":
        if respond is not None:
            respond(ProtocolError("bad_args", "There is no agent turn to undo.",
                                  "Undo is offered while the turn's change is the latest one."))
        return
    block.data["undo"] = "undoing"
    panel.refresh_block(block)
    buffers = list(block.data["buffers"])
    report: dict[str, list[str]] = {"undone": [], "skipped": []}

    def finished() -> None:
        if len(report["undone"]) + len(report["skipped"]) == len(buffers):
            block.data["undo"] = "undone"
            panel.refresh_block(block)
            if respond is not None:
                respond(report)

    for bid in buffers:
        def info(summary: Any, bid: str = bid) -> None:
            if not str(summary.get("undo_label") or "").startswith("Agent"):
                report["skipped"].append(bid)
                finished()
                return
            panel.request("buffer.undo", {"buffer": bid, "origin": f"ui:{os.getpid()}"},
                          lambda _r: (report["undone"].append(bid), finished()),
                          lambda err: (report["skipped"].append(bid), finished()))
        panel.request("buffer.info", {"buffer": bid}, info,
                      lambda err, bid=bid: (report["skipped"].append(bid), finished()))


def provider_chosen(panel: Any, respond: Respond | None = None) -> None:
    """A pick in the Provider picker. A conversation keeps the provider or agent it was
    started with (its history is that agent's; an ACP agent keeps its own session), so
    with a conversation shown the pick starts a new one with the picked agent — and says
    so in it, naming the one left; the earlier conversation stays in the list. With none
    shown, the pick is what the next message starts with."""
    picked = panel.provider.get()
    conv = panel.model.shown
    if conv is None or not picked or picked == conv.provider:
        if respond is not None:
            respond({"conversation": conv.id if conv else None, "provider": picked,
                     "new": False})
        return

    def made(new: Conversation) -> None:
        where = f"“{conv.title}”" if conv.title and conv.title != DEFAULT_TITLE else \
            "the earlier conversation"
        note = (f"A new conversation with {picked}: a conversation keeps the agent it "
                f"started with, so {where} with {conv.provider or 'its provider'} stays as "
                "it was (Conversation: picks it again).")
        panel.apply_changes(new, new.add_block("note", None, note, {"provider_pick": True}))
        if respond is not None:
            respond({"conversation": new.id, "provider": new.provider, "new": True,
                     "left": conv.id})

    def failed(err: RioError) -> None:
        panel._sync_header()          # the picker shows the shown conversation's again
        if respond is not None:
            respond(err)
    panel.new_conversation(made, failed)


def check_reloaded_turn_end(panel: Any, conv: Conversation) -> None:
    """A reloaded conversation's last end-of-turn card (``undo: check``): what stands
    now — its buffers' names, saved or not, and Undo only while the turn's step is still
    the latest one in each (``buffer.info``, the check ``rio chat``'s /undo makes)."""
    block = next((b for b in conv.blocks if b.kind == "turn_end"
                  and b.data.get("undo") == "check"), None)
    if block is None:
        return
    label = undo_label(next((b.text for b in conv.blocks if b.kind == "user"
                             and b.turn == block.turn), ""))
    buffers = list(block.data["buffers"])
    seen: dict[str, Any] = {}

    def one(bid: str, summary: Any) -> None:
        seen[bid] = summary
        if len(seen) < len(buffers):
            return
        alive = {b: s for b, s in seen.items() if s is not None}
        for b, s in alive.items():
            block.data["names"][b] = str(s.get("path") or s.get("name") or b)
        latest = bool(alive) and all(s.get("undo_label") == label for s in alive.values()) \
            and conv.last_turn_end() is block       # not a turn the live ones followed
        # Still the latest change in each: the card says where it stands (saved or not) and
        # offers Undo; else it only says what the turn changed.
        block.data["undo"] = "available" if latest else "superseded"
        block.data["past"] = not latest
        block.data["saved"] = latest and not any(s.get("dirty") for s in alive.values())
        if block in conv.blocks:
            panel.apply_changes(conv, [("update", conv.blocks.index(block))])
    for bid in buffers:
        panel.request("buffer.info", {"buffer": bid}, lambda s, b=bid: one(b, s),
                     lambda err, b=bid: one(b, None))


def answer_proposal(panel: Any, proposal: str | None, decision: str,
                    respond: Respond | None = None) -> None:
    """Approve / Reject / Always on a waiting proposal (``agent.approve``)."""
    found = panel.find_pending(proposal)
    if found is None:
        err = ProtocolError("bad_args", "No proposal is waiting for an answer.",
                            "Look at ui.state agent.pending.")
        if respond is not None:
            respond(err)
        return
    conv, pid = found
    block = conv.blocks[conv.pending[pid]]
    panel.apply_changes(conv, conv.decided(pid, "answering"))

    def done(result: Any) -> None:
        applied = bool(result.get("applied"))
        label = "rejected" if decision == "reject" else \
            ("always" if decision == "always" else "applied") if applied else "not applied"
        panel.apply_changes(conv, conv.decided(pid, label, str(result.get("reason") or "")))
        if respond is not None:
            respond({"proposal": pid, "decision": decision, "applied": applied,
                     "reason": result.get("reason")})

    def failed(err: RioError) -> None:
        panel.apply_changes(conv, conv.decided(pid, "closed", err.message))
        if respond is not None:
            respond(err)
    panel.request("agent.approve", {"turn": block.turn, "proposal": pid,
                                    "decision": decision}, done, failed)


def answer_permission(panel: Any, key: str | None, option: str | None,
                      respond: Respond | None = None) -> None:
    """Answer an ACP agent's permission question with one of its options, by kind
    (``allow_once``, ``allow_always``, ``reject_once``, ``reject_always``; None declines)."""
    found = panel.find_pending(key, permission=True)
    if found is None:
        if respond is not None:
            respond(ProtocolError("bad_args", "No permission question is waiting.",
                                  "Look at ui.state agent.pending."))
        return
    conv, pid = found
    block = conv.blocks[conv.pending[pid]]
    chosen = next((o for o in block.data.get("options") or ()
                   if option in (o.get("kind"), o.get("id"))), None)
    kind = chosen.get("kind") if chosen else None
    panel.apply_changes(conv, conv.decided(pid, "answering"))

    def done(result: Any) -> None:
        # agent.permission_closed may have settled the card already (its word is final);
        # else the answer settles it — or says the question had closed before it arrived.
        if block.data.get("decision") == "answering":
            answered = (result or {}).get("answered", True)
            settled = closed_decision("answered" if kind else "declined", kind) \
                if answered else "gone"
            panel.apply_changes(conv, conv.decided(pid, settled))
        if respond is not None:
            respond({"request": block.data.get("request"), "kind": kind, **(result or {})})

    def failed(err: RioError) -> None:
        if block.data.get("decision") == "answering":
            panel.apply_changes(conv, conv.decided(pid, "closed", err.message))
        if respond is not None:
            respond(err)
    panel.request("agent.permission_answer", {"conversation": conv.id, "turn": block.turn,
                                              "request": str(block.data.get("request")),
                                              "kind": kind}, done, failed)


def sign_in(panel: Any, method: str | None, respond: Respond | None = None) -> None:
    """The sign-in card's *Sign in*: one of the agent's own ("agent") methods, run by the
    agent itself (``agent.authenticate``; it may open the browser). ``method`` None: the
    first such method of the card."""
    conv = panel.model.shown
    block = next((b for b in reversed(conv.blocks if conv else ()) if b.kind == "sign_in"
                  and b.data.get("state") == "needed"), None)
    ids = [str(m.get("id")) for m in (block.data.get("methods") or ())
           if m.get("type") not in ("terminal", "env_var")] if block is not None else []
    method = method or (ids[0] if ids else None)
    if conv is None or block is None or method not in ids:
        if respond is not None:
            respond(ProtocolError("bad_args", "No sign-in the agent does itself is waiting.",
                                  "Look at ui.state agent.blocks for a sign_in card."))
        return
    block.data["signing"] = method
    panel.refresh_block(block)

    def done(result: Any) -> None:
        block.data.pop("signing", None)
        block.data["state"] = "signed_in"       # agent.sign_in {signed_in} says it too
        block.data["method"] = method
        panel.refresh_block(block)
        if respond is not None:
            respond(result)

    def failed(err: RioError) -> None:
        block.data.pop("signing", None)
        panel.refresh_block(block)
        panel._panel_error(conv, err)
        if respond is not None:
            respond(err)
    panel.request("agent.authenticate", {"conversation": conv.id, "method": method}, done,
                  failed, timeout=630)


def terminal_argv(command: str, env: dict[str, str]) -> list[str]:
    """The user's terminal emulator running ``command`` and then their shell: ``$TERMINAL``,
    else ``x-terminal-emulator`` (Debian's choice), else ``xterm``. OSError when none."""
    import shutil
    for candidate in (env.get("TERMINAL"), "x-terminal-emulator", "xterm"):
        path = shutil.which(candidate, path=env.get("PATH")) if candidate else None
        if path:
            return [path, "-e", "sh", "-c", f'{command}; exec "${{SHELL:-sh}}"']
    raise OSError("no terminal emulator found (set $TERMINAL)")


def open_terminal(root: str, command: str) -> Any:
    """Sign-in's "Open a terminal here": the command the agent named, run in a terminal in the
    project folder — the user sees it there and types what it asks. Rio's own variables (bus
    addresses) stay out of that terminal's environment."""
    import subprocess
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIO_")}
    return subprocess.Popen(terminal_argv(command, env), cwd=root, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def retry(panel: Any, block: Block) -> None:
    """An error's Retry: send the failed turn's message again."""
    conv = panel.model.shown
    text = next((b.text for b in (conv.blocks if conv else ()) if b.kind == "user"
                 and b.turn == block.turn), "")
    if text:
        panel.send(text)


def active_file_note(panel: Any) -> str:
    """With "Name the active file" ticked: which file the user looks at, and where, added to
    the message (``(Active file: src/a.py, line 12.)``); "" otherwise."""
    var = getattr(panel, "name_active", None)
    ed = panel.app.active_editor()
    if var is None or not var.get() or ed is None or not ed.summary.get("path"):
        return ""
    try:
        line = ed.cursor()[0] if ed.ready else None
    except Exception:  # noqa: BLE001 -- a tab still loading: the path is enough
        line = None
    where = f", line {line}" if line else ""
    return f"\n\n(Active file: {ed.summary['path']}{where}.)"


def ask_about_selection(panel: Any) -> None:
    """Quote the editor's selection, with its path and lines, into the panel's input."""
    import tkinter as tk
    ed = panel.app.active_editor()
    if ed is None or not panel.prefs.show_ai:
        return
    try:
        text = ed.text.get("sel.first", "sel.last")
        first = int(ed.text.index("sel.first").split(".")[0])
        last = int(ed.text.index("sel.last - 1c").split(".")[0])
    except tk.TclError:
        panel.app.set_message("Select some text first, then ask the agent about it.")
        return
    where = ed.summary.get("path") or ed.summary.get("name") or "Untitled"
    lines = f"line {first}" if first == last else f"lines {first}–{last}"
    panel.open(focus=True)
    box = panel.input
    if box is None:
        return
    quote = f"In {where}, {lines}:\n```\n{text.rstrip(chr(10))}\n```\n"
    if box.get("1.0", "end-1c").strip():
        quote = "\n" + quote
    box.insert("end", quote)
    box.mark_set("insert", "end")
    box.see("end")


# --- ui.agent / ui.state -------------------------------------------------------------------------

def describe(panel: Any) -> dict[str, Any]:
    """The ``agent`` part of ``ui.state``."""
    conv = panel.model.shown
    end = turn_end_of(conv)
    return {"open": panel.is_open, "side": panel.prefs.side, "shown": panel.prefs.show_ai,
            "minimised": panel.is_open and panel.prefs.minimised,
            "strip": _strip(panel),
            "caption": _caption_centre(panel),
            "conversation": conv.id if conv else None,
            "provider": conv.provider if conv else None,
            "choices": list(panel.providers),
            "state": conv.state if conv else "idle", "status": panel.model.status_text(),
            "status_tip": panel.status_tip.text,
            "messages": conv.messages() if conv else [],
            "blocks": [b.kind for b in conv.blocks if not b.data.get("hidden")] if conv
            else [],
            "pending": conv.pending_list() if conv else [],
            "waiting": panel.model.waiting_count(),
            "marked": sorted(panel.marks.marked),
            "button": "tb_ai" in panel.app.toolbar.children,
            "input": panel.input.get("1.0", "end-1c") if panel.input is not None else "",
            "mode": panel.mode.get() if panel.is_open else None,
            "pickers": agent_pickers.describe(conv),
            "sign_in": _sign_in_card(conv),
            "changed_files": panel.changed_files(),
            "picker_boxes": sorted(getattr(panel, "agent_boxes", {})) if panel.is_open else [],
            "name_active": panel.prefs.name_active,
            "undo": end.data["undo"] if end else None,
            "turn_end": _turn_end_text(end),
            "chooser": panel.chooser.get() if panel.is_open else None,
            "tools": _tool_lines(conv),
            **_geometry(panel)}


def _turn_end_text(end: Block | None) -> str | None:
    """What the last end-of-turn card says ("Changed, not saved yet: …", "Undone: …")."""
    if end is None:
        return None
    return turn_end_text(end.data)


def _tool_lines(conv: Conversation | None) -> list[dict[str, Any]]:
    """The tool lines as drawn: one per call (an agent's own line for a call of Rio's MCP
    tools is Rio's line)."""
    return [{"name": b.data.get("name"), "title": b.data.get("title"),
             "status": b.data.get("status"), "summary": b.data.get("summary"),
             "source": b.data.get("source")}
            for b in (conv.blocks if conv else ()) if b.kind == "tool"
            and not b.data.get("hidden")]


#: The panel's controls ``cut`` checks, by attribute of the panel (None: not built).
_CONTROLS = ("provider_box", "stop_button", "chooser", "send_button", "input", "caption")


def _geometry(panel: Any) -> dict[str, Any]:
    """Where the panel is in the window (``geometry``: x, y, width, height, from the
    window's top left), the window's size, and ``cut``: the panel's controls that are not
    whole inside it — hidden, past its edge, or squeezed narrower than they ask (a Stop that
    reads "Sto")."""
    root = panel.app.root
    window = {"width": root.winfo_width(), "height": root.winfo_height()}
    frame = panel.frame
    if frame is None or not frame.winfo_ismapped():
        return {"geometry": None, "window": window, "cut": []}
    fx, fy = frame.winfo_rootx(), frame.winfo_rooty()
    fw, fh = frame.winfo_width(), frame.winfo_height()
    geometry = {"x": fx - root.winfo_rootx(), "y": fy - root.winfo_rooty(),
                "width": fw, "height": fh}
    if panel.prefs.minimised:
        return {"geometry": geometry, "window": window, "cut": []}
    widgets = {name: getattr(panel, name, None) for name in _CONTROLS}
    for name in ("mode", "new", "minimise", "dock", "close", "name_active"):
        widgets[name] = _child(panel, name)
    for pid, box in (getattr(panel, "agent_boxes", None) or {}).items():
        widgets[f"pick_{pid}"] = box
    cut = []
    for name, w in widgets.items():
        if w is None:
            continue
        try:
            x, y = w.winfo_rootx() - fx, w.winfo_rooty() - fy
            width, height = w.winfo_width(), w.winfo_height()
            # a picker may give up width (it shows less of its entry); a button or a tick
            # squeezed narrower than it asks is cut ("Sto")
            picker = w.winfo_class() == "TCombobox" or name in ("input", "caption")
            squeezed = width < (48 if picker else w.winfo_reqwidth() - 1)
            if not w.winfo_ismapped() or x < 0 or y < 0 or x + width > fw or \
                    y + height > fh or squeezed:
                cut.append(name)
        except Exception:  # noqa: BLE001 -- a widget destroyed meanwhile: not shown
            cut.append(name)
    return {"geometry": geometry, "window": window, "cut": sorted(cut)}


def _child(panel: Any, name: str) -> Any:
    """A named widget of the panel's body, wherever the layout put it."""
    todo = [panel.body] if panel.body is not None else []
    while todo:
        w = todo.pop()
        for child in w.winfo_children():
            if child.winfo_name() == name:
                return child
            todo.append(child)
    return None


def _sign_in_card(conv: Conversation | None) -> dict[str, Any] | None:
    """The last sign-in card as shown: its state and, per method, what it offers."""
    from ui.tk.agent.extras import sign_in_lines
    block = next((b for b in reversed(conv.blocks if conv else ()) if b.kind == "sign_in"),
                 None)
    if block is None:
        return None
    methods = [{"id": m.get("id"), "type": m.get("type") or "agent",
                "text": sign_in_lines(m)[0], "command": sign_in_lines(m)[1]}
               for m in block.data.get("methods") or ()]
    return {"state": block.data.get("state"), "signing": block.data.get("signing"),
            "methods": methods}


def _caption_centre(panel: Any) -> list[int] | None:
    """Where the panel's caption is on the screen (for a test that drags it)."""
    cap = getattr(panel, "caption", None) if panel.frame is not None else None
    try:
        if cap is None or not cap.winfo_ismapped():
            return None
        return [cap.winfo_rootx() + cap.winfo_width() // 2,
                cap.winfo_rooty() + cap.winfo_height() // 2]
    except Exception:  # noqa: BLE001 -- a destroyed caption: none to report
        return None


def _strip(panel: Any) -> dict[str, str] | None:
    """What the minimised strip shows: the state dot's colour and the count of questions."""
    if not (panel.is_open and panel.prefs.minimised) or panel.strip is None:
        return None
    dot = panel.strip.children["dot"]
    return {"dot": str(dot.itemcget("dot", "fill")),
            "count": str(panel.strip_count.cget("text"))}


def control(panel: Any, args: dict[str, Any], respond: Respond) -> Any:
    """``ui.agent``: what a user would do in the panel. Returns the result, or DEFER."""
    action = args["action"]
    if action not in ACTIONS:
        raise ProtocolError("bad_args", f"ui.agent: unknown action {action!r}.",
                            f"Use one of {', '.join(ACTIONS)}.")
    if action != "close" and not panel.prefs.show_ai:
        raise ProtocolError("bad_args", "The AI features are turned off.",
                            "Turn them on in Edit → AI Preferences….")
    if action == "open":
        panel.open(side=args.get("side"))
        if args.get("conversation"):
            cid = str(args["conversation"])
            panel.show_conversation(cid, then=lambda: respond(describe(panel)),
                                    fail=respond)
            return DEFER
        return describe(panel)
    if action == "close":
        panel.close()
        return describe(panel)
    if action == "minimise":
        panel.open()
        panel.minimise()
        return describe(panel)
    if action == "send":
        text = str(args.get("text") or "")
        if not text.strip():
            raise ProtocolError("bad_args", "ui.agent send needs a non-empty text.",
                                'Pass {"action": "send", "text": "…"}.')
        if not panel.is_open:
            panel.open()
        panel.send(text, respond)
    elif action == "type":
        # Typed into the panel's input and sent as Enter would (the ticks apply).
        if not panel.is_open:
            panel.open()
        panel.input.delete("1.0", "end")
        panel.input.insert("1.0", str(args.get("text") or ""))
        panel.send_input()
        return {"typed": True}
    elif action == "answer":
        proposal = args.get("proposal")
        answer_permission(panel, None if proposal is None else str(proposal),
                          args.get("option"), respond)
    elif action in ("approve", "reject", "always"):
        proposal = args.get("proposal")
        panel.answer(None if proposal is None else str(proposal), action, respond)
    elif action == "stop":
        panel.stop(respond)
    elif action == "undo":
        undo_turn(panel, turn_end_of(panel.model.shown), respond)
    elif action == "mode":
        if not panel.is_open:
            panel.open()
        panel.set_mode(str(args.get("mode") or ""), respond)
    elif action == "agent_setting":
        # A pick in the ACP agent's own row: {picker: "mode" or an option id, value}.
        if not panel.is_open:
            panel.open()
        picker = str(args.get("picker") or "mode")
        box = getattr(panel, "agent_boxes", {}).get(picker)
        if box is None:
            raise ProtocolError("bad_args", f"The agent offers no {picker!r} picker here.",
                                "Look at ui.state agent.pickers.")
        value = str(args.get("value") or "")
        choices = next((p["choices"] for p in agent_pickers.pickers(panel.model.shown)
                        if p["id"] == picker), [])
        box.set(dict(choices).get(value, value))
        agent_pickers.choose(panel, picker, value, respond)
    elif action == "sign_in":
        # The sign-in card's button: option = the method's id (default: the first).
        sign_in(panel, None if args.get("option") is None else str(args["option"]), respond)
    elif action in ("review", "revert"):
        # The files-changed card's buttons: path = the file's row (default: the first).
        path = None if args.get("path") is None else str(args["path"])
        (panel.review_file if action == "review" else panel.revert_file)(path, respond)
    elif action == "tick":
        # The "Name the active file" tick under the input.
        if not panel.is_open:
            panel.open()
        panel.name_active.set(bool(args.get("on")))
        panel.set_prefs(name_active=panel.name_active.get())
        return describe(panel)
    elif action == "new":
        panel.open()
        panel.new_conversation(lambda c: respond({"conversation": c.id}), respond)
    elif action == "provider":
        # A pick in the Provider picker, as a user makes it (value: the entry, e.g.
        # "fake (ACP)"): with a conversation shown, a new one with that agent.
        panel.open()
        value = str(args.get("value") or "")
        if value not in panel.providers:
            raise ProtocolError("bad_args", f"The Provider picker offers no {value!r}.",
                                f"Pick one of {', '.join(panel.providers)}.")
        panel.provider.set(value)
        panel.provider_chosen(respond)
    return DEFER


def register_commands(panel: Any) -> None:
    """The Agent menu (and Ctrl+Shift+A, Ctrl+Shift+L), and Edit → AI Preferences…."""
    reg = panel.app.register_command
    reg("agent.panel", "Agent &Panel", "Ctrl+Shift+A", panel.toggle, menu="Agent")
    reg("agent.ask_selection", "&Ask About Selection", "Ctrl+Shift+L",
        panel.ask_about_selection, menu="Agent")
    reg("agent.new", "&New Conversation", "", lambda: (panel.open(), panel.new_conversation()),
        menu="Agent", group=1)
    reg("agent.stop", "&Stop the Agent", "", panel.stop, menu="Agent", group=1)
    reg("agent.undo", "&Undo the Agent's Last Turn", "",
        lambda: panel.undo_turn(panel.last_turn_end()), menu="Agent", group=2)
    reg("agent.save", "Save the Agent's &Changes", "",
        lambda: panel.save_turn(panel.last_turn_end()), menu="Agent", group=2)
    reg("agent.dock", "&Dock on the Other Side", "", panel.dock_other_side, menu="Agent",
        group=3)
    reg("agent.set_key", "Set API &Key...", "", panel.set_key, menu="Agent", group=3)
    reg("edit.ai_preferences", "AI Pre&ferences...", "", lambda: _ai_preferences(panel),
        menu="Edit", group=3)


def _ai_preferences(panel: Any) -> object:
    from ui.tk.prefs.ai_dialog import show_ai_preferences
    return show_ai_preferences(panel)
