"""The bottom pane: "Find in Files" results and the "Output" of Run/Build, both clickable.

* Find in Files asks the core (``fs.search``, page by page: :class:`~ui.tk.output.model.CoreSearch`)
  with the unsaved text of the open buffers; results stream in as the pages arrive, the window
  never blocks, Stop (or a new search) stops asking. The desktop never reads the project's files
  itself. A click on a result calls ``app.open_path(path, line, col)``.
* Output shows ``run.output`` events as they arrive (stderr in the error colour, terminal
  escapes stripped, ``\\r`` progress lines rewritten in place) and makes every ``file:line[:col]``
  reference (rio/runs/output.py) that names a file of the project clickable.

Runs are started and stopped by :mod:`ui.tk.project.commands`; this pane only shows them. Events
for a run can arrive before the reply to ``run.start`` (they travel on another socket), so
events of a run the pane has not been told about yet are held until it is.
"""

from __future__ import annotations

import time
import tkinter as tk
from collections import OrderedDict, deque
from pathlib import Path
from tkinter import ttk
from typing import Any, Callable

from rio.files.find_in_files import MAX_LINE_TEXT, Match
from rio.files.search import SearchOptions, compile_pattern
from rio.protocol.errors import RioError
from rio.protocol.frames import Event, Reply, thaw
from rio.runs.output import find_file_refs, may_hold_file_refs
from rio.runs.runner import strip_ansi
from rio.text.utf16_columns import columns
from ui.tk.app.seams import OutputHost
from ui.tk.output.model import CoreSearch, TerminalLines, parse_globs, resolve_ref
from ui.tk.widgets.tk_calls import select_tab, tab_index

#: The Output tab keeps at most this many lines (Tk slows down on huge texts).
MAX_OUTPUT_LINES = 20_000
_HELD_RUNS = 8
#: Drawing run output: at most this long per slice, and this many characters per insert.
DRAW_SLICE_S = 0.010
DRAW_CHUNK_CHARS = 8_192
#: A remote window links run output references to at most this many of the project's files.
REMOTE_LINK_FILES = 20_000


def _theme_colours(app: OutputHost) -> dict[str, str]:
    try:
        from ui.tk.widgets.theme import get_theme
        t = get_theme(str(getattr(app, "settings", {}).get("theme", "classic")))
        return {"bg": t.output_bg, "fg": t.output_fg, "error": t.output_error, "link": t.link,
                "field_bg": t.field_bg, "field_fg": t.field_fg, "hit": t.search_hit,
                "sel_bg": t.selection_bg, "sel_fg": t.selection_fg}
    except Exception:  # noqa: BLE001 -- a theme problem must not cost the pane
        return {"bg": "#000000", "fg": "#c0c0c0", "error": "#ff5555", "link": "#0000ff",
                "field_bg": "#ffffff", "field_fg": "#000000", "hit": "#ffff00",
                "sel_bg": "#000080", "sel_fg": "#ffffff"}


def _fixed_font(app: OutputHost) -> str | tuple[str, int]:
    settings = getattr(app, "settings", {}) or {}
    if settings.get("font"):
        return (settings["font"], int(settings.get("size", 10)))
    return "TkFixedFont"


def row_spacing(text: tk.Text) -> int:
    """Pixels of room below each row of ``text`` (its ``spacing3``), for the font it shows.

    Tk's row is the font's ascent + descent, and the underscore of a face like DejaVu Sans
    Mono fills the descent's last pixel row: with no room below, a highlighted row (the
    selected Find in Files result, a visited reference) painted its background right against
    the underscores of the row above, which then read as the bar's edge, and its own
    underscores were its bottom edge — both looked gone. The room is drawn in the row's own
    background, so each underscore keeps a line of it below."""
    linespace = int(text.tk.call("font", "metrics", text.cget("font"), "-linespace"))
    return max(1, round(linespace / 12))


def _space_rows(text: tk.Text) -> None:
    text.configure(spacing3=row_spacing(text))


