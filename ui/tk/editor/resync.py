"""How an editor keeps its text when the core goes away or it misses changes (ADR-0020).

A part of :class:`ui.tk.editor.tab.EditorTab` (``tab.recovery``); it owns whether a recovery is
under way. The logic is :class:`rio.text.replica.Replica`'s (``go_offline``, ``sent``,
``rebase``); this only wires it to the bus and the widget:

1. An edit's reply is a bus error (the core died: ``bus.actor_dead``, ``bus.no_route`` while it
   restarts), a ``buffer.stale_base`` refusal, or the editor missed a change (a gap): the replica
   goes offline. The widget stays editable; what is typed is kept as pending edits and shown.
2. The request that was in flight is resent under the same id. The core answers it (it is in
   the recovered text: "already applied") or refuses its old base (it was lost with the core).
   While the core is still away the resend fails with a bus error and is tried again shortly.
3. ``buffer.text`` gives the core's text; ``Replica.rebase`` moves the edits still to send onto
   it and returns the one change, if any, the widget needs. The cursor is carried through it and
   the view does not scroll; when nothing was lost the widget is not touched at all.

Big documents (a window of rows) are reloaded instead, as before.
"""

from __future__ import annotations

import logging
import tkinter as tk
from typing import TYPE_CHECKING, Any

from rio.protocol.errors import error_from_wire
from rio.protocol.frames import Reply, thaw
from rio.text.replica import Replica, Request
from ui.tk.editor.offsets import EditorOffsets
from ui.tk.editor.seams import ResyncTab
from ui.tk.editor.text_redirect import TextRedirect

if TYPE_CHECKING:
    from ui.tk.app.seams import EditorHost

log = logging.getLogger("rio.ui.editor")

#: While the core is away, how often to ask again (ms).
RETRY_MS = 300


class EditorResync:
    """Offline editing and rebase across a core restart (see the module docstring)."""

    def __init__(self, tab: ResyncTab, app: EditorHost, text: tk.Text, door: TextRedirect,
                 offsets: EditorOffsets):
        self.tab = tab
        self.app = app
        self.conn = app.conn
        self.text = text
        self.door = door
        self.offsets = offsets
        self.recovering = False                 # offline: finding the core again

    def can_rebase(self) -> bool:
        """Keep the local edits (rather than reload) when the text is loaded and not windowed."""
        return self.tab.replica is not None and self.tab.window is None and self.tab.ready

    def _replica(self) -> Replica:
        replica = self.tab.replica
        assert replica is not None, "recovery needs a loaded text (can_rebase)"
        return replica

    def recover(self) -> None:
        """Go offline and bring this copy back in step with the core, keeping every edit."""
        self._replica().go_offline()
        if self.recovering:
            return
        self.recovering = True
        self._learn_fate()

    def rebind(self) -> None:
        """The core reopened the document under another id, and what was typed while it was
        away is kept: take the reopened text and rebase onto it."""
        self._replica().go_offline()
        self.recovering = True
        self.fetch_and_rebase(False)

    def _learn_fate(self) -> None:
        if not self.text.winfo_exists():
            return
        sent = self._replica().sent
        if sent is None:
            self.fetch_and_rebase(False)
            return

        def got(reply: Reply) -> None:
            if not self.text.winfo_exists():
                return
            if reply.ok:        # applied, before the restart ("already applied") or now
                self.fetch_and_rebase(True)
                return
            err = error_from_wire(thaw(reply.error))
            if err.kind.startswith("bus."):
                self.text.after(RETRY_MS, self._learn_fate)     # the core is not back yet
            elif err.kind == "buffer.unknown_buffer":
                self.recovering = False
                self.app.buffer_lost(self.tab, err)
            else:
                # stale_base: it was lost with the core, send it again from the new text;
                # any other refusal is for good: drop it (the rebase takes it out of the view).
                log.info("resent edit refused: %s", err.kind)
                self.fetch_and_rebase(err.kind != "buffer.stale_base")
        self.conn.request("buffer.replace", self.request_args(sent), got,
                          request_id=sent.id, timeout=5)

    def request_args(self, request: Request) -> dict[str, Any]:
        """``buffer.replace``'s arguments for a replica's request (sent, or sent again)."""
        return {"buffer": self.tab.buffer_id, "start": request.start, "end": request.end,
                "text": request.text, "base_version": request.base_version,
                "origin": request.origin}

    def fetch_and_rebase(self, sent_applied: bool) -> None:
        def got(reply: Reply) -> None:
            if not self.text.winfo_exists():
                return
            if not reply.ok:
                err = error_from_wire(thaw(reply.error))
                if err.kind.startswith("bus."):
                    self.text.after(RETRY_MS, lambda: self.fetch_and_rebase(sent_applied))
                else:
                    self.recovering = False
                    self.app.buffer_lost(self.tab, err)
                return
            res = thaw(reply.result)
            self.recovering = False
            self.rebase_on(res["text"], int(res["version"]), sent_applied)
        self.conn.request("buffer.text", {"buffer": self.tab.buffer_id}, got, timeout=30)

    def rebase_on(self, text: str, version: int, sent_applied: bool) -> None:
        """Take the core's text; keep the local edits, the cursor and the scroll."""
        cur = self.offsets.offset("insert")      # read before the replica changes under the widget
        top = self.text.yview()[0]
        replica = self._replica()
        edits = replica.rebase(text, version, sent_applied=sent_applied)
        for edit in edits:
            if edit.start <= cur <= edit.end:
                cur = edit.start + min(cur - edit.start, len(edit.text))
            elif cur > edit.end:
                cur += len(edit.text) - (edit.end - edit.start)
            self.tab.apply_remote(edit.start, edit.end, edit.text, cur)
            idx = self.offsets.index(cur)
            if idx is not None:
                self.door.orig("mark", "set", "insert", idx)
        if edits:
            self.text.yview_moveto(top)
        log.info("rebased %s on version %d (%d edit(s) for the view, %d to send)",
                 self.tab.buffer_id, version, len(edits), len(replica.pending))
        self.tab.run_at_version()
        self.tab.flush()
        self.tab.mark_changed()
