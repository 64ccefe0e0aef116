"""Files an ACP agent changed on disk behind Rio's back (``agent.changed_files``): a card with
**Review** and **Revert** per file.

* *Review* opens the file in a tab (not for a deleted one) and unfolds the change's coloured
  diff under its row (a second click folds it).
* *Revert* puts a *modified* file back as it was when the turn started, after asking: its text
  then is worked out from the diff and the file now (:func:`rio.agent.unpatch.text_before`,
  refused when the file changed again since or the diff was cut short), put in the file's
  buffer as one undoable edit (``buffer.open``, ``buffer.text``, ``buffer.replace``) and saved
  (``buffer.save``) — all through the core. A tab with unsaved changes is never overwritten:
  the revert is refused and says so.
* *Restore* (the same action, ``ui.agent revert``) writes a *deleted* file back when its whole
  text was kept at the turn's start (its diff is then whole): a new buffer with that text, saved
  at the path with the encoding and line ends it had (``stored_as``), then closed — refused when
  something is at that path again. Created files have no Revert: the core offers no delete, and
  deleting is the user's call (Review shows what the file holds).

Each row's state (``reverting``, ``reverted``, or why not) is kept in the block's data, so the
card redraws it and ``ui.state`` reports it.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk
from typing import Any, Callable, Mapping

from rio.agent.unpatch import text_before
from rio.protocol.errors import ProtocolError, RioError
from ui.tk.agent.cards import DIFF_ROWS, BodyCard
from ui.tk.agent.extras import CHANGED_FILES_SHOWN
from ui.tk.agent.model import Block, Conversation
from ui.tk.agent.seams import Requests, Respond
from ui.tk.agent.text import diff_line_tag

REVERT_LABEL = "Revert the agent's change on disk"


def can_revert(entry: dict[str, Any]) -> bool:
    change = entry.get("change", "modified")
    if change == "deleted":
        return _deleted_text(entry) is not None
    return change == "modified" and bool(entry.get("diff"))


def _deleted_text(entry: dict[str, Any]) -> str | None:
    """A deleted file's whole text, from its diff (None when the diff was cut short or its
    text was not kept at the turn's start)."""
    diff = entry.get("diff")
    return text_before(str(diff), "") if diff else None


def describe(conv: Conversation | None) -> list[dict[str, Any]]:
    """``ui.state``'s ``agent.changed_files``: the last such card's rows."""
    block = next((b for b in reversed(conv.blocks if conv else ())
                  if b.data.get("changed_files")), None)
    if block is None:
        return []
    states = block.data.get("row_states") or {}
    shown = block.data.get("diff_shown") or []
    return [{"path": f.get("path"), "change": f.get("change"), "revert": can_revert(f),
             "state": states.get(f.get("path")), "diff_shown": f.get("path") in shown}
            for f in block.data["changed_files"]]


def _find(conv: Conversation | None, path: str | None) -> tuple[Block, dict[str, Any]] | None:
    for block in reversed(conv.blocks if conv else ()):
        for entry in block.data.get("changed_files") or ():
            if path is None or entry.get("path") == path:
                return block, entry
    return None


#: The agent_revert dialog's title, question and detail, for a modified and a deleted file.
_REVERT_ASK = ("Revert a file", "Put {path} back as it was before the agent's turn?",
               "The file gets its earlier text, saved from its tab: Edit → Undo in that tab "
               "takes the revert back. A tab with unsaved changes is left alone.")
_RESTORE_ASK = ("Restore a file", "Put {path} back? The agent deleted it during its turn.",
                "The file is written again with the text, encoding and line ends it had when "
                "the turn started. Nothing is overwritten: if something is at that path now, "
                "the restore is refused.")