class FindInFilesTab:
    def __init__(self, pane: "OutputPane", parent: ttk.Frame):
        self.pane = pane
        self.app = pane.app
        self.frame = parent
        self.job: CoreSearch | None = None
        self.results: list[Match] = []

        bar = ttk.Frame(parent, padding=(4, 3))
        bar.pack(side="top", fill="x")
        self.pattern = tk.StringVar(parent)
        self.folder = tk.StringVar(parent, value=".")
        self.globs = tk.StringVar(parent)
        self.case = tk.BooleanVar(parent)
        self.word = tk.BooleanVar(parent)
        self.regex = tk.BooleanVar(parent)
        # The buttons are packed first, from the right, so a narrow pane squeezes the entries
        # and never hides Stop.
        self.stop_button = ttk.Button(bar, text="Stop", width=6, command=self.stop,
                                      state="disabled")
        self.stop_button.pack(side="right")
        self.find_button = ttk.Button(bar, text="Find", width=6, command=self.start)
        self.find_button.pack(side="right", padx=(6, 2))
        for label, var in (("Regex", self.regex), ("Word", self.word), ("Case", self.case)):
            ttk.Checkbutton(bar, text=label, variable=var).pack(side="right", padx=(0, 4))
        ttk.Label(bar, text="Find:", underline=0).pack(side="left")
        self.entry = ttk.Entry(bar, textvariable=self.pattern, width=24)
        self.entry.pack(side="left", padx=(3, 8), fill="x", expand=True)
        ttk.Label(bar, text="In:").pack(side="left")
        ttk.Entry(bar, textvariable=self.folder, width=10).pack(side="left", padx=(3, 8))
        ttk.Label(bar, text="Files:").pack(side="left")
        ttk.Entry(bar, textvariable=self.globs, width=10).pack(side="left", padx=(3, 8))
        self.entry.bind("<Return>", lambda e: self.start())
        self.entry.bind("<KP_Enter>", lambda e: self.start())
        self.entry.bind("<Escape>", lambda e: self.stop())
        # Packed before the results so a short pane shrinks the list, not the status line.
        self.status = ttk.Label(parent, text="", anchor="w", padding=(4, 1))
        self.status.pack(side="bottom", fill="x")

        body = ttk.Frame(parent)
        body.pack(side="top", fill="both", expand=True)
        colours = pane.colours
        self.text = tk.Text(body, height=8, wrap="none", cursor="arrow", undo=False,
                            font=_fixed_font(self.app), bg=colours["field_bg"],
                            fg=colours["field_fg"], borderwidth=2, relief="sunken",
                            selectbackground=colours["sel_bg"],
                            selectforeground=colours["sel_fg"], insertwidth=0)
        _space_rows(self.text)
        scroll = ttk.Scrollbar(body, orient="vertical", command=self.text.yview)
        self.text.configure(yscrollcommand=scroll.set)
        scroll.pack(side="right", fill="y")
        self.text.pack(side="left", fill="both", expand=True)
        self.text.tag_configure("path", foreground=colours["link"])
        self.text.tag_configure("hit", background=colours["hit"])
        self.text.tag_configure("current", background=colours["sel_bg"],
                                foreground=colours["sel_fg"])
        self.text.tag_raise("sel")
        self.text.bind("<Button-1>", self._on_click)
        self.text.bind("<Return>", lambda e: self.open_current())
        self.text.bind("<Down>", lambda e: self.move(1))
        self.text.bind("<Up>", lambda e: self.move(-1))
        self.text.bind("<Key>", lambda e: "break" if e.char and e.char.isprintable() else None)
        self._current = -1

    # --- searching ---------------------------------------------------------------------------
    def start(self, pattern: str | None = None) -> bool:
        if pattern is not None:
            self.pattern.set(pattern)
        self.stop(quiet=True)
        self.text.delete("1.0", "end")
        self.results = []
        self._current = -1
        options = SearchOptions(regex=self.regex.get(), match_case=self.case.get(),
                                whole_word=self.word.get())
        if not self.pattern.get():
            self.status.configure(text="Type something to find.")
            return False
        try:
            compile_pattern(self.pattern.get(), options)   # a bad regex is said at once
        except RioError as err:
            self.status.configure(text=f"{err.message}. {err.next}")
            return False
        job = self.job = CoreSearch(self.pane.app.conn, lambda found: self._page(job, found),
                                    lambda: self._ended(job))
        job.start(self.pattern.get(), regex=options.regex, match_case=options.match_case,
                  whole_word=options.whole_word, folder=self.folder.get().strip() or ".",
                  globs=parse_globs(self.globs.get()), overrides=self.pane.unsaved_texts())
        self.status.configure(text="Searching…")
        self.stop_button.configure(state="normal")
        return True

    def _page(self, job: CoreSearch, found: list[Match]) -> None:
        if job is not self.job:
            return
        self._show(found)
        if not job.done:
            self.status.configure(text=f"Searching… {job.counts['results']} matches, "
                                       f"{job.counts['files_searched']} files")

    def _ended(self, job: CoreSearch) -> None:
        if job is not self.job:
            return
        self.stop_button.configure(state="disabled")
        err = job.error
        self.status.configure(text=f"{err.message}. {err.next}" if err is not None
                              else job.summary())
        self.pane.event_generate_done()

    def _show(self, found: list[Match]) -> None:
        t = self.text
        for m in found:
            row = len(self.results) + 1
            self.results.append(m)
            head = f"{m.path}:{m.line}:{m.col}: "
            body = m.line_text.rstrip()
            t.insert("end", head, ("path",), body + "\n", ())
            # Highlight the hit, unless the line was clipped (then its columns moved).
            at = m.col - 1
            if len(m.line_text) < MAX_LINE_TEXT and at <= len(body):
                start = len(head) + at
                cols = columns(head + body)     # Tk counts an emoji as two columns
                t.tag_add("hit", f"{row}.{cols.to_utf16(start)}",
                          f"{row}.{cols.to_utf16(start + (m.end - m.start))}")

    def stop(self, quiet: bool = False) -> None:
        if self.job is not None and not self.job.done:
            self.job.cancel()
            if not quiet:
                self.status.configure(text=self.job.summary())
        self.stop_button.configure(state="disabled")

    @property
    def running(self) -> bool:
        return self.job is not None and not self.job.done

    # --- opening results ---------------------------------------------------------------------
    def _on_click(self, event: tk.Event) -> str:
        row = int(self.text.index(f"@{event.x},{event.y}").split(".")[0])
        self.select(row - 1)
        self.open_current()
        return "break"

    def select(self, i: int) -> None:
        if not self.results:
            return
        i = max(0, min(i, len(self.results) - 1))
        self._current = i
        self.text.tag_remove("current", "1.0", "end")
        self.text.tag_add("current", f"{i + 1}.0", f"{i + 2}.0")
        self.text.see(f"{i + 1}.0")

    def move(self, delta: int) -> str:
        self.select(self._current + delta if self._current >= 0 else 0)
        return "break"

    def open_current(self) -> str:
        if 0 <= self._current < len(self.results):
            m = self.results[self._current]
            self.app.open_path(m.path, m.line, m.col)
        return "break"


