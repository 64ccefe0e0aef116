"""Pure text operations the editor needs, each answering with edits against the given text.

Nothing here touches a widget or a buffer. Every command takes the text (a plain ``str``, which
the UI has) plus offsets, and returns :class:`TextEdit` records ``(start, end, text)`` in
offsets of the text it was given, ascending and non-overlapping. The UI sends them to the core
as ``buffer.replace`` operations in one request, so one command is one undo step; applying them
from the last to the first keeps the earlier offsets valid (:func:`apply_edits` does exactly
that and is what the tests use).

Offsets count ``str`` characters (code points), like Python slicing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple


class TextEdit(NamedTuple):
    """Replace ``text[start:end]`` with ``text``. A tuple so it crosses the bus as a list."""

    start: int
    end: int
    text: str


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits given in offsets of ``text`` (any order)."""
    out = text
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        out = out[:edit.start] + edit.text + out[edit.end:]
    return out


@dataclass(frozen=True)
class IndentStyle:
    """How one indentation level is written: ``width`` spaces, or one tab when ``use_tabs``."""

    width: int = 4
    use_tabs: bool = False

    @property
    def unit(self) -> str:
        return "\t" if self.use_tabs else " " * self.width


# --- lines -------------------------------------------------------------------------------------

def line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def line_end(text: str, offset: int) -> int:
    """Offset of the newline ending the line holding ``offset`` (or ``len(text)``)."""
    end = text.find("\n", offset)
    return len(text) if end < 0 else end


def touched_line_starts(text: str, sel_start: int, sel_end: int) -> list[int]:
    """Start offsets of the lines a selection touches.

    A selection that ends at column 0 does not touch that last line: selecting whole lines by
    dragging to the start of the next one must not indent the next one too (every editor agrees).
    """
    lo, hi = min(sel_start, sel_end), max(sel_start, sel_end)
    if hi > lo and hi > 0 and text[hi - 1:hi] == "\n":
        hi -= 1
    starts = [line_start(text, lo)]
    pos = text.find("\n", starts[0], hi)
    while pos >= 0:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1, hi)
    return starts


def _leading_ws(text: str, start: int) -> str:
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _is_blank_line(text: str, start: int) -> bool:
    return text[start:line_end(text, start)].strip() == ""


# --- auto-indent -------------------------------------------------------------------------------

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}
# Python statements after which the next line goes back one level.
_PY_DEDENT = re.compile(r"^\s*(return\b|pass\b|break\b|continue\b|raise\b)")


def newline_with_indent(text: str, sel_start: int, sel_end: int | None = None,
                        style: IndentStyle = IndentStyle(), language: str = "",
                        comment_token: str | None = None) -> tuple[TextEdit, int]:
    """Return the edit for Enter at ``sel_start`` (replacing a selection) and the new cursor.

    The new line copies the indentation of the current line, adds a level after a line ending in
    ``:`` ``{`` ``(`` ``[`` (a trailing ``comment_token`` comment outside quotes is ignored, so
    ``if x:  # why`` still indents) and, between a bracket pair (``{|}``), puts the closer on
    its own line. With ``language="python"`` a ``return``/``pass``/``raise``… line dedents the
    next one.
    """
    end = sel_start if sel_end is None else sel_end
    lo, hi = min(sel_start, end), max(sel_start, end)
    start_of_line = line_start(text, lo)
    indent = _leading_ws(text, start_of_line)
    before = text[start_of_line:lo]
    if len(indent) > len(before):  # cursor inside the indentation: keep only what is left of it
        indent = before
    stripped = _strip_comment(before, comment_token).rstrip()
    after_rest = text[hi:line_end(text, hi)]
    after = after_rest.lstrip(" \t")
    hi_trimmed = hi + (len(after_rest) - len(after))  # eat spaces that would trail the cursor
    if stripped and stripped[-1] in _OPENERS and after[:1] == _OPENERS[stripped[-1]]:
        inner = "\n" + indent + style.unit
        edit = TextEdit(lo, hi_trimmed, inner + "\n" + indent)
        return edit, lo + len(inner)
    if stripped.endswith((":", "{", "(", "[")):
        indent += style.unit
    elif language == "python" and _PY_DEDENT.match(before):
        indent = _dedent_once(indent, style)
    inserted = "\n" + indent
    return TextEdit(lo, hi_trimmed, inserted), lo + len(inserted)


def _strip_comment(line: str, token: str | None) -> str:
    if not token:
        return line
    mask = _quoted_mask(line, 0)
    at = line.find(token)
    while at >= 0:
        if not mask[at]:
            return line[:at]
        at = line.find(token, at + 1)
    return line


