"""What the agent panel does that takes more than a line (:class:`PanelActions`): after a turn
(Save all, Undo), a Provider pick, answers to proposals and permission questions, a sign-in,
Retry, quoting the selection, the Agent menu. The ``ui.agent`` op is ui/tk/agent/control.py.

Undo is the turn's single undo step (``Agent: …``, merged by the core) in each buffer the turn
changed, and only while it is still the latest change there — the same check as ``rio chat``'s
``/undo``: ``buffer.info``'s ``undo_label`` must be the agent's.
"""

from __future__ import annotations

import os
from typing import Any

from rio.agent.conversations import DEFAULT_TITLE, undo_label
from rio.protocol.errors import ProtocolError, RioError
from ui.tk.agent.model import Block, Conversation
from ui.tk.agent.permission_model import closed_decision
from ui.tk.agent.seams import PanelHost, Respond


def turn_end_of(conv: Conversation | None) -> Block | None:
    return conv.last_turn_end() if conv is not None else None


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


class PanelActions:
    """What the panel's buttons, menu entries and the ``ui.agent`` op do that takes more than
    a line: a turn's Save all and Undo, a Provider pick, answering a proposal or a permission
    question, an agent's sign-in, Retry, quoting the selection — each through the panel's
    asynchronous requests (:class:`~ui.tk.agent.seams.PanelHost`)."""

    def __init__(self, panel: PanelHost) -> None:
        self.panel = panel

    def save_turn(self, block: Block | None, respond: Respond | None = None) -> None:
        """Save every buffer the turn left unsaved (``buffer.save``, as File → Save does)."""
        panel = self.panel
        if block is None:
            if respond is not None:
                respond({"saved": [], "failed": []})
            return
        buffers = list(block.data["buffers"])
        left = [len(buffers)]
        failed: list[str] = []

        def one_done() -> None:
            left[0] -= 1
            if left[0] == 0:
                block.data["saved"] = not failed
                panel.refresh_block(block)
                if respond is not None:
                    respond({"saved": [b for b in buffers if b not in failed],
                             "failed": failed})

        for bid in buffers:
            def fail(err: RioError, bid: str = bid) -> None:
                failed.append(bid)
                panel.app.show_error(err)
                one_done()
            panel.request("buffer.save", {"buffer": bid}, lambda _s: one_done(), fail)

    def undo_turn(self, block: Block | None, respond: Respond | None = None) -> None:
        """The turn's one undo step in each buffer it changed, while it is the latest change."""
        panel = self.panel
        if block is None or block.data.get("undo") != "available":
            if respond is not None:
                respond(ProtocolError(
                    "bad_args", "There is no agent turn to undo.",
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

        def settled(how: str, bid: str) -> None:
            report[how].append(bid)
            finished()

        for bid in buffers:
            def info(summary: Any, bid: str = bid) -> None:
                if not str(summary.get("undo_label") or "").startswith("Agent"):
                    settled("skipped", bid)
                    return
                panel.request("buffer.undo", {"buffer": bid, "origin": f"ui:{os.getpid()}"},
                              lambda _r: settled("undone", bid),
                              lambda err: settled("skipped", bid))

            def not_found(err: RioError, bid: str = bid) -> None:
                settled("skipped", bid)
            panel.request("buffer.info", {"buffer": bid}, info, not_found)

    def provider_chosen(self, respond: Respond | None = None) -> None:
        """A pick in the Provider picker. A conversation keeps the provider or agent it was
        started with (its history is that agent's; an ACP agent keeps its own session), so
        with a conversation shown the pick starts a new one with the picked agent — and says
        so in it, naming the one left; the earlier conversation stays in the list. With none
        shown, the pick is what the next message starts with."""
        panel = self.panel
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
            panel.sync_header()          # the picker shows the shown conversation's again
            if respond is not None:
                respond(err)
        panel.new_conversation(made, failed)

    def check_reloaded_turn_end(self, conv: Conversation) -> None:
        """A reloaded conversation's last end-of-turn card (``undo: check``): what stands
        now — its buffers' names, saved or not, and Undo only while the turn's step is still
        the latest one in each (``buffer.info``, the check ``rio chat``'s /undo makes)."""
        panel = self.panel
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
            def got(summary: Any, bid: str = bid) -> None:
                one(bid, summary)

            def gone(err: RioError, bid: str = bid) -> None:
                one(bid, None)
            panel.request("buffer.info", {"buffer": bid}, got, gone)

    def answer_proposal(self, proposal: str | None, decision: str,
                        respond: Respond | None = None) -> None:
        """Approve / Reject / Always on a waiting proposal (``agent.approve``)."""
        panel = self.panel
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

    def answer_permission(self, key: str | None, option: str | None,
                          respond: Respond | None = None) -> None:
        """Answer an ACP agent's permission question with one of its options, by kind
        (``allow_once``, ``allow_always``, ``reject_once``, ``reject_always``; None declines)."""
        panel = self.panel
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

    def sign_in(self, method: str | None, respond: Respond | None = None) -> None:
        """The sign-in card's *Sign in*: one of the agent's own ("agent") methods, run by the
        agent itself (``agent.authenticate``; it may open the browser). ``method`` None: the
        first such method of the card."""
        panel = self.panel
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
            panel.panel_error(conv, err)
            if respond is not None:
                respond(err)
        panel.request("agent.authenticate", {"conversation": conv.id, "method": method}, done,
                      failed, timeout=630)

    def retry(self, block: Block) -> None:
        """An error's Retry: send the failed turn's message again."""
        panel = self.panel
        conv = panel.model.shown
        text = next((b.text for b in (conv.blocks if conv else ()) if b.kind == "user"
                     and b.turn == block.turn), "")
        if text:
            panel.send(text)

    def active_file_note(self) -> str:
        """With "Name the active file" ticked: which file the user looks at, and where, added to
        the message (``(Active file: src/a.py, line 12.)``); "" otherwise."""
        panel = self.panel
        var = panel.name_active
        ed = panel.app.active_editor()
        if var is None or not var.get() or ed is None or not ed.summary.get("path"):
            return ""
        try:
            line = ed.cursor()[0] if ed.ready else None
        except Exception:  # noqa: BLE001 -- a tab still loading: the path is enough
            line = None
        where = f", line {line}" if line else ""
        return f"\n\n(Active file: {ed.summary['path']}{where}.)"

    def ask_about_selection(self) -> None:
        """Quote the editor's selection, with its path and lines, into the panel's input."""
        import tkinter as tk
        panel = self.panel
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

    def register_commands(self) -> None:
        """The Agent menu (and Ctrl+Shift+A, Ctrl+Shift+L), and Edit → AI Preferences…."""
        panel = self.panel
        reg = panel.app.register_command
        reg("agent.panel", "Agent &Panel", "Ctrl+Shift+A", panel.toggle, menu="Agent")
        reg("agent.ask_selection", "&Ask About Selection", "Ctrl+Shift+L",
            panel.ask_about_selection, menu="Agent")
        def new() -> None:
            panel.open()
            panel.new_conversation()
        reg("agent.new", "&New Conversation", "", new, menu="Agent", group=1)
        reg("agent.stop", "&Stop the Agent", "", panel.stop, menu="Agent", group=1)
        reg("agent.undo", "&Undo the Agent's Last Turn", "",
            lambda: panel.undo_turn(panel.last_turn_end()), menu="Agent", group=2)
        reg("agent.save", "Save the Agent's &Changes", "",
            lambda: panel.save_turn(panel.last_turn_end()), menu="Agent", group=2)
        reg("agent.dock", "&Dock on the Other Side", "", panel.dock_other_side, menu="Agent",
            group=3)
        reg("agent.set_key", "Set API &Key...", "", panel.set_key, menu="Agent", group=3)
        reg("edit.ai_preferences", "AI Pre&ferences...", "", self._ai_preferences,
            menu="Edit", group=3)

    def _ai_preferences(self) -> object:
        from ui.tk.prefs.ai_dialog import show_ai_preferences
        return show_ai_preferences(self.panel)
