"""Find / Replace and Go to line: thin Tk dialogs over :mod:`rio.files.search` and
:mod:`ui.tk.find.model`.

Searching reads the active editor's text; replacing never edits the Tk widget. Replace and
Replace All are each ONE ``buffer.apply`` (one undo step in the core) with the
origin ``ui-batch:<pid>``: the change comes back as a ``buffer.changed`` event from another
origin, and the editor's replica applies it to the widget like any remote edit (ADR-0005).
Batches are only sent when the editor is quiet (no unacknowledged keystroke, no batch whose change
is not back); the edits are made again then if the text moved meanwhile (a block command or an
earlier Replace landing), so their offsets are exact at the replica's ``version``.

The editor is reached through :class:`EditorAccess` (ui/tk/editor/access.py), which uses the
EditorTab's own offset mapping (``offset``, ``index``, ``selection``, ``goto``: big documents
show a window of rows, so Tk indices are not document positions). What the dialog uses of the
window and of an editor is declared in ui/tk/app/seams.py (``FindHost``, ``SearchableEditor``).
Replace and Replace All go through the editor's own ``apply_batch``: one quiet queue
(ui/tk/editor/model.py) for the editor's block commands and the dialog alike.
"""

from __future__ import annotations

import tkinter as tk
import weakref
from collections.abc import Callable
from functools import partial
from tkinter import ttk
from typing import Any

from rio.files.search import SearchEngine, SearchOptions
from rio.protocol.errors import RioError
from rio.text.edit_commands import TextEdit
from ui.tk.app.seams import FindHost
from ui.tk.editor.access import EditorAccess
from ui.tk.find.model import describe_replace_all, parse_goto, remember, search_start, shift_range
from ui.tk.widgets.dialog_bridge import bridge, caption, centre_over

#: The tag that marks every match in view after a search (the selection is drawn above it).
HIT_TAG = "find_hit"
#: At most this many matches around the view are marked (a one-letter search in a big file).
MAX_MARKED = 500


