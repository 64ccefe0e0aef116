"""Find file references in run and build output, so the output pane can make them clickable.

Recognised forms (the span covers the whole reference, so a click anywhere on it opens it):

* ``path:line`` and ``path:line:col`` — gcc/clang, go, rustc short form, pytest
  (``tests/x.py:12: AssertionError``), grep -n, eslint unix, node stacks ``(/a/b.js:3:9)``;
* ``File "path", line N`` — Python tracebacks;
* ``--> path:line:col`` — rustc's long form (covered by the first rule);
* ``path(line,col)`` and ``path(line)`` — tsc and MSVC.

A bare ``name:12`` is only taken when the name has an extension or a directory part (or is a
known extension-less build file such as ``Makefile``): times like ``12:30:45`` and words like
``error:3`` must not become links. Anything inside a URL is ignored, and so are ``File "<stdin>"``-style pseudo files.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class FileRef(NamedTuple):
    """``text[start:end]`` refers to ``path`` at 1-based ``line`` and ``col`` (None: no column)."""

    start: int
    end: int
    path: str
    line: int
    col: int | None


# Colour escapes (gcc -fdiagnostics-color, pytest --color) are blanked to spaces of the same
# length before matching, so offsets still index the original text.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
_PY_TRACEBACK = re.compile(r'File "(?P<path>[^"\n]+)", line (?P<line>\d+)')
# A path: optional drive letter, then characters that are not spaces, quotes, brackets or
# colons. Colons end it, so ``a.py:12:5`` splits cleanly.
_PATH = r"(?P<path>(?:[A-Za-z]:[\\/])?[^\s:\"'()\[\]<>|,;=]+)"
_COLON_FORM = re.compile(_PATH + r":(?P<line>\d+)(?::(?P<col>\d+))?(?![\d.]*\d)")
_PAREN_FORM = re.compile(_PATH + r"\((?P<line>\d+)(?:,(?P<col>\d+))?\)")
_EXTENSIONLESS = {"Makefile", "makefile", "GNUmakefile", "Dockerfile", "Containerfile",
                  "Jenkinsfile", "Rakefile", "Gemfile", "Vagrantfile", "Justfile", "justfile"}
_HAS_EXT = re.compile(r"\.[A-Za-z][A-Za-z0-9_+-]{0,9}$")


def _looks_like_path(path: str) -> bool:
    base = re.split(r"[\\/]", path)[-1]
    if base in _EXTENSIONLESS:
        return True
    if not re.search(r"[A-Za-z]", base):
        return False
    return bool(_HAS_EXT.search(base)) or (("/" in path or "\\" in path) and bool(base))


def may_hold_file_refs(line: str) -> bool:
    """A cheap test (C-speed ``in``) that lets most lines skip :func:`find_file_refs`: every
    recognised form has a colon, a bracket, or Python's ``File "``."""
    return ":" in line or "(" in line or 'File "' in line


def find_file_refs(text: str) -> list[FileRef]:
    """All file references in ``text`` (one line or many), in order, not overlapping."""
    text = _ANSI.sub(lambda m: " " * len(m.group()), text)
    urls = [m.span() for m in _URL.finditer(text)]
    found: list[FileRef] = []

    def free(start: int, end: int) -> bool:
        return not any(s < end and start < e for s, e in urls) and \
            not any(r.start < end and start < r.end for r in found)

    for m in _PY_TRACEBACK.finditer(text):
        if free(*m.span()) and not m.group("path").startswith("<"):  # <stdin>, <string>
            found.append(FileRef(m.start(), m.end(), m.group("path"), int(m.group("line")), None))
    for rx in (_COLON_FORM, _PAREN_FORM):
        for m in rx.finditer(text):
            path = m.group("path")
            lead = len(path) - len(path.lstrip("."))  # "...x.py" from an ellipsis is not a path
            if lead > 2 or not _looks_like_path(path) or not free(*m.span()):
                continue
            line = int(m.group("line"))
            if line == 0:
                continue
            col = int(m.group("col")) if m.group("col") else None
            found.append(FileRef(m.start(), m.end(), path, line, col))
    found.sort()
    return found
