"""The display-free half of the output pane: Find in Files as the core runs it, where a file
reference in run output points, and how terminal output becomes lines.

:class:`CoreSearch` drives ``fs.search`` page by page (rio/files/search_jobs.py runs it in the
core's workspace actor): the desktop never reads the project's files itself, so Find in Files
works the same on a remote instance (``rio --connect``). :data:`AHEAD` pages are asked for at a
time (one more as each arrives), so the core searches while a page travels and is drawn;
pages come back in order, the window never blocks, and Stop is ``fs.search_stop``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from rio.files.find_in_files import Match
from rio.files.search_jobs import match_from_wire, summary_text
from rio.protocol.errors import RioError, error_from_wire
from rio.protocol.frames import Reply, thaw

#: ``fs.search_more`` requests kept in flight: the core works on the next page while this one
#: travels (over a remote link that round trip is most of a page's time).
AHEAD = 2
_NO_COUNTS: dict[str, Any] = {"results": 0, "files_searched": 0, "files_matched": 0,
                              "files_skipped": 0, "skipped_paths": [], "truncated": False}


class Requester(Protocol):
    """What :class:`CoreSearch` needs of the bus connection."""

    def request(self, op: str, args: Mapping[str, Any] | None = None,
                callback: Callable[[Reply], None] | None = None, *,
                timeout: float = ...) -> str: ...


def parse_globs(text: str) -> tuple[str, ...]:
    """``"*.py, *.txt"`` → ``("*.py", "*.txt")``; empty means every file."""
    return tuple(p for p in (s.strip() for s in text.replace(";", ",").split(",")) if p)


class CoreSearch:
    """One Find in Files run by the core: ``fs.search``, then ``fs.search_more`` (:data:`AHEAD`
    in flight) until ``done``. ``on_page(matches)`` gets each page's results in order;
    ``on_end()`` is called once when the search ends by itself or fails (``error``)."""

    def __init__(self, conn: Requester, on_page: Callable[[list[Match]], None],
                 on_end: Callable[[], None]):
        self.conn = conn
        self.on_page = on_page
        self.on_end = on_end
        self.search_id: str | None = None
        self.counts: dict[str, Any] = dict(_NO_COUNTS)
        self.done = False
        self.cancelled = False
        self.error: RioError | None = None
        self._asked = 0

    def start(self, pattern: str, *, regex: bool = False, match_case: bool = False,
              whole_word: bool = False, folder: str = ".", globs: tuple[str, ...] = (),
              overrides: Mapping[str, str] | None = None) -> "CoreSearch":
        self.conn.request("fs.search", {
            "pattern": pattern, "regex": regex, "match_case": match_case,
            "whole_word": whole_word, "folder": folder, "globs": list(globs),
            "overrides": dict(overrides or {})}, self._page, timeout=60)
        return self

    def _page(self, reply: Reply) -> None:
        if self.done and not self.cancelled:
            return   # asked ahead past the last page: the core no longer knows the search
        if self.cancelled:
            if reply.ok and self.search_id is None:
                # Stopped before the first reply: stop it in the core now that it has an id.
                res = thaw(reply.result)
                self.search_id = res["search"]
                if not res.get("done"):
                    self.conn.request("fs.search_stop", {"search": res["search"]})
            return
        if not reply.ok:
            self.error = error_from_wire(thaw(reply.error))
            self.done = True
            self.on_end()
            return
        res = thaw(reply.result)
        self.search_id = res["search"]
        self.counts = dict(res["counts"])
        self.done = bool(res["done"])
        matches = [match_from_wire(m) for m in res["matches"]]
        if matches:
            self.on_page(matches)
        if self.done:
            self.on_end()
            return
        for _ in range(1 if self._asked else AHEAD):   # the first reply opens the window
            self._asked += 1
            self.conn.request("fs.search_more", {"search": self.search_id}, self._page,
                              timeout=60)

    def cancel(self) -> None:
        """Stop: no more pages are shown; the core drops the search."""
        if self.done:
            return
        self.cancelled = self.done = True
        if self.search_id is not None:
            self.conn.request("fs.search_stop", {"search": self.search_id})

    def summary(self) -> str:
        return summary_text(self.counts, self.cancelled)


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
