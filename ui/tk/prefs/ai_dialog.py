"""Edit → AI Preferences…: *Show AI features*, *Show the AI button in the toolbar*, and the
side the agent panel docks on — the user's preferences (``ui.json``, :class:`PanelPrefs`), not
project data — and the approval gate's *per-turn limits*, which the gate in the core applies
to every conversation, the terminal's too: read and set with ``agent.limits`` (kept by the core
with the gate's mode; config.toml's ``[agent] max_*_per_turn`` are the defaults). A limit must
be a whole number from 1 to 100,000: anything else keeps the dialog open and says so. The
*Model providers* box (ui/tk/prefs/providers.py) sets each provider's endpoint and model in
config.toml, checked the same way.

*Show AI features* off hides every AI element — the panel, the AI button, the Agent menu, the
tab marks, the status bar's agent state ("No agent") — stops every running turn and ends the
agent processes (as their idle timer would: a later message starts one again). The dialog
itself stays in the Edit menu, so the features can be turned on again. Registered in
``app.dialogs`` as ``ai_preferences`` (``ui.dialog_answer`` drives it).
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable, Mapping
from dataclasses import replace
from tkinter import ttk
from typing import Any, Protocol

from rio.agent.gate import LIMIT_NAMES, check_limits
from rio.protocol.errors import RioError
from ui.tk.app.seams import CommandSet
from ui.tk.prefs.providers import ProvidersHost
from ui.tk.widgets.dialog_bridge import (
    bridge,
    centre_over,
    dialog_window,
    open_windows,
    raise_if_open,
)

#: The per-turn limits as the dialog names them (rio/agent/gate.py Limits).
LIMIT_LABELS = {"max_requests": "Model requests (API providers)",
                "max_tool_calls": "Tool calls (API providers)",
                "max_agent_changes": "Changing requests to Rio (ACP agents)",
                "max_agent_requests": "Requests of any kind to Rio (ACP agents)"}


class AIApp(ProvidersHost, Protocol):
    """What the dialog and the preferences' effects use of the window: its root, the
    command table the Agent menu's commands move in and out of, its menus and toolbar, its
    message line; the look and whether it is remote (:class:`ProvidersHost`)."""

    @property
    def root(self) -> tk.Tk: ...
    @property
    def commands(self) -> CommandSet: ...

    def rebuild_menus(self) -> None: ...
    def rebuild_toolbar(self) -> None: ...
    def set_message(self, text: str) -> None: ...


class _Prefs(Protocol):
    @property
    def show_ai(self) -> bool: ...
    @property
    def show_button(self) -> bool: ...
    @property
    def side(self) -> str: ...


class _Conversation(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def turn(self) -> str | None: ...           # the running turn, if any


class _Conversations(Protocol):
    @property
    def conversations(self) -> Mapping[str, _Conversation]: ...


class _Marks(Protocol):
    def clear(self) -> None: ...


class AIPanel(Protocol):
    """What the dialog uses of the agent panel (ui/tk/agent/panel.py; its helpers hand it
    over as ``PanelHost``, ui/tk/agent/seams.py): its preferences and how to change them,
    its conversations (to stop their turns), its tab marks, its requests to the core. Named
    here because the preferences room does not import the agent room (the agent room imports
    this one: docs/architecture.md)."""

    @property
    def app(self) -> AIApp: ...
    @property
    def prefs(self) -> _Prefs: ...
    @property
    def model(self) -> _Conversations: ...
    @property
    def marks(self) -> _Marks: ...
    @property
    def is_open(self) -> bool: ...

    def open(self) -> None: ...
    def close(self, remember: bool = True) -> None: ...
    def set_prefs(self, *, show_ai: bool, show_button: bool, side: str) -> None: ...
    def refresh_status(self) -> None: ...
    def request(self, op: str, args: dict[str, Any], ok: Callable[[Any], object],
                fail: Callable[[RioError], object], timeout: float = 30) -> None: ...


def apply_ai_prefs(panel: AIPanel, show_ai: bool, show_button: bool, side: str) -> None:
    """Make the window follow the AI preferences (and save them)."""
    app = panel.app
    was_shown = panel.prefs.show_ai
    if not show_ai:
        panel.close()
        for conv in list(panel.model.conversations.values()):
            if conv.turn is not None:
                panel.request("agent.stop", {"conversation": conv.id}, lambda r: None,
                              lambda err: None)
        panel.marks.clear()
        end_agent_processes(panel)
    reopen = panel.is_open and side != panel.prefs.side
    if reopen:
        panel.close(remember=False)
    panel.set_prefs(show_ai=show_ai, show_button=show_button, side=side)
    if reopen:
        panel.open()
    if show_ai != was_shown:
        show_agent_menu(panel, show_ai)
    app.rebuild_toolbar()
    panel.refresh_status()


def show_agent_menu(panel: AIPanel, shown: bool) -> None:
    """The Agent menu's commands in their menu, or out of every menu (Ctrl+Shift+A then only
    says the features are off)."""
    app = panel.app
    for cmd in list(app.commands):
        if cmd.name.startswith("agent."):
            app.commands.add(replace(cmd, menu="Agent" if shown else ""))
    app.rebuild_menus()


def end_agent_processes(panel: AIPanel) -> None:
    """AI features off: end every agent session process (``system.restart`` without a new
    start, as the idle timer does — the next message would start it again)."""
    def got(status: Mapping[str, Any]) -> None:
        for proc in status.get("processes") or ():
            name = str(proc.get("name") or "")
            if name.startswith("agent:") and proc.get("state") in ("running", "ready",
                                                                   "starting"):
                panel.request("system.restart", {"process": name, "again": False,
                                                 "reason": "idle"},
                              lambda r: None, lambda err: None)
    panel.request("system.status", {}, got, lambda err: None)


class AIPreferencesDialog:
    def __init__(self, panel: AIPanel, top: tk.Toplevel):
        self.panel = panel
        self.top = top
        prefs = panel.prefs
        top.resizable(False, False)
        body = ttk.Frame(top, padding=10)
        body.pack(fill="both", expand=True)
        self.show_ai = tk.BooleanVar(top, value=prefs.show_ai)
        self.show_button = tk.BooleanVar(top, value=prefs.show_button)
        self.side = tk.StringVar(top, value=prefs.side)
        box = ttk.LabelFrame(body, text=" AI features ", padding=8)
        box.pack(side="top", fill="x")
        ttk.Checkbutton(box, text="Show AI features", variable=self.show_ai,
                        underline=0).pack(anchor="w")
        ttk.Label(box, text="Off hides the agent panel, the AI button and the Agent menu,\n"
                            "and stops every running agent turn.",
                  foreground=panel.app.theme.disabled_fg).pack(anchor="w", padx=(20, 0))
        ttk.Checkbutton(box, text="Show the AI button in the toolbar", variable=self.show_button,
                        underline=9).pack(anchor="w", pady=(4, 0))
        dock = ttk.LabelFrame(body, text=" Agent panel ", padding=8)
        dock.pack(side="top", fill="x", pady=(8, 0))
        ttk.Radiobutton(dock, text="Dock on the right", variable=self.side, value="right",
                        underline=12).pack(anchor="w")
        ttk.Radiobutton(dock, text="Dock on the left", variable=self.side, value="left",
                        underline=12).pack(anchor="w")
        self._limits_box(body)
        from ui.tk.prefs.providers import ProvidersBox
        self.providers = ProvidersBox(body, top, panel.app)
        buttons = ttk.Frame(body)
        buttons.pack(side="top", anchor="e", pady=(10, 0))
        for label, fn in (("OK", self.ok), ("Cancel", self.cancel)):
            ttk.Button(buttons, text=label, width=10, command=fn,
                       default="active" if label == "OK" else "normal").pack(side="left",
                                                                            padx=2)
        top.bind("<Return>", lambda e: self.ok())
        top.bind("<Escape>", lambda e: self.cancel())
        top.protocol("WM_DELETE_WINDOW", self.cancel)
        bridge(panel.app, "ai_preferences", top,
               {"show_ai": self.show_ai, "show_button": self.show_button, "side": self.side,
                **self.limit_vars, **self.providers.fields},
               {"OK": self.ok, "Cancel": self.cancel},
               message=lambda: " ".join(m for m in (self.error.get(),
                                                    self.providers.error.get()) if m))

    def _limits_box(self, body: ttk.Frame) -> None:
        """The gate's per-turn limits, filled in when the core answers ``agent.limits``."""
        box = ttk.LabelFrame(body, text=" Per-turn limits ", padding=8)
        box.pack(side="top", fill="x", pady=(8, 0))
        self.limit_vars = {name: tk.StringVar(self.top, "") for name in LIMIT_NAMES}
        self.loaded: dict[str, int] = {}
        for row, name in enumerate(LIMIT_NAMES):
            ttk.Label(box, text=LIMIT_LABELS[name] + ":").grid(row=row, column=0, sticky="w")
            ttk.Spinbox(box, from_=1, to=100_000, width=8, textvariable=self.limit_vars[name],
                        name=name).grid(row=row, column=1, sticky="e", padx=(8, 0), pady=1)
        self.error = tk.StringVar(self.top, "")
        ttk.Label(box, textvariable=self.error, foreground="#c00000", wraplength=300,
                  justify="left").grid(row=len(LIMIT_NAMES), column=0, columnspan=2,
                                       sticky="w")

        def got(limits: Mapping[str, Any] | None) -> None:
            try:
                if not self.top.winfo_exists():
                    return
            except tk.TclError:
                return
            self.loaded = {k: int(v) for k, v in (limits or {}).items() if k in LIMIT_NAMES}
            for name, value in self.loaded.items():
                self.limit_vars[name].set(str(value))
        self.panel.request("agent.limits", {}, got,
                           lambda err: self.error.set(f"The limits could not be read: "
                                                      f"{err.message}"))

    def _limit_changes(self) -> dict[str, int] | None:
        """The limits changed in the dialog, checked; None (and the reason shown) if one is
        not a number in range."""
        typed = {name: var.get().strip() for name, var in self.limit_vars.items()
                 if name in self.loaded and var.get().strip() != str(self.loaded[name])}
        try:
            return check_limits(typed)
        except RioError as err:
            self.error.set(f"{err.message} {err.next}")
            return None

    def ok(self) -> None:
        changes = self._limit_changes()
        if changes is None:
            return          # the dialog stays open and says what is wrong
        providers = self.providers.changes()
        if providers is None or not self.providers.save(providers):
            return          # the same: which endpoint or model, and why
        if changes:
            panel = self.panel
            panel.request("agent.limits", changes, lambda r: None,
                          lambda err: panel.app.set_message(f"{err.message} {err.next}"))
        side = self.side.get() if self.side.get() in ("left", "right") else "right"
        apply_ai_prefs(self.panel, bool(self.show_ai.get()), bool(self.show_button.get()), side)
        self.top.destroy()

    def cancel(self) -> None:
        self.top.destroy()


def show_ai_preferences(panel: AIPanel) -> AIPreferencesDialog | None:
    app = panel.app
    existing = open_windows(panel).get("ai_preferences")
    if isinstance(existing, AIPreferencesDialog) and raise_if_open(existing):
        return existing
    top = dialog_window(app, app.root, "AI Preferences")
    dialog = open_windows(panel)["ai_preferences"] = AIPreferencesDialog(panel, top)
    centre_over(top, app.root)
    return dialog
