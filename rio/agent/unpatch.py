"""A file's text before a change, from its text now and the change's unified diff.

The panel's *Revert* on a file an ACP agent changed behind Rio's back (``agent.changed_files``,
rio/agent/disk_changes.py) has the diff the session made at the end of the turn and the file
as it is now; :func:`text_before` takes the diff back. It refuses — returns None — rather than
guess: when the file no longer matches the diff's new side (changed again since), when the diff
was cut short (a large change), or when it is not a diff of one text file at all.
"""

from __future__ import annotations

import re

from rio.agent.proposals import lines_of

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"
#: How disk_changes.py and proposals.py mark a diff they cut short.
_CUT = ("[… diff truncated", "more characters]")


def _hunks(diff: str) -> list[tuple[int, int, list[str], list[str]]] | None:
    """``[(new_start, new_count, old_lines, new_lines)]`` (lines with their ends), or None."""
    lines = lines_of(diff)
    hunks: list[tuple[int, int, list[str], list[str]]] = []
    i = 0
    while i < len(lines) and not lines[i].startswith("@@"):
        if not lines[i].startswith(("--- ", "+++ ")):
            return None
        i += 1
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if m is None:
            return None
        old_n = int(m.group(2)) if m.group(2) is not None else 1
        new_start = int(m.group(3))
        new_n = int(m.group(4)) if m.group(4) is not None else 1
        old: list[str] = []
        new: list[str] = []
        i += 1
        last: list[list[str]] = []
        while i < len(lines) and (len(old) < old_n or len(new) < new_n
                                  or lines[i].startswith("\\")):
            line = lines[i]
            if line.rstrip("\n") == _NO_NEWLINE:
                for side in last:       # the line before it has no end
                    side[-1] = side[-1][:-1] if side[-1].endswith("\n") else side[-1]
                i += 1
                continue
            tag, body = line[:1], line[1:]
            if tag == " ":
                old.append(body)
                new.append(body)
                last = [old, new]
            elif tag == "-":
                old.append(body)
                last = [old]
            elif tag == "+":
                new.append(body)
                last = [new]
            else:
                return None
            i += 1
        if len(old) != old_n or len(new) != new_n:
            return None
        hunks.append((new_start, new_n, old, new))
    return hunks


def text_before(diff: str, now: str) -> str | None:
    """The text the diff was made from, given the text it led to; None when that cannot be
    known for sure (see the module docstring)."""
    if not diff.strip() or any(mark in diff for mark in _CUT):
        return None
    hunks = _hunks(diff)
    if not hunks:
        return None
    current = lines_of(now)
    out: list[str] = []
    pos = 0
    for new_start, new_n, old, new in hunks:
        at = new_start if new_n == 0 else new_start - 1
        if at < pos or current[at:at + new_n] != new:
            return None
        out += current[pos:at]
        out += old
        pos = at + new_n
    return "".join(out + current[pos:])
