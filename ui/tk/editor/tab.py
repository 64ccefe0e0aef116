"""EditorTab: one document in the desktop — a Tk Text kept in step with the core by a Replica.

Every change to the widget goes through one door. The Text's Tcl command is renamed and
replaced (IDLE's ``redirector`` trick, ui/tk/editor/text_redirect.py), so typing, paste, cut,
the Text class bindings and our own commands all become ``insert``/``delete`` calls we see: each
is applied to the widget at once (no round trip on a keystroke), to the :class:`Replica`, and
sent to the core as ``buffer.replace``. Changes from elsewhere (``buffer.changed`` events,
undo/redo — the core's, never Tk's) are applied through the renamed original command, so they
are not sent back.

Multi-line commands (block indent, comment toggle, the find dialog's Replace All) go as ONE
``buffer.apply`` — one undo step — once the replica has nothing in flight, so their offsets are
the core's offsets; the result arrives as remote changes. Save and undo wait for the same quiet
point, so a save always holds every key typed before it. That queue and the rule for where the
cursor goes under a remote change are display-free: ui/tk/editor/model.py. The keys every editor
shares (the ``RioEditor`` class bindings) are ui/tk/editor/bindings.py.

Big documents use a window of rows (ui/tk/editor/bigfile.py, scrolled by ui/tk/editor/row_window.py):
offsets then map through :class:`LineWindow` instead of the replica's line index, and
highlighting is off. Typing and the block commands are ui/tk/editor/keyboard.py.

The tab is built of parts, each a small class that owns its own state and is given what it
needs (docs/adr/0045-editor-tab-of-typed-parts.md): ``offsets`` (Tk index ↔ offset),
``decor`` (tags, highlighting, gutter), ``typing`` (keys, block commands), ``recovery``
(offline editing and rebase) and ``rows`` (a big file's scrolling). The tab itself owns the
document state they read — ``replica``, ``window``, ``ready`` — and the edit path and loading;
its remaining methods that only pass to a part are the ones other rooms call. What a part uses
of the tab is a Protocol in ui/tk/editor/seams.py.

Tk 8.6 columns count UTF-16 units (an emoji is two), the core's offsets count code points:
:meth:`EditorTab.offset` and :meth:`EditorTab.index` (ui/tk/editor/offsets.py) convert with
rio/text/utf16_columns.py, and nothing else may turn a Tk index into an offset (ADR-0022).
"""

from __future__ import annotations

import logging
import os
import tkinter as tk
from collections.abc import Callable
from tkinter import ttk
from typing import Any

from rio.memory import give_back
from rio.protocol.errors import RioError, error_from_wire
from rio.protocol.frames import Reply, thaw
from rio.text import edit_commands as ec
from rio.text.highlight import Highlighter
from rio.text.replica import Replica, Request
from ui.tk.app.seams import EditorHost
from ui.tk.editor import bigfile
from ui.tk.editor.bigfile import LineWindow
from ui.tk.editor.decor import EditorDecorations
from ui.tk.editor.keyboard import EditorTyping
from ui.tk.editor.model import QuietQueue, cursor_after
from ui.tk.editor.offsets import EditorOffsets
from ui.tk.editor.resync import EditorResync
from ui.tk.editor.row_window import EditorWindowing
from ui.tk.editor.text_redirect import TextRedirect
from ui.tk.widgets.theme import Theme, style_text

log = logging.getLogger("rio.ui.editor")

CHUNK_CHARS = 4 * 1024 * 1024      # buffer.text per request while loading (frames ≤ 64 MiB)


