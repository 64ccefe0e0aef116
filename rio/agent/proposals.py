"""Write proposals: the diff the user reviews, and locating the edit again at approval.

A ``propose_edit`` names the text to replace (``old_text``), not a position, because the
model cannot know offsets reliably and because the user may keep typing while a proposal
waits. At approval the target is searched for again in the *current* text (ADR-0016): found
exactly once, it is replaced there; found nowhere ("vanished": the user typed over it) or
more than once ("ambiguous": the model must quote more context) the edit is refused and the
model is told why, in words it can act on.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

ProposalKind = Literal["edit", "create", "command"]

#: Diffs longer than this are cut for the event (the user still sees the size of the change).
MAX_DIFF_CHARS = 200_000


@dataclass(frozen=True)
class Located:
    """Where ``old_text`` is in the current text: code-point offsets [start, end)."""

    start: int
    end: int


@dataclass(frozen=True)
class Refusal:
    """Why an edit cannot be applied; ``reason`` is a stable id, ``message`` tells the model."""

    reason: Literal["vanished", "ambiguous", "empty_target", "no_change", "exists",
                    "rejected", "interrupted", "stopped"]
    message: str


def locate(text: str, old_text: str) -> Located | Refusal:
    """Find ``old_text`` exactly once in ``text``."""
    if not old_text:
        return Refusal("empty_target", "old_text is empty; quote the exact text to replace "
                       "(use propose_create for a new file).")
    first = text.find(old_text)
    if first < 0:
        return Refusal("vanished", "old_text was not found in the current text (it may have "
                       "been edited since you read it); read the file again and quote it "
                       "exactly.")
    if text.find(old_text, first + 1) >= 0:
        count = max(2, text.count(old_text))  # overlapping matches count once in str.count
        return Refusal("ambiguous", f"old_text occurs {count} times; quote more surrounding "
                       "lines so it matches exactly once.")
    return Located(first, first + len(old_text))


def apply_located(text: str, where: Located, new_text: str) -> str:
    return text[:where.start] + new_text + text[where.end:]


#: A line and its "\n" (the last line may have none).
_LINE = re.compile(r"[^\n]*\n|[^\n]+")


def lines_of(text: str) -> list[str]:
    """``text``'s lines with their ends, split at ``"\\n"`` only: ``str.splitlines`` also ends a
    line at ``"\\r"``, a form feed, ``"\\x1c"``, NEL or U+2028, so the diff of a file holding
    one (a ``^L`` page break in source) could not be read back line for line
    (rio/agent/unpatch.py)."""
    return _LINE.findall(text)


def unified_diff(path: str, before: str, after: str, *, created: bool = False) -> str:
    """A unified diff of ``before`` → ``after`` (``created``: from /dev/null)."""
    a = lines_of(before)
    b = lines_of(after)
    lines = list(difflib.unified_diff(a, b, "/dev/null" if created else f"a/{path}",
                                      f"b/{path}", n=3))
    # difflib leaves a last line without "\n" unterminated; mark it the way git does.
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    diff = "".join(out)
    if len(diff) > MAX_DIFF_CHARS:
        diff = diff[:MAX_DIFF_CHARS] + (f"\n[… diff truncated: showing {MAX_DIFF_CHARS} of "
                                        f"{len(diff)} characters …]\n")
    return diff


def edit_diff(path: str, text: str, old_text: str, new_text: str) -> tuple[str, Refusal | None]:
    """The diff an edit would make to ``text`` now, or why it cannot be made."""
    where = locate(text, old_text)
    if isinstance(where, Refusal):
        return "", where
    if old_text == new_text:
        return "", Refusal("no_change", "old_text and new_text are the same; nothing to do.")
    return unified_diff(path, text, apply_located(text, where, new_text)), None
