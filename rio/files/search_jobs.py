"""Find in Files as the core runs it: a time-sliced :class:`SearchJob` over the workspace walk,
and :class:`SearchPages`, the running searches behind ``fs.search`` / ``fs.search_more`` /
``fs.search_stop`` (docs/protocol.md "Project files").

A client never reads the project's files itself (the desktop may be on another machine,
``rio --connect``): it asks ``fs.search`` and gets the first page of results, then asks
``fs.search_more`` for each next page until ``done``. A page is at most a few milliseconds of
work and :data:`PAGE_MAX_RESULTS` results, in the order the walk finds them, so the workspace
actor answers other ``fs.*`` requests in between and the client shows the first hits at once.
Stop is ``fs.search_stop`` (or simply not asking again: an idle search is dropped after
:data:`IDLE_S`). Unsaved text of the client's open buffers is searched instead of the file
(``overrides``), as before the search moved to the core.
"""

from __future__ import annotations

import codecs
import fnmatch
import itertools
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rio.files.files import load_file
from rio.files.find_in_files import Match, ProjectSearch
from rio.files.search import SearchOptions
from rio.files.workspace import Workspace
from rio.protocol.errors import ProtocolError, RioError

#: One slice of searching: well inside a 16 ms frame.
SLICE_S = 0.008
#: Files up to this size are read whole (as rio.files.files loads them); larger ones are streamed.
SEARCH_MAX_FILE_BYTES = 8 * 1024 * 1024
#: Files larger than this are not searched at all (the walk skips them silently).
SEARCH_STREAM_MAX_BYTES = 4 * 1024 * 1024 * 1024
#: How much of a streamed file is decoded and searched at a time (a few ms of regex work).
STREAM_PIECE_BYTES = 256 * 1024
#: One ``fs.search``/``fs.search_more`` reply: at most this much work and this many results.
PAGE_S = 0.03
PAGE_MAX_RESULTS = 500
#: Searches kept at once (the oldest is dropped), and how long one nobody asks about lives.
MAX_SEARCHES = 16
IDLE_S = 120.0
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"),
         (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))


def glob_filter(paths: Iterable[str], globs: tuple[str, ...]) -> Iterator[str]:
    """Paths whose name or relative path matches one of ``globs``; empty means every path."""
    if not globs:
        yield from paths
        return
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        if any(fnmatch.fnmatch(name, g) or fnmatch.fnmatch(path, g) for g in globs):
            yield path


def workspace_reader(workspace: Workspace,
                     overrides: Callable[[str], str | None] | None = None
                     ) -> Callable[[str], str | None]:
    """``read_text(rel) -> str | None`` for ProjectSearch: the unsaved text of an open buffer
    when ``overrides`` knows it, else the file as loaded by rio.files.files (None when binary,
    undecodable or unreadable)."""
    def read(rel: str) -> str | None:
        if overrides is not None:
            text = overrides(rel)
            if text is not None:
                return text
        try:
            return load_file(workspace.root / rel, max_bytes=SEARCH_MAX_FILE_BYTES).text
        except (RioError, OSError):
            return None
    return read


def stream_pieces(path: Path, piece_bytes: int = STREAM_PIECE_BYTES) -> Iterator[str] | None:
    """A big file as text pieces that end at a newline, decoded as it is read (memory stays at
    about one piece), for :meth:`ProjectSearch.run_pieces`. None when it looks binary (a NUL in
    its first 8 KiB) or cannot be opened. A BOM picks UTF-8/16/32; otherwise UTF-8, with
    undecodable bytes replaced (U+FFFD) rather than the whole file skipped."""
    try:
        f = open(path, "rb")  # closed by the generator below
        head = f.read(8192)
    except OSError:
        return None
    encoding = next((enc for bom, enc in _BOMS if head.startswith(bom)), "utf-8")
    if encoding == "utf-8" and b"\x00" in head:
        f.close()
        return None

    def pieces() -> Iterator[str]:
        decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        held = ""
        chunk = head
        with f:
            while chunk:
                held += decoder.decode(chunk)
                cut = held.rfind("\n") + 1
                if cut:
                    yield held[:cut]
                    held = held[cut:]
                try:
                    chunk = f.read(piece_bytes)
                except OSError:
                    break
            held += decoder.decode(b"", final=True)
        if held:
            yield held
    return pieces()


def summary_text(counts: Mapping[str, Any], cancelled: bool = False) -> str:
    """The status line for a search's counters (:meth:`SearchJob.counts`, or the ``counts`` of
    an ``fs.search`` reply)."""
    results, matched = int(counts["results"]), int(counts["files_matched"])
    skipped = int(counts["files_skipped"])
    what = f"{results} match{'es' if results != 1 else ''} in {matched} " \
           f"file{'s' if matched != 1 else ''}"
    tail = f" ({counts['files_searched']} searched"
    if skipped:
        names = list(counts.get("skipped_paths") or [])
        more = ", …" if skipped > len(names) else ""
        tail += f"; {skipped} skipped as binary or unreadable: {', '.join(names)}{more}"
    tail += ")"
    if cancelled:
        return f"Stopped: {what}{tail}."
    if counts.get("truncated"):
        return f"{what}{tail} — stopped at the limit; narrow the search."
    return f"{what}{tail}."


