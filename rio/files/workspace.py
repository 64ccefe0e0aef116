"""The confined workspace: every path a client or an agent names is checked here (ADR-0004).

:meth:`Workspace.resolve` is the one gate. It joins relative paths to the root, resolves every
symlink (``os.path.realpath``) and only then checks that the result is inside the root, so
``..``, absolute paths and symlinks pointing out are all caught by the same comparison. Joining
``root / path`` alone confines nothing: an absolute path replaces the root, and a symlink inside
the root may lead anywhere.

Listings and walks apply :mod:`rio.files.ignore` and never follow symlinked folders, so a walk cannot
loop or leave the root.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rio.files.files import kind_of_mode, link_refused
from rio.files.ignore import IgnoreRules
from rio.protocol.errors import PathError

PathKind = Literal["file", "dir", "any"]
EntryKind = Literal["file", "dir", "other"]

DEFAULT_LISTING_LIMIT = 2000
DEFAULT_WALK_MAX_FILES = 20000
#: Files bigger than this are left out of walks (searches); they can still be opened.
DEFAULT_WALK_MAX_FILE_BYTES = 8 * 1024 * 1024
# Longer than any real path (PATH_MAX is 4096 on Linux); refusing early keeps errors readable.
_MAX_PATH_CHARS = 4096
_MAX_IGNORE_FILE_BYTES = 1024 * 1024

#: Extensions whose files are binary for all practical purposes; walks skip them unread.
BINARY_EXTENSIONS = frozenset("""
    png jpg jpeg gif bmp ico webp tif tiff psd xcf heic avif
    zip gz tgz bz2 xz 7z rar tar zst lz4 jar war whl egg apk dmg iso
    pyc pyo so o a obj lib dll dylib exe class wasm bin dat
    mp3 mp4 m4a wav ogg flac avi mov mkv webm
    pdf doc docx xls xlsx ppt pptx odt ods odp
    ttf otf woff woff2 eot
    sqlite sqlite3 db npy npz pkl pickle h5 hdf5 parquet onnx pt pth safetensors