class FindController:
    """Search state shared by the dialog and F3/Shift+F3 when the dialog is closed."""

    def __init__(self, app: FindHost):
        self.app = app
        self.pattern = ""
        self.replacement = ""
        self.options = SearchOptions()
        self.in_selection = False
        self.scope: tuple[int, int] | None = None
        self.history: tuple[str, ...] = ()
        self.replace_history: tuple[str, ...] = ()
        self.message = ""
        self.on_message: Callable[[str, bool], None] | None = None
        self.dialog: FindDialog | None = None

    # --- helpers -------------------------------------------------------------------------------
    def _say(self, message: str, error: bool = False) -> None:
        self.message = message
        if self.on_message is not None:
            self.on_message(message, error)
        elif message:
            self.app.set_message(message)

    def _editor(self) -> EditorAccess | None:
        editor = self.app.active_editor()
        if editor is None:
            self._say("No document is open.", True)
            return None
        return EditorAccess(editor)

    def _engine(self) -> SearchEngine | None:
        if not self.pattern:
            self._say("Type something to find.", True)
            return None
        try:
            return SearchEngine(self.pattern, self.options)
        except RioError as err:
            self._say(f"{err.message}. {err.next}.", True)
            return None

    # --- find ----------------------------------------------------------------------------------
    def find(self, backward: bool = False) -> bool:
        """Select the next (previous) match; False when there is none."""
        access = self._editor()
        engine = self._engine()
        if access is None or engine is None:
            return False
        self.history = remember(self.history, self.pattern)
        text = access.text()
        scope = self.scope if self.in_selection else None
        start = search_start(access.cursor(), access.selection(), backward)
        try:
            found = (engine.find_prev(text, start, scope) if backward
                     else engine.find_next(text, start, scope))
        except RioError as err:      # a regex that backtracks too much (rio/files/search.py)
            self._say(f"{err.message}. {err.next}.", True)
            return False
        if found is None:
            self._say(f"Cannot find {self.pattern!r}.", True)
            return False
        access.select(found.start, found.end)
        self.mark_hits(access, engine)
        self._say("Passed the end; continued from the start." if found.wrapped and not backward
                  else "Passed the start; continued from the end." if found.wrapped else "")
        return True

    def mark_hits(self, access: EditorAccess, engine: SearchEngine) -> int:
        """Tint every match in and around the view (the '90s "mark all"); returns how many."""
        w = access.widget
        self.clear_hits(w)
        try:
            top = access._offset_of_view("@0,0")
            bottom = access._offset_of_view(f"@0,{max(1, w.winfo_height())} lineend")
        except (tk.TclError, ValueError):
            return 0
        text = access.text()
        lo, hi = max(0, top - 2000), min(len(text), bottom + 2000)
        try:
            hits = engine.find_all(text, (lo, hi), limit=MAX_MARKED)
        except RioError:
            return 0                 # the match itself was found: only the tint is left out
        for m in hits:
            a, b = access._tk_index_if_shown(m.start), access._tk_index_if_shown(m.end)
            if a is not None and b is not None:
                w.tag_add(HIT_TAG, a, b)
        try:
            from ui.tk.widgets.theme import get_theme
            colour = get_theme(str(self.app.settings.get("theme", "classic"))).search_hit
        except (ImportError, KeyError):
            colour = "#ffff00"
        w.tag_configure(HIT_TAG, background=colour)
        w.tag_raise("sel")
        return len(hits)

    @staticmethod
    def clear_hits(widget: tk.Text) -> None:
        widget.tag_remove(HIT_TAG, "1.0", "end")

    # --- replace -------------------------------------------------------------------------------
    def replace(self) -> bool:
        """Replace the selected match (or the next one) through the core, then find the next."""
        access = self._editor()
        engine = self._engine()
        if access is None or engine is None:
            return False
        self.history = remember(self.history, self.pattern)
        self.replace_history = remember(self.replace_history, self.replacement)
        text = access.text()
        scope = self.scope if self.in_selection else None
        sel = access.selection()
        offset = sel[0] if sel else access.cursor()
        try:
            found = engine.replace_one(text, offset, self.replacement, scope)
        except RioError as err:
            self._say(f"{err.message}. {err.next}.", True)
            return False
        if found is None:
            self._say(f"Cannot find {self.pattern!r}.", True)
            return False
        edit, match = found
        if sel != (match.start, match.end):
            access.select(match.start, match.end)  # first show it; the next press replaces it
            return True
        sent = [edit]

        def make() -> list[TextEdit]:
            # Made when the editor is quiet: a block command that landed meanwhile moved the
            # text, and the selection (Tk's tag) moved with it. Find the selected match again.
            now = EditorAccess(access.editor)
            if now.text() == text:
                return sent
            sel_now = now.selection()
            try:
                again = engine.replace_one(now.text(), sel_now[0] if sel_now else now.cursor(),
                                           self.replacement, scope)
            except RioError:
                again = None
            if again is None or sel_now != (again[1].start, again[1].end):
                self._say("The document changed meanwhile; nothing was replaced.", True)
                return []
            sent[0] = again[0]
            return sent

        def done(_result: dict[str, Any]) -> None:
            if self.scope is not None:
                self.scope = shift_range(self.scope, sent)
            after = sent[0].start + len(sent[0].text)
            EditorAccess(access.editor).select(after, after)
            self.find()

        self.send(make, "Replace", done)
        return True

    def replace_all(self) -> int:
        """Every match (in the scope) replaced as ONE buffer.apply; returns the count sent."""
        access = self._editor()
        engine = self._engine()
        if access is None or engine is None:
            return 0
        self.history = remember(self.history, self.pattern)
        self.replace_history = remember(self.replace_history, self.replacement)
        scope = self.scope if self.in_selection else None
        try:
            edits = engine.replace_all(access.text(), self.replacement, scope)
        except RioError as err:
            self._say(f"{err.message}. {err.next}.", True)
            return 0
        if not edits:
            self._say(describe_replace_all(0, scope is not None), True)
            return 0
        text = access.text()
        sent = list(edits)

        def make() -> list[TextEdit]:
            # Made when the editor is quiet: if a block command landed meanwhile, the matches
            # are found again in the text as it is now.
            now = EditorAccess(access.editor).text()
            if now != text:
                try:
                    sent[:] = engine.replace_all(now, self.replacement, scope)
                except RioError:
                    sent[:] = []
            return sent

        def done(_result: dict[str, Any]) -> None:
            if self.scope is not None:
                self.scope = shift_range(self.scope, sent)
            self._say(describe_replace_all(len(sent), scope is not None))

        self.send(make, f"Replace All ({len(edits)})", done)
        return len(edits)

    def send(self, make: Callable[[], list[TextEdit]], label: str,
             on_done: Callable[[dict[str, Any]], None] | None = None) -> None:
        """``buffer.apply`` of ``make()``'s edits at the replica's version once it has nothing
        in flight: the editor's own batch (EditorTab.apply_batch), so it waits on the editor's
        quiet queue (ui/tk/editor/model.py), ``make`` runs then (its offsets are the core's),
        and ``on_done`` runs once the editor holds the change."""
        def refused(err: RioError) -> None:
            if err.kind == "buffer.stale_base":   # the core restarted meanwhile (ADR-0020)
                self._say("Rio's core restarted meanwhile; nothing was replaced. "
                          "Try again once the document is back.", True)
                return
            self._say(f"{err.message}. {err.next}", True)

        editor = self.app.active_editor()
        if editor is None:
            self._say("No document is open.", True)
            return
        editor.apply_batch(make, label, on_done=on_done, on_error=refused)

    # --- the dialogs -----------------------------------------------------------------------------
    def show(self, replace: bool = False) -> "FindDialog":
        access = self._editor()
        if access is not None:
            sel = access.selection()
            if sel is not None:
                selected = access.text()[sel[0]:sel[1]]
                if "\n" in selected:  # a block selected: search inside it
                    self.in_selection, self.scope = True, sel
                elif selected:
                    self.pattern, self.in_selection = selected, False
        if self.dialog is None or not self.dialog.alive():
            self.dialog = FindDialog(self, _parent(self.app))
        self.dialog.set_mode(replace)
        self.dialog.refresh()
        self.dialog.present()
        return self.dialog


