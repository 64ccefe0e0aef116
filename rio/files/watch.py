"""Which folders of the project are watched, and what a batch of changes on disk means for a
client showing the project: the folders whose entries changed (``fs.changed``, ADR-0037).

The core's watcher (actors/core/fs_watcher.py) hands this model the raw batches its file watcher
(watchfiles' Rust notify) collects, and publishes what :meth:`ProjectWatch.fold` makes of
them. This module has no thread and no watcher of its own: it walks folders and looks at paths.

* **What is watched:** the project's folders, non-recursively, breadth first (the folders a
  tree shows first come first), with the ignore rules of a listing (:mod:`rio.files.ignore`):
  ``.git``, ``node_modules``, virtualenvs and what ``.gitignore`` leaves out are never
  watched, so their churn costs nothing. Symlinked folders and names that are not UTF-8 are
  not followed. At most :data:`MAX_WATCHED_DIRS` folders (each is a kernel inotify watch); a
  bigger project's deeper folders need the tree's Refresh. ``.git/info`` is watched too, for
  ``info/exclude``.
* **What is reported:** a file or folder created, deleted or renamed in a watched folder that
  the listing would show; its folder is in ``folders``. Content changes are not (open buffers
  have ``buffer.conflict``). A changed ``.gitignore`` or ``info/exclude`` changes what every
  listing shows: ``more`` is set and the watched set is walked again.
* **Bounded:** the watcher collects changes until 50 ms pass without one, or 400 ms at most,
  so a storm becomes one event per 400 ms; a batch of more than :data:`STORM_CHANGES` raw
  changes (the kernel's queue may have overflowed and dropped some) is not looked at path by
  path: the folders are walked again and ``more`` says "list again everything you show".
  At most :data:`MAX_FOLDERS` folders are named; ``more`` says the rest were left out.
"""

from __future__ import annotations

import os
import stat as stat_module
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rio.files.ignore import GITIGNORE, INFO_EXCLUDE, IgnoreRules
from rio.files.workspace import Workspace, displayable

#: The change kinds of watchfiles' batches (``watchfiles.Change``).
ADDED, MODIFIED, DELETED = 1, 2, 3

#: Folders watched at most (each one an inotify watch: ~1 KiB of kernel memory, and the user's
#: fs.inotify.max_user_watches is shared with every other program).
MAX_WATCHED_DIRS = 10_000
#: Folders named in one ``fs.changed`` at most; past it ``more`` says the rest were left out.
MAX_FOLDERS = 100
#: A batch with more raw changes than this is a storm: no per-path work, the folders are
#: walked again and the event says ``more``.
STORM_CHANGES = 2_000
#: How the watcher batches (watchfiles' RustNotify.watch): a batch ends once no change came
#: for STEP_MS, or DEBOUNCE_MS after its first change at the latest.
DEBOUNCE_MS = 400
STEP_MS = 50

_INFO = os.path.dirname(INFO_EXCLUDE)   # ".git/info"


@dataclass
class Folded:
    """What one batch means: the folders whose entries changed (``"."`` the root), whether
    clients should list again everything they show (``more``), and whether the set of
    watched folders changed (``rearm``: the watcher must watch :meth:`ProjectWatch.paths`)."""

    folders: set[str] = field(default_factory=set)
    more: bool = False
    rearm: bool = False

    def merge(self, other: Folded) -> Folded:
        return Folded(self.folders | other.folders, self.more or other.more,
                      self.rearm or other.rearm)

    def event(self) -> dict[str, Any] | None:
        """``fs.changed``'s data, or None when nothing a client shows changed."""
        if not self.folders and not self.more:
            return None
        names = sorted(self.folders)
        return {"folders": names[:MAX_FOLDERS], "more": self.more or len(names) > MAX_FOLDERS}