class OutputTab:
    def __init__(self, pane: "OutputPane", parent: ttk.Frame):
        self.pane = pane
        self.app = pane.app
        colours = pane.colours
        self.text = tk.Text(parent, height=8, wrap="char", undo=False, cursor="arrow",
                            font=_fixed_font(self.app), bg=colours["bg"], fg=colours["fg"],
                            insertbackground=colours["fg"], borderwidth=2, relief="sunken",
                            selectbackground=colours["sel_bg"],
                            selectforeground=colours["sel_fg"], insertwidth=0)
        _space_rows(self.text)
        scroll = ttk.Scrollbar(parent, orient="vertical", command=self.text.yview)
        self._scroll = scroll
        self.text.configure(yscrollcommand=self._on_yscroll)
        scroll.pack(side="right", fill="y")
        self.text.pack(side="left", fill="both", expand=True)
        self._link_job: str | None = None
        self.text.tag_configure("stderr", foreground=colours["error"])
        self.text.tag_configure("info", foreground="#ffff55")
        self.text.tag_configure("link", underline=True)
        self.text.tag_configure("visited", background=colours["sel_bg"],
                                foreground=colours["sel_fg"])
        # A widget binding, not a tag binding: tag bindings follow the "current" mark, which
        # only mouse motion moves (a click from xdotool or event_generate would miss).
        self.text.bind("<Button-1>", self._on_click)
        self.text.tag_bind("link", "<Enter>", lambda e: self.text.configure(cursor="hand2"))
        self.text.tag_bind("link", "<Leave>", lambda e: self.text.configure(cursor="arrow"))
        self.text.bind("<Key>", lambda e: "break" if e.char and e.char.isprintable() else None)
        self.text.bind("<Button-3>", self._context_menu)
        # One "link" tag for every reference, and only on the lines in view (re-done when the
        # view moves): parsing references costs ~60 µs a line (rio/runs/output.py), too much for
        # a build that prints 100 000 lines. A click or F4 re-reads the reference from its line.
        self._resolved: dict[tuple[str, str], str | None] = {}
        self.current_cwd = "."
        self.terminals: dict[str, TerminalLines] = {}
        self.cwd: dict[str, str] = {}

    def _context_menu(self, event: tk.Event) -> str:
        menu = tk.Menu(self.text, tearoff=False)
        menu.add_command(label="Copy", underline=0, command=self.copy)
        menu.add_command(label="Clear", underline=1, command=self.clear)
        menu.add_separator()
        menu.add_command(label="Next Reference", underline=0, accelerator="F4",
                         command=lambda: self.next_link(1))
        self.menu = menu
        try:
            menu.tk_popup(event.x_root, event.y_root)
        finally:
            menu.grab_release()
        return "break"

    def copy(self) -> str:
        """The selection, or everything when nothing is selected, to the clipboard."""
        try:
            text = self.text.get("sel.first", "sel.last")
        except tk.TclError:
            text = self.text.get("1.0", "end-1c")
        self.text.clipboard_clear()
        self.text.clipboard_append(text)
        return text

    def clear(self) -> None:
        self.text.delete("1.0", "end")
        self._resolved.clear()
        self.current_cwd = "."
        self.terminals.clear()

    def write(self, text: str, tag: str = "", run: str | None = None,
              link: bool = True) -> None:
        """Append output; ``\\r`` rewrites the current line. References on the lines in view
        become links (never on Rio's own notes, written with ``link=False`` and tag "info":
        a command line's ``a.c:3`` is not output)."""
        t = self.text
        at_end = t.yview()[1] >= 0.999
        term = self.terminals.setdefault(run or "", TerminalLines())
        if run is not None:
            self.current_cwd = self.cwd.get(run, ".")
        for op, s in term.feed(strip_ansi(text)):
            if op == "cr":
                t.delete("end-1c linestart", "end-1c")
            else:
                t.insert("end", s, (tag,) if tag else ())
        self._trim()
        if at_end:
            t.see("end")
        if link:
            self.link_view()

    def _on_yscroll(self, first: float | str, last: float | str) -> None:
        """The text's yscrollcommand (Tk passes the fractions as strings)."""
        self._scroll.set(first, last)
        if self._link_job is None:
            self._link_job = self.text.after_idle(self.link_view)

    def link_view(self) -> None:
        """Mark the references on the lines in view (and a margin) with the link tag."""
        self._link_job = None
        t = self.text
        try:
            top = int(t.index("@0,0").split(".")[0])
            bottom = int(t.index(f"@0,{max(1, t.winfo_height())}").split(".")[0])
        except tk.TclError:
            return
        last_line = int(t.index("end-1c").split(".")[0])
        first, last = max(1, top - 20), min(last_line, bottom + 20)
        t.tag_remove("link", f"{first}.0", f"{last}.end")
        lines = t.get(f"{first}.0", f"{last}.end").split("\n")
        for row, line in enumerate(lines, first):
            refs = self._refs(line, self.current_cwd)
            if refs and "info" not in t.tag_names(f"{row}.0"):
                for start, end, _target in refs:
                    t.tag_add("link", f"{row}.{start}", f"{row}.{end}")

    def _resolve(self, path: str, cwd: str) -> str | None:
        key = (path, cwd)
        if key not in self._resolved:
            if len(self._resolved) > 10_000:
                self._resolved.clear()
            self._resolved[key] = resolve_ref(path, self.pane.root_path, cwd,
                                              exists=self.pane.file_exists)
        return self._resolved[key]

    def _refs(self, line: str, cwd: str) -> list[tuple[int, int, tuple[str, int, int | None]]]:
        out = []
        if may_hold_file_refs(line):
            cols = columns(line)   # Tk counts an emoji as two columns (rio/text/utf16_columns.py)
            for ref in find_file_refs(line):
                rel = self._resolve(ref.path, cwd)
                if rel is not None:
                    out.append((cols.to_utf16(ref.start), cols.to_utf16(ref.end),
                                (rel, ref.line, ref.col)))
        return out

    def _trim(self) -> None:
        lines = int(self.text.index("end-1c").split(".")[0])
        if lines > MAX_OUTPUT_LINES:
            self.text.delete("1.0", f"{lines - MAX_OUTPUT_LINES + 1}.0")

    def _on_click(self, event: tk.Event) -> str | None:
        target = self.link_at(self.text.index(f"@{event.x},{event.y}"))
        if target is None:
            return None  # an ordinary click: let the text select
        self.app.open_path(*target)
        return "break"

    def _row_refs(self, row: int) -> list[tuple[int, int, tuple[str, int, int | None]]]:
        t = self.text
        if "info" in t.tag_names(f"{row}.0"):
            return []
        return self._refs(t.get(f"{row}.0", f"{row}.end"), self.current_cwd)

    def next_link(self, delta: int = 1) -> tuple[str, int, int | None] | None:
        """Open the next (previous) file reference after the last one visited and show it
        highlighted: F4 walks through a build's errors without the mouse. Wraps around."""
        t = self.text
        rows = int(t.index("end-1c").split(".")[0])
        visited = t.tag_ranges("visited")
        here_row, here_col = (int(x) for x in str(visited[0]).split(".")) if visited else (
            (0, 0) if delta > 0 else (rows + 1, 0))
        if delta > 0:
            order = [*range(here_row, rows + 1), *range(1, here_row + 1)]
        else:
            order = [*range(here_row, 0, -1), *range(rows, here_row - 1, -1)]
        for i, row in enumerate(order):
            if not 1 <= row <= rows:
                continue
            refs = self._row_refs(row)
            if i == 0 and visited:  # the visited row: only the references past the visited one
                refs = [r for r in refs if (r[0] > here_col if delta > 0 else r[0] < here_col)]
            if not refs:
                continue
            start, end, target = refs[0] if delta > 0 else refs[-1]
            t.tag_remove("visited", "1.0", "end")
            t.tag_add("visited", f"{row}.{start}", f"{row}.{end}")
            t.see(f"{row}.{start}")
            self.app.open_path(*target)
            return target
        return None

    def link_at(self, index: str) -> tuple[str, int, int | None] | None:
        """The file reference under ``index``, read again from its line."""
        row, col = (int(x) for x in self.text.index(index).split("."))
        for start, end, target in self._row_refs(row):
            if start <= col < end:
                return target
        return None


