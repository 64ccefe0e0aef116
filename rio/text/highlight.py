"""Incremental syntax highlighting with pygments, visible region first (ADR 0012).

The engine keeps its own copy of the text and a per-line cache of *runs* ``(tag, col0, col1)``
(columns in characters within the line, ``tag`` one of :data:`TAGS`). The Tk view:

1. calls :meth:`Highlighter.edit` for every change it applies (cheap: splices the cache);
2. after a short debounce calls :meth:`Highlighter.visible` for the lines on screen and tags
   them (≈60 lines: a few ms, measured);
3. calls :meth:`Highlighter.step` from ``after_idle`` until it answers ``done``; each step
   lexes about ``budget_lines`` lines and returns only the lines whose runs changed.

How re-lexing stays cheap and right:

* Lexing restarts at a *sync line*: a line before the edit whose start the cached tokens show to
  be outside any string or comment, preferably at column 0 (where a statement starts). Pygments
  does not expose its state stack, so "outside strings and comments" stands in for root state.
* Lines above the *frontier* are verified for the current text. Lines below it keep their old
  runs as *references* when their text has not changed since they were lexed. Lexing stops
  early (re-converges) at the first reference line whose new runs and sync flag equal the old
  ones: from a sync line on, the same text lexes the same way. Opening or closing a ``\"\"\"``
  changes every line below, so those lines differ and lexing continues — that is the point.
* If the view shows lines far below the frontier (a jump to the end right after opening a big
  file), they are lexed *provisionally* from a nearby column-0 line and marked unverified; the
  background pass corrects them when it gets there.

Line numbers in this API are 0-based (Tk's are 1-based: add one); offsets count ``str``
characters. In a Tk view::

    def retag(line_runs):
        for first, last, ranges in retag_plan(line_runs):
            for tag in TAGS:
                text.tag_remove(tag, first, last)
            for tag, pairs in ranges.items():
                text.tag_add(tag, *pairs)

    retag(h.visible(top, bottom))            # after an edit (debounced) or a scroll
    def idle():                               # then in the background
        changed, done = h.step()
        retag(changed)
        if not done:
            text.after_idle(idle)
"""

from __future__ import annotations

import fnmatch
import importlib
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice

from pygments.lexer import Lexer
from pygments.lexers import guess_lexer
from pygments.lexers._mapping import LEXERS
from pygments.lexers.special import TextLexer
from pygments.token import (
    Comment,
    Error,
    Generic,
    Keyword,
    Literal,
    Name,
    Number,
    Operator,
    String,
    _TokenType,
)
from pygments.util import ClassNotFound

# The style classes and their tags live apart, so that a theme names them without pygments.
from rio.text.syntax_classes import STYLE_CLASSES as STYLE_CLASSES
from rio.text.syntax_classes import TAG_PREFIX as TAG_PREFIX
from rio.text.syntax_classes import TAGS as TAGS
from rio.text.utf16_columns import IDENTITY, columns

# Above this size we do not highlight at all: a full lex runs ~40k lines/s (pygments 2.21, measured), so
# 8 MB is already ~10 s of background work, and the Tk view shows big files as a window anyway.
MAX_HIGHLIGHT_CHARS = 8 * 1024 * 1024
# How far below the frontier the visible region may be before it is lexed provisionally
# instead of lexing everything in between (~400 lines ≈ 10 ms).
SYNC_LEX_LIMIT = 400
# How far back to look for a column-0 sync line before settling for any line outside strings.
STRICT_SYNC_DISTANCE = 300
# Guessing a lexer from content is only trusted above this pygments analyse_text score.
GUESS_MIN_SCORE = 0.3

Run = tuple[str, int, int]
LineRuns = tuple[int, tuple[Run, ...]]

# Sync flags per line: how safely a lex may start there.
_NOT_SYNC, _LOOSE_SYNC, _STRICT_SYNC = 0, 1, 2