""".split())


@dataclass(frozen=True, slots=True)
class Entry:
    """One item of a folder listing. ``kind`` "other" is something Rio will not open: a FIFO, a
    socket, a device, a broken symlink or a symlink leading out of the project.

    ``undecodable`` marks a name that is not valid UTF-8 on disk: ``name`` and ``rel`` then show
    it with U+FFFD for the bad bytes (the wire carries UTF-8 text only), so it is listed but
    cannot be opened by that name."""

    name: str
    rel: str
    kind: EntryKind
    size: int | None
    is_link: bool = False
    undecodable: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "rel": self.rel, "kind": self.kind, "size": self.size,
                "is_link": self.is_link, "undecodable": self.undecodable}


@dataclass(frozen=True, slots=True)
class Listing:
    entries: tuple[Entry, ...]
    truncated: bool

    def to_dict(self) -> dict[str, object]:
        return {"entries": [e.to_dict() for e in self.entries], "truncated": self.truncated}


class Workspace:
    """A project folder and the rules for touching anything in it."""

    def __init__(self, root: str | os.PathLike[str]):
        real = Path(os.path.realpath(root))
        try:
            st = os.stat(real)
        except OSError as exc:
            raise PathError("not_found", f"The project folder {root} cannot be opened: "
                            f"{exc.strerror or exc}", next="Start Rio on an existing folder",
                            path=str(root)) from None
        if not stat_module.S_ISDIR(st.st_mode):
            raise PathError("not_a_directory", f"{root} is not a folder",
                            next="Start Rio on a folder, not a file", path=str(root))
        self.root = real
        self._root_str = str(real)

    def __repr__(self) -> str:
        return f"Workspace({self._root_str!r})"

    # ---------------------------------------------------------------- the gate

    def resolve(self, path: str | os.PathLike[str], *, must_exist: bool = True,
                kind: PathKind = "file") -> Path:
        """The real path of ``path`` (relative to the root, or absolute) if Rio may touch it.

        Refuses with :class:`PathError`: ``invalid`` (empty, NUL, undecodable, symlink loop),
        ``outside_root`` (``..``, absolute elsewhere, a symlink pointing out), ``not_found``,
        ``special_file`` (FIFO, socket, device), ``not_a_file`` / ``not_a_directory`` (wrong
        kind). For a path that does not exist yet (``must_exist=False``: save-as, a proposed new
        file) the nearest existing parent must be a folder inside the root.
        """
        if kind not in ("file", "dir", "any"):
            raise ValueError(f"kind must be 'file', 'dir' or 'any', not {kind!r}")
        real = self._confine(path)
        shown = _shown(path)
        try:
            st = os.stat(real)
        except (FileNotFoundError, NotADirectoryError):
            if must_exist:
                raise PathError("not_found", f"{shown} does not exist",
                                next="Check the name, or list the folder to see what is there",
                                path=shown) from None
            self._check_parent(real, shown)
            return real
        except OSError as exc:
            raise self._unreachable(shown, exc) from None
        self._check_kind(st.st_mode, kind, shown)
        return real

    def relative(self, path: str | os.PathLike[str]) -> str:
        """``path`` as a posix path relative to the root ("." for the root itself)."""
        real = self._confine(path)
        if str(real) == self._root_str:
            return "."
        return real.relative_to(self.root).as_posix()

    def where(self, real: Path) -> dict[str, object]:
        """How to show a real path Rio already holds (an open buffer's), and whether it still
        leads where it did: ``{path, path_error}``. Never raises, so one file swapped for a link
        out of the project cannot break a listing of every buffer."""
        root = self.root
        try:
            rel = "." if real == root else real.relative_to(root).as_posix()
        except ValueError:
            rel = str(real)
        try:
            self.check_unmoved(real)
        except PathError as err:
            return {"path": rel, "path_error": err.to_wire()}
        return {"path": rel, "path_error": None}

    def check_unmoved(self, real: Path) -> None:
        """Refuse (``path.outside_root`` or ``path.symlink_refused``) when ``real`` — a real path
        confined earlier — now leads elsewhere: it, or a folder above it, became a link."""
        if self._confine(real) != real:
            raise link_refused(real)

    def contains(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` (relative or absolute) resolves inside the root; never raises."""
        try:
            self._confine(path)
        except PathError:
            return False
        return True

    def _confine(self, path: str | os.PathLike[str]) -> Path:
        """Resolve symlinks and check the result is inside the root; no kind checks."""
        try:
            raw = os.fspath(path)
        except TypeError:
            raise PathError("invalid", f"A path must be text, not {type(path).__name__}",
                            next="Send the path as a string") from None
        if not isinstance(raw, str):
            raise PathError("invalid", "A path must be text, not bytes",
                            next="Send the path as a string")
        if not raw:
            raise PathError("invalid", "The path is empty", next="Name a file or folder")
        if "\x00" in raw:
            raise PathError("invalid", "The path contains a NUL byte",
                            next="Remove the NUL character from the path")
        if len(raw) > _MAX_PATH_CHARS:
            raise PathError("invalid", f"The path is {len(raw)} characters long",
                            next="Use a shorter path")
        joined = raw if os.path.isabs(raw) else os.path.join(self._root_str, raw)
        try:
            raw.encode("utf-8", "surrogateescape")  # what the OS will be handed
            real = Path(os.path.realpath(joined))
        except (UnicodeError, ValueError):
            raise PathError("invalid", f"{raw!r} is not a usable file name",
                            next="Rename it, or name another path") from None
        if not self._inside(str(real)):
            raise self._outside(raw, joined, real)
        return real

    def _inside(self, real: str) -> bool:
        root = self._root_str
        if root == os.sep:
            return True
        return real == root or real.startswith(root + os.sep)

    def _outside(self, raw: str, joined: str, real: Path) -> PathError:
        lexical = os.path.normpath(joined)
        if not self._inside(lexical):
            if os.path.isabs(raw) and ".." not in Path(raw).parts:
                message, reason = f"{raw} is outside the project folder {self.root}", "absolute"
            else:
                message, reason = f"{raw} climbs out of the project folder with ..", "dotdot"
        else:
            message = f"{raw} leads out of the project folder through a symbolic link (to {real})"
            reason = "symlink"
        return PathError("outside_root", message, next="Use a path inside the project folder",
                         path=raw, reason=reason)

    def _check_parent(self, real: Path, shown: str) -> None:
        parent = real.parent
        while True:
            try:
                st = os.stat(parent)
                break
            except (FileNotFoundError, NotADirectoryError):
                parent = parent.parent
            except OSError as exc:
                raise self._unreachable(shown, exc) from None
        if not stat_module.S_ISDIR(st.st_mode):
            # realpath leaves the existing prefix resolved, so this parent is inside the root.
            rel = self.relative(parent)
            raise PathError("not_a_directory", f"{rel} is a file, so {shown} cannot be made in it",
                            next="Choose a folder for the new file", path=shown)

    def _check_kind(self, mode: int, kind: PathKind, shown: str) -> None:
        is_file, is_dir = stat_module.S_ISREG(mode), stat_module.S_ISDIR(mode)
        if not (is_file or is_dir):
            raise PathError("special_file", f"{shown} is not a regular file or folder "
                            f"(it is a {_special_name(mode)})",
                            next="Rio opens regular files and folders only", path=shown)
        if kind == "file" and not is_file:
            raise PathError("not_a_file", f"{shown} is a folder, not a file",
                            next="Open a file inside it instead", path=shown)
        if kind == "dir" and not is_dir:
            raise PathError("not_a_directory", f"{shown} is a file, not a folder",
                            next="Name a folder", path=shown)

    def _unreachable(self, shown: str, exc: OSError) -> PathError:
        if exc.errno == errno.ELOOP:
            return PathError("invalid", f"{shown} is a loop of symbolic links",
                             next="Fix or remove the looping link", path=shown)
        if exc.errno == errno.ENAMETOOLONG:
            brief = shown if len(shown) <= 80 else shown[:60] + "…" + shown[-16:]
            return PathError("invalid", f"A name in {brief} is too long for the file system "
                             "(255 bytes at most for one name)",
                             next="Use a shorter file or folder name", path=shown)
        return PathError("invalid", f"{shown} cannot be checked: {exc.strerror or exc}",
                         next="Check the folder's permissions", path=shown)

    # ---------------------------------------------------------------- listing and walking

    def ignore_rules(self) -> IgnoreRules:
        """Fresh rules (ignore files are re-read, so edits to .gitignore count at once)."""
        return IgnoreRules(self._read_ignore_file, self._is_virtualenv)

    def listing(self, path: str | os.PathLike[str] = ".", *,
                limit: int = DEFAULT_LISTING_LIMIT) -> Listing:
        """One folder: folders first, then files, each by name (case-insensitive); ignores applied.

        The ignore rules are applied to the entries, not to the folder asked for: a user who
        opens ``node_modules`` on purpose sees what is in it.
        """
        folder = self.resolve(path, kind="dir")
        rules = self.ignore_rules()
        base = self.relative(folder)
        found: list[tuple[bool, str, os.DirEntry[str]]] = []
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    is_dir = _is_dir(entry)
                    rel = entry.name if base == "." else f"{base}/{entry.name}"
                    if not rules.is_ignored(rel, is_dir):
                        found.append((is_dir, rel, entry))
        except OSError as exc:
            raise self._unreachable(_shown(path), exc) from None
        found.sort(key=lambda item: (not item[0], item[2].name.casefold(), item[2].name))
        entries = tuple(self._entry(entry, rel) for _, rel, entry in found[:limit])
        return Listing(entries=entries, truncated=len(found) > limit)

    def _entry(self, entry: os.DirEntry[str], rel: str) -> Entry:
        name, rel_shown = displayable(entry.name), displayable(rel)
        odd = name != entry.name or rel_shown != rel
        is_link = entry.is_symlink()
        kind: EntryKind = "other"
        size: int | None = None
        try:
            st = entry.stat()  # follows symlinks
        except OSError:
            st = None  # broken link, or vanished
        if st is not None and not (is_link and not self._inside(os.path.realpath(entry.path))):
            if stat_module.S_ISDIR(st.st_mode):
                kind = "dir"
            elif stat_module.S_ISREG(st.st_mode):
                kind, size = "file", st.st_size
        return Entry(name, rel_shown, kind, size, is_link, odd)

    def walk_files(self, path: str | os.PathLike[str] = ".", *,
                   max_files: int = DEFAULT_WALK_MAX_FILES,
                   max_file_bytes: int = DEFAULT_WALK_MAX_FILE_BYTES) -> Iterator[str]:
        """Relative paths of the text-looking files under ``path``, in sorted depth-first order.

        Skips ignored paths, symlinks (a walk never loops or leaves the root), files with a
        binary extension and files over ``max_file_bytes``; stops after ``max_files``. Folders
        that cannot be read are skipped. Content sniffing is the caller's job.
        """
        start = self.resolve(path, kind="dir")
        rules = self.ignore_rules()
        base = self.relative(start)
        yielded = 0
        stack: list[Iterator[tuple[str, os.DirEntry[str]]]] = [self._sorted_children(start, base)]
        while stack:
            item = next(stack[-1], None)
            if item is None:
                stack.pop()
                continue
            rel, entry = item
            if displayable(rel) != rel:
                continue  # a name that is not UTF-8 cannot cross the wire or be opened by it
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if not rules.is_ignored(rel, True):
                        stack.append(self._sorted_children(Path(entry.path), rel))
                    continue
                if not entry.is_file(follow_symlinks=False) or _binary_name(entry.name):
                    continue
                if rules.is_ignored(rel, False) or entry.stat().st_size > max_file_bytes:
                    continue
            except OSError:
                continue  # vanished while we walked
            yield rel
            yielded += 1
            if yielded >= max_files:
                return

    @staticmethod
    def _sorted_children(folder: Path, base: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return iter(())
        prefix = "" if base == "." else base + "/"
        return ((prefix + e.name, e) for e in entries)

    # ---------------------------------------------------------------- I/O for the ignore rules

    def _read_ignore_file(self, rel: str) -> str | None:
        path = os.path.join(self._root_str, rel)
        try:
            st = os.stat(path)
            if not stat_module.S_ISREG(st.st_mode) or st.st_size > _MAX_IGNORE_FILE_BYTES:
                return None
            with open(path, "rb") as f:
                return f.read().decode("utf-8", errors="replace")
        except OSError:
            return None

    def _is_virtualenv(self, rel: str) -> bool:
        return os.path.isfile(os.path.join(self._root_str, rel, "pyvenv.cfg"))


def displayable(name: str) -> str:
    """``name`` as UTF-8-safe text: a name read from disk that was not valid UTF-8 holds lone
    surrogates (surrogateescape), which msgpack cannot encode; they become U+FFFD."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return name


def _shown(path: str | os.PathLike[str]) -> str:
    try:
        return os.fspath(path) if isinstance(os.fspath(path), str) else repr(path)
    except TypeError:
        return repr(path)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _binary_name(name: str) -> bool:
    dot = name.rfind(".")
    return dot > 0 and name[dot + 1:].lower() in BINARY_EXTENSIONS


#: What a special file is called when it is refused (the kinds are the file port's).
_SPECIAL_NAMES = {"fifo": "named pipe (FIFO)", "socket": "socket", "device": "device"}


def _special_name(mode: int) -> str:
    return _SPECIAL_NAMES.get(kind_of_mode(mode), "special file")
