"""A row of the agent panel's header that wraps: its items (a label with its picker, a button)
go onto as many lines as the panel's width needs, so none is ever cut off at the panel's edge
— the provider and mode pickers with Stop, and an ACP agent's own pickers (Codex offers three:
*Approval Preset*, *Model*, *Reasoning Effort*).

Which item goes on which line is :func:`ui.tk.agent.permission_model.button_rows` (display-free,
the same packing as a permission card's buttons): as many per line as fit, in order. One frame
per line (a grid would share column widths across lines and push a line past the edge); the
items stay children of the row and are packed into their line.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk
from typing import Callable, TypeVar

from ui.tk.agent.permission_model import button_rows


class FlowRow:
    """``frame`` is packed by the caller (``fill="x"``); :meth:`item` makes a frame to put a
    label and its picker in, :meth:`add` takes any other child of ``frame``."""

    def __init__(self, parent: tk.Misc, *, name: str, gap: int = 4,
                 padding: tuple[int, int, int, int] = (2, 0, 2, 0)) -> None:
        self.frame = ttk.Frame(parent, padding=padding, name=name)
        #: the row's own padding across (left + right)
        self.padding = padding[0] + padding[2]
        self.gap = gap
        self.items: list[tk.Widget] = []
        self.rows: list[list[int]] | None = None
        #: the lines last laid out, and which items were too wide for them
        self._key: tuple[list[list[int]], list[int]] | None = None
        self._job: str | None = None
        self.frame.bind("<Configure>", lambda e: self.layout(e.width), add="+")

    def item(self, name: str) -> ttk.Frame:
        box = ttk.Frame(self.frame, name=name)
        self.add(box)
        return box

    def add(self, widget: tk.Widget) -> None:
        self.items.append(widget)
        self.rows = None
        # An item that asks for another size (a picker given new entries) may need
        # another line: laid out again once Tk has sized it.
        widget.bind("<Configure>", lambda e: self.layout_later(), add="+")

    def layout_later(self) -> None:
        if self._job is None:
            def run() -> None:
                self._job = None
                try:
                    self.layout()
                except tk.TclError:
                    pass        # the row was destroyed meanwhile
            self._job = self.frame.after_idle(run)

    def clear(self) -> None:
        for w in self.frame.winfo_children():
            w.destroy()
        self.items = []
        self.rows = None
        self._key = None

    def layout(self, width: int | None = None) -> None:
        """Put the items on lines for ``width`` pixels (the row's width: from its
        ``<Configure>``, or its width now). Only when the lines change."""
        if not self.items:
            return
        try:
            inner = (self.frame.winfo_width() if width is None else width) - self.padding
        except tk.TclError:
            return
        if inner <= 1:       # not laid out yet: one line, as wide as it asks
            inner = 1 << 30
        widths = [w.winfo_reqwidth() for w in self.items]
        rows = button_rows(widths, inner, self.gap)
        # An item wider than the whole row is alone on its line and gives up width (its
        # picker shrinks, see labelled); the others keep what they ask for.
        key = (rows, [i for i, w in enumerate(widths) if w > inner])
        if key == self._key:
            return
        self._key = key
        self.rows = rows
        for old in [w for w in self.frame.winfo_children() if str(w).rsplit(".", 1)[-1]
                    .startswith("line_")]:
            for w in old.pack_slaves():
                w.pack_forget()
            old.destroy()
        for r, row in enumerate(rows):
            line = ttk.Frame(self.frame, name=f"line_{r}")
            line.pack(side="top", fill="x", pady=(0 if r == 0 else 2, 0))
            for n, i in enumerate(row):
                self.items[i].pack(in_=line, side="left", padx=(self.gap if n else 0, 0),
                                   fill="x" if widths[i] > inner else "none",
                                   expand=widths[i] > inner)
                self.items[i].lift(line)        # above its line's frame, or it is hidden


W = TypeVar("W", bound=tk.Widget)


def labelled(row: FlowRow, name: str, label: str,
             widget_of: Callable[[ttk.Frame], W]) -> W:
    """A label and its picker as one item of ``row`` (they wrap together); ``widget_of``
    makes the picker in the item's frame."""
    box = row.item(name)
    ttk.Label(box, text=label).pack(side="left")
    widget = widget_of(box)
    # fill: in a line narrower than the item, the picker shrinks rather than pass the edge
    widget.pack(side="left", padx=(2, 0), fill="x", expand=True)
    return widget
