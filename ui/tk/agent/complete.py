"""``@file`` completion in the agent panel's input: type ``@`` and part of a path, pick a file
of the project from the list (Up/Down, Tab or Enter), and ``@path`` goes into the message.
A message that starts with ``/`` completes the agent's own slash commands (``agent.commands``,
sent by ACP agents) the same way.

The project's files come from the core (``fs.walk``: ignored folders and binary files left
out, at most :data:`MAX_FILES`) — the desktop never walks the project itself, so completion
works the same on a remote instance — asked once per panel and again after :data:`STALE_S`;
the list updates when the answer arrives. The list is a small '90s drop-down (a Listbox in a borderless window) under
the cursor; Escape closes it.
"""

from __future__ import annotations

import time
import tkinter as tk
from typing import Protocol

from rio.protocol.frames import Reply, thaw
from ui.tk.agent.model import AgentModel
from ui.tk.agent.seams import UiApp
from ui.tk.agent.text import at_prefix, complete_commands, complete_paths, slash_prefix
from ui.tk.widgets.tk_calls import listbox_selection

MAX_FILES = 5000
STALE_S = 30.0


class CompleterHost(Protocol):
    """What the list uses of the panel: the window (the bus, fonts, colours) and the shown
    conversation (its slash commands)."""

    @property
    def app(self) -> UiApp: ...
    @property
    def model(self) -> AgentModel: ...


class PathCompleter:
    def __init__(self, panel: CompleterHost, box: tk.Text):
        self.panel = panel
        self.box = box
        self.files: list[str] = []
        self.read_at = 0.0
        self._asking = False
        self._in_request = False
        self.popup: tk.Toplevel | None = None
        self.listbox: tk.Listbox | None = None
        self.shown: list[str] = []
        self.typed = ""      # what the pick replaces: the @prefix, or the whole /command
        box.bind("<KeyRelease>", self._typed, add="+")
        box.bind("<Down>", lambda e: self._move(1))
        box.bind("<Up>", lambda e: self._move(-1))
        box.bind("<Tab>", lambda e: self.pick() or ("break" if self.shown else None))
        box.bind("<Escape>", self._escape)
        box.bind("<FocusOut>", lambda e: box.after(150, self._focus_gone), add="+")

    # --- the project's files -------------------------------------------------------------------
    def project_files(self) -> list[str]:
        """The files as the core last listed them; asks it (``fs.walk``) when never asked or
        stale. The answer arrives later and updates an open list."""
        stale = not self.read_at or time.monotonic() - self.read_at > STALE_S
        if stale and not self._asking:
            self._asking = self._in_request = True
            try:
                self.panel.app.conn.request("fs.walk", {"path": ".", "max_files": MAX_FILES},
                                            self._walked, timeout=30)
            finally:
                self._in_request = False
        return self.files

    def _walked(self, reply: Reply) -> None:
        self._asking = False
        self.read_at = time.monotonic()
        if reply.ok:
            self.files = [str(p) for p in thaw(reply.result)["files"]]
        if self._in_request:
            return              # answered at once: the caller goes on with the new list
        try:
            typing = self.box.winfo_exists() and self.box.focus_get() is self.box
        except (KeyError, tk.TclError):
            typing = False
        if typing:
            self.update()

    # --- the list ----------------------------------------------------------------------------
    def _typed(self, event: tk.Event) -> None:
        if event.keysym in ("Up", "Down", "Return", "KP_Enter", "Tab", "Escape"):
            return
        self.update()

    def update(self) -> list[str]:
        slash = slash_prefix(self.box.get("1.0", "insert"))
        conv = self.panel.model.shown
        if slash is not None and conv is not None and conv.commands:
            self.typed = "/" + slash
            self.shown = complete_commands(slash, conv.commands)
        else:
            prefix = at_prefix(self.box.get("insert linestart", "insert"))
            if prefix is None:
                self.close()
                return []
            self.typed = prefix
            self.shown = complete_paths(prefix, self.project_files())
        if not self.shown:
            self.close()
            return []
        self._show()
        return self.shown

    def _show(self) -> None:
        app = self.panel.app
        if self.popup is None:
            self.popup = tk.Toplevel(self.box)
            self.popup.wm_overrideredirect(True)
            self.listbox = tk.Listbox(self.popup, height=8, width=40, activestyle="none",
                                      exportselection=False, relief="solid", borderwidth=1,
                                      font=(app.ui_font_family(), 9),
                                      background=app.theme.field_bg,
                                      foreground=app.theme.field_fg,
                                      selectbackground=app.theme.selection_bg,
                                      selectforeground=app.theme.selection_fg)
            self.listbox.pack(fill="both", expand=True)
            self.listbox.bind("<ButtonRelease-1>", lambda e: self.pick())
        lb = self.listbox
        assert lb is not None
        lb.delete(0, "end")
        for path in self.shown:
            lb.insert("end", path)
        lb.configure(height=len(self.shown))
        lb.selection_clear(0, "end")
        lb.selection_set(0)
        bbox = self.box.bbox("insert") or (0, 0, 0, 16)
        x = self.box.winfo_rootx() + bbox[0]
        y = self.box.winfo_rooty() + bbox[1] + bbox[3] + 2
        self.popup.geometry(f"+{x}+{y}")
        self.popup.lift()

    def _move(self, step: int) -> str | None:
        if not self.shown or self.listbox is None:
            return None
        current = listbox_selection(self.listbox)
        i = (current[0] if current else -1) + step
        i = max(0, min(len(self.shown) - 1, i))
        self.listbox.selection_clear(0, "end")
        self.listbox.selection_set(i)
        self.listbox.see(i)
        return "break"

    def pick(self) -> bool:
        """Put the chosen path in place of the ``@prefix`` being typed; False if none shown."""
        if not self.shown or self.listbox is None:
            return False
        current = listbox_selection(self.listbox)
        path = self.shown[current[0] if current else 0]
        self.box.delete(f"insert - {len(self.typed)} chars", "insert")
        self.box.insert("insert", path + " ")
        self.close()
        self.box.focus_set()
        return True

    def _escape(self, event: tk.Event) -> str:
        self.close()
        return "break"

    def close(self) -> None:
        self.shown = []
        if self.popup is not None:
            self.popup.destroy()
            self.popup = self.listbox = None

    def _focus_gone(self) -> None:
        try:
            focus = self.box.focus_get()
        except (KeyError, tk.TclError):
            focus = None
        if focus is not self.box and focus is not self.listbox:
            self.close()
