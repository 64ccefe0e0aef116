"""The window's status bar: a message on the left, fixed cells on the right.

The cells say where the cursor is, the selection's size, the encoding, the line ending, insert
or overwrite, whether the document is modified, and (the agent panel's, ui/tk/agent/panel.py)
what the agent is doing. The message belongs to the tab that showed it: each tab shows its own
again when it comes back to the front. What the cells say of an editor is
:func:`editor_cells` (no Tk); the window (ui/tk/app/main_window.py) feeds them.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk
from typing import Any

from ui.tk.app.file_actions import newline_name

READY = "Ready"               # the message when there is nothing to say

#: The cells an editor fills, and their widths in characters (packed from the right).
EDITOR_CELLS = ("position", "selection", "encoding", "newline", "mode", "modified")
_WIDTHS = {"position": 16, "selection": 10, "encoding": 9, "newline": 5, "mode": 4,
           "modified": 9}


def editor_cells(line: int, col: int, selected: int, summary: dict[str, Any],
                 overwrite: bool) -> dict[str, str]:
    """What the cells say of an editor: ``line`` 1-based, ``col`` 0-based (shown 1-based)."""
    fmt = summary.get("format") or {}
    return {"position": f"Ln {line}, Col {col + 1}",
            "selection": f"Sel {selected}" if selected else "",
            "encoding": str(fmt.get("encoding") or "utf-8").upper(),
            "newline": newline_name(fmt.get("newline")).upper(),
            "mode": "OVR" if overwrite else "INS",
            "modified": "Modified" if summary.get("dirty") else ""}


class StatusBar:
    def __init__(self, root: tk.Misc):
        self.frame = ttk.Frame(root, padding=(2, 2))
        self.frame.pack(side="bottom", fill="x")
        self.message = tk.StringVar(root, READY)
        self._messages: dict[str, str] = {}      # the message each tab last had
        self.vars = {k: tk.StringVar(root, "") for k in (*EDITOR_CELLS, "agent")}
        # The fixed cells are packed first, from the right: pack hands out space in packing
        # order, so a long message packed first pushed the agent cell off the window. The
        # message takes what is left and is cut (its full text stays in ui.state).
        ttk.Sizegrip(self.frame).pack(side="right", anchor="se")
        self.agent_slot = ttk.Frame(self.frame)
        self.agent_slot.pack(side="right", padx=(2, 0))
        self.cells: dict[str, tk.Widget] = {"agent": self.agent_slot}
        ttk.Label(self.agent_slot, textvariable=self.vars["agent"],
                  style="Status.TLabel", width=12, anchor="center").pack()
        self.vars["agent"].set("No agent")
        for key in reversed(EDITOR_CELLS):
            cell = ttk.Label(self.frame, textvariable=self.vars[key], style="Status.TLabel",
                             width=_WIDTHS[key], anchor="center")
            cell.pack(side="right", padx=(2, 0))
            self.cells[key] = cell
        self.message_label = ttk.Label(self.frame, textvariable=self.message,
                                       style="Status.TLabel", anchor="w", width=1)
        self.message_label.pack(side="left", fill="x", expand=True)

    def say(self, text: str, tab: str | None) -> None:
        """Show ``text``, remembered as the message of ``tab`` (a buffer id) when there is one."""
        self.message.set(text)
        if tab is not None:
            self._messages[tab] = text

    def show_tab(self, tab: str | None) -> None:
        """The front tab changed: show its last message (Ready for none); no tab clears the
        editor cells."""
        self.message.set(self._messages.get(tab, READY) if tab is not None else READY)
        if tab is None:
            for key in EDITOR_CELLS:
                self.vars[key].set("")

    def show(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            var = self.vars[key]
            if var.get() != value:   # a set redraws its label even when nothing changed
                var.set(value)

    def cut(self) -> list[str]:
        """The fixed cells that do not fit whole in the window (none, normally)."""
        width = self.frame.winfo_width()
        return sorted(k for k, w in self.cells.items()
                      if not w.winfo_ismapped() or w.winfo_x() < 0
                      or w.winfo_x() + w.winfo_width() > width)
