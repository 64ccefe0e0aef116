"""Writes only an owner may make: files whose contents run as code later (ADR-0019, "Code that
runs later").

An editor key edits the project's text. It must not be able to plant code that runs later on
the server as its user without that user deciding to run it — each of these was done with an
editor key before this module existed:

* git runs what ``.git/config`` names (``core.fsmonitor`` on every ``git status``, a
  ``core.sshCommand``, filters …) and the hooks in ``.git/hooks`` (or ``core.hooksPath``);
* Python runs every ``import`` line of a ``*.pth`` file in a ``site-packages`` folder when it
  starts, and a virtual environment's ``bin/`` scripts and ``sitecustomize.py`` whenever it is
  used;
* a file that is executable runs by its name (a hook, ``./build.sh``): an editor's save must
  never leave one it changed behind.

The rules, on the real path (links resolved: the workspace confined it) relative to the project
root, names compared case-folded (a case-insensitive file system has one ``.git``):

==================  =======================================================================
``git``             any component named ``.git`` (the repository folder, or a ``.git`` file
                    that names another one)
``hooks``           inside the folder ``core.hooksPath`` names (the project's ``.git/config``,
                    else the server user's ``~/.gitconfig`` or ``$XDG_CONFIG_HOME/git/config``),
                    when that folder is inside the project (husky's ``.husky/``)
``virtualenv``      a component named ``.venv``, ``venv``, ``site-packages`` or
                    ``dist-packages``; inside a folder (the root too) that holds
                    ``pyvenv.cfg``; a file named ``pyvenv.cfg``
``pth``             a name ending in ``.pth``
``listed``          a pattern of the owner's ``[remote] owner_only_paths`` (gitignore style,
                    rio/config/remote_settings.py)
``executable``      the file on disk has an executable, set-user-ID or set-group-ID bit
==================  =======================================================================

For a key below owner a save matching one is refused (``auth.owner_only_path``) before anything
on disk changes; the buffer keeps the text and its journal. And every save by such a key is
written without those bits (:func:`rio.files.files.save_file` ``keep_exec=False``), so a file
made executable while it was being written still does not come out executable. Reads are not
touched. Local clients and owner keys write as before.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pathspec import GitIgnoreSpec

from rio.files.files import EXEC_BITS, FilePort, OsFilePort
from rio.files.ignore import compile_patterns
from rio.protocol.errors import AuthError, ConfigError

Reason = Literal["git", "hooks", "virtualenv", "pth", "listed", "executable"]

_VENV_PARTS = frozenset({".venv", "venv", "site-packages", "dist-packages"})
_WHY: dict[Reason, str] = {
    "git": "it is inside the git repository (.git), whose config and hooks git runs as code",
    "hooks": "it is inside the folder git runs hooks from (core.hooksPath)",
    "virtualenv": "it is inside a Python virtual environment, whose files run whenever it is "
                  "used",
    "pth": "Python runs the import lines of a .pth file each time it starts",
    "listed": "the server's owner listed it in [remote] owner_only_paths",
    "executable": "it is executable, so it runs as code by its name",
}


@dataclass(frozen=True)
class _Stamp:
    mtime_ns: int
    size: int


class OwnerOnlyPaths:
    """The rules above for one project. ``patterns`` gives the owner's extra patterns (it may
    raise ``config.invalid``); by default they are read from config.toml's ``[remote]
    owner_only_paths`` and read again when that file changes."""

    def __init__(self, root: str | os.PathLike[str], *,
                 patterns: Callable[[], tuple[str, ...]] | None = None,
                 git_config_files: tuple[Path, ...] | None = None):
        self.root = Path(os.path.realpath(root))
        self._patterns = patterns
        self._git_config_files = git_config_files
        self._stamp: _Stamp | None = None      # config.toml's, when the patterns were read
        self._read = False
        self._config_file: Path | None = None
        self._root_str = str(self.root)
        self._spec: GitIgnoreSpec | None = None
        self._spec_error: ConfigError | None = None
        #: core.hooksPath as found, with the stamps of the files it was read from
        self._hooks: tuple[tuple[_Stamp | None, ...], list[str] | None] | None = None

    # --- the check ------------------------------------------------------------------------------
    def refusal(self, target: Path, role: str, port: FilePort | None = None, *,
                doing: str = "saving") -> AuthError | None:
        """Why ``role`` may not write ``target`` (a real path inside the root), as the error to
        answer with; None when it may. An owner may write anything the workspace allows.
        ``doing`` names the write in the message ("saving", "editing")."""
        if role == "owner":
            return None
        rel = self._relative(target)
        reason = self.reason(rel)
        if reason is None and self._executable(target, port or OsFilePort()):
            reason = "executable"
        if reason is None:
            return None
        next_step = ("Ask the server's owner to save it, or to give this key the owner role "
                     "(`rio keys --set-role NAME owner` on the server); your text stays in the "
                     "buffer")
        if reason == "executable":
            next_step += ", or save it under another name (File > Save As): a file an editor " \
                         "creates is never executable"
        return AuthError("owner_only_path",
                         f"{rel}: {_WHY[reason]}, so {doing} it needs the owner role; this "
                         f"key is an {role}", next=next_step,
                         path=rel, reason=reason, role=role, needed="owner")

    def reason(self, rel: str) -> Reason | None:
        """Which path rule ``rel`` (posix, relative to the root) falls under, if any (the mode
        is not looked at here). ``config.invalid`` when the owner's list is malformed: a list
        that guards code does not fail open."""
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        folded = [p.casefold() for p in parts]
        if ".git" in folded:
            return "git"
        if folded and (folded[-1].endswith(".pth")):
            return "pth"
        if _VENV_PARTS.intersection(folded) or (folded and folded[-1] == "pyvenv.cfg") \
                or self._in_virtualenv(parts):
            return "virtualenv"
        hooks = self._hooks_path()
        if hooks is not None and _under(folded, hooks):
            return "hooks"
        if self._listed(rel):
            return "listed"
        return None

    # --- the pieces -----------------------------------------------------------------------------
    def _relative(self, target: Path) -> str:
        real = str(target)
        if real.startswith(self._root_str + os.sep):
            return real[len(self._root_str) + 1:].replace(os.sep, "/")
        return Path(target).as_posix()   # the workspace refuses these before we are asked

    def _in_virtualenv(self, parts: list[str]) -> bool:
        """Does the root, or a folder between it and the file, hold ``pyvenv.cfg``?"""
        folder = self._root_str
        for part in [""] + parts[:-1]:
            folder = os.path.join(folder, part) if part else folder
            if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
                return True
        return False

    @staticmethod
    def _executable(target: Path, port: FilePort) -> bool:
        try:
            return bool(port.stat(target).mode & EXEC_BITS)
        except OSError:
            return False     # absent: a new file (never executable); a link: save_file refuses

    def _hooks_path(self) -> list[str] | None:
        """``core.hooksPath`` as case-folded components relative to the root, when it names a
        folder inside the project (the project's config wins over the user's)."""
        files = self._git_config_files
        if files is None:
            home = Path(os.path.expanduser("~"))
            xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
            files = self._git_config_files = (Path(xdg) / "git" / "config", home / ".gitconfig",
                                              self.root / ".git" / "config")
        stamps = tuple(_stamp(path) for path in files)
        if self._hooks is not None and self._hooks[0] == stamps:
            return self._hooks[1]
        found: str | None = None
        for path in files:
            value = _git_config_value(path, "core", "hookspath")
            if value is not None:
                found = value
        hooks = self._hooks_folder(found) if found else None
        self._hooks = (stamps, hooks)
        return hooks

    def _hooks_folder(self, found: str) -> list[str] | None:
        where = Path(os.path.expanduser(found))
        real = Path(os.path.realpath(where if where.is_absolute() else self.root / where))
        try:
            rel = real.relative_to(self.root)
        except ValueError:
            return None     # outside the project: nothing Rio writes
        return [p.casefold() for p in rel.parts]

    def _listed(self, rel: str) -> bool:
        spec = self._owner_spec()
        if spec is None:
            return False
        return bool(spec.match_file(rel))

    def _owner_spec(self) -> GitIgnoreSpec | None:
        """The owner's patterns, compiled; rebuilt when config.toml changes."""
        if self._patterns is not None:
            if self._spec is None:
                self._spec = _compile(self._patterns())
            return self._spec
        from rio.config.remote_settings import config_path, owner_only_paths
        if self._config_file is None:
            self._config_file = config_path()
        stamp = _stamp(self._config_file)
        if stamp != self._stamp or not self._read:
            self._stamp, self._read = stamp, True
            try:
                self._spec, self._spec_error = _compile(owner_only_paths()), None
            except ConfigError as err:
                self._spec, self._spec_error = None, err
        if self._spec_error is not None:
            raise self._spec_error
        return self._spec