@dataclass
class SearchJob:
    """A running Find in Files; call :meth:`step` until ``done``.

    Files are searched one at a time (``ProjectSearch.run`` over a one-path list; its counters
    and caps carry over), so a slice ends on time even when no file matches — a generator
    that only yields matches would keep a match-less search inside one slice to the end.
    """

    search: ProjectSearch
    paths: Iterator[str]
    read: Callable[[str], str | None]
    done: bool = False
    cancelled: bool = False
    _file: Iterator[Match | None] | None = None
    #: ``stream(rel)``: a big file's pieces (None: read it whole with ``read``).
    stream: Callable[[str], Iterator[str] | None] | None = None

    @classmethod
    def start(cls, root: Path, pattern: str, options: SearchOptions = SearchOptions(), *,
              folder: str = ".", globs: tuple[str, ...] = (),
              overrides: Callable[[str], str | None] | None = None,
              max_results: int = 5000) -> "SearchJob":
        """Raises ``buffer.bad_pattern`` for a bad regex and ``path.*`` for a bad folder."""
        workspace = Workspace(root)
        search = ProjectSearch(pattern, options, max_results=max_results)
        workspace.resolve(folder, kind="dir")  # the walk is lazy: check the folder now
        paths = glob_filter(workspace.walk_files(folder, max_file_bytes=SEARCH_STREAM_MAX_BYTES),
                            globs)

        def stream(rel: str) -> Iterator[str] | None:
            if overrides is not None and overrides(rel) is not None:
                return None          # open in the editor: search its unsaved text
            full = workspace.root / rel
            try:
                if full.stat().st_size <= SEARCH_MAX_FILE_BYTES:
                    return None
            except OSError:
                return None
            return stream_pieces(full)   # None (binary): ``read`` refuses it, so it is skipped
        return cls(search, paths, workspace_reader(workspace, overrides), stream=stream)

    def step(self, budget_s: float = SLICE_S,
             clock: Callable[[], float] = time.monotonic,
             limit: int | None = None) -> list[Match]:
        """Results found within about ``budget_s`` (at least one file's worth), at most
        ``limit`` of them."""
        out: list[Match] = []
        deadline = clock() + budget_s
        while not self.done:
            if self._file is None:
                path = next(self.paths, None)
                if path is None:
                    self.done = True
                    break
                pieces = self.stream(path) if self.stream is not None else None
                self._file = (self.search.run([path], self.read) if pieces is None
                              else self.search.run_pieces(path, pieces))
            for m in self._file:
                if m is not None:
                    out.append(m)
                if clock() >= deadline or (limit is not None and len(out) >= limit):
                    return out  # the rest of this file comes in the next slice
            self._file = None
            if self.search.truncated:
                self.done = True
            elif clock() >= deadline:
                break
        return out

    def cancel(self) -> None:
        self.cancelled = self.done = True

    def counts(self) -> dict[str, Any]:
        s = self.search
        return {"results": s.results, "files_searched": s.files_searched,
                "files_matched": s.files_matched, "files_skipped": s.files_skipped,
                "skipped_paths": list(s.skipped_paths), "truncated": s.truncated}

    def summary(self) -> str:
        return summary_text(self.counts(), self.cancelled)


def match_to_wire(m: Match) -> dict[str, Any]:
    return {"path": m.path, "line": m.line, "col": m.col, "text": m.line_text,
            "start": m.start, "end": m.end}


def match_from_wire(d: Mapping[str, Any]) -> Match:
    return Match(str(d["path"]), int(d["line"]), int(d["col"]), str(d["text"]),
                 int(d["start"]), int(d["end"]))


class SearchPages:
    """The running ``fs.search`` searches of one workspace, each answered a page at a time."""

    def __init__(self, root: Path, clock: Callable[[], float] = time.monotonic):
        self.root = root
        self.clock = clock
        self._jobs: OrderedDict[str, tuple[SearchJob, float]] = OrderedDict()
        self._ids = itertools.count(1)

    def start(self, args: Mapping[str, Any]) -> dict[str, Any]:
        overrides = {str(k): str(v) for k, v in dict(args.get("overrides") or {}).items()}
        options = SearchOptions(regex=bool(args.get("regex")),
                                match_case=bool(args.get("match_case")),
                                whole_word=bool(args.get("whole_word")))
        job = SearchJob.start(self.root, str(args["pattern"]), options,
                              folder=str(args.get("folder") or "."),
                              globs=tuple(str(g) for g in args.get("globs") or ()),
                              overrides=overrides.get,
                              max_results=int(args.get("max_results") or 5000))
        self._expire()
        search_id = f"s{next(self._ids)}"
        self._jobs[search_id] = (job, self.clock())
        while len(self._jobs) > MAX_SEARCHES:
            self._jobs.popitem(last=False)
        return self.page(search_id)

    def page(self, search_id: str, budget_s: float = PAGE_S) -> dict[str, Any]:
        """The next results of a search: ``{search, matches, done, counts}``."""
        self._expire()
        entry = self._jobs.pop(search_id, None)
        if entry is None:
            raise ProtocolError("unknown_search", f"No running search {search_id!r}: it ended, "
                                "was stopped, or sat unasked for too long.",
                                "Start the search again.", search=search_id)
        job = entry[0]
        found: list[Match] = []
        deadline = self.clock() + budget_s
        while not job.done and len(found) < PAGE_MAX_RESULTS and self.clock() < deadline:
            found += job.step(min(SLICE_S, budget_s), self.clock,
                              limit=PAGE_MAX_RESULTS - len(found))
        if not job.done:
            self._jobs[search_id] = (job, self.clock())
        return {"search": search_id, "matches": [match_to_wire(m) for m in found],
                "done": job.done, "counts": job.counts()}

    def stop(self, search_id: str) -> dict[str, Any]:
        entry = self._jobs.pop(search_id, None)
        if entry is not None:
            entry[0].cancel()
        return {"search": search_id, "stopped": entry is not None}

    def _expire(self) -> None:
        now = self.clock()
        for key, (_job, used) in list(self._jobs.items()):
            if now - used > IDLE_S:
                del self._jobs[key]

    def __len__(self) -> int:
        return len(self._jobs)
