"""Nothing an agent does to a document happens out of sight: its tab is opened (when it was
not) and marked with the agent icon until the user looks at it (selects the tab) or saves it.

Fed by the ``buffer.*`` events the agent panel subscribes to; an edit whose ``origin`` is
``agent:<conversation>`` marks its buffer. Other edits to a buffer the last turn changed tell
that conversation its Undo is no longer the latest change (``Conversation.buffer_changed``).
"""

from __future__ import annotations

import time
import tkinter as tk
from typing import Any, Callable, Protocol

from rio.protocol.errors import RioError
from rio.protocol.frames import Event, thaw
from ui.tk.agent.model import AgentModel, Conversation
from ui.tk.agent.seams import AgentEditor, PanelApp
from ui.tk.agent.settings import PanelPrefs
from ui.tk.widgets.icons import icon
from ui.tk.widgets.tk_calls import set_tab

#: A mark set this recently is not cleared by a tab switch (adding the first tab selects it).
MARK_GRACE_S = 1.0


class MarksHost(Protocol):
    """What the marks use of the panel: the window, the AI switch, the conversations (their
    Undo follows other edits), and requests."""

    @property
    def app(self) -> PanelApp: ...
    @property
    def prefs(self) -> PanelPrefs: ...
    @property
    def model(self) -> AgentModel: ...
    def apply_changes(self, conv: Conversation, changes: list[tuple[Any, ...]]) -> None: ...
    def request(self, op: str, args: dict[str, Any], ok: Callable[[Any], object],
                fail: Callable[[RioError], object], timeout: float = 30) -> None: ...


class TabMarks:
    def __init__(self, panel: MarksHost):
        self.panel = panel
        self.app = panel.app
        self.marked: dict[str, float] = {}     # buffer → when the agent changed it
        self.app.notebook.bind("<<NotebookTabChanged>>", lambda e: self.on_tab_changed(),
                               add="+")

    def on_buffer(self, event: Event) -> None:
        topic = event.topic
        if topic not in ("buffer.changed", "buffer.saved", "buffer.closed"):
            return
        data = thaw(event.data)
        bid = str(data.get("buffer") or "")
        if topic == "buffer.changed":
            origin = str(data.get("origin") or "")
            if origin.startswith("agent:"):
                if self.panel.prefs.show_ai:
                    self.mark(bid)
                return
            for conv in self.panel.model.conversations.values():
                changes = conv.buffer_changed(bid, origin, str(data.get("kind") or "edit"),
                                              str(data.get("label") or ""))
                if changes:
                    self.panel.apply_changes(conv, changes)
        elif topic == "buffer.saved" and not data.get("dirty"):
            self.unmark(bid)
            for conv in self.panel.model.conversations.values():
                changes = conv.buffer_saved(bid)
                if changes:
                    self.panel.apply_changes(conv, changes)
        elif topic == "buffer.closed":
            self.marked.pop(bid, None)

    def mark(self, bid: str) -> None:
        first = bid not in self.marked
        self.marked[bid] = time.monotonic()
        ed = self.app.editors.get(bid)
        if ed is not None:
            self._set_image(ed, True)
            return
        if not first:
            return

        def got(summary: Any) -> None:
            ed = self.app.add_tab(summary, select=False)
            self._set_image(ed, bid in self.marked)
        self.panel.request("buffer.info", {"buffer": bid}, got, lambda err: None)

    def unmark(self, bid: str) -> None:
        if self.marked.pop(bid, None) is None:
            return
        ed = self.app.editors.get(bid)
        if ed is not None:
            self._set_image(ed, False)

    def clear(self) -> None:
        for bid in list(self.marked):
            self.unmark(bid)

    def _set_image(self, ed: AgentEditor, on: bool) -> None:
        tab = str(ed)       # the editor's widget path: its tab in the notebook
        try:
            if on:
                set_tab(self.app.notebook, tab, image=icon("agent", self.app.theme.name,
                                                           self.app.root), compound="left")
            else:
                set_tab(self.app.notebook, tab, image="")
        except tk.TclError:
            pass   # the tab went away meanwhile

    def on_tab_changed(self) -> None:
        ed = self.app.active_editor()
        if ed is None:
            return
        when = self.marked.get(ed.buffer_id)
        if when is not None and time.monotonic() - when > MARK_GRACE_S:
            self.unmark(ed.buffer_id)