def _stamp(path: Path) -> _Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _Stamp(st.st_mtime_ns, st.st_size)


def _under(parts: list[str], folder: list[str]) -> bool:
    return len(parts) > len(folder) and parts[:len(folder)] == folder


def _compile(patterns: tuple[str, ...]) -> GitIgnoreSpec | None:
    if not patterns:
        return None
    try:
        return compile_patterns(list(patterns))
    except ValueError as exc:
        raise ConfigError("invalid", f"[remote] owner_only_paths: {exc}.",
                          "Fix the pattern in config.toml (gitignore syntax).") from None


def _git_config_value(path: Path, section: str, key: str) -> str | None:
    """The last value of ``section.key`` in one git config file (a small reader: sections,
    ``key = value`` lines, quotes and comments; ``include`` is not followed). None when absent
    or unreadable."""
    try:
        with open(path, "rb") as f:
            text = f.read(1024 * 1024).decode("utf-8", errors="replace")
    except OSError:
        return None
    current = ""
    found: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            current = line[1:line.find("]")].strip().split(" ", 1)[0].split(".", 1)[0].lower() \
                if "]" in line else ""
            line = line[line.find("]") + 1:].strip() if "]" in line else ""
            if not line:
                continue
        if current != section or "=" not in line or line.startswith(("#", ";")):
            continue
        name, value = line.split("=", 1)
        if name.strip().lower() != key:
            continue
        value = value.strip()
        if value.startswith('"'):
            end = value.find('"', 1)
            value = value[1:end] if end > 0 else value[1:]
        else:
            for mark in ("#", ";"):
                if mark in value:
                    value = value[:value.index(mark)]
            value = value.strip()
        found = value
    return found