def dedent_for_closer(text: str, offset: int, closer: str,
                      style: IndentStyle = IndentStyle()) -> TextEdit | None:
    """Typing ``}`` ``)`` ``]`` on a line that is blank up to the cursor: the edit that puts the
    line back at the indentation of the line holding the matching opener (or one level less).

    The caller inserts the closer itself after applying this edit. None when nothing changes.
    """
    if closer not in _CLOSERS:
        return None
    start = line_start(text, offset)
    if text[start:offset].strip(" \t"):
        return None
    probe = text[:offset] + closer
    found = match_bracket(probe, offset)
    if found is not None:
        opener_line = line_start(probe, found[1])
        target = _leading_ws(probe, opener_line)
    else:
        target = _dedent_once(text[start:offset], style)
    if target == text[start:offset]:
        return None
    return TextEdit(start, offset, target)


def _dedent_once(indent: str, style: IndentStyle) -> str:
    if indent.endswith("\t"):
        return indent[:-1]
    spaces = len(indent) - len(indent.rstrip(" "))
    return indent[:len(indent) - min(spaces, style.width)]


# --- block indent / dedent ---------------------------------------------------------------------

def indent_lines(text: str, sel_start: int, sel_end: int,
                 style: IndentStyle = IndentStyle()) -> list[TextEdit]:
    """Tab on a selection: one level more on every non-blank line it touches."""
    return [TextEdit(s, s, style.unit) for s in touched_line_starts(text, sel_start, sel_end)
            if not _is_blank_line(text, s)]


def dedent_lines(text: str, sel_start: int, sel_end: int,
                 style: IndentStyle = IndentStyle()) -> list[TextEdit]:
    """Shift+Tab: remove one level (a tab, or up to ``width`` spaces) from each touched line."""
    edits = []
    for s in touched_line_starts(text, sel_start, sel_end):
        if text[s:s + 1] == "\t":
            edits.append(TextEdit(s, s + 1, ""))
            continue
        n = 0
        while n < style.width and text[s + n:s + n + 1] == " ":
            n += 1
        if n:
            edits.append(TextEdit(s, s + n, ""))
    return edits


# --- comments ----------------------------------------------------------------------------------

_COMMENT_BY_EXT: dict[str, str] = {}
for _token, _exts in {
    "#": "py pyw pyi sh bash zsh fish rb pl pm r toml yaml yml cfg conf ini mk cmake nim "
         "ps1 tcl jl ex exs coffee dockerfile gitignore",
    "//": "c h cc cpp cxx hpp hh hxx cs java js mjs cjs jsx ts tsx go rs swift kt kts scala "
          "dart php zig groovy gradle proto json5 v sv glsl",
    "--": "sql lua hs elm ada adb ads vhd vhdl",
    ";": "lisp el clj cljs scm ss rkt asm s nasm",
    "%": "tex sty cls m erl hrl pro",
    "'": "vb vbs bas",
    '"': "vim",
}.items():
    for _ext in _exts.split():
        _COMMENT_BY_EXT[_ext] = _token
_COMMENT_BY_NAME = {"makefile": "#", "gnumakefile": "#", "dockerfile": "#", "cmakelists.txt": "#",
                    ".bashrc": "#", ".profile": "#", "vimrc": '"', ".vimrc": '"'}


def comment_token_for(filename: str) -> str | None:
    """The line-comment token for a file name, or None when the language has none we know."""
    base = os.path.basename(filename).lower()
    if base in _COMMENT_BY_NAME:
        return _COMMENT_BY_NAME[base]
    ext = base.rsplit(".", 1)[1] if "." in base else ""
    return _COMMENT_BY_EXT.get(ext)


def toggle_comment(text: str, sel_start: int, sel_end: int, token: str = "#") -> list[TextEdit]:
    """Comment the touched lines, or uncomment them when every non-blank one is commented.

    Comments go at the smallest indentation of the block, so the block keeps its shape when
    uncommented; uncommenting removes the token and one following space.
    """
    starts = [s for s in touched_line_starts(text, sel_start, sel_end)
              if not _is_blank_line(text, s)]
    if not starts:
        return []
    indents = {s: len(_leading_ws(text, s)) for s in starts}
    commented = all(text.startswith(token, s + indents[s]) for s in starts)
    edits = []
    if commented:
        for s in starts:
            at = s + indents[s]
            end = at + len(token)
            if text[end:end + 1] == " ":
                end += 1
            edits.append(TextEdit(at, end, ""))
        return edits
    column = min(indents.values())
    return [TextEdit(s + column, s + column, token + " ") for s in starts]


# --- brackets ----------------------------------------------------------------------------------

