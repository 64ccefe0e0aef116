"""Which paths of a workspace Rio leaves out of listings, walks and searches (ADR-0004).

Two kinds of rule:

* **Always:** version-control folders, ``node_modules``, virtualenvs (``.venv``, ``venv`` and any
  folder holding a ``pyvenv.cfg``) and tool caches. Nobody edits these by hand and they can hold
  hundreds of thousands of files.
* **Git's own:** ``.git/info/exclude``, the root ``.gitignore`` and nested ``.gitignore`` files,
  matched with ``pathspec``'s ``GitIgnoreSpec`` (git's wildmatch: negation, dir-only ``/``
  suffix, anchored patterns, ``**``). A deeper ``.gitignore`` wins over a shallower one, and every
  ``.gitignore`` wins over ``info/exclude``, as in git.

The module does no I/O itself: the workspace hands in ``read_text`` and ``is_virtualenv``, so the
rules are tested with dictionaries.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import regex
from pathspec import GitIgnoreSpec
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

#: Folder names skipped everywhere, whatever .gitignore says.
ALWAYS_IGNORED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".bzr",
    "node_modules", ".venv", "venv",
    "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox",
})

GITIGNORE = ".gitignore"
INFO_EXCLUDE = ".git/info/exclude"

ReadText = Callable[[str], "str | None"]
IsVirtualenv = Callable[[str], bool]


def _never_virtualenv(rel: str) -> bool:
    return False


class _Pattern(GitIgnoreSpecPattern):
    """pathspec's gitignore pattern, matched with the ``regex`` package instead of ``re``.

    pathspec turns ``*a*a*a…*b`` into ``[^/]*a[^/]*a…b``; ``re`` tries every way to split a
    long name between the stars (minutes for 12 stars and a 250-character name), with the GIL
    held, so one such line in a project's .gitignore — a cloned repository's, or one an editor
    key saved — hung every listing and walk in the core until the supervisor killed it as
    hung. ``regex`` matches it in milliseconds and releases the GIL while it matches."""

    __slots__ = ()

    def __init__(self, pattern: Any, include: bool | None = None) -> None:
        super().__init__(pattern, include)
        if isinstance(self.regex, re.Pattern):
            self.regex = regex.compile(self.regex.pattern, self.regex.flags & _FLAGS)


_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE


def _compile(lines: list[str]) -> GitIgnoreSpec:
    return GitIgnoreSpec.from_lines(lines, _Pattern)


def compile_patterns(lines: list[str]) -> GitIgnoreSpec:
    """Compile gitignore-style patterns strictly: ``ValueError`` naming the first line that
    does not compile (a list that guards something must not drop a line silently)."""
    for line in lines:
        try:
            _compile([line])
        except (ValueError, re.error, regex.error) as exc:
            raise ValueError(f"{line!r} is not a gitignore pattern ({exc})") from None
    return _compile(lines)


def parse_gitignore(text: str) -> GitIgnoreSpec:
    """Compile one ignore file; lines git would not understand are skipped, not fatal."""
    lines = text.splitlines()
    try:
        return _compile(lines)
    except (ValueError, re.error, regex.error):
        # One bad line (a lone "!" or "[z-a]") must not make the whole file count for nothing,
        # and must never break a listing: keep the lines that compile.
        good = []
        for line in lines:
            try:
                _compile([line])
            except (ValueError, re.error, regex.error):
                continue
            good.append(line)
        return _compile(good)


class IgnoreRules:
    """Answers "is this path ignored?" for one workspace, reading ignore files lazily.

    Paths are posix and relative to the workspace root (``"src/app.py"``). One instance caches the
    ignore files it has read; make a new one to see edits to them (a listing or a walk does).
    """

    def __init__(self, read_text: ReadText, is_virtualenv: IsVirtualenv = _never_virtualenv, *,
                 nested: bool = True):
        self._read_text = read_text
        self._is_virtualenv = is_virtualenv
        self._nested = nested
        self._specs: dict[str, GitIgnoreSpec | None] = {}

    def is_ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` itself is ignored (its parents are assumed not to be: walks prune)."""
        parts = [p for p in rel.split("/") if p and p != "."]
        if not parts:
            return False  # the root is never ignored
        if is_dir and (parts[-1] in ALWAYS_IGNORED_DIRS or self._is_virtualenv("/".join(parts))):
            return True
        verdict = self._git_verdict(parts, is_dir)
        return bool(verdict)

    def is_ignored_with_parents(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` or any folder above it is ignored (git cannot re-include a file whose
        folder is excluded, so neither do we)."""
        parts = [p for p in rel.split("/") if p and p != "."]
        for depth in range(1, len(parts)):
            if self.is_ignored("/".join(parts[:depth]), True):
                return True
        return self.is_ignored("/".join(parts), is_dir)

    def _git_verdict(self, parts: list[str], is_dir: bool) -> bool | None:
        # Deepest .gitignore first: the first one with a matching pattern decides.
        levels = range(len(parts) - 1, -1, -1) if self._nested else range(0, 1)
        for depth in levels:
            folder = "/".join(parts[:depth])
            spec = self._spec(f"{folder}/{GITIGNORE}" if folder else GITIGNORE)
            if spec is None:
                continue
            inner = "/".join(parts[depth:]) + ("/" if is_dir else "")
            result = spec.check_file(inner).include
            if result is not None:
                return result
        exclude = self._spec(INFO_EXCLUDE)
        if exclude is not None:
            result = exclude.check_file("/".join(parts) + ("/" if is_dir else "")).include
            if result is not None:
                return result
        return None

    def _spec(self, rel_file: str) -> GitIgnoreSpec | None:
        if rel_file not in self._specs:
            text = self._read_text(rel_file)
            self._specs[rel_file] = parse_gitignore(text) if text else None
        return self._specs[rel_file]