_CLASS_OF: list[tuple[_TokenType, str | None]] = [
    # Order matters: the first ancestor that matches wins.
    (Name.Decorator, "decorator"),
    (Name.Function.Magic, "name.function"),
    (Name.Function, "name.function"),
    (Name.Class, "name.class"),
    (Name.Exception, "name.class"),
    (Name.Builtin, "builtin"),
    (Name.Tag, "keyword"),
    (Name.Attribute, "builtin"),
    (Keyword, "keyword"),
    (Operator.Word, "keyword"),
    (Operator, "operator"),
    (String, "string"),
    (Number, "number"),
    (Comment.PreprocFile, "string"),
    (Comment.Preproc, "keyword"),
    (Comment, "comment"),
    (Generic.Heading, "keyword"),
    (Generic.Subheading, "keyword"),
    (Generic.Deleted, "error"),
    (Generic.Inserted, "string"),
    (Generic.Error, "error"),
    (Generic.Traceback, "error"),
    (Error, "error"),
    (Literal, "string"),
]
# String-like and comment-like tokens: a line starting inside one is never a sync line.
_OPAQUE = (String, Comment)


def style_class(ttype: _TokenType) -> str | None:
    """The style class of a pygments token type, or None for plain text."""
    for parent, cls in _CLASS_OF:
        if ttype in parent:
            return cls
    return None


class _TokenInfo:
    """Per token type: the Tk tag (or None) and whether it is string/comment. Memoised because
    there are few token types and many tokens."""

    def __init__(self) -> None:
        self._memo: dict[_TokenType, tuple[str | None, bool]] = {}

    def __call__(self, ttype: _TokenType) -> tuple[str | None, bool]:
        got = self._memo.get(ttype)
        if got is None:
            cls = style_class(ttype)
            got = (None if cls is None else TAG_PREFIX + cls,
                   any(ttype in parent for parent in _OPAQUE) and ttype not in Comment.Preproc)
            self._memo[ttype] = got
        return got


_LEXER_OPTIONS = {"stripnl": False, "ensurenl": False, "tabsize": 0}
_MODELINE_HINTS = ("-*-", "vim:", "vi:", "<?xml", "<!DOCTYPE", "<!doctype", "<html")


def _load(module: str, class_name: str) -> type[Lexer]:
    lexer: type[Lexer] = getattr(importlib.import_module(module), class_name)
    return lexer


def lexer_class_for_filename(filename: str, code: str = "") -> type[Lexer] | None:
    """Like pygments' ``find_lexer_class_for_filename`` but over the built-in table only.

    Pygments also scans installed plugins through package entry points, which cost ~0.4 s on
    the first call in a busy environment (measured here) — too slow on the open-a-file path.
    Ties (``*.h``: C, C++, Objective-C…) are broken the same way pygments does: content score,
    then the lexer's priority.
    """
    base = os.path.basename(filename)
    candidates: list[tuple[float, float, str, type[Lexer]]] = []
    for class_name, (module, _name, _aliases, patterns, _mimes) in LEXERS.items():
        for pattern in patterns:
            # Most patterns are "*.ext": an endswith() test spares compiling ~1,000 globs.
            simple = pattern.startswith("*.") and not any(c in pattern[2:] for c in "*?[")
            if base.endswith(pattern[1:]) if simple else fnmatch.fnmatchcase(base, pattern):
                cls = _load(module, class_name)
                bonus = 0.5 if "*" not in pattern and "?" not in pattern else 0.0
                score = (cls.analyse_text(code) if code else 0.0) + bonus
                candidates.append((score, float(getattr(cls, "priority", 0)), class_name, cls))
                break
    if not candidates:
        return None
    return max(candidates, key=lambda c: c[:3])[3]


def lexer_class_for_alias(alias: str) -> type[Lexer] | None:
    """The built-in lexer with this alias (``python``, ``bash``…), plugins not scanned."""
    alias = alias.lower()
    for class_name, (module, _name, aliases, _patterns, _mimes) in LEXERS.items():
        if alias in aliases:
            return _load(module, class_name)
    return None


def _shebang_alias(head: str) -> str | None:
    """``#!/usr/bin/env python3 -u`` → ``python``; None without a shebang."""
    if not head.startswith("#!"):
        return None
    words = head[2:head.find("\n") if "\n" in head else len(head)].split()
    if not words:
        return None
    prog = os.path.basename(words[0])
    if prog == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if not rest:
            return None
        prog = os.path.basename(rest[0])
    return prog.rstrip("0123456789.") or None


_MODELINE = re.compile(r"-\*-\s*(?:mode:\s*)?([\w+#-]+)[\s;]"
                       r"|\bvim?:.*\b(?:ft|filetype|syntax)=([\w+#-]+)")


