"""The search engine behind Find and Replace: plain ``str`` in, matches and edits out.

Like IDLE's ``searchengine.py`` the logic lives apart from the dialog, so it is tested without a
display. Replacing never mutates anything: it answers with :class:`~rio.text.edit_commands.TextEdit`
records the UI sends to the core as ``buffer.replace`` operations. :meth:`SearchEngine.replace_all`
answers with ONE list, so the core can apply it as one undo step.

Semantics worth knowing:

* Patterns are compiled with ``re.MULTILINE``: ``^`` and ``$`` mean start and end of a line.
* "Whole word" means the match is not preceded or followed by a word character (lookarounds,
  not ``\\b``, so a pattern that starts or ends with punctuation still works).
* ``selection=(lo, hi)`` restricts matches to ``lo <= start`` and ``end <= hi``; wrapping then
  wraps inside the selection.
* ``find_next`` skips an empty match exactly at ``offset`` so repeated Find Next with ``^`` moves.
* A regular expression is checked and compiled with ``re`` (what is accepted, and how an error
  reads), then matched with the ``regex`` package (ADR-0032): ``re`` holds the GIL for the whole
  of one match, so ``(\\w+\\s?)+$`` over a line of ten words froze the window (or, for Find in
  Files, the core) for minutes. ``regex`` releases the GIL, is fast on such patterns, and gives
  up after :data:`MATCH_TIMEOUT_S` with ``buffer.bad_pattern``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import regex

from rio.protocol.errors import DocumentError
from rio.text.edit_commands import TextEdit

_PATTERN_NEXT = "Fix the pattern or turn off Regular expression"


@dataclass(frozen=True)
class SearchOptions:
    regex: bool = False
    match_case: bool = False
    whole_word: bool = False
    wrap: bool = True


@dataclass(frozen=True)
class Match:
    """``text[start:end]`` matched; ``wrapped`` when the search went past the end to find it."""

    start: int
    end: int
    text: str
    wrapped: bool = False


def compile_pattern(pattern: str, options: SearchOptions = SearchOptions()) -> re.Pattern[str]:
    """Compile the user's pattern with the options; a bad regex raises ``buffer.bad_pattern``."""
    body = pattern if options.regex else re.escape(pattern)
    if options.whole_word:
        body = rf"(?<!\w)(?:{body})(?!\w)"
    flags = re.MULTILINE | (0 if options.match_case else re.IGNORECASE)
    try:
        return re.compile(body, flags)
    except re.error as exc:
        where = f" at {exc.pos}" if exc.pos is not None and not options.whole_word else ""
        raise DocumentError("buffer.bad_pattern", f"Bad regular expression: {exc.msg}{where}",
                          next=_PATTERN_NEXT, pattern=pattern) from None


#: The longest one regex match (or the search for the next one) may take.
MATCH_TIMEOUT_S = 1.0
_FLAGS = re.MULTILINE | re.IGNORECASE


def guarded(compiled: re.Pattern[str], pattern: str) -> regex.Pattern[str]:
    """``compiled`` (what :func:`compile_pattern` made of ``pattern``) for the regex package."""
    try:
        return regex.compile(compiled.pattern, regex.VERSION0 | (compiled.flags & _FLAGS))
    except regex.error as exc:   # re took it: a corner where the two differ
        raise DocumentError("buffer.bad_pattern", f"This regular expression cannot be run: "
                            f"{exc}", next="Write it another way, or turn off Regular "
                            "expression", pattern=pattern) from None


def guarded_finditer(compiled: regex.Pattern[str], text: str, pos: int, where: str,
                     pattern: str) -> Iterator[regex.Match[str]]:
    """``compiled.finditer(text, pos)``, each match within :data:`MATCH_TIMEOUT_S`, else
    ``buffer.bad_pattern`` saying it backtracks too much in ``where``."""
    found = compiled.finditer(text, pos, timeout=MATCH_TIMEOUT_S)
    while True:
        try:
            m = next(found, None)
        except TimeoutError:
            raise DocumentError(
                "buffer.bad_pattern", f"The pattern took more than {MATCH_TIMEOUT_S:g} s in "
                f"{where}: it backtracks too much (a repeat inside a repeat, such as (a+)+)",
                next="Simplify the pattern (no nested repeats), or turn off Regular expression",
                pattern=pattern) from None
        if m is None:
            return
        yield m


