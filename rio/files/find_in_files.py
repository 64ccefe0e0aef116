"""Find in Files: search many files with the same engine as Find, lazily and with caps.

The file system stays outside: the caller passes the relative paths to search and a
``read_text(path) -> str | None`` function (the workspace's reader; ``None`` means binary,
undecodable or unreadable, and the file is skipped). Results are yielded one by one, so the UI
can show the first hits at once and cancel by simply dropping the iterator.

Each :class:`Match` carries the 1-based line and column the results list shows and the offsets
in the file's text the editor selects when a result is opened.

A regular expression is matched with the ``regex`` package, not ``re`` (ADR-0032): the core
runs the pattern any client sends (``fs.search``, a remote observer's too), and ``re`` holds the
GIL for the whole of one match — ``(a+)+$`` over a long run of ``a`` froze every thread of the
core until the supervisor killed it as hung. ``regex`` releases the GIL while it matches and
stops after ``MATCH_TIMEOUT_S`` (``buffer.bad_pattern``): rio.files.search, shared with Find.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from rio.files.search import SearchOptions, compile_pattern, guarded, guarded_finditer

DEFAULT_MAX_RESULTS = 5000
DEFAULT_MAX_FILES = 20_000
# Result lines longer than this are clipped around the match: a minified 2 MB line would
# otherwise land whole in the results list (and Tk is slow on long lines: ~9 ms a key at 100 K characters).
MAX_LINE_TEXT = 400

ReadText = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Match:
    """One hit: ``path`` as given, 1-based ``line``/``col``, the line's text (clipped when very
    long) and ``start``/``end`` offsets of the match in the file's text."""

    path: str
    line: int
    col: int
    line_text: str
    start: int
    end: int


def format_match(m: Match) -> str:
    """``path:line:col: text`` — the grep-like form, which run_output also recognises."""
    return f"{m.path}:{m.line}:{m.col}: {m.line_text.strip()}"


class ProjectSearch:
    """A search over files; counters tell the UI what was searched, skipped and cut short."""

    def __init__(self, pattern: str, options: SearchOptions = SearchOptions(),
                 max_results: int = DEFAULT_MAX_RESULTS, max_files: int = DEFAULT_MAX_FILES):
        self._re = compile_pattern(pattern, options)  # raises buffer.bad_pattern early
        self._pattern = pattern
        self._guarded = guarded(self._re, pattern) if options.regex else None
        self._empty = pattern == ""
        self.max_results = max_results
        self.max_files = max_files
        self.files_searched = 0
        self.files_skipped = 0
        self.skipped_paths: list[str] = []    # the first few, for the summary
        self.files_matched = 0
        self.results = 0
        self.truncated = False  # True when a cap stopped the search before the last file

    def run(self, paths: Iterable[str], read_text: ReadText) -> Iterator[Match]:
        if self._empty:
            return
        for path in paths:
            if self.files_searched >= self.max_files or self.results >= self.max_results:
                self.truncated = True
                return
            text = read_text(path)
            if text is None or "\x00" in text:  # NUL: binary that happened to decode
                self.skip(path)
                continue
            self.files_searched += 1
            matched = False
            for hit in self._search_text(path, text):
                if self.results >= self.max_results:
                    self.truncated = True
                    return
                matched = True
                self.results += 1
                yield hit
            self.files_matched += matched

    def skip(self, path: str) -> None:
        """Count a file that could not be searched (binary, undecodable or unreadable)."""
        self.files_skipped += 1
        if len(self.skipped_paths) < 3:
            self.skipped_paths.append(path)

    def run_pieces(self, path: str, pieces: Iterable[str]) -> Iterator[Match | None]:
        """Search one file read as successive pieces, each ending at a newline (the last may
        not): a file too big to hold whole. Yields its matches, with line numbers and offsets
        in the whole file, and ``None`` after each piece so a caller can stop on time even
        where nothing matches. A match cannot span two pieces (each holds many lines)."""
        if self._empty:
            return
        if self.files_searched >= self.max_files or self.results >= self.max_results:
            self.truncated = True
            return
        self.files_searched += 1
        matched = False
        base, line = 0, 1
        for piece in pieces:
            for hit in self._search_text(path, piece):
                if self.results >= self.max_results:
                    self.truncated = True
                    return
                if not matched:
                    matched = True
                    self.files_matched += 1
                self.results += 1
                yield Match(path, hit.line + line - 1, hit.col, hit.line_text,
                            hit.start + base, hit.end + base)
            line += piece.count("\n")
            base += len(piece)
            yield None

    def _search_text(self, path: str, text: str) -> Iterator[Match]:
        line = 1
        counted_to = 0  # newlines are counted incrementally: one pass over the file in total
        found = (self._re.finditer(text) if self._guarded is None
                 else guarded_finditer(self._guarded, text, 0, path, self._pattern))
        for m in found:
            start, end = m.start(), m.end()
            if start == end:
                continue  # empty matches (``^``, ``x*``) are noise in a results list
            line += text.count("\n", counted_to, start)
            counted_to = start
            bol = text.rfind("\n", 0, start) + 1
            eol = text.find("\n", start)
            eol = len(text) if eol < 0 else eol
            yield Match(path, line, start - bol + 1, _clip(text, bol, eol, start), start, end)


def _clip(text: str, bol: int, eol: int, at: int) -> str:
    line_text = text[bol:eol].rstrip("\r")
    if len(line_text) <= MAX_LINE_TEXT:
        return line_text
    lo = max(0, at - bol - MAX_LINE_TEXT // 4)
    return line_text[lo:lo + MAX_LINE_TEXT]


def filter_paths(paths: Iterable[str], include: str = "", exclude: str = "") -> Iterator[str]:
    """Paths matching the dialog's "Files:" and "Exclude:" fields.

    Each field is a comma- or space-separated list of globs (``*.py, src/*.c``). A glob without a
    ``/`` matches the file name anywhere; one with a ``/`` matches the relative path
    (``*`` crosses folders, as in fnmatch). Empty ``include`` means every file.
    """
    inc = _globs(include)
    exc = _globs(exclude)
    for path in paths:
        if inc and not _matches(path, inc):
            continue
        if exc and _matches(path, exc):
            continue
        yield path


def _globs(field: str) -> list[str]:
    return [g for g in field.replace(",", " ").split() if g]


def _matches(path: str, globs: list[str]) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(path if "/" in g else name, g) for g in globs)


def find_in_files(paths: Iterable[str], read_text: ReadText, pattern: str,
                  options: SearchOptions = SearchOptions(),
                  max_results: int = DEFAULT_MAX_RESULTS,
                  max_files: int = DEFAULT_MAX_FILES) -> Iterator[Match]:
    """Convenience form of :class:`ProjectSearch` when the counters are not needed."""
    return ProjectSearch(pattern, options, max_results, max_files).run(paths, read_text)