def _hinted_alias(head: str) -> str | None:
    """An alias from a shebang, an Emacs/Vim modeline or an XML/HTML prologue."""
    alias = _shebang_alias(head)
    if alias:
        return alias
    m = _MODELINE.search(head[:600])
    if m:
        return (m.group(1) or m.group(2)).lower()
    start = head.lstrip()[:200].lower()
    if start.startswith(("<!doctype html", "<html")):
        return "html"
    if start.startswith("<?xml"):
        return "xml"
    return None


def choose_lexer(filename: str, text: str) -> Lexer:
    """The lexer for a file: by name (content breaks ties), then a shebang/modeline/prologue,
    then a confident pygments guess when the head carries such a hint, then plain text.

    Options keep offsets equal to buffer offsets: no newline stripping or adding, no tab
    expansion (pygments' defaults change offsets otherwise). ``guess_lexer`` imports every lexer module (~0.2 s the first
    time, measured) and readily calls prose some language, so it only runs on files that carry
    a modeline, shebang or markup hint.
    """
    head = text[:4096]
    cls = lexer_class_for_filename(filename, head) if filename else None
    if cls is None:
        alias = _hinted_alias(head)
        cls = lexer_class_for_alias(alias) if alias else None
    if cls is not None:
        return cls(**_LEXER_OPTIONS)
    first_lines = head[:400]
    if head.startswith("#!") or any(h in first_lines for h in _MODELINE_HINTS):
        try:
            guessed = guess_lexer(head, **_LEXER_OPTIONS)
            if type(guessed).analyse_text(head) >= GUESS_MIN_SCORE:
                return guessed
        except ClassNotFound:
            pass
    return TextLexer(**_LEXER_OPTIONS)


def lexer_by_name(name: str) -> Lexer:
    """A lexer from a pygments alias (``python``, ``c``…) with Rio's offset-safe options."""
    cls = lexer_class_for_alias(name)
    if cls is None:
        raise ClassNotFound(f"no lexer for alias {name!r}")
    return cls(**_LEXER_OPTIONS)


@dataclass(frozen=True)
class _LexedLine:
    line: int
    runs: tuple[Run, ...]
    sync: int


def _lex_lines(lexer: Lexer, text: str, base: int, first_line: int,
               info: _TokenInfo) -> Iterator[_LexedLine]:
    """Lex ``text[base:]`` (``base`` is the start of ``first_line``) and yield it line by line.

    A line's sync flag is decided when it starts: it is a sync line when neither the token
    holding the previous newline nor the token at its first character is string or comment,
    and a strict one when its first character is not blank either.
    """
    line = first_line
    runs: list[Run] = []
    line_base = base
    sync = _STRICT_SYNC
    pending_sync_check = False  # decide the sync flag when the line's first token arrives
    prev_nl_opaque = False
    for offset, ttype, value in lexer.get_tokens_unprocessed(text[base:]):
        if not value:
            continue
        tag, opaque = info(ttype)
        pos = base + offset
        piece_start = 0
        while True:
            if pending_sync_check:
                pending_sync_check = False
                first = text[pos + piece_start] if pos + piece_start < len(text) else "\n"
                if prev_nl_opaque or (opaque and first != "\n"):
                    sync = _NOT_SYNC
                elif first in " \t\n\r\f":
                    sync = _LOOSE_SYNC
                else:
                    sync = _STRICT_SYNC
            nl = value.find("\n", piece_start)
            piece_end = len(value) if nl < 0 else nl
            if tag is not None and piece_end > piece_start:
                c0 = pos + piece_start - line_base
                c1 = pos + piece_end - line_base
                if runs and runs[-1][0] == tag and runs[-1][2] == c0:
                    runs[-1] = (tag, runs[-1][1], c1)
                else:
                    runs.append((tag, c0, c1))
            if nl < 0:
                break
            yield _LexedLine(line, tuple(runs), sync)
            line += 1
            runs = []
            line_base = pos + nl + 1
            prev_nl_opaque = opaque
            pending_sync_check = True
            piece_start = nl + 1
            if piece_start >= len(value):
                break
    if pending_sync_check:  # the text ends right after a newline: an empty last line
        sync = _NOT_SYNC if prev_nl_opaque else _LOOSE_SYNC
    yield _LexedLine(line, tuple(runs), sync)


