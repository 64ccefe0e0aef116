"""A real :class:`ui.tk.editor.tab.EditorTab` in the test process, against an in-process core.

The core here is :class:`rio.text.document.Document` behind a connection with the editor's
``request(op, params, callback)`` face. Requests and events wait in one FIFO queue (the bus keeps
order) until the test calls :meth:`FakeCore.pump`, so a test decides when the core answers and
can land other writers' changes in between. Everything else is the desktop's own code: the Tk
Text and its redirect, the Replica, offsets, highlighting, the big-file window.
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
from collections import deque
from collections.abc import Callable
from typing import Any

from rio.protocol.errors import RioError
from rio.protocol.frames import Reply
from rio.text.buffer_state import change_event
from rio.text.document import Change, Document
from ui.tk.editor.bindings import install_editor_bindings
from ui.tk.editor.tab import EditorTab
from ui.tk.widgets.theme import get_theme


class FakeCore:
    """One document; ``buffer.text/info/lines/replace/apply/undo/redo`` as the core answers."""

    def __init__(self, text: str, name: str = "notes.txt", buffer_id: str = "b1"):
        self.doc = Document(text)
        self.name = name
        self.buffer_id = buffer_id
        self.queue: deque[Callable[[], None]] = deque()
        self.editors: list[EditorTab] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []

    # the connection face the editor uses
    def request(self, op: str, params: dict[str, Any], callback: Callable[[Reply], None],
                timeout: float | None = None, request_id: str | None = None) -> None:
        self.requests.append((op, dict(params)))
        self.queue.append(lambda: self._answer(op, params, callback))

    def summary(self) -> dict[str, Any]:
        return {"buffer": self.buffer_id, "name": self.name, "path": None,
                "length": len(self.doc), "version": self.doc.version,
                "dirty": self.doc.dirty, "format": {}}

    def _answer(self, op: str, p: dict[str, Any], callback: Callable[[Reply], None]) -> None:
        try:
            result = self._run(op, p)
        except RioError as err:
            callback(Reply.failure("r", err))
            return
        callback(Reply.success("r", result))

    def _run(self, op: str, p: dict[str, Any]) -> Any:
        d = self.doc
        if op == "buffer.text":
            end = p.get("end", len(d))
            return {"text": d.slice(p.get("start", 0), min(end, len(d))),
                    "version": d.version, "length": len(d)}
        if op == "buffer.info":
            return self.summary()
        if op == "buffer.lines":
            return {"lines": d.buffer.lines(p["first"], p["last"]), "version": d.version}
        if op == "buffer.replace":
            change = d.replace(p["start"], p["end"], p["text"], origin=p["origin"],
                               base_version=p["base_version"])
            self._broadcast([change])
            return {"version": change.version}
        if op == "buffer.apply":
            changes = d.apply([tuple(e) for e in p["edits"]], origin=p["origin"],
                              base_version=p["base_version"], label=p.get("label"))
            self._broadcast(changes)
            return {"version": d.version, "count": len(changes)}
        if op in ("buffer.undo", "buffer.redo"):
            changes = d.undo(p.get("origin", "user")) if op == "buffer.undo" else \
                d.redo(p.get("origin", "user"))
            self._broadcast(changes)
            return {"version": d.version}
        raise AssertionError(f"the fake core does not know {op}")

    def _broadcast(self, changes: list[Change]) -> None:
        for change in changes:
            _name, data = change_event(self.buffer_id, change)
            for ed in self.editors:
                self.queue.append(lambda ed=ed, data=data: ed.on_changed(dict(data)))

    # what tests do
    def remote(self, start: int, end: int, text: str, origin: str = "agent") -> None:
        """Another writer's edit lands at the core now; the editor hears of it in order."""
        self._broadcast([self.doc.replace(start, end, text, origin=origin)])

    def pump(self, count: int | None = None) -> None:
        """Deliver ``count`` queued answers/events (all, by default, including new ones)."""
        n = 0
        while self.queue and (count is None or n < count):
            self.queue.popleft()()
            n += 1


class HarnessApp:
    """The few things EditorTab asks of the desktop's App."""

    def __init__(self, root: tk.Tk, core: FakeCore, settings: dict[str, Any] | None = None):
        self.root = root
        self.conn = core
        self.settings: dict[str, Any] = {"font": "DejaVu Sans Mono", "size": 10,
                                         "tab_width": 4, "use_spaces": True, "wrap": False,
                                         "line_numbers": True, **(settings or {})}
        self.editor_font = tkfont.Font(root, family=self.settings["font"],
                                       size=self.settings["size"])
        self.theme = get_theme("classic")
        self.errors: list[RioError] = []
        self.cursor_calls = 0

    def editor_font_tuple(self) -> tuple[str, int]:
        return (str(self.editor_font.cget("family")), int(self.editor_font.cget("size")))

    def show_error(self, err: RioError) -> None:
        self.errors.append(err)

    def on_editor_state(self, ed: EditorTab) -> None:
        pass

    def on_cursor(self, ed: EditorTab) -> None:
        self.cursor_calls += 1

    def buffer_lost(self, ed: EditorTab, err: RioError) -> None:
        self.errors.append(err)


def open_editor(root: tk.Tk, text: str, name: str = "notes.txt",
                settings: dict[str, Any] | None = None) -> tuple[EditorTab, FakeCore]:
    """An EditorTab showing ``text``, loaded and live."""
    core = FakeCore(text, name)
    app = HarnessApp(root, core, settings)
    if not getattr(root, "_rio_bindings", False):
        install_editor_bindings(root)
        root._rio_bindings = True  # type: ignore[attr-defined]
    ed = EditorTab(root, app, core.summary())
    core.editors.append(ed)
    ed.pack(fill="both", expand=True)
    ed.load()
    core.pump()
    assert ed.ready, "the editor did not go live"
    root.update_idletasks()
    return ed, core


def widget_text(ed: EditorTab) -> str:
    return str(ed.orig("get", "1.0", "end-1c"))


def close_editor(ed: EditorTab) -> None:
    """Destroy the tab and its font while the Tk root lives: a tkinter Font collected after
    its root was destroyed calls ``font delete`` on a dead Tk (a segfault, seen here)."""
    font = ed.app.editor_font
    ed.destroy()
    if font.delete_font:
        font.delete_font = False
        font._call("font", "delete", font.name)
