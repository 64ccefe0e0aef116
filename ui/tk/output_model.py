"""The display-free half of the output pane: a time-sliced Find in Files job, where a file
reference in run output points, and how terminal output becomes lines.

:class:`SearchJob` wraps :class:`rio.files.find_in_files.ProjectSearch` over the workspace walk and
hands out results in slices of a few milliseconds, so the pane can run it from Tk's ``after()``
on the main thread without ever freezing the window (Tk owns its thread; no worker
threads needed, and cancelling is just not scheduling the next slice).
"""

from __future__ import annotations

import codecs
import fnmatch
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rio.files.files import load_file
from rio.files.find_in_files import Match, ProjectSearch
from rio.files.search import SearchOptions
from rio.files.workspace import Workspace
from rio.protocol.errors import RioError

#: One slice of searching on the Tk thread: well inside a 16 ms frame.
SLICE_S = 0.008
#: Files up to this size are read whole (as rio.files.files loads them); larger ones are streamed.
SEARCH_MAX_FILE_BYTES = 8 * 1024 * 1024
#: Files larger than this are not searched at all (the walk skips them silently).
SEARCH_STREAM_MAX_BYTES = 4 * 1024 * 1024 * 1024
#: How much of a streamed file is decoded and searched at a time (a few ms of regex work).
STREAM_PIECE_BYTES = 256 * 1024
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"),
         (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))


def parse_globs(text: str) -> tuple[str, ...]:
    """``"*.py, *.txt"`` → ``("*.py", "*.txt")``; empty means every file."""
    return tuple(p for p in (s.strip() for s in text.replace(";", ",").split(",")) if p)


def glob_filter(paths: Iterable[str], globs: tuple[str, ...]) -> Iterator[str]:
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
        f = open(path, "rb")  # noqa: SIM115 -- closed by the generator below
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
             clock: Callable[[], float] = time.monotonic) -> list[Match]:
        """Results found within about ``budget_s`` (at least one file's worth)."""
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
                if clock() >= deadline:
                    return out  # the rest of this file comes in the next slice
            self._file = None
            if self.search.truncated:
                self.done = True
            elif clock() >= deadline:
                break
        return out

    def cancel(self) -> None:
        self.cancelled = self.done = True

    def summary(self) -> str:
        s = self.search
        what = f"{s.results} match{'es' if s.results != 1 else ''} in {s.files_matched} " \
               f"file{'s' if s.files_matched != 1 else ''}"
        tail = f" ({s.files_searched} searched"
        if s.files_skipped:
            names = ", ".join(s.skipped_paths)
            more = ", …" if s.files_skipped > len(s.skipped_paths) else ""
            tail += f"; {s.files_skipped} skipped as binary or unreadable: {names}{more}"
        tail += ")"
        if self.cancelled:
            return f"Stopped: {what}{tail}."
        if s.truncated:
            return f"{what}{tail} — stopped at the limit; narrow the search."
        return f"{what}{tail}."


def resolve_ref(path: str, root: Path, cwd: str = ".",
                exists: Callable[[Path], bool] = Path.is_file) -> str | None:
    """The project-relative path a reference in run output points at, or None when it is not
    a file inside the project (a library's traceback line, a URL-ish word)."""
    p = Path(path).expanduser()
    full = p if p.is_absolute() else root / cwd / p
    try:
        full = Path(os.path.normpath(full))
        rel = full.relative_to(root)
    except ValueError:
        return None
    if rel.parts and rel.parts[0] == "..":
        return None
    return rel.as_posix() if exists(full) else None


class TerminalLines:
    """Turns output chunks into operations on a line-based view: ``\\r\\n`` is a newline and a
    lone ``\\r`` returns to the start of the current line (progress bars rewrite it in place).

    :meth:`feed` returns ``("text", s)`` to append and ``("cr", "")`` to clear the current line.
    A ``\\r`` at the very end of a chunk is held back until the next one shows whether a
    ``\\n`` follows.
    """

    def __init__(self) -> None:
        self._held_cr = False

    def feed(self, text: str) -> list[tuple[str, str]]:
        if self._held_cr:
            text = "\r" + text
            self._held_cr = False
        if text.endswith("\r"):
            self._held_cr = True
            text = text[:-1]
        text = text.replace("\r\n", "\n")
        ops: list[tuple[str, str]] = []
        parts = text.split("\r")
        for i, part in enumerate(parts):
            if i:
                ops.append(("cr", ""))
            if part:
                ops.append(("text", part))
        return ops