class _Pass:
    """A lex in progress from a sync line; survives between :meth:`Highlighter.step` calls."""

    def __init__(self, lines: Iterator[_LexedLine], start_line: int):
        self.lines = lines
        self.start_line = start_line


class Highlighter:
    """Incremental highlighter for one document. See the module docstring for the protocol."""

    def __init__(self, filename: str, text: str, lexer: Lexer | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self._text = text
        self._clock = clock  # a port, so the time budget of step() is testable
        self.enabled = len(text) <= MAX_HIGHLIGHT_CHARS
        self.lexer = lexer if lexer is not None else (
            choose_lexer(filename, text) if self.enabled else TextLexer())
        self._info = _TokenInfo()
        self._starts = [0]
        pos = text.find("\n")
        while pos >= 0:
            self._starts.append(pos + 1)
            pos = text.find("\n", pos + 1)
        n = len(self._starts)
        self._runs: list[tuple[Run, ...] | None] = [None] * n
        self._sync = bytearray(n)
        # 1 = lexed from this line's current text (verified above the frontier, a reference
        # below it); 0 = never lexed, edited since, lexed provisionally, or a seam (lexed in an
        # older pass than the line above it: see edit()). A re-convergence vouches for the
        # reference lines after it up to the next 0 only.
        self._lexed = bytearray(n)
        self._frontier = 0
        self._pass: _Pass | None = None
        # Line starts at index >= _stale_from are too small by _stale_by. Shifting every later
        # start on each keystroke costs ~1 ms per 18k lines (measured); typing on one line, or
        # pressing Enter and typing on, only ever grows this pending shift.
        self._stale_from = n
        self._stale_by = 0

    # --- public API ----------------------------------------------------------------------

    @property
    def lexer_name(self) -> str:
        return str(self.lexer.name)

    @property
    def text(self) -> str:
        return self._text

    @property
    def line_count(self) -> int:
        return len(self._starts)

    @property
    def done(self) -> bool:
        return self._frontier >= len(self._starts)

    def line_start(self, line: int) -> int:
        return self._starts[line] + (self._stale_by if line >= self._stale_from else 0)

    def runs(self, line: int) -> tuple[Run, ...] | None:
        """Cached runs of a line (None when not lexed yet)."""
        return self._runs[line]

    def edit(self, start: int, end: int, new_text: str) -> None:
        """Record that ``text[start:end]`` became ``new_text`` (offsets in the text before)."""
        if not 0 <= start <= end <= len(self._text):
            raise ValueError(f"edit range {start}..{end} outside 0..{len(self._text)}")
        old_first = self.line_of(start)
        old_last = self.line_of(end)
        old_count = len(self._starts)
        self._text = self._text[:start] + new_text + self._text[end:]
        if len(self._text) > MAX_HIGHLIGHT_CHARS:
            self.enabled = False
        new_starts = _newline_starts(new_text, start)
        delta = len(new_text) - (end - start)
        if self._stale_from != old_last + 1:
            self._settle_starts()
        self._starts[old_first + 1:old_last + 1] = new_starts
        count = len(new_starts) + 1
        self._stale_from = old_first + count
        self._stale_by += delta
        if self._stale_by == 0:
            self._stale_from = len(self._starts)
        self._runs[old_first:old_last + 1] = [None] * count
        self._sync[old_first:old_last + 1] = bytes(count)
        self._lexed[old_first:old_last + 1] = bytes(count)
        if old_last < self._frontier < old_count:
            # A seam: the pass that stopped at the frontier lexed the lines above it, but the
            # frontier line still holds runs lexed after older text. Lowering the frontier makes
            # the lines in between references, and a re-convergence on one of them vouches only
            # for the lines lexed in that same pass: the seam line must not be a reference.
            self._lexed[self._frontier + len(self._starts) - old_count] = 0
        self._frontier = min(self._frontier, old_first)
        self._pass = None  # its snapshot of the text is stale

    def visible(self, first_line: int, last_line: int) -> list[LineRuns]:
        """Runs for lines ``first_line..last_line`` (inclusive), lexing them now if needed."""
        n = len(self._starts)
        first = max(0, min(first_line, n - 1))
        last = max(first, min(last_line, n - 1))
        if not self.enabled:
            return [(i, ()) for i in range(first, last + 1)]
        elsewhere: list[LineRuns] = []
        if last >= self._frontier:
            if last - self._frontier <= SYNC_LEX_LIMIT:
                # Lines lexed on the way that lie outside the range changed too: report them.
                elsewhere = [lr for lr in self._advance(until_line=last, budget=None)
                             if not first <= lr[0] <= last]
            elif any(self._runs[i] is None for i in range(first, last + 1)):
                self._lex_provisionally(first, last)
        return elsewhere + [(i, self._runs[i] or ()) for i in range(first, last + 1)]

    def step(self, budget_lines: int = 500,
             budget_ms: float | None = 10.0) -> tuple[list[LineRuns], bool]:
        """Lex up to ``budget_lines`` more lines, stopping early after ``budget_ms``.

        Returns the lines whose runs changed (the view re-tags only those) and whether the
        whole document is now verified. The time budget matters because lexing speed varies
        5× with the language and the machine's load (ADR 0012): a line count alone would
        sometimes hold the Tk main loop for 80 ms.
        """
        if not self.enabled or self.done:
            return [], True
        deadline = None if budget_ms is None else self._clock() + budget_ms / 1000.0
        changed = self._advance(until_line=None, budget=budget_lines, deadline=deadline)
        return changed, self.done

    def all_runs(self) -> list[LineRuns]:
        """Lex everything that is left and return every line (tests and small files)."""
        while not self.step(1_000_000, budget_ms=None)[1]:
            pass
        return [(i, self._runs[i] or ()) for i in range(len(self._starts))]

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self._starts) - 1
        starts, stale_from, stale_by = self._starts, self._stale_from, self._stale_by
        while lo < hi:  # bisect_right(starts, offset) - 1, minding the pending shift
            mid = (lo + hi + 1) // 2
            if starts[mid] + (stale_by if mid >= stale_from else 0) <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    # --- lexing --------------------------------------------------------------------------

    def _sync_line_before(self, line: int) -> int:
        """A verified sync line at or before ``line`` (lines below the frontier are verified)."""
        loose = -1
        floor = max(0, line - STRICT_SYNC_DISTANCE)
        for i in range(min(line, self._frontier - 1), -1, -1):
            flag = self._sync[i]
            if flag == _STRICT_SYNC:
                return i
            if flag == _LOOSE_SYNC and loose < 0:
                loose = i
            if i <= floor and loose >= 0:
                return loose
        return 0 if loose < 0 else loose

    def _start_pass(self) -> _Pass:
        start = self._sync_line_before(self._frontier)
        lines = _lex_lines(self.lexer, self._text, self.line_start(start), start, self._info)
        self._pass = _Pass(lines, start)
        return self._pass

    def _advance(self, until_line: int | None, budget: int | None,
                 deadline: float | None = None) -> list[LineRuns]:
        """Run the background pass until ``until_line`` is verified, ``budget`` lines are
        lexed or the clock passes ``deadline``; returns the changed lines."""
        changed: list[LineRuns] = []
        lexed = 0
        n = len(self._starts)
        while self._frontier < n:
            if until_line is not None and self._frontier > until_line:
                break
            if budget is not None and lexed >= budget:
                break
            # Look at the clock every 16 lines only: a call costs more than lexing a short line.
            if deadline is not None and lexed and lexed % 16 == 0 and self._clock() >= deadline:
                break
            lex = self._pass or self._start_pass()
            got = next(lex.lines, None)
            lexed += 1
            if got is None or got.line >= n:
                # The lexer stopped early (it should not); verify what is left as plain text.
                for i in range(self._frontier, n):
                    self._store(i, (), _LOOSE_SYNC, changed)
                self._frontier = n
                self._pass = None
                break
            if got.line < self._frontier:
                # Between the sync line and the frontier. Usually unchanged, but a regex lexer
                # may decide early tokens by looking ahead: "/*" becomes a comment only once
                # a "*/" is typed lines below. Store (and report) whatever differs.
                self._store(got.line, got.runs, got.sync, changed)
                continue
            if (self._lexed[got.line] and got.sync and self._sync[got.line] == got.sync
                    and self._runs[got.line] == got.runs and got.line > lex.start_line):
                # Re-converged: this line and every reference line after it are right.
                nxt = self._lexed.find(0, got.line)
                self._frontier = n if nxt < 0 else nxt
                self._pass = None
                continue
            self._store(got.line, got.runs, got.sync, changed)
            self._frontier = got.line + 1
        return changed

    def _store(self, line: int, runs: tuple[Run, ...], sync: int,
               changed: list[LineRuns]) -> None:
        if self._runs[line] != runs:
            changed.append((line, runs))
        self._runs[line] = runs
        self._sync[line] = sync
        self._lexed[line] = 1

    def _lex_provisionally(self, first: int, last: int) -> None:
        """Lex ``first..last`` from a nearby column-0 line, leaving them unverified."""
        start = first
        for i in range(first, max(self._frontier, first - STRICT_SYNC_DISTANCE) - 1, -1):
            at = self.line_start(i)
            ch = self._text[at:at + 1]
            known_opaque = self._runs[i] is not None and self._sync[i] == _NOT_SYNC
            if i == 0 or (ch and ch not in " \t\n\r\f" and not known_opaque):
                start = i
                break
        lines = _lex_lines(self.lexer, self._text, self.line_start(start), start, self._info)
        for got in islice(lines, last - start + 1):
            if got.line >= first:
                self._runs[got.line] = got.runs
                self._sync[got.line] = got.sync
                self._lexed[got.line] = 0


    def _settle_starts(self) -> None:
        """Apply the pending shift to the stored line starts (O(lines), rare)."""
        if self._stale_by:
            by, cut = self._stale_by, self._stale_from
            self._starts[cut:] = [s + by for s in self._starts[cut:]]
        self._stale_from = len(self._starts)
        self._stale_by = 0


