"""The agent panel: the desktop's view of the core's conversations (docs/agent-chat.md).

It renders the same ``agent.*`` events as the terminal client (ui/term/chat.py) and sends the
same ops (``agent.new/list/history/send/approve/stop``); which provider — or, later, which ACP
agent — is behind a conversation makes no difference here. State lives in
:mod:`ui.tk.agent.model` (tested without a display), widgets in :mod:`ui.tk.agent.view`.

What it plugs into (small hooks, ui/tk/app/main_window.py and friends): the Agent menu and Ctrl+Shift+A
(``app.register_command``), the **AI** button at the toolbar's right end
(``app.toolbar_hooks``), the status bar's agent cell (``app.status_vars["agent"]``,
``app.agent_slot``), a pane of ``app.hpane`` (right of the editor, or left with the
preference), and the ``ui.agent`` control op / the ``agent`` part of ``ui.state``
(ui/tk/app/control.py). Everything runs on Tk's thread: requests are asynchronous
(``conn.request`` with a callback), never a blocking call from inside the bus's dispatch.

A document an agent changes gets attention: its tab is opened if it was not, and marked with
the agent icon until the user looks at it (selects the tab) or saves it.
"""

from __future__ import annotations

import logging
import tkinter as tk
from pathlib import Path
from tkinter import ttk
from typing import Any, Callable

from rio.agent.conversations import DEFAULT_TITLE
from rio.protocol.errors import RioError, error_from_wire
from rio.protocol.frames import Event, Reply, thaw
from ui.tk.agent import changed as agent_changed
from ui.tk.agent.actions import PanelActions, turn_end_of
from ui.tk.agent.control import PanelControl
from ui.tk.agent.flow import FlowRow
from ui.tk.agent.layout import MIN_PX, PanelLayout, picker_width
from ui.tk.agent.marks import TabMarks
from ui.tk.agent.model import STATE_LABELS, AgentModel, Block, Conversation, who
from ui.tk.agent.picker_row import PickerRow
from ui.tk.agent.seams import Completer, PanelApp, Respond, Shown
from ui.tk.agent.settings import (
    PanelPrefs,
    conversation_labels,
    load_last_shown,
    load_panel_prefs,
    new_conversation_args,
    picker_entries,
    provider_names,
    save_last_shown,
    save_panel_prefs,
)
from ui.tk.widgets.icons import icon
from ui.tk.widgets.tooltip import Tooltip

log = logging.getLogger("rio.ui.agent")


def _prefs_file() -> Path:
    from ui.tk.prefs.model import prefs_path
    return prefs_path()