class OutputPane:
    """The notebook in ``app.output_pane_slot``; subscribes to ``run.*`` on ``app.conn``."""

    def __init__(self, app: OutputHost, parent: tk.Misc | None = None):
        self.app = app
        self.colours = _theme_colours(app)
        self._root_path: Path | None = None
        #: a remote instance's files (fs.walk), for run output links (see file_exists)
        self._remote_files: set[str] | None = None
        slot = parent if parent is not None else app.output_pane_slot
        self.notebook = ttk.Notebook(slot)
        self.notebook.pack(fill="both", expand=True)
        find_frame = ttk.Frame(self.notebook)
        out_frame = ttk.Frame(self.notebook)
        self.notebook.add(find_frame, text="Find in Files", underline=8)
        self.notebook.add(out_frame, text="Output", underline=0)
        self.find = FindInFilesTab(self, find_frame)
        self.output = OutputTab(self, out_frame)
        self.current_run: str | None = None
        self.runs: dict[str, dict[str, Any]] = {}
        self._held: OrderedDict[str, list[tuple[str, dict[str, Any]]]] = OrderedDict()
        self._shown: deque[tuple[str | None, str, str, bool]] = deque()
        self._show_job: str | None = None
        #: called with each ``run.exit`` event's data
        self.on_run_exit: list[Callable[[dict[str, Any]], object]] = []
        app.conn.subscribe("run.", self._on_event)
        app.conn.subscribe("system.process", self._on_process)
        app.conn.request("run.list", {}, self._adopt)

    def _on_process(self, event: Event) -> None:
        """The core died: its runs died with it (their group is swept with the core's
        cookie), and no run.exit will ever come. Say so instead of showing a run forever."""
        data = thaw(event.data)
        if data.get("name") != "core" or data.get("event") not in ("exited", "hung", "gave_up"):
            return
        for run, record in list(self.runs.items()):
            if record.get("state") != "exited":
                self._handle("run.exit", {"run": run, "code": None, "how": "failed"})

    def _adopt(self, rep: Reply) -> None:
        """A window (re)started while a run goes on (the UI was restarted after a crash):
        follow the newest running one, so its output shows and Stop reaches it."""
        if not rep.ok or self.current_run is not None:
            return
        running = [r for r in thaw(rep.result) if r.get("state") == "running"]
        if running:
            record = max(running, key=lambda r: r.get("started_at", 0))
            self.run_started(record, "Run")
            self.output.write("> (output from before this window started is not shown)\n",
                              "info", record["run"])

    def apply_theme(self) -> None:
        """Follow a theme or font change (the app calls this from apply_settings)."""
        c = self.colours = _theme_colours(self.app)
        font = _fixed_font(self.app)
        self.output.text.configure(bg=c["bg"], fg=c["fg"], insertbackground=c["fg"], font=font,
                                   selectbackground=c["sel_bg"], selectforeground=c["sel_fg"])
        self.output.text.tag_configure("stderr", foreground=c["error"])
        self.find.text.configure(bg=c["field_bg"], fg=c["field_fg"], font=font,
                                 selectbackground=c["sel_bg"], selectforeground=c["sel_fg"])
        self.find.text.tag_configure("path", foreground=c["link"])
        self.find.text.tag_configure("hit", background=c["hit"])
        self.find.text.tag_configure("current", background=c["sel_bg"], foreground=c["sel_fg"])
        _space_rows(self.find.text)
        _space_rows(self.output.text)

    @property
    def root_path(self) -> Path:
        if self._root_path is None:
            root = Path(self.app.project_root)
            # A remote project's folder is the server's: nothing to resolve on this disk.
            self._root_path = root if self.remote else root.resolve()
        return self._root_path

    @property
    def remote(self) -> bool:
        return bool(getattr(self.app, "remote", None))

    def file_exists(self, full: Path) -> bool:
        """Is ``full`` (inside the project) a file, for a run output reference to become a
        link? On a remote instance the answer comes from the core's ``fs.walk`` listing
        (asked at each run start), never from this machine's disk."""
        if not self.remote:
            return full.is_file()
        if self._remote_files is None:
            return False
        try:
            return full.relative_to(self.root_path).as_posix() in self._remote_files
        except ValueError:
            return False

    def _list_remote_files(self) -> None:
        def got(rep: Reply) -> None:
            if rep.ok:
                self._remote_files = set(thaw(rep.result)["files"])
                self.output._resolved.clear()
                self.output.link_view()
        self.app.conn.request("fs.walk", {"path": ".", "max_files": REMOTE_LINK_FILES}, got,
                              timeout=30)

    def unsaved_texts(self) -> dict[str, str]:
        """The text of every open, modified buffer by its path, so Find in Files (run by the
        core) searches what the user sees, unsaved edits included."""
        out: dict[str, str] = {}
        for editor in list(self.app.editors.values()):
            summary, replica = editor.summary, editor.replica   # no replica: still loading
            if replica is not None and summary.get("dirty") and summary.get("path"):
                out[str(summary["path"])] = replica.text
        return out

    def event_generate_done(self) -> None:
        try:
            self.notebook.event_generate("<<FindInFilesDone>>")
        except tk.TclError:
            pass

    # --- tabs --------------------------------------------------------------------------------
    def show_find(self, pattern: str | None = None) -> None:
        select_tab(self.notebook, 0)
        if pattern:
            self.find.pattern.set(pattern)
        self.find.entry.focus_set()
        self.find.entry.select_range(0, "end")

    def show_output(self) -> None:
        select_tab(self.notebook, 1)

    def next_result(self, delta: int = 1) -> Match | tuple[str, int, int | None] | None:
        """F4 / Shift+F4: the next Find in Files result or file reference in the output,
        whichever tab is showing."""
        if tab_index(self.notebook, "current") == 0:
            if not self.find.results:
                return None
            self.find.move(delta)
            self.find.open_current()
            return self.find.results[self.find._current]
        return self.output.next_link(delta)

    # --- runs ----------------------------------------------------------------------------------
    def run_started(self, record: dict[str, Any], label: str = "Run") -> None:
        """Called with run.start's reply: show its header, then any events that came first."""
        run = record["run"]
        self.current_run = run
        self.runs[run] = record
        if self.remote:
            self._list_remote_files()
        self.output.cwd[run] = record.get("cwd", ".")
        self._shown.clear()  # whatever was still waiting belongs to the previous run
        self.output.clear()
        self.show_output()
        self.output.write(f"> {label}: {record.get('command', '')}   (in {record.get('cwd', '.')})"
                          f"\n", "info", run, link=False)
        for topic, data in self._held.pop(run, []):
            self._handle(topic, data)

    def _on_event(self, event: Event) -> None:
        data = thaw(event.data)
        run = data.get("run")
        if not isinstance(run, str):
            return
        if run not in self.runs:
            held = self._held.setdefault(run, [])
            held.append((event.topic, data))
            while len(self._held) > _HELD_RUNS:
                self._held.popitem(last=False)
            return
        self._handle(event.topic, data)

    def _handle(self, topic: str, data: dict[str, Any]) -> None:
        run = data["run"]
        if topic == "run.output":
            if run == self.current_run:
                self._show(str(data.get("text", "")),
                           "stderr" if data.get("stream") == "stderr" else "", run, True)
        elif topic == "run.exit":
            self.runs[run] = {**self.runs.get(run, {}), **data, "state": "exited"}
            if run == self.current_run:
                self._show(None, "", run, False)  # end the last line if it is open
                self._show(describe_exit(data) + "\n", "info", run, False)
            for fn in list(self.on_run_exit):
                fn(data)

    # The bus is drained in one go, so a burst of run.output events would otherwise be drawn
    # in one long callback. They are queued and drawn in slices from after() instead:
    # ~10 ms of drawing at a time, consecutive chunks of one stream joined into one insert.
    def _show(self, text: str | None, tag: str, run: str, link: bool) -> None:
        while text is not None and len(text) > DRAW_CHUNK_CHARS:
            # Big batches are drawn in pieces (cut after a newline when there is one).
            cut = text.rfind("\n", 0, DRAW_CHUNK_CHARS) + 1 or DRAW_CHUNK_CHARS
            self._shown.append((text[:cut], tag, run, link))
            text = text[cut:]
        self._shown.append((text, tag, run, link))
        if self._show_job is None:
            self._show_job = self.notebook.after(0, self._draw)

    def _draw(self) -> None:
        self._show_job = None
        deadline = time.monotonic() + DRAW_SLICE_S
        queue = self._shown
        while queue and time.monotonic() < deadline:
            text, tag, run, link = queue.popleft()
            if text is None:
                if self.output.text.get("end-2c", "end-1c") not in ("\n", ""):
                    self.output.write("\n", "", run)
                continue
            parts = [text]
            size = len(text)
            while queue and queue[0][1:] == (tag, run, link) and queue[0][0] is not None \
                    and size < DRAW_CHUNK_CHARS:
                more = queue.popleft()[0]
                assert more is not None
                parts.append(more)
                size += len(more)
            self.output.write("".join(parts), tag, run, link=link)
        if queue:
            self._show_job = self.notebook.after(1, self._draw)

    @property
    def drawing(self) -> bool:
        """Output received but not drawn yet."""
        return bool(self._shown)

    def running(self) -> bool:
        run = self.current_run
        return bool(run) and self.runs.get(run or "", {}).get("state") != "exited"