def _newline_starts(text: str, base: int) -> list[int]:
    out = []
    pos = text.find("\n")
    while pos >= 0:
        out.append(base + pos + 1)
        pos = text.find("\n", pos + 1)
    return out


def tk_ranges(line_runs: list[LineRuns],
              line_text: Callable[[int], str] | None = None) -> dict[str, list[str]]:
    """Group runs by tag as Tk index pairs: ``text.tag_add(tag, *pairs)`` per tag.

    Tk lines are 1-based, so line ``i`` here is ``i + 1`` there. Runs count code points; Tk 8.6
    counts an emoji as two columns, so with ``line_text`` (line → its text) the columns of a
    line holding one are converted (rio/text/utf16_columns.py).
    """
    out: dict[str, list[str]] = {}
    for line, runs in line_runs:
        tk_line = line + 1
        cols = columns(line_text(line)) if line_text is not None and runs else IDENTITY
        for tag, c0, c1 in runs:
            if not cols.identity:
                c0, c1 = cols.to_utf16(c0), cols.to_utf16(c1)
            out.setdefault(tag, []).extend((f"{tk_line}.{c0}", f"{tk_line}.{c1}"))
    return out


def retag_plan(line_runs: list[LineRuns], line_text: Callable[[int], str] | None = None
               ) -> list[tuple[str, str, dict[str, list[str]]]]:
    """What the Tk view does with runs, per block of consecutive lines:
    ``(first, last, ranges)`` — remove every tag in :data:`TAGS` from ``first`` to ``last``
    (Tk indices), then ``tag_add(tag, *pairs)`` for each item of ``ranges``. ``line_text`` as
    for :func:`tk_ranges`.

    Blocks matter because :meth:`Highlighter.step` reports only changed lines: clearing one
    span over a gap would strip lines that are not re-added. Ten ``tag_remove`` calls per block
    instead of per line keeps the Tcl round trips few.
    """
    plan: list[tuple[str, str, dict[str, list[str]]]] = []
    block: list[LineRuns] = []
    for item in sorted(line_runs):
        if block and item[0] != block[-1][0] + 1:
            plan.append(_block_plan(block, line_text))
            block = []
        if not block or item[0] != block[-1][0]:
            block.append(item)
    if block:
        plan.append(_block_plan(block, line_text))
    return plan


def _block_plan(block: list[LineRuns], line_text: Callable[[int], str] | None
                ) -> tuple[str, str, dict[str, list[str]]]:
    return (f"{block[0][0] + 1}.0", f"{block[-1][0] + 1}.end", tk_ranges(block, line_text))
