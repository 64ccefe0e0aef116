"""How an editor keeps its text when the core goes away or it misses changes (ADR-0020).

A mixin of :class:`ui.tk.editor.tab.EditorTab`. The logic is :class:`rio.text.replica.Replica`'s
(``go_offline``, ``sent``, ``rebase``); this only wires it to the bus and the widget:

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
from typing import Any

from rio.protocol.errors import error_from_wire
from rio.protocol.frames import Reply, thaw

log = logging.getLogger("rio.ui.editor")

#: While the core is away, how often to ask again (ms).
RETRY_MS = 300


class EditorResync:
    """Offline editing and rebase across a core restart (mixed into EditorTab)."""

    # Provided by EditorTab:
    app: Any
    conn: Any
    replica: Any
    window: Any
    buffer_id: str
    _recovering: bool
    ready: bool

    def can_rebase(self) -> bool:
        """Keep the local edits (rather than reload) when the text is loaded and not windowed."""
        return self.replica is not None and self.window is None and self.ready

    def recover(self) -> None:
        """Go offline and bring this copy back in step with the core, keeping every edit."""
        self.replica.go_offline()
        if self._recovering:
            return
        self._recovering = True
        self._learn_fate()

    def _learn_fate(self) -> None:
        if not self.winfo_exists():
            return
        sent = self.replica.sent
        if sent is None:
            self._fetch_and_rebase(False)
            return

        def got(reply: Reply) -> None:
            if not self.winfo_exists():
                return
            if reply.ok:        # applied, before the restart ("already applied") or now
                self._fetch_and_rebase(True)
                return
            err = error_from_wire(thaw(reply.error))
            if err.kind.startswith("bus."):
                self.after(RETRY_MS, self._learn_fate)     # the core is not back yet
            elif err.kind == "buffer.unknown_buffer":
                self._recovering = False
                self.app.buffer_lost(self, err)
            else:
                # stale_base: it was lost with the core, send it again from the new text;
                # any other refusal is for good: drop it (the rebase takes it out of the view).
                log.info("resent edit refused: %s", err.kind)
                self._fetch_and_rebase(err.kind != "buffer.stale_base")
        self.conn.request("buffer.replace", self.request_args(sent), got,
                          request_id=sent.id, timeout=5)

    def request_args(self, request: Any) -> dict[str, Any]:
        return {"buffer": self.buffer_id, "start": request.start, "end": request.end,
                "text": request.text, "base_version": request.base_version,
                "origin": request.origin}

    def _fetch_and_rebase(self, sent_applied: bool) -> None:
        def got(reply: Reply) -> None:
            if not self.winfo_exists():
                return
            if not reply.ok:
                err = error_from_wire(thaw(reply.error))
                if err.kind.startswith("bus."):
                    self.after(RETRY_MS, lambda: self._fetch_and_rebase(sent_applied))
                else:
                    self._recovering = False
                    self.app.buffer_lost(self, err)
                return
            res = thaw(reply.result)
            self._recovering = False
            self.rebase_on(res["text"], int(res["version"]), sent_applied)
        self.conn.request("buffer.text", {"buffer": self.buffer_id}, got, timeout=30)

    def rebase_on(self, text: str, version: int, sent_applied: bool) -> None:
        """Take the core's text; keep the local edits, the cursor and the scroll."""
        cur = self.offset("insert")      # read before the replica changes under the widget
        top = self.text.yview()[0]
        edits = self.replica.rebase(text, version, sent_applied=sent_applied)
        for edit in edits:
            if edit.start <= cur <= edit.end:
                cur = edit.start + min(cur - edit.start, len(edit.text))
            elif cur > edit.end:
                cur += len(edit.text) - (edit.end - edit.start)
            self._apply_remote(edit.start, edit.end, edit.text, cur)
            idx = self.index(cur)
            if idx is not None:
                self.orig("mark", "set", "insert", idx)
        if edits:
            self.text.yview_moveto(top)
        log.info("rebased %s on version %d (%d edit(s) for the view, %d to send)",
                 self.buffer_id, version, len(edits), len(self.replica.pending))
        self._run_at_version()
        self._flush()
        self._mark_changed()