class EditorTab(ttk.Frame):
    """One open document. ``summary`` is the core's buffer summary."""

    def __init__(self, master: tk.Misc, app: EditorHost, summary: dict[str, Any]):
        super().__init__(master, style="Sunken.TFrame")
        self.app = app
        self.conn = app.conn
        self.summary = dict(summary)
        self.buffer_id: str = summary["buffer"]
        self.replica: Replica | None = None
        self.window: LineWindow | None = None
        self.ready = False
        self.loading_fraction = 0.0
        self.quiet_queue = QuietQueue()          # what waits for quiet or for a version
        self._info_job: str | None = None
        self._pending_cursor: tuple[int, int, int] | None = None
        self._see_when_shown = False             # see_insert: the text has no size yet
        self._build()

    # --- widgets and parts ----------------------------------------------------------------------
    def _build(self) -> None:
        app = self.app
        self.gutter = tk.Canvas(self, width=40, highlightthickness=0, bd=0, name="gutter")
        self.text = tk.Text(self, undo=False, wrap="none", bd=0, highlightthickness=0,
                            font=app.editor_font, padx=4, pady=2, exportselection=True,
                            tabstyle="wordprocessor", name="text")
        self.vbar = ttk.Scrollbar(self, orient="vertical")
        self.hbar = ttk.Scrollbar(self, orient="horizontal", command=self.text.xview)
        # Every widget edit passes one door (ui/tk/editor/text_redirect.py).
        self._redirect = TextRedirect(self.text, live=lambda: self.ready,
                                      insert=self._local_insert, replace=self._local_replace,
                                      refused=self._refused)
        door = self._redirect
        self.offsets = EditorOffsets(self, door)
        self.decor = EditorDecorations(self, app, self.text, self.gutter, door, self.offsets,
                                       app.theme)
        self.typing = EditorTyping(self, app, self.text, door, self.offsets, self.decor)
        self.recovery = EditorResync(self, app, self.text, door, self.offsets)
        self.rows = EditorWindowing(self, self.text, self.vbar, door, self.offsets, self.decor)
        self.vbar.configure(command=self.rows.yview)
        self.text.configure(yscrollcommand=self.rows.on_yscroll, xscrollcommand=self.hbar.set)
        self.gutter.grid(row=0, column=0, sticky="ns")
        self.text.grid(row=0, column=1, sticky="nsew")
        self.vbar.grid(row=0, column=2, sticky="ns")
        self.hbar.grid(row=1, column=1, sticky="ew")
        self.rowconfigure(0, weight=1)
        self.columnconfigure(1, weight=1)
        self.progress = ttk.Progressbar(self, mode="determinate", maximum=1.0)
        self.text.tag_configure("current_line")
        self.text.tag_configure("bracket")
        self.text.tag_lower("current_line")
        # Our keys before the Text class bindings, so a "break" stops them.
        self.text.bindtags(("RioKeys", "RioEditor") + self.text.bindtags())
        for shown in ("<Map>", "<Configure>"):
            self.text.bind(shown, self._sized, add="+")
        self.apply_look(app.theme)
        self.text.configure(state="disabled")

    def apply_look(self, theme: Theme) -> None:
        style_text(self.text, theme, self.app.editor_font_tuple())
        self.text.configure(font=self.app.editor_font)
        self.text.tag_configure("current_line", background=theme.current_line)
        self.text.tag_configure("bracket", background=theme.bracket_match)
        self.text.tag_raise("sel")
        self.gutter.configure(background=theme.gutter_bg)
        self.decor.theme = theme
        self.text.configure(wrap="word" if self.app.settings.get("wrap") else "none")
        if self.app.settings.get("line_numbers", True):
            self.gutter.grid()
        else:
            self.gutter.grid_remove()
        self.text.configure(tabs=(self.app.editor_font.measure(" " * self.typing.tab_width()),))
        self.schedule_ui()

    # --- the redirect: every widget edit passes here (ui/tk/editor/text_redirect.py) ---------------------
    def orig(self, *args: Any) -> Any:
        """The Text's own command: changes the widget without passing the door."""
        return self._redirect.orig(*args)

    def _refused(self, err: RioError) -> None:
        """A local edit the replica refused: resync from the core."""
        log.warning("local edit refused: %s", err)
        self.resync()

    def _local_insert(self, index: str, chars: str) -> None:
        start, idx = self.offsets.locate(index, round_up=True)
        self._local(start, start, chars, lambda: self.orig("insert", idx, chars))

    def _local_replace(self, first: str, last: str | None, chars: str) -> None:
        norm = self.offsets.norm
        i1 = norm(first)
        i2 = norm(last) if last is not None else norm(f"{i1}+1c")
        if self.orig("compare", i1, ">", i2):
            i1, i2 = i2, i1
        (start, i1), (end, i2) = self.offsets.locate(i1), self.offsets.locate(i2, round_up=True)
        if start == end and not chars:
            if self.window is not None and self.orig("compare", i1, "!=", i2):
                self.rows.rerender()   # only a display break between split rows: put it back
            return

        def widget() -> None:
            self.orig("delete", i1, i2)
            if chars:
                self.orig("insert", i1, chars)
        self._local(start, end, chars, widget)

    def _local(self, start: int, end: int, chars: str, widget: Callable[[], None]) -> None:
        assert self.replica is not None
        if not chars.isascii():
            self.offsets.maybe_astral = True
        request = self.replica.local_edit(start, end, chars)
        if self.window is not None:
            if self.window.edit_in_row(start, end, chars) is not None:
                widget()
            else:
                self.rows.rerender(cursor=start + len(chars))
        else:
            widget()
            self.decor.text_changed(start, end, chars)
        if request is not None:
            self._send(request)
        self.mark_changed()

    # --- talking to the core ----------------------------------------------------------------------
    def _send(self, request: Request) -> None:
        self.conn.request("buffer.replace", self.recovery.request_args(request),
                          self._on_replace_reply,
                          request_id=request.id)

    def _on_replace_reply(self, reply: Reply) -> None:
        if not reply.ok:
            err = error_from_wire(thaw(reply.error))
            log.warning("edit refused: %s", err.message)
            if not err.kind.startswith(("bus.", "buffer.unknown_buffer", "buffer.stale_base")):
                self.app.show_error(err)
            if self.ready:
                self.resync()

    def on_changed(self, data: dict[str, Any]) -> None:
        """A ``buffer.changed`` event for this buffer."""
        if self.replica is None:
            return  # still loading: the load's version check catches up
        if int(data["version"]) <= self.replica.version:
            return  # already in the snapshot we loaded
        if self.replica.offline:
            return  # resyncing: the text it fetches holds this change
        # The cursor's offset now, before the change: in a big file's window the rows are
        # re-rendered around it, so it must not be read from rows the change has shifted.
        cur = self.offsets.offset("insert")
        try:
            edits = self.replica.on_event(data)
        except RioError as err:
            log.info("resync %s: %s", self.buffer_id, err.message)
            self.resync()
            return
        undoing = data.get("kind") in ("undo", "redo")
        for edit in edits:
            cur = cursor_after(cur, edit.start, edit.end, len(edit.text), undoing)
            self.apply_remote(edit.start, edit.end, edit.text, cur)
            idx = self.offsets.index(cur)
            if idx is not None:
                self.orig("mark", "set", "insert", idx)
                if undoing:
                    self.orig("see", "insert")
        self.run_at_version()
        self.flush()
        self.mark_changed()

    def apply_remote(self, start: int, end: int, chars: str, cursor: int) -> None:
        """Show a change the replica already holds (the core's, or a rebase's); ``cursor`` is
        the insert mark's offset after it (a big file's window is rendered around it)."""
        if not chars.isascii():
            self.offsets.maybe_astral = True
        if self.window is not None:
            if not self.window.shift_after_remote(start, end, chars):
                self.rows.rerender(cursor=cursor)
            return
        # The replica already holds the new text: ``start`` maps the same before and after.
        sidx = self.offsets.index(start)
        assert sidx is not None   # a whole text in the widget maps every offset
        eidx = self.offsets.index_after(sidx, end - start) if end > start else sidx
        self.orig("delete", sidx, eidx)
        if chars:
            self.orig("insert", sidx, chars)
        self.decor.text_changed(start, end, chars)

    def flush(self) -> None:
        """Send the next waiting edit, and run what waited for a quiet replica."""
        if self.replica is None:
            return
        request = self.replica.take_request()
        if request is not None:
            self._send(request)
            return
        for fn in self.quiet_queue.take_quiet(self._busy()):
            fn()

    def when_ready(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` once the text is loaded and editable."""
        if self.ready:
            fn()
        else:
            self.after(20, lambda: self._when_ready_again(fn))

    def _when_ready_again(self, fn: Callable[[], object]) -> None:
        if self.winfo_exists():
            self.when_ready(fn)

    def when_quiet(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once every local edit and batch has been applied by the core."""
        if self.quiet_queue.when_quiet(fn, self._busy()):
            fn()

    def _busy(self) -> bool:
        """No text yet, or local edits the core has not acknowledged."""
        return self.replica is None or bool(self.replica.pending)

    def apply_batch(self, make: Callable[[], list[ec.TextEdit]], label: str,
                    reselect: bool = False,
                    on_done: Callable[[dict[str, Any]], None] | None = None,
                    on_error: Callable[[RioError], None] | None = None) -> None:
        """Several edits as one undo step (``buffer.apply``). ``make`` computes them when the
        replica is quiet, so its offsets are the core's; until the result comes back as a
        change, later commands wait (a second Tab must see the first one's text).
        ``reselect`` selects the same whole lines again afterwards. ``on_done(result)`` runs
        once the replica holds the change; ``on_error(err)``, when given, takes a refusal
        instead of the editor (which reports it and resyncs)."""
        def go() -> None:
            assert self.replica is not None
            lines = self._selected_lines() if reselect else None
            edits = make()
            if not edits:
                return
            self.quiet_queue.batch_sent()

            def landed(result: dict[str, Any]) -> None:
                self.quiet_queue.batch_done()
                if lines is not None:
                    self.orig("tag", "remove", "sel", "1.0", "end")
                    self.orig("tag", "add", "sel", f"{lines[0]}.0", f"{lines[1]}.end")
                    self.orig("mark", "set", "insert", f"{lines[1]}.end")
                if on_done is not None:
                    on_done(result)
                self.flush()

            def replied(reply: Reply) -> None:
                if not reply.ok:
                    self.quiet_queue.batch_done()
                    if on_error is not None:
                        on_error(error_from_wire(thaw(reply.error)))
                    else:
                        self._on_replace_reply(reply)
                    return
                result = thaw(reply.result)
                self.quiet_queue.at_version(int(result["version"]), lambda: landed(result))
                self.run_at_version()
            self.conn.request("buffer.apply", {
                "buffer": self.buffer_id, "edits": [list(e) for e in edits],
                "base_version": self.replica.version, "origin": f"ui-batch:{os.getpid()}",
                "label": label}, replied)
        self.when_quiet(go)

    def run_at_version(self) -> None:
        """Run what waited for the replica to reach the version it has now."""
        if self.replica is None:
            return
        for fn in self.quiet_queue.due(self.replica.version):
            fn()

    def _selected_lines(self) -> tuple[int, int]:
        ranges = self.orig("tag", "ranges", "sel")
        if not ranges:
            line = int(str(self.orig("index", "insert")).split(".")[0])
            return line, line
        first = int(str(ranges[0]).split(".")[0])
        last_line, last_col = map(int, str(ranges[-1]).split("."))
        if last_col == 0 and last_line > first:
            last_line -= 1       # a selection ending at a line start does not take that line
        return first, last_line

    def mark_changed(self) -> None:
        """The text changed: the tab's state and the status follow."""
        if not self.summary.get("dirty"):
            self.summary["dirty"] = True
            self.app.on_editor_state(self)
        # The core decides dirtiness (undo back to the saved text is clean): ask it, debounced.
        if self._info_job is None:
            self._info_job = self.after(150, self._refresh_info)
        self.schedule_ui()

    def _refresh_info(self) -> None:
        self._info_job = None

        def got(reply: Reply) -> None:
            if reply.ok:
                self.update_summary(thaw(reply.result))
        self.conn.request("buffer.info", {"buffer": self.buffer_id}, got)

    def update_summary(self, summary: dict[str, Any]) -> None:
        self.summary.update(summary)
        self.app.on_editor_state(self)

    # --- loading and resync -----------------------------------------------------------------------
    def load(self, cursor: tuple[int, int, int] | None = None) -> None:
        """Fetch the text (in chunks, with progress for big documents) and go live."""
        self._pending_cursor = cursor or self._pending_cursor
        self.ready = False
        length = int(self.summary.get("length") or 0)
        if length > bigfile.BIG_CHARS:
            self._first_screen()
        self._fetch(0, length, [], None)

    def _first_screen(self) -> None:
        """Show the top of a big document at once, read-only, while the rest loads."""
        self.progress.grid(row=2, column=0, columnspan=3, sticky="ew")

        def got(reply: Reply) -> None:
            if reply.ok and not self.ready:
                lines = thaw(reply.result)["lines"]
                shown = "\n".join(bigfile.split_line(ln)[0] for ln in lines)
                self.text.configure(state="normal")
                self.orig("delete", "1.0", "end")
                self.orig("insert", "1.0", shown)
                self.text.configure(state="disabled")
                self.schedule_ui()
        self.conn.request("buffer.lines", {"buffer": self.buffer_id, "first": 0,
                                           "last": bigfile.FIRST_SCREEN_LINES}, got)

    def _fetch(self, start: int, length: int, parts: list[str], version: int | None) -> None:
        end = min(length, start + CHUNK_CHARS)

        def got(reply: Reply) -> None:
            if not self.winfo_exists():
                return
            if not reply.ok:
                self.app.show_error(error_from_wire(thaw(reply.error)))
                return
            res = thaw(reply.result)
            if version is not None and res["version"] != version or res["length"] != length:
                self._fetch(0, res["length"], [], None)   # it changed while loading: restart
                return
            parts.append(res["text"])
            if end < length:
                self.loading_fraction = end / length
                self.progress.configure(value=self.loading_fraction)
                self._fetch(end, length, parts, res["version"])
            else:
                self._go_live(parts, res["version"])
        self.conn.request("buffer.text", {"buffer": self.buffer_id, "start": start, "end": end},
                          got, timeout=60)

    def _go_live(self, parts: list[str], version: int) -> None:
        keep = self._pending_cursor
        if keep is None and self.replica is not None:
            line, col = self.cursor()
            keep = (line, col, self.top_line())
        length = sum(map(len, parts))
        self.offsets.maybe_astral = not all(p.isascii() for p in parts)   # O(1) a part
        origin = f"ui:{os.getpid()}:{self.buffer_id}"
        if length > bigfile.BIG_CHARS:
            # Built part by part: joining first would hold the text twice (100 MB → 200 MB).
            self.replica = Replica("", version, origin)
            while parts:
                self.replica.buffer.insert(len(self.replica.buffer), parts.pop(0))
            text = ""
            big = True
            # on the root: a tab closed within the second takes its own after() callbacks away
            self.winfo_toplevel().after(1000, give_back)   # the loading's pieces are freed then
        else:
            text = "".join(parts)
            self.replica = Replica(text, version, origin)
            longest = max(map(len, text.split("\n")), default=0)
            big = bigfile.needs_window(length, longest)
        self.window = LineWindow(self.replica.buffer) if big else None
        self.decor.highlighter = (None if big else
                                  Highlighter(str(self.summary.get("name") or ""), text))
        self.text.configure(state="normal")
        if self.window is not None:
            first = 0 if keep is None else self.window.centre_on(keep[0] - 1)
            self.orig("delete", "1.0", "end")
            self.orig("insert", "1.0", self.window.render(first))
        else:
            self.orig("delete", "1.0", "end")
            self.orig("insert", "1.0", text)
        self.progress.grid_remove()
        self.loading_fraction = 1.0
        self.ready = True
        waiting = self.quiet_queue.reset()
        if keep is not None:
            self.goto(keep[0], keep[1], top=keep[2])
        else:
            self.orig("mark", "set", "insert", "1.0")
        self._pending_cursor = None
        self.decor.schedule_highlight()
        self.schedule_ui()
        self.app.on_editor_state(self)
        for fn in waiting:
            fn()

    def resync(self) -> None:
        """Start again from the core's text (a gap, a core restart, a divergence)."""
        if self.can_rebase():
            self.recovery.recover()   # keeps what was typed, the cursor and the scroll (ADR-0020)
            return
        if self.replica is not None:
            line, col = self.cursor()
            self._pending_cursor = (line, col, self.top_line())

        def got(reply: Reply) -> None:
            if not self.winfo_exists():
                return
            if reply.ok:
                self.summary.update(thaw(reply.result))
                self.load()
                return
            err = error_from_wire(thaw(reply.error))
            if err.kind.startswith("bus."):   # the core is restarting: ask again shortly
                self.after(300, self.resync)
            else:
                self.app.buffer_lost(self, err)
        self.ready = False
        self.text.configure(state="disabled")   # keys typed now would miss the core
        self.conn.request("buffer.info", {"buffer": self.buffer_id}, got, timeout=5)

    def rebind(self, summary: dict[str, Any]) -> None:
        """The core reopened this document under another buffer id (after a core restart)."""
        self.buffer_id = summary["buffer"]
        self.summary = dict(summary)
        if self.can_rebase():   # typed while the core was away: keep it on the reopened text
            self.recovery.rebind()
            return
        if self.replica is not None:
            line, col = self.cursor()
            self._pending_cursor = (line, col, self.top_line())
        self.load()

    # --- what other rooms call of the parts ---------------------------------------------------
    def offset(self, index: str) -> int:
        """The document offset of a Tk index (ui/tk/editor/offsets.py)."""
        return self.offsets.offset(index)

    def index(self, offset: int) -> str | None:
        """The Tk index of a document offset; None outside a big file's window."""
        return self.offsets.index(offset)

    def schedule_ui(self) -> None:
        """Current line, bracket, gutter and status, once Tk is idle (ui/tk/editor/decor.py)."""
        self.decor.schedule_ui()

    def bookmark_lines(self) -> list[int]:
        return self.decor.bookmark_lines()

    def toggle_bookmark(self) -> None:
        self.decor.toggle_bookmark()

    def next_bookmark(self, backwards: bool = False) -> None:
        self.decor.next_bookmark(backwards)

    @property
    def overwrite(self) -> bool:
        """Overwrite mode (ui/tk/editor/keyboard.py): the status bar shows it."""
        return self.typing.overwrite

    def type_text(self, chars: str) -> None:
        """Type as the keyboard would (``ui.type``, the first screen's keys)."""
        self.typing.type_text(chars)

    def block_indent(self, dedent: bool) -> None:
        self.typing.block_indent(dedent)

    def toggle_comment(self) -> None:
        self.typing.toggle_comment()

    def toggle_overwrite(self) -> None:
        self.typing.toggle_overwrite()

    def can_rebase(self) -> bool:
        """Keeps local edits across a resync (ui/tk/editor/resync.py): the window asks when it
        compares the core's text with what is shown."""
        return self.recovery.can_rebase()

    # --- cursor, selection, navigation ---------------------------------------------------------
    def cursor(self) -> tuple[int, int]:
        """(line, col) of the insert mark: line 1-based, col 0-based, in document terms."""
        if not self.ready or self.replica is None:
            return (1, 0)
        if self.window is not None:
            off = self.offsets.offset("insert")
            line, col = self.replica.buffer.offset_to_position(off)
            return line + 1, col
        line, col = map(int, str(self.orig("index", "insert")).split("."))
        return line, self.offsets.columns(line - 1).to_codepoint(col)

    def top_line(self) -> int:
        row = int(str(self.orig("index", "@0,0")).split(".")[0])
        if self.window is not None and self.window.rows:
            return self.window.rows[min(row - 1, len(self.window.rows) - 1)].line + 1
        return row

    def selection(self) -> tuple[int, int] | None:
        """(start, end) document offsets of the selection, or None."""
        ranges = self.orig("tag", "ranges", "sel")
        if not ranges or not self.ready:
            return None
        return self.offsets.offset(str(ranges[0])), self.offsets.offset(str(ranges[-1]))

    def selection_size(self) -> int:
        sel = self.selection()
        return 0 if sel is None else sel[1] - sel[0]

    def goto(self, line: int, col: int = 0, top: int | None = None) -> None:
        if self.replica is None:
            self._pending_cursor = (line, col, top or line)
            return
        buf = self.replica.buffer
        line = max(1, min(line, buf.line_count))
        off = buf.position_to_offset(line - 1, col)
        if self.window is not None and not self.window.contains_line(line - 1):
            self.orig("delete", "1.0", "end")
            self.orig("insert", "1.0", self.window.render(self.window.centre_on(line - 1)))
        idx = self.offsets.index(off) or "1.0"
        self.orig("mark", "set", "insert", idx)
        if top is not None:
            self.rows.scroll_to_line(top)
        self.see_insert()
        self.schedule_ui()

    def see_insert(self) -> None:
        """Scroll the cursor into view — once the text has a size. Tk's ``see`` in a text that
        was never shown (a tab restored at start, before the window is laid out or behind
        another tab) takes its 1-pixel width at its word and scrolls the cursor's column to
        the left edge: a session restored with the cursor in column 1 came back scrolled one
        column right. So the view stays put until the text is shown, and ``see`` runs then."""
        if self.text.winfo_ismapped() and self.text.winfo_width() > 1:
            self._see_when_shown = False
            self.orig("see", "insert")
        else:
            self._see_when_shown = True

    def _sized(self, _event: tk.Event) -> None:
        if self._see_when_shown and self.ready:
            self.see_insert()

    def destroy(self) -> None:
        self.decor.cancel()
        if self._info_job is not None:
            self.after_cancel(self._info_job)
            self._info_job = None
        self._redirect.remove()
        super().destroy()

