"""Agent → Set API Key…: store an API provider's key from the desktop, the way `rio key set`
does (rio/agent/secrets.py: the system keyring, else the private file ``credentials.json``), so a
conversation that failed with ``agent.not_configured`` or ``agent.auth_rejected`` can go on —
the running instance reads stored keys at every turn (docs/agent.md §1).

The key is stored by this process, on this machine, for this user: it never travels on the bus,
never reaches a log, and the dialog never shows it — its state says "set" or "not set" (and
where), the entry is masked, and it is cleared once stored. ``ui.state`` lists the dialog with
a ``key`` field that reads ``""`` whatever was typed, and ``ui.dialog_answer`` cannot fill it:
a key is typed into the window (or stored with ``rio key set``), never sent on the bus. An environment variable
(``ANTHROPIC_API_KEY`` …) still wins over a stored key, and the dialog says so.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk
from typing import Protocol

from ui.tk.prefs.store import KeyStore, key_store, store_key
from ui.tk.widgets.dialog_bridge import (
    bridge,
    centre_over,
    dialog_window,
    open_windows,
    raise_if_open,
)
from ui.tk.widgets.theme import Theme


class KeyApp(Protocol):
    """What the dialog uses of the window."""

    @property
    def root(self) -> tk.Tk: ...
    @property
    def theme(self) -> Theme: ...
    def set_message(self, text: str) -> None: ...


class _Shown(Protocol):
    @property
    def provider(self) -> str: ...


class _Conversations(Protocol):
    @property
    def shown(self) -> _Shown | None: ...


class KeyPanel(Protocol):
    """What the dialog uses of the agent panel (ui/tk/agent/panel.py)."""

    @property
    def app(self) -> KeyApp: ...
    @property
    def model(self) -> _Conversations: ...
    @property
    def providers(self) -> list[str]: ...
    @property
    def default_provider(self) -> str: ...


def key_state(store: KeyStore, provider: str) -> str:
    """"set (from …)" or "not set" — never the key, not even its last characters."""
    from rio.protocol.errors import RioError
    try:
        key, source = store.get(provider)
    except RioError as err:
        return f"unknown ({err.message})"
    if key is None:
        return "not set"
    where = {"keyring": "the system keyring"}.get(source or "", source or "")
    if where.startswith("env:"):
        where = f"the environment variable {where[4:]}, which wins over a stored key"
    elif where.startswith("file:"):
        where = f"the private file {where[5:]}"
    return f"set (from {where})"


class _Masked:
    """The key field as ``ui.state`` / ``ui.dialog_answer`` see it: never read back, and never
    filled over the bus either (a key does not travel on it) — it is typed into the window."""

    def __init__(self, var: tk.StringVar):
        self.var = var

    def get(self) -> str:
        return ""

    def set(self, value: str) -> None:
        raise KeyError("the API key is typed into the window, never sent over the bus "
                       "(use `rio key set` in a script)")


class KeyDialog:
    def __init__(self, panel: KeyPanel, top: tk.Toplevel, provider: str, store: KeyStore):
        self.panel = panel
        self.top = top
        self.store = store
        top.resizable(False, False)
        body = ttk.Frame(top, padding=10)
        body.pack(fill="both", expand=True)
        self.provider = tk.StringVar(top, provider)
        self.provider.trace_add("write", lambda *_: self._refresh())
        self.key = tk.StringVar(top, "")
        self.state = tk.StringVar(top, "")
        ttk.Label(body, text="Provider:").grid(row=0, column=0, sticky="w")
        names = [p for p in panel.providers if not p.endswith(" (ACP)")]
        box = ttk.Combobox(body, textvariable=self.provider, values=names, width=14,
                           state="readonly")
        box.grid(row=0, column=1, sticky="w", padx=6)
        box.bind("<<ComboboxSelected>>", lambda e: self._refresh())
        ttk.Label(body, textvariable=self.state, wraplength=360, justify="left",
                  foreground=panel.app.theme.disabled_fg).grid(row=1, column=0, columnspan=2,
                                                               sticky="w", pady=(4, 6))
        ttk.Label(body, text="API key:").grid(row=2, column=0, sticky="w")
        self.entry = ttk.Entry(body, textvariable=self.key, show="•", width=36)
        self.entry.grid(row=2, column=1, sticky="w", padx=6)
        notice = store.storage_notice()
        if notice:
            ttk.Label(body, text=notice, wraplength=360, justify="left").grid(
                row=3, column=0, columnspan=2, sticky="w", pady=(6, 0))
        self.message = tk.StringVar(top, "")
        ttk.Label(body, textvariable=self.message, foreground="#c00000", wraplength=360,
                  justify="left").grid(row=4, column=0, columnspan=2, sticky="w", pady=(4, 0))
        buttons = ttk.Frame(body)
        buttons.grid(row=5, column=0, columnspan=2, sticky="e", pady=(8, 0))
        for label, fn in (("Save", self.save), ("Close", self.close)):
            ttk.Button(buttons, text=label, width=10, command=fn,
                       default="active" if label == "Save" else "normal").pack(side="left",
                                                                              padx=2)
        self.entry.bind("<Return>", lambda e: self.save())
        top.bind("<Escape>", lambda e: self.close())
        top.protocol("WM_DELETE_WINDOW", self.close)
        bridge(panel.app, "api_key", top,
               {"provider": self.provider, "key": _Masked(self.key), "state": self.state},
               {"Save": self.save, "Close": self.close}, message=lambda: self.message.get())
        self._refresh()
        self.entry.focus_set()

    def _refresh(self) -> None:
        self.state.set(f"{self.provider.get()}: {key_state(self.store, self.provider.get())}")

    def save(self) -> None:
        from rio.protocol.errors import RioError
        provider = self.provider.get()
        typed = self.key.get()
        self.key.set("")               # out of the widget at once, stored or not
        try:
            store_key(self.store, provider, typed)
        except RioError as err:
            self.message.set(f"{err.message} {err.next}")
            return
        self.message.set("")
        self._refresh()
        self.panel.app.set_message(f"The API key for {provider} is stored; send your message "
                                   "again.")

    def close(self) -> None:
        self.key.set("")
        self.top.destroy()


def show_key_dialog(panel: KeyPanel, provider: str | None = None,
                    store: KeyStore | None = None) -> KeyDialog:
    app = panel.app
    existing = open_windows(panel).get("api_key")
    if isinstance(existing, KeyDialog) and raise_if_open(existing):
        return existing
    top = dialog_window(app, app.root, "Set API Key")
    chosen = provider or (panel.model.shown.provider if panel.model.shown else "") or \
        panel.default_provider
    dialog = open_windows(panel)["api_key"] = KeyDialog(panel, top, chosen, store or key_store())
    centre_over(top, app.root)
    return dialog