def _parent(app: FindHost) -> tk.Misc:
    return app.root


class FindDialog:
    """The Find / Replace window (non-modal; stays open while you edit)."""

    def __init__(self, controller: FindController, parent: tk.Misc):
        self.c = controller
        self.top = top = tk.Toplevel(parent)
        top.withdraw()
        self._placed = False
        top.title("Find")
        top.transient(parent.winfo_toplevel())
        top.resizable(True, False)
        top.protocol("WM_DELETE_WINDOW", self.close)
        caption(controller.app, top, "Find", self.close)
        body = ttk.Frame(top, padding=8)
        body.pack(fill="both", expand=True)
        body.columnconfigure(1, weight=1)

        self.pattern = tk.StringVar(top)
        self.replacement = tk.StringVar(top)
        self.regex = tk.BooleanVar(top)
        self.case = tk.BooleanVar(top)
        self.word = tk.BooleanVar(top)
        self.in_sel = tk.BooleanVar(top)
        self.wrap = tk.BooleanVar(top, value=True)

        ttk.Label(body, text="Find what:", underline=5).grid(row=0, column=0, sticky="w")
        self.find_entry = ttk.Combobox(body, textvariable=self.pattern, width=36)
        self.find_entry.grid(row=0, column=1, sticky="ew", padx=(6, 8), pady=2)
        self.replace_label = ttk.Label(body, text="Replace with:", underline=1)
        self.replace_label.grid(row=1, column=0, sticky="w")
        self.replace_entry = ttk.Combobox(body, textvariable=self.replacement, width=36)
        self.replace_entry.grid(row=1, column=1, sticky="ew", padx=(6, 8), pady=2)

        opts = ttk.Frame(body)
        opts.grid(row=2, column=0, columnspan=2, sticky="w", pady=(6, 0))
        checks = [("Match case", self.case, 0), ("Whole word", self.word, 0),
                  ("Regular expression", self.regex, 0), ("In selection", self.in_sel, 3),
                  ("Wrap around", self.wrap, 0)]
        self.checks: dict[str, ttk.Checkbutton] = {}
        for i, (label, var, underline) in enumerate(checks):
            cb = ttk.Checkbutton(opts, text=label, variable=var, underline=underline,
                                 command=self._options_changed)
            cb.grid(row=i // 3, column=i % 3, sticky="w", padx=(0, 10))
            self.checks[label] = cb

        buttons = ttk.Frame(body)
        buttons.grid(row=0, column=2, rowspan=4, sticky="n")
        self.buttons: dict[str, ttk.Button] = {}
        for name, label, underline, fn in [
                ("find_next", "Find Next", 5, lambda: self._run(self.c.find)),
                ("find_prev", "Find Previous", 5, lambda: self._run(self.c.find, True)),
                ("replace", "Replace", 0, lambda: self._run(self.c.replace)),
                ("replace_all", "Replace All", 8, lambda: self._run(self.c.replace_all)),
                ("close", "Close", -1, self.close)]:
            b = ttk.Button(buttons, text=label, underline=underline, command=fn, width=14)
            b.pack(fill="x", pady=1)
            self.buttons[name] = b

        self.status = ttk.Label(body, text="", anchor="w")
        self.status.grid(row=4, column=0, columnspan=3, sticky="ew", pady=(6, 0))
        controller.on_message = self._show_message

        top.bind("<Return>", lambda e: self._run(self.c.find))
        top.bind("<KP_Enter>", lambda e: self._run(self.c.find))
        top.bind("<Shift-Return>", lambda e: self._run(self.c.find, True))
        top.bind("<F3>", lambda e: self._run(self.c.find))
        top.bind("<Shift-F3>", lambda e: self._run(self.c.find, True))
        top.bind("<Escape>", lambda e: self.close())
        for key, action in [("n", "find_next"), ("p", "find_prev"), ("r", "replace"),
                            ("a", "replace_all")]:
            top.bind(f"<Alt-{key}>", partial(self._press, action))
        top.bind("<Alt-c>", lambda e: self._toggle(self.case))
        top.bind("<Alt-w>", lambda e: self._toggle(self.word))
        top.bind("<Alt-g>", lambda e: self._toggle(self.regex))
        top.bind("<Alt-s>", lambda e: self._toggle(self.in_sel))

    def _press(self, name: str, _event: tk.Event) -> None:
        self.buttons[name].invoke()

    # --- state ↔ widgets ---------------------------------------------------------------------
    def alive(self) -> bool:
        try:
            return bool(self.top.winfo_exists())
        except tk.TclError:
            return False

    def set_mode(self, replace: bool) -> None:
        self.replace_mode = replace
        title = "Replace" if replace else "Find"
        self.top.title(title)
        try:
            self.top.nametowidget("keep_caption.keep_title").configure(text=title)
        except (KeyError, tk.TclError):
            pass  # no drawn caption (a window manager draws the title)
        c = self.c
        buttons: dict[str, Callable[[], object]] = {
                   "Find Next": lambda: self._run(c.find),
                   "Find Previous": lambda: self._run(c.find, True)}
        if replace:
            buttons.update({"Replace": lambda: self._run(c.replace),
                            "Replace All": lambda: self._run(c.replace_all)})
        buttons["Close"] = self.close
        bridge(c.app, title.lower(), self.top,
               {"pattern": self.pattern, "replacement": self.replacement, "regex": self.regex,
                "case": self.case, "word": self.word, "in_selection": self.in_sel,
                "wrap": self.wrap}, buttons, message=lambda: str(self.status.cget("text")),
               replaces=("find", "replace"))
        for w in (self.replace_label, self.replace_entry):
            if replace:
                w.grid()
            else:
                w.grid_remove()
        for name in ("replace", "replace_all"):
            if replace:
                self.buttons[name].pack(fill="x", pady=1, before=self.buttons["close"])
            else:
                self.buttons[name].pack_forget()

    def refresh(self) -> None:
        c = self.c
        self.pattern.set(c.pattern)
        self.replacement.set(c.replacement)
        self.regex.set(c.options.regex)
        self.case.set(c.options.match_case)
        self.word.set(c.options.whole_word)
        self.wrap.set(c.options.wrap)
        self.in_sel.set(c.in_selection)
        self.find_entry.configure(values=c.history)
        self.replace_entry.configure(values=c.replace_history)

    def pull(self) -> None:
        """Copy the fields into the controller."""
        c = self.c
        c.pattern = self.pattern.get()
        c.replacement = self.replacement.get()
        c.options = SearchOptions(regex=self.regex.get(), match_case=self.case.get(),
                                  whole_word=self.word.get(), wrap=self.wrap.get())
        c.in_selection = self.in_sel.get()

    def present(self) -> None:
        self.top.deiconify()
        if not self._placed:
            # Near the top right of the main window, where it hides the least text. Placed
            # once mapped: only then is the requested size final.
            self._placed = True
            self.top.update_idletasks()
            parent = self.top.master.winfo_toplevel()
            width = max(self.top.winfo_reqwidth(), self.top.winfo_width())
            x = parent.winfo_rootx() + max(0, parent.winfo_width() - width - 24)
            y = parent.winfo_rooty() + 60
            self.top.geometry(f"+{x}+{y}")
        self.top.lift()
        self.find_entry.focus_set()
        self.find_entry.select_range(0, "end")

    def close(self) -> None:
        self.pull()
        self.c.on_message = None
        self.top.destroy()
        editor = self.c.app.active_editor()
        if editor is not None:
            self.c.clear_hits(editor.text)
            editor.text.focus_set()

    def _toggle(self, var: tk.BooleanVar) -> None:
        var.set(not var.get())
        self._options_changed()

    def _options_changed(self) -> None:
        turned_on = self.in_sel.get() and not self.c.in_selection
        self.pull()
        if turned_on:
            access = self.c._editor()
            sel = access.selection() if access is not None else None
            if sel is None:
                self.in_sel.set(False)
                self.c.in_selection = False
                self._show_message("Select some text first to search inside it.", True)
            else:
                self.c.scope = sel

    def _run(self, fn: Callable[..., object], *args: object) -> str:
        self.pull()
        fn(*args)
        self.find_entry.configure(values=self.c.history)
        self.replace_entry.configure(values=self.c.replace_history)
        return "break"

    def _show_message(self, message: str, error: bool) -> None:
        if self.alive():
            self.status.configure(text=message, foreground="#c00000" if error else "")


# --------------------------------------------------------------------------------- go to line

class GotoDialog:
    """Ctrl+G: a small modal box asking for ``line[:col]``."""

    def __init__(self, app: FindHost):
        self.app = app
        editor = app.active_editor()
        if editor is None:
            raise LookupError("no active editor")
        self.access = EditorAccess(editor)
        parent = _parent(app)
        self.top = top = tk.Toplevel(parent)
        top.title("Go to Line")
        top.transient(parent.winfo_toplevel())
        top.resizable(False, False)
        caption(app, top, "Go to Line", self.cancel)
        body = ttk.Frame(top, padding=8)
        body.pack(fill="both", expand=True)
        count = self.access.line_count()
        line, _ = self.access.position(self.access.cursor())
        self.prompt = ttk.Label(body, text=f"Line number (1–{count}), or line:column:")
        self.prompt.grid(row=0, column=0, columnspan=2, sticky="w")
        self.value = tk.StringVar(top, value=str(line))
        self.entry = ttk.Entry(body, textvariable=self.value, width=24)
        self.entry.grid(row=1, column=0, columnspan=2, sticky="ew", pady=4)
        self.error = ttk.Label(body, text="", foreground="#c00000")
        self.error.grid(row=2, column=0, columnspan=2, sticky="w")
        ttk.Button(body, text="OK", command=self.ok, default="active").grid(row=3, column=0,
                                                                            sticky="e", padx=2)
        ttk.Button(body, text="Cancel", command=self.cancel).grid(row=3, column=1, sticky="w",
                                                                  padx=2)
        top.bind("<Return>", lambda e: self.ok())
        top.bind("<KP_Enter>", lambda e: self.ok())
        top.bind("<Escape>", lambda e: self.cancel())
        top.protocol("WM_DELETE_WINDOW", self.cancel)
        bridge(app, "goto", top, {"line": self.value}, {"OK": self.ok, "Cancel": self.cancel})
        centre_over(top, parent)
        self.entry.focus_set()
        self.entry.select_range(0, "end")

    def ok(self) -> bool:
        try:
            target = parse_goto(self.value.get(), self.access.line_count())
        except ValueError as exc:
            self.error.configure(text=str(exc))
            return False
        self.top.destroy()
        self.access.goto(target.line, (target.col - 1) if target.col else 0)
        return True

    def cancel(self) -> None:
        self.top.destroy()
        self.access.widget.focus_set()


# --------------------------------------------------------------------------------- wiring

#: Each window's one FindController (F3 remembers the last search), dropped with its window.
_controllers: "weakref.WeakKeyDictionary[FindHost, FindController]" = weakref.WeakKeyDictionary()


def controller_for(app: FindHost) -> FindController:
    """The app's one FindController (kept on the app so F3 remembers the last search)."""
    c = _controllers.get(app)
    if c is None:
        c = _controllers[app] = FindController(app)
    return c


def install(app: FindHost) -> FindController:
    """Register the Search menu's commands on the app."""
    c = controller_for(app)

    def goto() -> None:
        if app.active_editor() is not None:
            GotoDialog(app)

    app.register_command("search.find", "&Find…", "Ctrl+F", lambda: c.show(False),
                         menu="Search")
    app.register_command("search.replace", "&Replace…", "Ctrl+H", lambda: c.show(True),
                         menu="Search")
    app.register_command("search.find_next", "Find &Next", "F3", lambda: c.find(False),
                         menu="Search")
    app.register_command("search.find_prev", "Find &Previous", "Shift+F3",
                         lambda: c.find(True), menu="Search")
    app.register_command("search.goto_line", "&Go to Line…", "Ctrl+G", goto, menu="Search")
    return c
