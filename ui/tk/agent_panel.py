"""The agent panel: the desktop's view of the core's conversations (docs/agent-chat.md).

It renders the same ``agent.*`` events as the terminal client (ui/term/chat.py) and sends the
same ops (``agent.new/list/history/send/approve/stop``); which provider — or, later, which ACP
agent — is behind a conversation makes no difference here. State lives in
:mod:`ui.tk.agent_model` (tested without a display), widgets in :mod:`ui.tk.agent_view`.

What it plugs into (small hooks, ui/tk/app.py and friends): the Agent menu and Ctrl+Shift+A
(``app.register_command``), the **AI** button at the toolbar's right end
(``app.toolbar_hooks``), the status bar's agent cell (``app.status_vars["agent"]``,
``app.agent_slot``), a pane of ``app.hpane`` (right of the editor, or left with the
preference), and the ``ui.agent`` control op / the ``agent`` part of ``ui.state``
(ui/tk/control.py). Everything runs on Tk's thread: requests are asynchronous
(``conn.request`` with a callback), never a blocking call from inside the bus's dispatch.

A document an agent changes gets attention: its tab is opened if it was not, and marked with
the agent icon until the user looks at it (selects the tab) or saves it.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import tkinter as tk
from pathlib import Path
from tkinter import ttk
from typing import Any, Callable

from rio.errors import ProtocolError, RioError, error_from_wire
from rio.protocol import Reply, thaw
from ui.tk import agent_actions as actions
from ui.tk.agent_marks import TabMarks
from ui.tk.agent_model import (STATE_LABELS, AgentModel, Block, Conversation, PanelPrefs,
                               load_panel_prefs, save_panel_prefs)
from ui.tk.agent_view import ConversationView
from ui.tk.icons import icon

log = logging.getLogger("rio.ui.agent")

Respond = Callable[[Any], None]


def provider_names() -> tuple[str, list[str]]:
    """The configured default provider and every provider the picker offers: the configured
    ones and the installed plug-ins (entry point names only; nothing is imported)."""
    default, names = "anthropic", ["anthropic", "openai"]
    try:
        from rio.agent_config import load_agent_config
        cfg = load_agent_config()
        default, names = cfg.provider, list(cfg.providers)
    except RioError as err:
        log.warning("agent config: %s", err.message)
    try:
        for ep in importlib.metadata.entry_points(group="rio.providers"):
            if ep.name not in names:
                names.append(ep.name)
    except Exception:  # noqa: BLE001 -- broken metadata must not cost the panel
        log.exception("provider discovery")
    if default not in names:
        names.insert(0, default)
    return default, names


def _prefs_file():
    from ui.tk.prefs_model import prefs_path
    return prefs_path()


class AgentPanel:
    def __init__(self, app: Any):
        self.app = app
        self.conn = app.conn
        self.model = AgentModel()
        self.prefs: PanelPrefs = load_panel_prefs(_prefs_file())
        self.default_provider, self.providers = provider_names()
        self.frame: ttk.Frame | None = None
        self.view: ConversationView | None = None
        self.input: tk.Text | None = None
        self.is_open = False
        self._list_job: str | None = None
        self._state_shown = ""
        conn = self.conn
        conn.subscribe("agent.", self._on_event)
        self.marks = TabMarks(self)
        conn.subscribe("buffer.", self.marks.on_buffer)
        self._hook_status()
        self.refresh_status()
        self.refresh_list()

    # --- the window's seams ----------------------------------------------------------------------
    def _hook_status(self) -> None:
        slot = self.app.agent_slot
        for w in (slot, *slot.winfo_children()):
            w.bind("<Button-1>", lambda e: self.open(), add="+")
            w.configure(cursor="hand2")

    def toolbar_button(self) -> None:
        """The AI button at the toolbar's right end (re-made after every toolbar rebuild)."""
        if not (self.prefs.show_ai and self.prefs.show_button):
            return
        img = icon("agent", self.app.theme.name, self.app.root)
        b = ttk.Button(self.app.toolbar, text="AI", image=img, compound="left",
                       style="Toolbutton", takefocus=False, command=self.toggle, name="tb_ai")
        b.image = img  # type: ignore[attr-defined]
        b.pack(side="right", padx=(1, 2))
        from ui.tk.tooltip import Tooltip
        Tooltip(b, "Agent panel (Ctrl+Shift+A)", self.app)

    # --- open / close / dock -------------------------------------------------------------------
    def toggle(self) -> None:
        if not self.prefs.show_ai:
            self.app.set_message("The AI features are off: Edit → AI Preferences… turns them on.")
            return
        if self.is_open:
            self.close()
        else:
            self.open(focus=True)

    def open(self, side: str | None = None, focus: bool = False) -> None:
        if not self.prefs.show_ai:
            return
        if side in ("left", "right") and side != self.prefs.side:
            if self.is_open:
                self.close(remember=False)
            self.set_prefs(side=side)
        if not self.is_open:
            self._build()
            pane = self.app.hpane
            kw = {"after": self.app.vpane} if self.prefs.side == "right" \
                else {"before": self.app.vpane}
            try:
                tree_w = pane.sash_coord(0)[0]
            except tk.TclError:
                tree_w = None
            pane.add(self.frame, minsize=220, width=self.prefs.width, stretch="never", **kw)
            self._place_sashes(tree_w)
            self.is_open = True
            self.set_prefs(open=True)
            if self.model.current is None:
                self._adopt_latest()
            self._sync_header()
        if focus and self.input is not None:
            self.input.focus_set()

    def _place_sashes(self, tree_w: int | None) -> None:
        """The panel takes its width from the editor, never from the project tree."""
        pane = self.app.hpane
        try:
            pane.update_idletasks()
            total = pane.winfo_width()
            if tree_w is None or total <= 1:
                return
            width = min(self.prefs.width, max(220, total - tree_w - 260))
            pane.sash_place(0, tree_w, 0)
            if self.prefs.side == "right":
                pane.sash_place(1, total - width - int(pane.cget("sashwidth")), 0)
            else:
                pane.sash_place(1, tree_w + int(pane.cget("sashwidth")) + width, 0)
        except tk.TclError:
            return

    def close(self, remember: bool = True) -> None:
        if not self.is_open or self.frame is None:
            return
        try:
            width = self.frame.winfo_width()
        except tk.TclError:
            width = self.prefs.width
        self.app.hpane.forget(self.frame)
        self.frame.destroy()
        self.frame = self.view = None
        self.input = None
        self.is_open = False
        if remember:
            self.set_prefs(open=False, width=width if width > 50 else self.prefs.width)
        ed = self.app.active_editor()
        if ed is not None:
            ed.text.focus_set()

    def dock_other_side(self) -> None:
        self.open(side="left" if self.prefs.side == "right" else "right")

    def set_prefs(self, **changes: Any) -> None:
        from dataclasses import replace
        self.prefs = replace(self.prefs, **changes)
        try:
            save_panel_prefs(_prefs_file(), self.prefs)
        except OSError as exc:
            log.warning("could not save the agent panel preferences: %s", exc)

    # --- building ------------------------------------------------------------------------------
    def _build(self) -> None:
        app = self.app
        frame = ttk.Frame(app.hpane, style="Raised.TFrame", padding=2, name="agent_panel")
        self.frame = frame
        title = ttk.Frame(frame)
        title.pack(side="top", fill="x")
        ttk.Button(title, text="×", width=2, style="Toolbutton", takefocus=False,
                   command=self.close, name="close").pack(side="right")
        ttk.Button(title, text="⇆", width=2, style="Toolbutton", takefocus=False,
                   command=self.dock_other_side, name="dock").pack(side="right")
        ttk.Label(title, text=" Agent", style="Title.TLabel", image=icon(
            "agent", app.theme.name, app.root), compound="left").pack(side="left", fill="x",
                                                                     expand=True)
        head = ttk.Frame(frame, padding=(2, 3, 2, 1))
        head.pack(side="top", fill="x")
        self.provider = tk.StringVar(frame, self.default_provider)
        ttk.Label(head, text="Provider:").pack(side="left")
        ttk.Combobox(head, textvariable=self.provider, values=self.providers, width=10,
                     state="readonly", name="provider").pack(side="left", padx=(3, 4))
        self.stop_button = ttk.Button(head, text="Stop", width=5, command=self.stop,
                                      name="stop", state="disabled")
        self.stop_button.pack(side="right")
        ttk.Button(head, text="New", width=5, command=self.new_conversation,
                   name="new").pack(side="right", padx=(0, 3))
        row = ttk.Frame(frame, padding=(2, 1, 2, 3))
        row.pack(side="top", fill="x")
        ttk.Label(row, text="Conversation:").pack(side="left")
        self.chooser = ttk.Combobox(row, state="readonly", width=24, name="conversations")
        self.chooser.pack(side="left", fill="x", expand=True, padx=(3, 0))
        self.chooser.bind("<<ComboboxSelected>>", lambda e: self._chosen())
        # The input is packed before the conversation so a short panel shrinks the history.
        bottom = ttk.Frame(frame, padding=(0, 3, 0, 0))
        bottom.pack(side="bottom", fill="x")
        t = app.theme
        # Send first, from the right: the box takes what is left and never hides it.
        self.send_button = ttk.Button(bottom, text="Send", width=6, command=self._send_input,
                                      name="send")
        self.send_button.pack(side="right", anchor="s", padx=(3, 0))
        box = ttk.Frame(bottom, style="Sunken.TFrame")
        box.pack(side="left", fill="both", expand=True)
        self.input = tk.Text(box, height=3, wrap="word", undo=True, font=(app.ui_font_family(), 9),
                             bg=t.field_bg, fg=t.field_fg, insertbackground=t.cursor,
                             borderwidth=0, padx=3, pady=2, name="input")
        self.input.pack(fill="both", expand=True)
        self.input.bind("<Return>", self._on_enter)
        self.input.bind("<KP_Enter>", self._on_enter)
        self.input.bind("<Shift-Return>", lambda e: None)   # the class binding: a new line
        self.view = ConversationView(self, frame)
        self.view.show(self.model.shown)

    def _sync_header(self) -> None:
        if not self.is_open:
            return
        conv = self.model.shown
        running = conv is not None and conv.turn is not None
        self.stop_button.configure(state="normal" if running else "disabled")
        thinking = conv is not None and conv.state == "thinking"
        self.send_button.configure(text="Stop" if thinking else "Send",
                                   command=self.stop if thinking else self._send_input)
        titles = [self._title(c) for c in self.model.listing]
        if conv is not None and conv.id not in {c.get("conversation") for c in
                                                self.model.listing}:
            titles.insert(0, self._title({"conversation": conv.id, "title": conv.title,
                                          "provider": conv.provider}))
        self.chooser.configure(values=titles)
        if conv is not None:
            self.chooser.set(next((t for t in titles if t.endswith(f"[{conv.id}]")), ""))
            if conv.provider:
                self.provider.set(conv.provider)
        else:
            self.chooser.set("")

    @staticmethod
    def _title(c: dict[str, Any]) -> str:
        title = str(c.get("title") or "(untitled)")
        title = title if len(title) <= 40 else title[:39] + "…"
        return f"{title} · {c.get('provider') or '?'} [{c.get('conversation')}]"

    def _chosen(self) -> None:
        value = self.chooser.get()
        if "[" in value:
            self.show_conversation(value.rsplit("[", 1)[1].rstrip("]"))

    # --- conversations -----------------------------------------------------------------------
    def refresh_list(self, then: Callable[[], None] | None = None) -> None:
        def got(listing: Any) -> None:
            self.model.set_listing(listing or [])
            self._sync_header()
            if then is not None:
                then()
        self.request("agent.list", {}, got, lambda err: None)

    def _adopt_latest(self) -> None:
        """Opening the panel shows the conversation it showed last time in this project (kept
        in the project's state folder: a ui restart comes back to it), else the most recent
        one, if any — resumable either way."""
        last = self._last_shown()

        def pick() -> None:
            if self.model.current is not None or not self.model.listing:
                return
            ids = [str(c["conversation"]) for c in self.model.listing]
            self.show_conversation(last if last in ids else ids[0])
        if self.model.listing:
            pick()
        else:
            self.refresh_list(pick)

    def _state_file(self) -> Path | None:
        state_dir = getattr(self.app, "state_dir", None)
        return Path(state_dir) / "agent-panel.json" if state_dir else None

    def _last_shown(self) -> str | None:
        path = self._state_file()
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path else {}
        except (OSError, ValueError):
            return None
        return str(data.get("conversation")) if isinstance(data, dict) else None

    def _remember_shown(self, cid: str) -> None:
        path = self._state_file()
        if path is None or self._last_shown() == cid:
            return
        try:
            from rio.atomic import write_json
            write_json(path, {"conversation": cid})
        except OSError as exc:
            log.warning("could not remember the shown conversation: %s", exc)

    def show_conversation(self, cid: str, then: Callable[[], None] | None = None,
                          fail: Callable[[RioError], None] | None = None) -> None:
        """Show a conversation; its history is fetched once (agent.history)."""
        conv = self.model.get(cid)
        self.model.current = cid
        self._remember_shown(cid)
        if self.view is not None:
            self.view.show(conv)
        self._sync_header()
        self.refresh_status()
        if conv.loaded:
            if then is not None:
                then()
            return

        def got(history: Any) -> None:
            from ui.tk.agent_model import blocks_from_history
            if not conv.loaded:      # else a turn started meanwhile: its events are the truth
                conv.blocks = blocks_from_history(history) + conv.blocks
                conv.provider = conv.provider or str(history.get("provider") or "")
                conv.loaded = True
                if self.model.current == cid and self.view is not None:
                    self.view.show(conv)
                self._sync_header()
            if then is not None:
                then()

        def failed(err: RioError) -> None:
            if err.kind == "agent.unknown_conversation":
                self.model.conversations.pop(cid, None)
                self.model.current = None
                if self.view is not None:
                    self.view.show(None)
                self._sync_header()
            else:
                self._panel_error(conv, err)
            if fail is not None:
                fail(err)
        self.request("agent.history", {"conversation": cid}, got, failed)

    def new_conversation(self, then: Callable[[Conversation], None] | None = None,
                         fail: Callable[[RioError], None] | None = None) -> None:
        provider = self.provider.get() if self.is_open else self.default_provider
        args = {"provider": provider} if provider and provider != self.default_provider else {}

        def made(result: Any) -> None:
            conv = self.model.get(str(result["conversation"]))
            conv.provider = str(result.get("provider") or provider)
            conv.title = str(result.get("title") or "")
            conv.loaded = True
            self.model.current = conv.id
            self._remember_shown(conv.id)
            if self.view is not None:
                self.view.show(conv)
            self._sync_header()
            self.refresh_status()
            if then is not None:
                then(conv)

        def failed(err: RioError) -> None:
            self._panel_error(self.model.shown, err)
            if fail is not None:
                fail(err)
        self.request("agent.new", args, made, failed)

    # --- sending, answering, stopping --------------------------------------------------------
    def _on_enter(self, _e: tk.Event) -> str:
        self._send_input()
        return "break"

    def _send_input(self) -> None:
        if self.input is None:
            return
        text = self.input.get("1.0", "end-1c")
        if not text.strip():
            return
        self.input.delete("1.0", "end")
        self.send(text)

    def send(self, text: str, respond: Respond | None = None) -> None:
        """Send a message to the shown conversation (a new one when there is none). A message
        while a proposal waits closes that proposal as interrupted (the core does)."""
        def go(conv: Conversation) -> None:
            def sent(result: Any) -> None:
                if respond is not None:
                    respond({"conversation": conv.id, "turn": result.get("turn")})

            def failed(err: RioError) -> None:
                self._panel_error(conv, err)
                if respond is not None:
                    respond(err)
            self.request("agent.send", {"conversation": conv.id, "text": text}, sent, failed)

        conv = self.model.shown
        if conv is None:
            self.new_conversation(go, respond)
        else:
            go(conv)

    def _find_pending(self, proposal: str | None) -> tuple[Conversation, str] | None:
        convs = [c for c in (self.model.shown,) if c is not None] + \
            [c for c in self.model.conversations.values() if c is not self.model.shown]
        for conv in convs:
            for pid in conv.pending:
                if proposal is None or pid == str(proposal):
                    return conv, pid
        return None

    def answer(self, proposal: str | None, decision: str,
               respond: Respond | None = None) -> None:
        found = self._find_pending(proposal)
        if found is None:
            err = ProtocolError("bad_args", "No proposal is waiting for an answer.",
                                "Look at ui.state agent.pending.")
            if respond is not None:
                respond(err)
            return
        conv, pid = found
        block = conv.blocks[conv.pending[pid]]
        self.apply_changes(conv, conv.decided(pid, "answering"))

        def done(result: Any) -> None:
            applied = bool(result.get("applied"))
            label = "rejected" if decision == "reject" else \
                ("always" if decision == "always" else "applied") if applied else "not applied"
            self.apply_changes(conv, conv.decided(pid, label, str(result.get("reason") or "")))
            if respond is not None:
                respond({"proposal": pid, "decision": decision, "applied": applied,
                         "reason": result.get("reason")})

        def failed(err: RioError) -> None:
            self.apply_changes(conv, conv.decided(pid, "closed", err.message))
            if respond is not None:
                respond(err)
        self.request("agent.approve", {"turn": block.turn, "proposal": pid,
                                        "decision": decision}, done, failed)

    def stop(self, respond: Respond | None = None) -> None:
        conv = self.model.shown
        if conv is None:
            if respond is not None:
                respond({"stopped": False})
            return
        self.request("agent.stop", {"conversation": conv.id},
                      lambda r: respond(r) if respond else None,
                      lambda err: respond(err) if respond else self._panel_error(conv, err))

    def retry(self, block: Block) -> None:
        """An error's Retry: send the failed turn's message again."""
        conv = self.model.shown
        text = next((b.text for b in (conv.blocks if conv else ()) if b.kind == "user"
                     and b.turn == block.turn), "")
        if text:
            self.send(text)

    def ask_about_selection(self) -> None:
        """Quote the editor's selection, with its path and lines, into the panel's input."""
        ed = self.app.active_editor()
        if ed is None or not self.prefs.show_ai:
            return
        try:
            text = ed.text.get("sel.first", "sel.last")
            first = int(ed.text.index("sel.first").split(".")[0])
            last = int(ed.text.index("sel.last - 1c").split(".")[0])
        except tk.TclError:
            self.app.set_message("Select some text first, then ask the agent about it.")
            return
        where = ed.summary.get("path") or ed.summary.get("name") or "Untitled"
        lines = f"line {first}" if first == last else f"lines {first}–{last}"
        self.open(focus=True)
        if self.input is None:
            return
        quote = f"In {where}, {lines}:\n```\n{text.rstrip(chr(10))}\n```\n"
        if self.input.get("1.0", "end-1c").strip():
            quote = "\n" + quote
        self.input.insert("end", quote)
        self.input.mark_set("insert", "end")
        self.input.see("end")

    # --- after a turn: save, undo --------------------------------------------------------------
    def save_turn(self, block: Block | None, respond: Respond | None = None) -> None:
        actions.save_turn(self, block, respond)

    def undo_turn(self, block: Block | None, respond: Respond | None = None) -> None:
        actions.undo_turn(self, block, respond)

    def last_turn_end(self) -> Block | None:
        return actions.turn_end_of(self.model.shown)

    def refresh_block(self, block: Block) -> None:
        for conv in self.model.conversations.values():
            if block in conv.blocks:
                self.apply_changes(conv, [("update", conv.blocks.index(block))])
                return

    # --- events ------------------------------------------------------------------------------
    def _on_event(self, event: Any) -> None:
        data = thaw(event.data)
        topic = event.topic
        conv, changes = self.model.apply(topic, data)
        if conv is None:
            return
        if topic == "agent.turn" and data.get("state") == "started" and not any(
                c.get("conversation") == conv.id for c in self.model.listing):
            self._schedule_list()
        if self.model.current is None or (
                topic == "agent.propose" and conv.id != self.model.current
                and (self.model.shown is None or not self.model.shown.pending)):
            # Nothing shown, or a question waits elsewhere while the shown one has none:
            # show it, so nothing happens out of sight.
            self.show_conversation(conv.id)
        else:
            self.apply_changes(conv, changes)
        for change in changes:
            if change[0] == "block" and conv.blocks[change[1]].kind == "turn_end":
                self._name_buffers(conv, conv.blocks[change[1]])

    def apply_changes(self, conv: Conversation, changes: list[tuple]) -> None:
        if conv.id == self.model.current and self.view is not None:
            self.view.apply(changes)
        self._sync_header()
        self.refresh_status()

    def _name_buffers(self, conv: Conversation, block: Block) -> None:
        for bid in block.data["buffers"]:
            def got(summary: Any, bid: str = bid) -> None:
                block.data["names"][bid] = str(summary.get("path") or summary.get("name") or bid)
                self.apply_changes(conv, [("update", conv.blocks.index(block))])
            self.request("buffer.info", {"buffer": bid}, got, lambda err: None)

    def _schedule_list(self) -> None:
        if self._list_job is None:
            def run() -> None:
                self._list_job = None
                self.refresh_list()
            self._list_job = self.app.root.after(200, run)

    # --- status --------------------------------------------------------------------------------
    def refresh_status(self) -> None:
        text = self.model.status_text() if self.prefs.show_ai else STATE_LABELS["off"]
        if text != self._state_shown:
            self._state_shown = text
            self.app.status_vars["agent"].set(text)

    def _panel_error(self, conv: Conversation | None, err: RioError) -> None:
        if conv is None:
            self.app.set_message(f"{err.message} {err.next}")
            return
        self.apply_changes(conv, conv.note_error(err.kind, err.message, err.next))

    # --- helpers -------------------------------------------------------------------------------
    def request(self, op: str, args: dict[str, Any], ok: Callable[[Any], object],
                 fail: Callable[[RioError], object], timeout: float = 30) -> None:
        def done(reply: Reply) -> None:
            if reply.ok:
                ok(thaw(reply.result))
            else:
                fail(error_from_wire(thaw(reply.error)))
        self.conn.request(op, args, done, timeout=timeout)

    def open_file(self, path: str) -> None:
        self.app.open_path(path)

    # --- ui.agent / ui.state -------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        return actions.describe(self)

    def control(self, args: dict[str, Any], respond: Respond) -> Any:
        return actions.control(self, args, respond)


def install(app: Any) -> AgentPanel:
    panel = AgentPanel(app)
    app.agent_panel = panel
    reg = app.register_command
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
    reg("edit.ai_preferences", "AI Pre&ferences...", "", lambda: _ai_preferences(panel),
        menu="Edit", group=3)
    if not panel.prefs.show_ai:
        from ui.tk.agent_prefs import apply_ai_prefs
        apply_ai_prefs(panel, False, panel.prefs.show_button, panel.prefs.side)
    if not hasattr(app, "toolbar_hooks"):
        app.toolbar_hooks = []
    app.toolbar_hooks.append(panel.toolbar_button)
    app.rebuild_toolbar()
    if panel.prefs.open:
        panel.open()
    return panel


def _ai_preferences(panel: AgentPanel) -> object:
    from ui.tk.agent_prefs import show_ai_preferences
    return show_ai_preferences(panel)