class AgentPanel:
    """The controller: the model, the requests, and the window's seams. What takes more than a
    few lines is in the typed helpers it holds — ``layout`` (:class:`PanelLayout`), ``actions``
    (:class:`PanelActions`), ``ui_control`` (:class:`PanelControl`), ``agent_pickers``
    (:class:`PickerRow`), ``changed`` (:class:`ChangedFiles`) and ``marks`` — each of which sees
    the panel as a Protocol of ui/tk/agent/seams.py."""

    # The widgets the layout builds (PanelLayout.build): set once the panel was first opened,
    # read while it is open.
    provider: tk.StringVar
    mode: tk.StringVar

    def __init__(self, app: PanelApp):
        self.app = app
        self.conn = app.conn
        self.model = AgentModel()
        self.prefs: PanelPrefs = load_panel_prefs(_prefs_file())
        self.default_provider, self.providers = provider_names()
        self.frame: ttk.Frame | None = None
        self.view: Shown | None = None
        self.input: tk.Text | None = None
        self.strip: ttk.Frame | None = None
        self.body: ttk.Frame | None = None
        self.completer: Completer | None = None
        self.caption: ttk.Label | None = None
        self.provider_box: ttk.Combobox | None = None
        self.chooser: ttk.Combobox | None = None
        self.stop_button: ttk.Button | None = None
        self.send_button: ttk.Button | None = None
        self.strip_count: ttk.Label | None = None
        self.head: FlowRow | None = None
        self.name_active: tk.BooleanVar | None = None
        self.conv_row: ttk.Frame | None = None
        self.agent_flow: FlowRow | None = None
        self.agent_row: ttk.Frame | None = None
        self.agent_boxes: dict[str, ttk.Combobox] = {}
        #: the conversation picker's labels → conversation ids
        self.chooser_ids: dict[str, str] = {}
        self.is_open = False
        self._list_job: str | None = None
        self._state_shown = ""
        self._theme = app.theme.name
        self.layout = PanelLayout(self)
        self.actions = PanelActions(self)
        self.ui_control = PanelControl(self)
        self.agent_pickers = PickerRow(self)
        self.changed = agent_changed.ChangedFiles(self)
        conn = self.conn
        conn.subscribe("agent.", self._on_event)
        self.marks = TabMarks(self)
        conn.subscribe("buffer.", self.marks.on_buffer)
        self._hook_status()
        self.refresh_status()
        self.refresh_list()
        self.request("agents.list", {}, self._got_agents, lambda err: None)
        # Proposals and questions that waited before this window started (made from rio chat,
        # a script, or before a ui restart): drawn as if their events had come now.
        self.request("agent.pending", {}, self._got_pending, lambda err: None)

    def _got_pending(self, result: Any) -> None:
        for topic, data in self.model.unseen((result or {}).get("events") or ()):
            self._on_event(Event(topic=topic, data=data))

    def _got_agents(self, result: Any) -> None:
        """The ACP agents found here join the picker (ui/tk/agent/settings.picker_entries)."""
        self.providers = picker_entries(self.providers, (result or {}).get("agents") or ())
        if self.is_open and self.provider_box is not None:
            self.provider_box.configure(values=self.providers,
                                        width=picker_width(self.providers))
            if self.head is not None:
                self.head.layout()

    # --- the window's seams ----------------------------------------------------------------------
    def _hook_status(self) -> None:
        slot = self.app.agent_slot
        for w in (slot, *slot.winfo_children()):
            w.bind("<Button-1>", lambda e: self.open(), add="+")
            w["cursor"] = "hand2"
        self.status_tip = Tooltip(slot, "", self.app)

    def toolbar_button(self) -> None:
        """The AI button at the toolbar's right end (re-made after every toolbar rebuild).

        The app rebuilds the toolbar on a theme switch too: the panel is rebuilt then, so it
        follows the theme (its view is drawn again from the model; the input is kept)."""
        if self._theme != self.app.theme.name:
            self._theme = self.app.theme.name
            if self.is_open:
                typed = self.input.get("1.0", "end-1c") if self.input is not None else ""
                self.close(remember=False)
                self.open()
                if typed and self.input is not None:
                    self.input.insert("1.0", typed)
        if not (self.prefs.show_ai and self.prefs.show_button):
            return
        img = icon("agent", self.app.theme.name, self.app.root)
        b = ttk.Button(self.app.toolbar, text="AI", image=img, compound="left",
                       style="Toolbutton", takefocus=False, command=self.toggle, name="tb_ai")
        # the image lives as long as its button (Tk keeps only its name)
        b.image = img  # type: ignore[attr-defined]
        b.pack(side="right", padx=(1, 2))
        Tooltip(b, "Agent panel (Ctrl+Shift+A)", self.app)

    # --- open / close / dock -------------------------------------------------------------------
    def toggle(self) -> None:
        if not self.prefs.show_ai:
            self.app.set_message("The AI features are off: Edit → AI Preferences… turns them on.")
            return
        if self.is_open and not self.prefs.minimised:
            self.close()
        else:
            self.open(focus=True)

    def minimise(self) -> None:
        self.layout.fold(True)

    def restore(self) -> None:
        self.layout.fold(False)
        if self.input is not None:
            self.input.focus_set()

    def open(self, side: str | None = None, focus: bool = False) -> None:
        if not self.prefs.show_ai:
            return
        if side in ("left", "right") and side != self.prefs.side:
            if self.is_open:
                self.close(remember=False)
            self.set_prefs(side=side)
        if not self.is_open:
            self.layout.build()
            self.agent_pickers.forget()     # a new frame: its row is drawn afresh
            self.layout.dock()
            self.is_open = True
            self.set_mode("")
            self.set_prefs(open=True)
            if self.model.current is None:
                self._adopt_latest()
            self.sync_header()
        elif self.prefs.minimised:
            self.layout.fold(False)
        self.layout.refresh_strip()
        if focus and self.input is not None:
            self.input.focus_set()

    def close(self, remember: bool = True) -> None:
        if not self.is_open or self.frame is None:
            return
        try:
            width = self.prefs.width if self.prefs.minimised else self.frame.winfo_width()
        except tk.TclError:
            width = self.prefs.width
        self.app.hpane.forget(self.frame)
        self.frame.destroy()
        self.frame = self.view = self.strip = self.body = None
        self.input = None
        self.is_open = False
        if remember:
            self.set_prefs(open=False, width=width if width > MIN_PX else self.prefs.width)
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

    def sync_header(self) -> None:
        """The header, the Send/Stop button and the pickers follow the shown conversation."""
        if not self.is_open or self.chooser is None or self.stop_button is None or \
                self.send_button is None:
            return
        conv = self.model.shown
        running = conv is not None and conv.turn is not None
        self.stop_button.configure(state="normal" if running else "disabled")
        thinking = conv is not None and conv.state == "thinking"
        self.send_button.configure(text="Stop" if thinking else "Send",
                                   command=self.stop if thinking else self.send_input)
        listing = [dict(c) for c in self.model.listing]
        for c in listing:       # a title the panel learnt since the list came (its 1st turn)
            known = self.model.conversations.get(str(c.get("conversation")))
            if known is not None and known.title and c.get("title") in (None, "",
                                                                         DEFAULT_TITLE):
                c["title"] = known.title
        if conv is not None and conv.id not in {c.get("conversation") for c in listing}:
            listing.insert(0, {"conversation": conv.id, "title": conv.title,
                               "provider": conv.provider})
        labels = conversation_labels(listing)
        self.chooser_ids = {label: cid for label, cid in labels}
        titles = [label for label, _ in labels]
        if list(self.chooser.cget("values")) != titles:
            self.chooser.configure(values=titles)
            self.layout.fit_chooser_list(titles)
        if conv is not None:
            self.chooser.set(next((label for label, cid in labels if cid == conv.id), ""))
            if conv.provider:
                self.provider.set(conv.provider)
        else:
            self.chooser.set("")
        self.agent_pickers.sync()

    def chosen(self) -> None:
        cid = self.chooser_ids.get(self.chooser.get()) if self.chooser is not None else None
        if cid:
            self.show_conversation(cid)

    def provider_chosen(self, respond: Respond | None = None) -> None:
        self.actions.provider_chosen(respond)

    def choose_agent_setting(self, picker: str, value: str,
                             respond: Respond | None = None) -> None:
        """A pick in the ACP agent's own row (its mode, model, …): ui/tk/agent/picker_row.py."""
        self.agent_pickers.choose(picker, value, respond)

    def set_mode(self, mode: str, respond: Respond | None = None) -> None:
        """The approval gate's mode (agent.mode): review, auto_buffer or allow_all."""
        def done(result: Any) -> None:
            if self.is_open:
                self.mode.set(str(result.get("mode") or ""))
            if respond is not None:
                respond(result)

        def failed(err: RioError) -> None:
            self.panel_error(self.model.shown, err)
            if respond is not None:
                respond(err)
        self.request("agent.mode", {"mode": mode} if mode else {}, done, failed)

    # --- conversations -----------------------------------------------------------------------
    def refresh_list(self, then: Callable[[], None] | None = None) -> None:
        def got(listing: Any) -> None:
            self.model.set_listing(listing or [])
            self.sync_header()
            if then is not None:
                then()
        self.request("agent.list", {}, got, lambda err: None)

    def _adopt_latest(self) -> None:
        """Opening the panel shows the conversation it showed last time in this project (kept
        in the project's state folder: a ui restart comes back to it), else the most recent
        one, if any — resumable either way."""
        last = load_last_shown(self._state_file())

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
        state_dir = self.app.state_dir
        return Path(state_dir) / "agent-panel.json" if state_dir else None

    def show_conversation(self, cid: str, then: Callable[[], None] | None = None,
                          fail: Callable[[RioError], None] | None = None) -> None:
        """Show a conversation; its history is fetched once (agent.history)."""
        conv = self.model.get(cid)
        self.model.current = cid
        save_last_shown(self._state_file(), cid)
        if self.view is not None:
            self.view.show(conv)
        self.sync_header()
        self.refresh_status()
        if conv.loaded:
            if then is not None:
                then()
            return

        def got(history: Any) -> None:
            if not conv.loaded:
                from ui.tk.agent.history import blocks_from_history
                conv.prepend_history(history, blocks_from_history(history))
                if self.model.current == cid and self.view is not None:
                    self.view.show(conv)
                self.sync_header()
                self.actions.check_reloaded_turn_end(conv)
            if then is not None:
                then()

        def failed(err: RioError) -> None:
            if err.kind == "agent.unknown_conversation":
                self.model.conversations.pop(cid, None)
                self.model.current = None
                if self.view is not None:
                    self.view.show(None)
                self.sync_header()
            else:
                self.panel_error(conv, err)
            if fail is not None:
                fail(err)
        self.request("agent.history", {"conversation": cid}, got, failed)

    def new_conversation(self, then: Callable[[Conversation], None] | None = None,
                         fail: Callable[[RioError], None] | None = None) -> None:
        provider = self.provider.get() if self.is_open else self.default_provider
        args = new_conversation_args(provider, self.default_provider)

        def made(result: Any) -> None:
            conv = self.model.get(str(result["conversation"]))
            conv.provider = who(result) or provider
            conv.title = str(result.get("title") or "")
            conv.loaded = True
            self.model.current = conv.id
            save_last_shown(self._state_file(), conv.id)
            if self.view is not None:
                self.view.show(conv)
            self.sync_header()
            self.refresh_status()
            if then is not None:
                then(conv)

        def failed(err: RioError) -> None:
            self.panel_error(self.model.shown, err)
            if fail is not None:
                fail(err)
        self.request("agent.new", args, made, failed)

    # --- sending, answering, stopping --------------------------------------------------------
    def on_enter(self, event: tk.Event) -> str:
        completer = self.completer
        if completer is not None and completer.pick():
            return "break"      # Enter picks the @file shown, it does not send
        self.send_input()
        return "break"

    def send_input(self) -> None:
        if self.input is None:
            return
        text = self.input.get("1.0", "end-1c")
        if not text.strip():
            return
        self.input.delete("1.0", "end")
        self.send(text + self.actions.active_file_note())

    def send(self, text: str, respond: Respond | None = None) -> None:
        """Send a message to the shown conversation (a new one when there is none). A message
        while a proposal waits closes that proposal as interrupted (the core does)."""
        def go(conv: Conversation) -> None:
            def sent(result: Any) -> None:
                if respond is not None:
                    respond({"conversation": conv.id, "turn": result.get("turn")})

            def failed(err: RioError) -> None:
                self.panel_error(conv, err)
                if respond is not None:
                    respond(err)
            self.request("agent.send", {"conversation": conv.id, "text": text}, sent, failed)

        conv = self.model.shown
        if conv is None:
            self.new_conversation(go, respond)
        else:
            go(conv)

    def find_pending(self, proposal: str | None, permission: bool = False
                     ) -> tuple[Conversation, str] | None:
        """A waiting proposal (or, with ``permission``, an agent's permission question): the
        one named, else the first, the shown conversation's first."""
        convs = [c for c in (self.model.shown,) if c is not None] + \
            [c for c in self.model.conversations.values() if c is not self.model.shown]
        for conv in convs:
            for pid, i in conv.pending.items():
                if (conv.blocks[i].kind == "permission") != permission:
                    continue
                if proposal is None or pid == str(proposal):
                    return conv, pid
        return None

    def answer(self, proposal: str | None, decision: str,
               respond: Respond | None = None) -> None:
        self.actions.answer_proposal(proposal, decision, respond)

    def stop(self, respond: Respond | None = None) -> None:
        conv = self.model.shown
        if conv is None:
            if respond is not None:
                respond({"stopped": False})
            return
        def done(result: Any) -> None:
            if respond is not None:
                respond(result)

        def failed(err: RioError) -> None:
            if respond is not None:
                respond(err)
            else:
                self.panel_error(conv, err)
        self.request("agent.stop", {"conversation": conv.id}, done, failed)

    def answer_permission(self, key: str | None, option: str | None,
                          respond: Respond | None = None) -> None:
        self.actions.answer_permission(key, option, respond)

    def sign_in(self, method: str | None, respond: Respond | None = None) -> None:
        self.actions.sign_in(method, respond)

    # --- files the agent changed on disk itself (ui/tk/agent/changed.py) -------------------
    def changed_files(self) -> list[dict[str, Any]]:
        return agent_changed.describe(self.model.shown)

    def review_file(self, path: str | None, respond: Respond | None = None) -> None:
        self.changed.review(path, respond)

    def revert_file(self, path: str | None, respond: Respond | None = None) -> None:
        self.changed.revert(path, respond)

    def set_key(self) -> object:
        from ui.tk.prefs.api_keys import show_key_dialog
        return show_key_dialog(self)

    def retry(self, block: Block) -> None:
        self.actions.retry(block)

    def ask_about_selection(self) -> None:
        self.actions.ask_about_selection()

    # --- after a turn: save, undo --------------------------------------------------------------
    def save_turn(self, block: Block | None, respond: Respond | None = None) -> None:
        self.actions.save_turn(block, respond)

    def undo_turn(self, block: Block | None, respond: Respond | None = None) -> None:
        self.actions.undo_turn(block, respond)

    def last_turn_end(self) -> Block | None:
        return turn_end_of(self.model.shown)

    def refresh_block(self, block: Block) -> None:
        for conv in self.model.conversations.values():
            if block in conv.blocks:
                self.apply_changes(conv, [("update", conv.blocks.index(block))])
                return

    # --- events ------------------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        data = thaw(event.data)
        topic = event.topic
        conv, changes = self.model.apply(topic, data)
        if conv is None:
            return
        if topic == "agent.turn":
            # A new conversation, its title (named after its first message), its place in
            # the most-recent-first list: the picker follows.
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

    def apply_changes(self, conv: Conversation, changes: list[tuple[Any, ...]]) -> None:
        if conv.id == self.model.current and self.view is not None:
            self.view.apply(changes)
        if changes and all(c[0] == "text" for c in changes):
            return      # a delta changes no state: the header and status bar stay as they are
        self.sync_header()
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
        self.status_tip.text = self.model.status_tip() if self.prefs.show_ai else \
            "The AI features are off: Edit → AI Preferences… turns them on."
        self.layout.refresh_strip()

    def panel_error(self, conv: Conversation | None, err: RioError) -> None:
        """An error the panel's own request got: a line in the conversation, else the status
        bar's message."""
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
        return self.ui_control.describe()

    def control(self, args: dict[str, Any], respond: Respond) -> dict[str, Any] | None:
        """``ui.agent`` (ui/tk/agent/control.py): the result, or None when it answers later."""
        return self.ui_control.control(args, respond)


def install(app: PanelApp) -> AgentPanel:
    """Make the window's agent panel; the caller keeps it as ``app.agent_panel``
    (ui/tk/app/plugins.py)."""
    panel = AgentPanel(app)
    panel.actions.register_commands()
    if not panel.prefs.show_ai:
        from ui.tk.prefs.ai_dialog import show_agent_menu
        show_agent_menu(panel, False)      # off from the start: no Agent menu either
    if not hasattr(app, "toolbar_hooks"):
        app.toolbar_hooks = []
    app.toolbar_hooks.append(panel.toolbar_button)
    app.rebuild_toolbar()
    if panel.prefs.open:
        panel.open()
    return panel