def match_bracket(text: str, offset: int, limit: int = 1_000_000) -> tuple[int, int] | None:
    """Find the partner of the bracket at ``offset`` (or just before it, like a caret after it).

    Returns ``(bracket, partner)`` offsets, or None when there is no bracket there or no partner
    within ``limit`` characters. Brackets inside quotes on the same line are ignored when the
    bracket itself is outside quotes — a cheap heuristic, good for ordinary code.
    """
    for at in (offset, offset - 1):
        if 0 <= at < len(text) and (text[at] in _OPENERS or text[at] in _CLOSERS):
            partner = _scan_partner(text, at, limit)
            return None if partner is None else (at, partner)
    return None


def _scan_partner(text: str, at: int, limit: int) -> int | None:
    ch = text[at]
    forward = ch in _OPENERS
    partner = _OPENERS[ch] if forward else _CLOSERS[ch]
    # str.find/rfind jump between bracket characters at C speed; only brackets are looked at.
    lo, hi = (at + 1, min(len(text), at + 1 + limit)) if forward else (max(0, at - limit), at)
    own_start = line_start(text, at)
    skip_quoted = not _quoted_mask(text, at)[at - own_start]
    mask_start, mask = own_start, _quoted_mask(text, at)
    depth = 1
    while lo < hi:
        if forward:
            found = [p for p in (text.find(ch, lo, hi), text.find(partner, lo, hi)) if p >= 0]
            if not found:
                return None
            pos = min(found)
            lo = pos + 1
        else:
            pos = max(text.rfind(ch, lo, hi), text.rfind(partner, lo, hi))
            if pos < 0:
                return None
            hi = pos
        if skip_quoted:
            start = line_start(text, pos)
            if start != mask_start:
                mask_start, mask = start, _quoted_mask(text, pos)
            if mask[pos - start]:
                continue
        depth += 1 if text[pos] == ch else -1
        if depth == 0:
            return pos
    return None


def _quoted_mask(text: str, offset: int) -> list[bool]:
    """Per column of the line holding ``offset``: is that column inside '…' or "…"?"""
    start = line_start(text, offset)
    line = text[start:line_end(text, offset)]
    mask = []
    quote = ""
    escaped = False
    for c in line:
        if quote:
            mask.append(True)
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == quote:
                quote = ""
        else:
            if c in "'\"":
                quote = c
                mask.append(True)
            else:
                mask.append(False)
    mask.append(False)  # the newline column
    return mask


# --- words -------------------------------------------------------------------------------------

def _char_class(c: str) -> int:
    if c.isalnum() or c == "_":
        return 2
    if c.isspace():
        return 0
    return 1


def word_at(text: str, offset: int) -> tuple[int, int]:
    """The span a double-click at ``offset`` selects: a word, a run of punctuation, or spaces."""
    if not text:
        return (0, 0)
    at = min(max(offset, 0), len(text) - 1)
    if text[at] == "\n" and at > 0 and text[at - 1] != "\n":
        at -= 1  # clicking past the end of a line selects its last word
    cls = _char_class(text[at])
    if text[at] == "\n":
        return (at, at)
    lo = at
    while lo > 0 and text[lo - 1] != "\n" and _char_class(text[lo - 1]) == cls:
        lo -= 1
    hi = at + 1
    while hi < len(text) and text[hi] != "\n" and _char_class(text[hi]) == cls:
        hi += 1
    return (lo, hi)


def next_word_boundary(text: str, offset: int) -> int:
    """Ctrl+Right: skip spaces, then to the end of the next word or punctuation run."""
    pos = max(0, offset)
    n = len(text)
    if pos < n and text[pos] == "\n":
        return pos + 1
    while pos < n and text[pos] in " \t":
        pos += 1
    if pos < n and text[pos] != "\n":
        cls = _char_class(text[pos])
        while pos < n and text[pos] != "\n" and _char_class(text[pos]) == cls:
            pos += 1
    return pos


def prev_word_boundary(text: str, offset: int) -> int:
    """Ctrl+Left: skip spaces backwards, then to the start of the word or punctuation run."""
    pos = min(offset, len(text))
    if pos > 0 and text[pos - 1] == "\n":
        return pos - 1
    while pos > 0 and text[pos - 1] in " \t":
        pos -= 1
    if pos > 0 and text[pos - 1] != "\n":
        cls = _char_class(text[pos - 1])
        while pos > 0 and text[pos - 1] != "\n" and _char_class(text[pos - 1]) == cls:
            pos -= 1
    return pos


__all__: Sequence[str] = (
    "TextEdit", "apply_edits", "IndentStyle", "line_start", "line_end", "touched_line_starts",
    "newline_with_indent", "dedent_for_closer", "indent_lines", "dedent_lines", "comment_token_for", "toggle_comment",
    "match_bracket", "word_at", "next_word_boundary", "prev_word_boundary",
)
