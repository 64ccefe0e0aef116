"""The row of an ACP agent's own pickers (its mode, its model, …) under the conversation
picker; what it shows comes from :func:`ui.tk.agent.pickers.pickers` (display-free). A pick
sends ``agent.set_mode``/``agent.set_config``; a refused one puts the row back as the agent
said last."""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk
from typing import Any, Callable

from rio.protocol.errors import ProtocolError, RioError
from ui.tk.agent.flow import labelled
from ui.tk.agent.pickers import pickers
from ui.tk.agent.seams import PanelHost, Respond


class PickerRow:
    """The row of the agent's own pickers under the conversation picker: redrawn when what
    the shown conversation offers changed (the panel's ``agent_flow``/``agent_row``/
    ``agent_boxes``, built by the layout), hidden when it offers nothing."""

    def __init__(self, panel: PanelHost) -> None:
        self.panel = panel
        #: what the row shows now (its pickers' repr): the row is redrawn when it changes
        self.key: str | None = None

    def forget(self) -> None:
        """Draw the row again at the next :meth:`sync` (a new panel frame, a refused pick)."""
        self.key = None

    def sync(self) -> None:
        """Redraw the row when what the shown conversation offers changed; hide it when
        nothing."""
        panel = self.panel
        row, flow = panel.agent_row, panel.agent_flow
        if row is None or flow is None:
            return
        shown = pickers(panel.model.shown)
        key = repr(shown)
        if key == self.key:
            return
        self.key = key
        flow.clear()
        panel.agent_boxes = {}
        if not shown:
            row.pack_forget()
            return
        for n, p in enumerate(shown):
            names = [name for _, name in p["choices"]]

            def make(parent: ttk.Frame, p: dict[str, Any] = p,
                     names: list[str] = names) -> ttk.Combobox:
                return ttk.Combobox(parent, values=names, state="readonly",
                                    width=max(6, min(18, max(map(len, names)) + 1)),
                                    name=f"pick_{p['id']}".lower())
            # one item per picker, its label with it: the row wraps (ui/tk/agent/flow.py), so
            # Codex's three pickers stay whole in a narrow panel
            box: ttk.Combobox = labelled(flow, f"item_{n}", f"{p['label']}:", make)
            current = next((name for value, name in p["choices"]
                            if value == str(p["current"])), "")
            box.set(current)
            box.bind("<<ComboboxSelected>>", self._on_pick(p, box))
            panel.agent_boxes[p["id"]] = box
        if panel.conv_row is not None:
            row.pack(side="top", fill="x", after=panel.conv_row)
        flow.layout()

    def _on_pick(self, p: dict[str, Any], box: ttk.Combobox) -> Callable[[tk.Event], None]:
        """A picker's <<ComboboxSelected>>: the agent gets the value of the name picked."""
        values = {name: value for value, name in p["choices"]}

        def picked(_e: tk.Event) -> None:
            self.choose(p["id"], values.get(box.get(), box.get()))
        return picked

    def choose(self, picker: str, value: Any, respond: Respond | None = None) -> None:
        """A pick in the row (or ``ui.agent agent_setting``): the agent's mode or option."""
        panel = self.panel
        conv = panel.model.shown
        if conv is None:
            if respond is not None:
                respond(ProtocolError("bad_args", "No conversation is shown.",
                                      "Open an ACP agent's conversation first."))
            return
        by_config = any(p["id"] == picker and p.get("config") for p in pickers(conv))
        args: dict[str, Any]
        if picker == "mode" and not by_config:
            op, args = "agent.set_mode", {"conversation": conv.id, "mode": str(value)}
        else:
            op, args = "agent.set_config", {"conversation": conv.id, "option": picker,
                                            "value": value}

        def done(result: Any) -> None:
            if respond is not None:
                respond(result)

        def failed(err: RioError) -> None:
            self.forget()       # the row goes back to what the agent said last
            self.sync()
            panel.panel_error(conv, err)
            if respond is not None:
                respond(err)
        panel.request(op, args, done, failed)