class ProjectWatch:
    """The watched folders of one project and the meaning of a batch of changes in them."""

    def __init__(self, workspace: Workspace, *, max_dirs: int = MAX_WATCHED_DIRS) -> None:
        self.workspace = workspace
        self.root = str(workspace.root)
        self.max_dirs = max_dirs
        #: project-relative folder ("." the root) → its absolute path, in the order found
        self.dirs: dict[str, str] = {}
        #: folders the ignore rules left out (known, so a deleted one is known to be a folder)
        self.ignored: set[str] = set()
        #: the walk stopped at max_dirs: some folders are not watched
        self.capped = False
        self.rules: IgnoreRules = workspace.ignore_rules()
        self.scan()

    # --- the watched set ------------------------------------------------------------------

    def scan(self) -> None:
        """Walk the whole project again (fresh ignore rules)."""
        self.rules = self.workspace.ignore_rules()
        self.dirs = {}
        self.ignored = set()
        self.capped = False
        self._walk(".")

    def paths(self) -> list[str]:
        """The absolute paths to watch, non-recursively."""
        out = list(self.dirs.values())
        info = os.path.join(self.root, _INFO)
        if _real_dir(info):
            out.append(info)
        return out

    def _walk(self, start: str) -> bool:
        """Add ``start`` (a folder that is not ignored) and the folders under it, breadth
        first; False when nothing was added."""
        added = False
        queue = deque([start])
        while queue:
            rel = queue.popleft()
            if rel in self.dirs:
                continue
            if len(self.dirs) >= self.max_dirs:
                self.capped = True
                return added
            path = self.root if rel == "." else os.path.join(self.root, rel)
            self.dirs[rel] = path
            added = True
            try:
                with os.scandir(path) as it:
                    children = sorted(e.name for e in it if _entry_real_dir(e))
            except OSError:
                continue   # vanished, or unreadable: watched as far as it can be
            for name in children:
                child = name if rel == "." else f"{rel}/{name}"
                if displayable(child) != child:
                    continue   # not UTF-8: cannot be named on the wire, nor watched
                if self.rules.is_ignored(child, True):
                    self.ignored.add(child)
                else:
                    queue.append(child)
        return added

    def _forget(self, rel: str) -> None:
        prefix = rel + "/"
        for known in [d for d in self.dirs if d == rel or d.startswith(prefix)]:
            del self.dirs[known]
        self.ignored = {d for d in self.ignored if d != rel and not d.startswith(prefix)}

    # --- a batch ----------------------------------------------------------------------------

    def rescan(self) -> Folded:
        """Walk everything again: a storm, a lost batch or new ignore rules. Clients list
        again all they show."""
        before = set(self.dirs)
        self.scan()
        return Folded(more=True, rearm=set(self.dirs) != before)

    def fold(self, changes: Iterable[tuple[int, str]]) -> Folded:
        """What a batch of ``(kind, absolute path)`` changes means (see the module's doc)."""
        batch = list(changes)
        if len(batch) > STORM_CHANGES:
            return self.rescan()
        deleted = {path for kind, path in batch if kind == DELETED}
        out = Folded()
        rules_changed = False
        for kind, path in batch:
            rel = self._relative(path)
            if rel is None:
                continue
            if rel == INFO_EXCLUDE or rel.rsplit("/", 1)[-1] == GITIGNORE:
                rules_changed = True
            if kind == MODIFIED or rel.startswith(_INFO + "/"):
                continue   # contents, not entries: the tree shows names
            parent = rel.rpartition("/")[0] or "."
            if parent not in self.dirs:
                continue   # a folder no longer watched (renamed, deleted) or never was
            now_dir = _real_dir(path)
            was_dir = rel in self.dirs
            if self.rules.is_ignored(rel, now_dir or was_dir or rel in self.ignored):
                continue
            out.folders.add(parent)
            if now_dir and (not was_dir or path in deleted):
                # New (or deleted and made again: its old watch is gone). What was made in it
                # before the watch was armed is there when a client lists it: name it too.
                self._forget(rel)
                if self._walk(rel):
                    out.rearm = True
                    out.folders.add(rel)
            elif not now_dir and was_dir:
                self._forget(rel)   # the kernel dropped its watch (and its folders') itself
        if rules_changed:
            return out.merge(self.rescan())
        return out

    def _relative(self, path: str) -> str | None:
        """``path`` relative to the root (posix), or None for the root itself or outside."""
        if not path.startswith(self.root + os.sep):
            return None
        rel = path[len(self.root) + 1:]
        return rel.replace(os.sep, "/") if os.sep != "/" else rel


def _real_dir(path: str) -> bool:
    """A folder, not a symlink to one (walks never follow links)."""
    try:
        return stat_module.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _entry_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