class SearchEngine:
    """One compiled pattern plus options; every method takes the current text."""

    def __init__(self, pattern: str, options: SearchOptions = SearchOptions()):
        self.pattern = pattern
        self.options = options
        self._re = compile_pattern(pattern, options)
        self._guarded = guarded(self._re, pattern) if options.regex else None

    @property
    def regex(self) -> re.Pattern[str]:
        return self._re

    # --- finding -----------------------------------------------------------------------------

    def _iter(self, text: str, lo: int, hi: int) -> Iterator[re.Match[str]]:
        """Matches with ``lo <= start`` and ``end <= hi``, judged against the whole text.

        Searching the whole text (not ``text[lo:hi]``) keeps ``^``, lookarounds and whole-word
        honest at the range edges.
        """
        if not self.pattern:
            return
        found = (self._re.finditer(text, lo) if self._guarded is None
                 else guarded_finditer(self._guarded, text, lo, "this document", self.pattern))
        for m in found:
            if m.start() > hi or (m.start() == hi and m.end() > hi):
                return
            if m.end() <= hi:
                yield m

    @staticmethod
    def _range(text: str, selection: tuple[int, int] | None) -> tuple[int, int]:
        if selection is None:
            return 0, len(text)
        lo, hi = sorted(selection)
        return max(0, lo), min(len(text), hi)

    def find_next(self, text: str, offset: int,
                  selection: tuple[int, int] | None = None) -> Match | None:
        """The first match starting at or after ``offset``, wrapping to the range start."""
        lo, hi = self._range(text, selection)
        found = self._first_from(text, max(lo, offset), hi, skip_empty_at=offset)
        if found is not None:
            return found
        if self.options.wrap:
            wrapped = self._first_from(text, lo, hi, skip_empty_at=-1)
            if wrapped is not None and wrapped.start < offset:
                return Match(wrapped.start, wrapped.end, wrapped.text, wrapped=True)
        return None

    def _first_from(self, text: str, start: int, hi: int, skip_empty_at: int) -> Match | None:
        for m in self._iter(text, start, hi):
            if m.start() == m.end() == skip_empty_at:
                continue
            return Match(m.start(), m.end(), m.group())
        return None

    def find_prev(self, text: str, offset: int,
                  selection: tuple[int, int] | None = None) -> Match | None:
        """The last match starting before ``offset``, wrapping to the range end."""
        lo, hi = self._range(text, selection)
        best = None
        last = None
        for m in self._iter(text, lo, hi):
            if m.start() < offset:
                best = m
            last = m
        if best is not None:
            return Match(best.start(), best.end(), best.group())
        if self.options.wrap and last is not None and last.start() >= offset:
            return Match(last.start(), last.end(), last.group(), wrapped=True)
        return None

    def find_all(self, text: str, selection: tuple[int, int] | None = None,
                 limit: int | None = None) -> list[Match]:
        """Every match in the range (for highlighting all hits and counting), up to ``limit``."""
        lo, hi = self._range(text, selection)
        out = []
        for m in self._iter(text, lo, hi):
            out.append(Match(m.start(), m.end(), m.group()))
            if limit is not None and len(out) >= limit:
                break
        return out

    # --- replacing ---------------------------------------------------------------------------

    def expand(self, m: re.Match[str], replacement: str) -> str:
        """The replacement for one match: ``\\1``/``\\g<name>`` templates in regex mode."""
        if not self.options.regex:
            return replacement
        try:
            return m.expand(replacement)
        except (re.error, regex.error, IndexError) as exc:
            raise DocumentError("buffer.bad_replacement", f"Bad replacement: {exc}",
                              next="Fix the group references in Replace with",
                              replacement=replacement) from None

    def replace_one(self, text: str, offset: int, replacement: str,
                    selection: tuple[int, int] | None = None) -> tuple[TextEdit, Match] | None:
        """Replace the next match at or after ``offset`` (the UI passes the selection start, so
        a selected match is replaced). Returns the edit and the match it replaced."""
        lo, hi = self._range(text, selection)
        for start in (max(lo, offset), lo):
            for m in self._iter(text, start, hi):
                match = Match(m.start(), m.end(), m.group(), wrapped=start != max(lo, offset))
                return TextEdit(m.start(), m.end(), self.expand(m, replacement)), match
            if not self.options.wrap:
                break
        return None

    def replace_all(self, text: str, replacement: str,
                    selection: tuple[int, int] | None = None) -> list[TextEdit]:
        """Edits replacing every match in the range, ascending, in offsets of ``text``."""
        lo, hi = self._range(text, selection)
        return [TextEdit(m.start(), m.end(), self.expand(m, replacement))
                for m in self._iter(text, lo, hi)]