def describe_exit(data: dict[str, Any]) -> str:
    how, code = data.get("how"), data.get("code")
    if how == "stopped":
        return "> Stopped."
    if how == "timeout":
        return "> Timed out; stopped."
    if how == "failed":
        return "> The run was lost: the core stopped (it restarts by itself; run again)."
    return f"> Finished with exit code {code}." if code else "> Finished."


def install(app: OutputHost) -> OutputPane:
    """Build the pane in ``app.output_pane_slot`` and register Find in Files; the caller
    keeps it as ``app.output_pane`` (ui/tk/app/plugins.py)."""
    pane = OutputPane(app)

    def find_in_files() -> None:
        pattern = None
        editor = app.active_editor()
        if editor is not None:
            try:
                selected = editor.text.get("sel.first", "sel.last")
            except tk.TclError:
                selected = ""
            if selected and "\n" not in selected:
                pattern = selected
        pane.show_find(pattern)

    app.register_command("search.find_in_files", "Find in F&iles...", "Ctrl+Shift+F",
                         find_in_files, menu="Search")
    def focus_output() -> None:
        if tab_index(pane.notebook, "current") == 0:
            pane.find.text.focus_set()
            if pane.find.results and pane.find._current < 0:
                pane.find.select(0)
        else:
            pane.output.text.focus_set()

    app.register_command("view.focus_output", "&Output Pane", "Alt+2", focus_output,
                         menu="View")
    app.register_command("search.next_result", "Next Resul&t", "F4",
                         lambda: pane.next_result(1), menu="Search")
    app.register_command("search.prev_result", "Previous Res&ult", "Shift+F4",
                         lambda: pane.next_result(-1), menu="Search")
    return pane
