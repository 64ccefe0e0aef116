"""Toolbar tooltips, the '90s way: a small yellow box after half a second of hovering."""

from __future__ import annotations

import tkinter as tk

from ui.tk.widgets.seams import Themed


class Tooltip:
    """A yellow '90s tooltip after half a second of hovering."""

    def __init__(self, widget: tk.Misc, text: str, app: Themed):
        self.widget, self.text, self.app = widget, text, app
        self.tip: tk.Toplevel | None = None
        self.job: str | None = None
        widget.bind("<Enter>", self._enter, add="+")
        widget.bind("<Leave>", self._leave, add="+")
        widget.bind("<ButtonPress>", self._leave, add="+")

    def _enter(self, _e: tk.Event) -> None:
        self.job = self.widget.after(500, self.show)

    def _leave(self, _e: tk.Event) -> None:
        if self.job:
            self.widget.after_cancel(self.job)
            self.job = None
        if self.tip is not None:
            self.tip.destroy()
            self.tip = None

    def show(self) -> None:
        self.job = None
        if self.tip is not None:
            return
        x = self.widget.winfo_rootx() + 4
        y = self.widget.winfo_rooty() + self.widget.winfo_height() + 4
        self.tip = tk.Toplevel(self.widget)
        self.tip.wm_overrideredirect(True)
        self.tip.geometry(f"+{x}+{y}")
        tk.Label(self.tip, text=self.text, background=self.app.theme.tooltip_bg,
                 foreground=self.app.theme.text_fg, relief="solid", bd=1, padx=4,
                 font="TkTooltipFont").pack()