def _why_not(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "There is no modified file with a diff to revert here."
    path, change = entry.get("path"), entry.get("change")
    if change == "created":
        return (f"{path} was created by the agent: Revert puts back modified files only. "
                "Delete it yourself if it should go (Review shows what it holds).")
    if change == "deleted":
        return (f"{path} was deleted by the agent and its whole text was not kept (it was "
                "large or binary, or its diff was cut short): restore it from version "
                "control or a backup.")
    return f"{path} has no diff to take back ({entry.get('note') or 'none was kept'})."


def _refuse(respond: Respond | None, message: str) -> None:
    if respond is not None:
        respond(ProtocolError("bad_args", message, "Look at ui.state agent.changed_files."))


class ChangedFiles:
    """Review and Revert (Restore) on the last changed-files card, for one panel (it holds one
    as ``changed``): its buttons, and ``ui.agent review/revert``."""

    def __init__(self, panel: Requests) -> None:
        self.panel = panel

    def review(self, path: str | None, respond: Respond | None = None) -> None:
        """Open the file in a tab (unless it was deleted) and unfold its diff in the card."""
        panel = self.panel
        found = _find(panel.model.shown, path)
        if found is None:
            _refuse(respond, "No file the agent changed on disk is shown.")
            return
        block, entry = found
        path = str(entry.get("path"))
        shown = block.data.setdefault("diff_shown", [])
        if path in shown:
            shown.remove(path)
        else:
            shown.append(path)
            if entry.get("change") != "deleted":
                panel.open_file(path)
        panel.refresh_block(block)
        if respond is not None:
            respond({"path": path, "diff_shown": path in shown})

    def revert(self, path: str | None, respond: Respond | None = None) -> None:
        """Ask, then put the file back (see the module docstring). ``respond`` answers at once
        with ``{path, asking}``; the row's state says how it went."""
        panel = self.panel
        found = _find(panel.model.shown, path)
        if found is None or not can_revert(found[1]):
            _refuse(respond, _why_not(found[1] if found else None))
            return
        block, entry = found
        path = str(entry.get("path"))

        deleted = entry.get("change") == "deleted"

        # The dialog's button says what the row's button said: Restore a deleted file.
        action = "Restore" if deleted else "Revert"

        def answered(button: str, _values: dict[str, str]) -> None:
            if button == action:
                self._set(block, path, "reverting")
                (self._restore if deleted else self._revert)(block, entry)
        from ui.tk.widgets.dialogs import Dialog
        title, question, detail = _RESTORE_ASK if deleted else _REVERT_ASK
        Dialog(panel.app, "agent_revert", title, question.format(path=path), [action, "Cancel"],
               answered, icon="question", detail=detail)
        if respond is not None:
            respond({"path": path, "asking": True})

    def _set(self, block: Block, path: str, state: str) -> None:
        panel = self.panel
        block.data.setdefault("row_states", {})[path] = state
        panel.refresh_block(block)

    def _failing(self, block: Block, path: str) -> Callable[[str], Callable[..., None]]:
        """``failed(why)``: a callback that sets the row's state to ``why`` (and the error's
        message, when it is given one)."""
        def failed(why: str) -> Callable[..., None]:
            def set_state(err: object = None) -> None:
                self._set(block, path, why + (
                    f" ({err.message})" if isinstance(err, RioError) else ""))
            return set_state
        return failed

    def _revert(self, block: Block, entry: dict[str, Any]) -> None:
        panel = self.panel
        path = str(entry["path"])

        failed = self._failing(block, path)

        def got_disk(read: Any) -> None:
            old = text_before(str(entry["diff"]), str(read.get("text") or ""))
            if old is None or read.get("truncated"):
                failed("not reverted: the file changed again since; Review shows the diff")()
                return
            panel.request("buffer.open", {"path": path}, lambda s: opened(s, old),
                          failed("not reverted"))

        def opened(summary: Any, old: str) -> None:
            bid = str(summary["buffer"])
            if summary.get("dirty"):
                failed("not reverted: its tab has unsaved changes — save or close them first")()
                return
            panel.request("buffer.text", {"buffer": bid}, lambda t: with_text(bid, t, old),
                          failed("not reverted"))

        def with_text(bid: str, got: Any, old: str) -> None:
            text = str(got.get("text") or "")
            def save(_replaced: object = None) -> None:
                panel.request("buffer.save", {"buffer": bid, "force": True},
                              lambda _s: self._set(block, path, "reverted"), failed("not saved"))
            if text == old:
                save()
                return
            panel.request("buffer.replace", {"buffer": bid, "start": 0, "end": len(text),
                                             "text": old, "base_version": got.get("version"),
                                             "label": REVERT_LABEL}, save, failed("not reverted"))
        panel.request("fs.read", {"path": path, "max_chars": 1_000_000}, got_disk,
                      failed("not reverted"))

    def _restore(self, block: Block, entry: dict[str, Any]) -> None:
        """Write a deleted file back — never over something at its path now — through the core: a
        new buffer with its text, saved there as it was stored, then closed."""
        panel = self.panel
        path = str(entry["path"])
        old = _deleted_text(entry)
        stored = entry.get("stored_as") or {}

        failed = self._failing(block, path)

        def there(_read: Any) -> None:
            failed(f"not restored: there is a file at {path} again; Review shows the old text")()

        def absent(err: Any) -> None:
            if not (isinstance(err, RioError) and err.kind.endswith("not_found")):
                failed("not restored")(err)
                return
            panel.request("buffer.new", {"text": old}, created, failed("not restored"))

        def created(summary: Any) -> None:
            bid = str(summary["buffer"])
            args = {"buffer": bid, "path": path, **{k: v for k, v in stored.items()
                                                    if k in ("encoding", "newline") and v}}

            def done(_saved: Any) -> None:
                self._set(block, path, "restored")
                panel.request("buffer.close", {"buffer": bid}, lambda _c: None, lambda _e: None)

            def not_saved(err: Any) -> None:
                failed("not restored")(err)
                panel.request("buffer.close", {"buffer": bid, "discard": True},
                              lambda _c: None, lambda _e: None)
            panel.request("buffer.save", args, done, not_saved)

        if old is None:
            failed("not restored: its whole text was not kept")()
            return
        panel.request("fs.read", {"path": path, "max_chars": 1}, there, absent)


class ChangedFilesCard(BodyCard):
    """The files, each with Review (and Revert for a modified one), its state, its diff."""

    def draw(self, d: Mapping[str, Any]) -> None:
        files = d["changed_files"]
        panel = self.view.panel
        app = panel.app
        n = len(files) + int(d.get("more") or 0)
        ttk.Label(self.body, text=f"The agent changed {n} file{'s' if n != 1 else ''} on disk "
                  "itself (not through a proposal):", font=(app.ui_font_family(), 9, "bold"),
                  wraplength=320, justify="left").pack(anchor="w")
        states = d.get("row_states") or {}
        shown = d.get("diff_shown") or []
        for entry in files[:CHANGED_FILES_SHOWN]:
            path = str(entry.get("path"))
            row = ttk.Frame(self.body)
            row.pack(anchor="w", fill="x", pady=(2, 0))
            ttk.Label(row, text=f"{path} ({entry.get('change') or 'modified'})").pack(
                side="left")
            if can_revert(entry):
                label = "Restore" if entry.get("change") == "deleted" else "Revert"
                busy = states.get(path) in ("reverting", "reverted", "restored")
                ttk.Button(row, text=label, width=7, command=self._revert_row(path),
                           state="disabled" if busy else "normal").pack(side="right")
            ttk.Button(row, text="Review", width=7,
                       command=self._review_row(path)).pack(side="right", padx=2)
            if states.get(path):
                ttk.Label(self.body, text=str(states[path]).capitalize() + ".",
                          foreground=self.view.colours["note"], wraplength=320,
                          justify="left").pack(anchor="w", padx=(12, 0))
            if path in shown:
                self._diff(entry)
        rest = len(files) - CHANGED_FILES_SHOWN + int(d.get("more") or 0)
        if rest > 0:
            ttk.Label(self.body, text=f"… and {rest} more.",
                      foreground=self.view.colours["note"]).pack(anchor="w")
        if d.get("unchecked"):      # the project is past what one turn compares (ADR-0042)
            ttk.Label(self.body, text=str(d["unchecked"]), foreground=self.view.colours["note"],
                      wraplength=320, justify="left").pack(anchor="w", pady=(2, 0))
        ttk.Label(self.body, text="Open documents of these files ask before anything is "
                  "overwritten.", foreground=self.view.colours["note"], wraplength=320,
                  justify="left").pack(anchor="w", pady=(2, 0))

    def _review_row(self, path: str) -> Callable[[], None]:
        return lambda: self.view.panel.review_file(path)

    def _revert_row(self, path: str) -> Callable[[], None]:
        return lambda: self.view.panel.revert_file(path)

    def _diff(self, entry: dict[str, Any]) -> None:
        app = self.view.panel.app
        body = str(entry.get("diff") or entry.get("note") or "(no diff)")
        rows = body.splitlines() or [""]
        mono = app.editor_font_tuple()
        box = ttk.Frame(self.body, style="Sunken.TFrame")
        box.pack(anchor="w", fill="x", pady=(2, 2))
        diff = tk.Text(box, height=min(DIFF_ROWS, len(rows)), width=self.view.card_chars(),
                       wrap="none", font=(mono[0], max(7, mono[1] - 1)),
                       bg=app.theme.field_bg, fg=app.theme.field_fg, borderwidth=0,
                       insertwidth=0, cursor="arrow")
        c = self.view.colours
        diff.tag_configure("diff_add", background=c["add_bg"], foreground=c["add_fg"])
        diff.tag_configure("diff_del", background=c["del_bg"], foreground=c["del_fg"])
        diff.tag_configure("diff_hunk", foreground=c["hunk_fg"])
        diff.tag_configure("diff_file", foreground=c["file_fg"])
        for n, row in enumerate(rows):
            diff.insert("end", row + ("\n" if n < len(rows) - 1 else ""),
                        (diff_line_tag(row),))
        diff.configure(state="disabled")
        if len(rows) > DIFF_ROWS:
            sb = ttk.Scrollbar(box, orient="vertical", command=diff.yview)
            diff.configure(yscrollcommand=sb.set)
            sb.pack(side="right", fill="y")
        if max(len(r) for r in rows) >= int(diff.cget("width")):
            # long lines scroll sideways, as on a proposal's card
            xs = ttk.Scrollbar(box, orient="horizontal", command=diff.xview)
            diff.configure(xscrollcommand=xs.set)
            xs.pack(side="bottom", fill="x")
        diff.pack(side="top", fill="x", expand=True)
