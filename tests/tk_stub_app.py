"""A stand-in for the desktop's app object, for testing UI widgets against a real core.

It exposes the seams ui/tk/app.py offers (``open_path``, ``active_editor``, ``output_pane_slot``,
``tree_slot``, ``conn``, ``register_command``, ``settings``/``apply_settings``) with a minimal
editor: a Tk Text fed by a :class:`rio.text.replica.Replica`, applying every ``buffer.changed`` event
the way the real editor does. Tests drive real widgets and assert the CORE's state.
"""

from __future__ import annotations

import os
import time
import tkinter as tk
from pathlib import Path
from typing import Any, Callable

from rio.protocol.frames import thaw
from rio.text.document import Change
from rio.text.replica import Replica


class StubEditor:
    def __init__(self, app: "StubApp", summary: dict[str, Any], text: str, version: int):
        self.app = app
        self.buffer_id = summary["buffer"]
        self.summary = dict(summary)
        self.path = summary.get("path")
        self.text = tk.Text(app.root, undo=False)
        self.text.pack(fill="both", expand=True)
        self.text.insert("1.0", text)
        self.text.mark_set("insert", "1.0")
        self.replica = Replica(text, version, f"ui:{os.getpid()}:{self.buffer_id}")

    def on_change(self, data: dict[str, Any]) -> None:
        change = Change(data["version"], data["start"], data["end"], data["text"], "",
                        data["origin"], data.get("label") or "", data.get("kind", "edit"))
        for edit in self.replica.on_change(change):
            a = f"1.0 + {edit.start} chars"
            b = f"1.0 + {edit.end} chars"
            self.text.delete(a, b)
            self.text.insert(a, edit.text)
        self._send()

    def type(self, offset: int, text: str) -> None:
        """A local keystroke: applied at once, sent to the core as the replica says."""
        self.text.insert(f"1.0 + {offset} chars", text)
        self._send(self.replica.local_edit(offset, offset, text))

    def _send(self, req: Any = None) -> None:
        req = req or self.replica.take_request()
        if req is None:
            return
        self.app.conn.request("buffer.replace", {
            "buffer": self.buffer_id, "start": req.start, "end": req.end, "text": req.text,
            "base_version": req.base_version, "origin": req.origin}, self._replied)

    def _replied(self, rep: Any) -> None:
        if not rep.ok:
            self.app.errors.append(thaw(rep.error))


class StubApp:
    def __init__(self, root: tk.Tk, server: Any):
        self.root = root
        self.server = server
        self.project_root = Path(server.root)
        self.conn = server.connect("ui-stub", subscribe=("buffer.", "run."))
        self.conn.subscribe("buffer.changed", self._on_changed)
        self.editors: dict[str, StubEditor] = {}
        self.active: StubEditor | None = None
        self.commands: dict[str, tuple[str, str, Callable[[], Any], str | None]] = {}
        self.opened: list[tuple[str, int | None, int | None]] = []
        self.settings: dict[str, Any] = {"font": "DejaVu Sans Mono", "size": 10, "tab_width": 4,
                                         "use_spaces": True, "theme": "classic", "wrap": False,
                                         "line_numbers": True}
        self.applied = 0
        self.status: list[str] = []
        self.errors: list[Any] = []
        self.output_pane_slot = tk.Frame(root)
        self.output_pane_slot.pack(side="bottom", fill="both", expand=True)
        self.tree_slot = tk.Frame(root)
        self.tree_slot.pack(side="left", fill="y")
        self._fds = self.conn.fds()
        for fd in self._fds:
            root.tk.createfilehandler(fd, tk.READABLE, lambda *_: self.conn.drain())
        self.conn.drain()
        self._tick()

    def _tick(self) -> None:
        self.conn.drain()
        self._after = self.root.after(50, self._tick)

    def close(self) -> None:
        self.root.after_cancel(self._after)
        for fd in self._fds:
            self.root.tk.deletefilehandler(fd)
        self.conn.close()

    # --- the seams ---------------------------------------------------------------------------
    def active_editor(self) -> StubEditor | None:
        return self.active

    def open_path(self, path: str, line: int | None = None, col: int | None = None) -> None:
        self.opened.append((path, line, col))
        summary = self.conn.call("buffer.open", {"path": str(path)})
        bid = summary["buffer"]
        editor = self.editors.get(bid)
        if editor is None:
            text = self.conn.call("buffer.text", {"buffer": bid})
            editor = StubEditor(self, summary, text["text"], text["version"])
            self.editors[bid] = editor
        self.active = editor
        if line is not None:
            editor.text.mark_set("insert", f"{line}.{(col or 1) - 1}")

    def register_command(self, name: str, label: str, accel: str, fn: Callable[[], Any],
                         menu: str | None = None) -> None:
        self.commands[name] = (label, accel, fn, menu)

    def apply_settings(self) -> None:
        self.applied += 1

    def set_message(self, message: str) -> None:
        self.status.append(message)

    def _on_changed(self, event: Any) -> None:
        data = thaw(event.data)
        editor = self.editors.get(data["buffer"])
        if editor is not None:
            editor.on_change(data)

    # --- test helpers --------------------------------------------------------------------------
    def pump(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.root.update()
            self.conn.drain()
            if predicate():
                return True
            time.sleep(0.005)
        self.root.update()
        return bool(predicate())

    def core_text(self, buffer_id: str) -> str:
        return self.conn.call("buffer.text", {"buffer": buffer_id})["text"]
