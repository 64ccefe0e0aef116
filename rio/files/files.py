"""Rio's disk edge for one file: load with the format kept, save atomically, notice conflicts.

Three promises (ADR-0003):

* **What was loaded is what is saved.** :func:`decode_bytes` records the encoding, the BOM and the
  line endings in a :class:`FileFormat`; :func:`encode_text` is its exact inverse, so opening and
  saving an untouched file gives back the same bytes.
* **A save never leaves half a file.** :class:`OsFilePort` writes a temp file in the same folder,
  fsyncs it and ``os.replace``-s it over the old one; on any failure the temp file is removed and
  the old file is untouched.
* **A save never goes through a symbolic link.** The folder is opened from "/" one component at
  a time with ``O_NOFOLLOW`` and the write happens relative to that handle, so a file or folder
  swapped for a link after it was opened is refused (``path.symlink_refused``), never followed
  out of the project.
* **A change on disk is never silently overwritten.** :func:`save_file` compares the disk with the
  :class:`Fingerprint` taken at load and refuses with ``file.conflict`` when they differ.

All disk access goes through a :class:`FilePort`, so the logic is tested against
:class:`rio.files.write_faults.FaultyFilePort` (ENOSPC / EIO part-way through a write) as well
as the real disk.
"""

from __future__ import annotations

import codecs
import errno
import fcntl
import os
import stat as stat_module
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from rio.files import digest as digests
from rio.files.nofollow import fsync_dir_fd, lstat_at, open_dir_nofollow, open_nofollow
from rio.protocol.errors import FileError, PathError, ProtocolError

#: Open files up to this size by default (config can raise it: ``files.max_bytes``).
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
#: The setting named in ``file.too_large`` errors.
MAX_BYTES_SETTING = "files.max_bytes"

ENCODINGS = ("utf-8", "utf-8-sig", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "latin-1")
NEWLINES = ("\n", "\r\n", "\r")
LATIN1_WARNING = "Not valid UTF-8: opened as Latin-1; saving keeps Latin-1"

# The codec that encodes the text after the BOM, and the BOM itself. "utf-8-sig" is written as
# BOM + "utf-8" because the utf-8-sig codec would emit a BOM at the start of *every* chunk.
_CODEC_AND_BOM: dict[str, tuple[str, bytes]] = {
    "utf-8": ("utf-8", b""),
    "utf-8-sig": ("utf-8", codecs.BOM_UTF8),
    "utf-16-le": ("utf-16-le", codecs.BOM_UTF16_LE),
    "utf-16-be": ("utf-16-be", codecs.BOM_UTF16_BE),
    "utf-32-le": ("utf-32-le", codecs.BOM_UTF32_LE),
    "utf-32-be": ("utf-32-be", codecs.BOM_UTF32_BE),
    "latin-1": ("latin-1", b""),
}
# UTF-32-LE's BOM (FF FE 00 00) starts with UTF-16-LE's (FF FE), so the longer BOMs are tried
# first; a candidate that does not decode strictly gives way to the next one.
_BOM_CANDIDATES = ("utf-32-le", "utf-32-be", "utf-8-sig", "utf-16-le", "utf-16-be")

# Binary sniffing looks at the first 8 KiB, like git's buffer_is_binary (8000 bytes).
_SNIFF_BYTES = 8192
# C0 control bytes that text files do not contain. Tab, LF, VT, FF, CR and ESC (ANSI colour in
# logs) are allowed.
_CONTROL_BYTES = bytes(b for b in range(32) if b not in b"\t\n\x0b\x0c\r\x1b") + b"\x7f"
# Above this share of control bytes in the sniffed head a file is called binary. 10 % is far
# above anything seen in source or logs and far below compressed or executable data.
_CONTROL_SHARE = 0.10

# Big texts are encoded in slices so that newline translation and encoding never copy more than
# this many characters at a time (a 100 MB str is not duplicated twice over).
_ENCODE_SLICE_CHARS = 1 << 20
_HASH_BLOCK = 1 << 20

BINARY_NEXT = "Open it with a hex viewer; Rio edits text files only."

Newline = Literal["\n", "\r\n", "\r"]


# --------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class FileFormat:
    """How a file's bytes map to Rio's text: what :func:`encode_text` needs to write it back.

    ``final_newline`` and ``mixed_newlines`` are facts about the file as loaded (shown to the user,
    offered as fixes); they do not change how the text is encoded.
    """

    encoding: str = "utf-8"
    bom: bool = False
    newline: str = "\n"
    mixed_newlines: bool = False
    final_newline: bool = True
    warning: str | None = None

    def __post_init__(self) -> None:
        if self.encoding not in ENCODINGS:
            raise ValueError(f"unknown encoding {self.encoding!r}; one of {', '.join(ENCODINGS)}")
        if self.newline not in NEWLINES:
            raise ValueError(f"newline must be one of {NEWLINES!r}, not {self.newline!r}")
        # "utf-8-sig" *is* UTF-8 with a BOM; "utf-8" and "latin-1" never have one.
        if self.encoding == "utf-8-sig" and not self.bom:
            raise ValueError("utf-8-sig always has a BOM")
        if self.encoding in ("utf-8", "latin-1") and self.bom:
            raise ValueError(f"{self.encoding} has no BOM (use utf-8-sig for UTF-8 with a BOM)")

    def to_dict(self) -> dict[str, Any]:
        return {"encoding": self.encoding, "bom": self.bom, "newline": self.newline,
                "mixed_newlines": self.mixed_newlines, "final_newline": self.final_newline,
                "warning": self.warning}

    @classmethod
    def from_dict(cls, data: Any) -> FileFormat:
        """Rebuild from :meth:`to_dict` output (wire, journal); anything else is ``bad_args``."""
        if not isinstance(data, dict) and not hasattr(data, "items"):
            raise ProtocolError("bad_args", f"A file format must be a map, not {type(data).__name__}")
        try:
            return cls(encoding=_field(data, "encoding", str, "utf-8"),
                       bom=_field(data, "bom", bool, False),
                       newline=_field(data, "newline", str, "\n"),
                       mixed_newlines=_field(data, "mixed_newlines", bool, False),
                       final_newline=_field(data, "final_newline", bool, True),
                       warning=_field(data, "warning", (str, type(None)), None))
        except ValueError as exc:
            raise ProtocolError("bad_args", f"Bad file format: {exc}") from None


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What the file on disk looked like when Rio last read or wrote it."""

    size: int
    mtime_ns: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"size": self.size, "mtime_ns": self.mtime_ns, "sha256": self.sha256}

    @classmethod
    def from_dict(cls, data: Any) -> Fingerprint:
        if not isinstance(data, dict) and not hasattr(data, "items"):
            raise ProtocolError("bad_args", f"A fingerprint must be a map, not {type(data).__name__}")
        size = _field(data, "size", int, None)
        mtime_ns = _field(data, "mtime_ns", int, None)
        digest = _field(data, "sha256", str, None)
        if size is None or mtime_ns is None or digest is None or size < 0:
            raise ProtocolError("bad_args", "A fingerprint needs size >= 0, mtime_ns and sha256")
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ProtocolError("bad_args", "A fingerprint's sha256 must be 64 lowercase hex digits")
        return cls(size=size, mtime_ns=mtime_ns, sha256=digest)


def _field(data: Any, name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = data.get(name, default)
    # bool is an int in Python; a fingerprint size of True is still a bad request.
    if value is not default and (not isinstance(value, kind)
                                 or (kind is int and isinstance(value, bool))):
        raise ProtocolError("bad_args", f"{name!r} has the wrong type ({type(value).__name__})")
    return value


FileKind = Literal["file", "dir", "fifo", "device", "socket", "other"]


@dataclass(frozen=True, slots=True)
class FileStat:
    """The part of ``os.stat`` Rio uses; the port returns these so fakes are easy to write."""

    kind: FileKind
    size: int
    mtime_ns: int
    mode: int  # permission bits only (st_mode & 0o7777)
    uid: int = -1
    gid: int = -1

    @classmethod
    def from_os(cls, st: os.stat_result) -> FileStat:
        return cls(kind=kind_of_mode(st.st_mode), size=st.st_size, mtime_ns=st.st_mtime_ns,
                   mode=stat_module.S_IMODE(st.st_mode), uid=st.st_uid, gid=st.st_gid)


def kind_of_mode(mode: int) -> FileKind:
    if stat_module.S_ISREG(mode):
        return "file"
    if stat_module.S_ISDIR(mode):
        return "dir"
    if stat_module.S_ISFIFO(mode):
        return "fifo"
    if stat_module.S_ISCHR(mode) or stat_module.S_ISBLK(mode):
        return "device"
    if stat_module.S_ISSOCK(mode):
        return "socket"
    return "other"


@dataclass(frozen=True, slots=True)
class LoadedFile:
    text: str
    format: FileFormat
    fingerprint: Fingerprint
    mode: int


# --------------------------------------------------------------------------------------------
# Decoding and encoding (pure)


def decode_bytes(data: bytes) -> tuple[str, FileFormat]:
    """Turn a file's bytes into Rio text (newlines as ``"\\n"``) and the format to write it back.

    BOMs first (UTF-8, UTF-16/32 LE/BE), then strict UTF-8, then Latin-1 with a warning: every
    byte string that is not binary decodes. Raises ``file.binary`` for binary-looking data.
    """
    for encoding in _BOM_CANDIDATES:
        codec, bom = _CODEC_AND_BOM[encoding]
        if data.startswith(bom):
            if encoding == "utf-8-sig":
                _refuse_binary(data[len(bom):])  # a BOM does not make NULs text
            try:
                text = data[len(bom):].decode(codec)
            except UnicodeDecodeError:
                continue
            return _with_newlines(text, encoding, bom=True, warning=None)
    _refuse_binary(data)
    try:
        return _with_newlines(data.decode("utf-8"), "utf-8", bom=False, warning=None)
    except UnicodeDecodeError:
        # Latin-1 maps every byte to one character, so this cannot fail and re-encodes exactly.
        return _with_newlines(data.decode("latin-1"), "latin-1", bom=False, warning=LATIN1_WARNING)


def looks_binary(data: bytes) -> str | None:
    """Why ``data`` (a file without a UTF-16/32 BOM) looks binary, or None when it looks like text."""
    if b"\x00" in data:
        return "it contains NUL bytes"
    head = data[:_SNIFF_BYTES]
    if head:
        controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
        if controls / len(head) > _CONTROL_SHARE:
            return f"{controls} of its first {len(head)} bytes are control characters"
    return None


def _refuse_binary(data: bytes) -> None:
    reason = looks_binary(data)
    if reason is not None:
        raise FileError("binary", f"This looks like a binary file: {reason}", next=BINARY_NEXT)


def _with_newlines(text: str, encoding: str, *, bom: bool,
                   warning: str | None) -> tuple[str, FileFormat]:
    final_newline = text.endswith(("\n", "\r"))
    if "\r" not in text:
        # The common case, and a fast one: a memchr-speed scan instead of three counts over the
        # whole text (0.2 s of a 100 MB open, measured).
        return text, FileFormat(encoding=encoding, bom=bom, newline="\n", mixed_newlines=False,
                                final_newline=final_newline, warning=warning)
    crlf = text.count("\r\n")
    lone_cr = text.count("\r") - crlf
    lone_lf = text.count("\n") - crlf
    counts = {"\n": lone_lf, "\r\n": crlf, "\r": lone_cr}
    # The dominant convention is kept; ties go to "\n", then "\r\n" (dict order above).
    newline = max(counts, key=lambda nl: counts[nl]) if any(counts.values()) else "\n"
    mixed = sum(1 for n in counts.values() if n) > 1
    if crlf:
        text = text.replace("\r\n", "\n")
    if lone_cr:
        text = text.replace("\r", "\n")
    return text, FileFormat(encoding=encoding, bom=bom, newline=newline, mixed_newlines=mixed,
                            final_newline=final_newline, warning=warning)


def encode_text(text: str, fmt: FileFormat) -> bytes:
    """The exact inverse of :func:`decode_bytes` for one string."""
    return b"".join(iter_encode((text,), fmt))


def iter_encode(chunks: Iterable[str], fmt: FileFormat) -> Iterator[bytes]:
    """Encode text given as chunks (any split) into bytes chunks: BOM, newlines, encoding.

    Raises ``file.unencodable`` naming the first character the encoding cannot hold.
    """
    codec, bom = _CODEC_AND_BOM[fmt.encoding]
    if fmt.bom and bom:
        yield bom
    line = 1
    for chunk in chunks:
        for start in range(0, len(chunk), _ENCODE_SLICE_CHARS):
            piece = chunk[start:start + _ENCODE_SLICE_CHARS]
            out = piece if fmt.newline == "\n" else piece.replace("\n", fmt.newline)
            try:
                yield out.encode(codec)
            except UnicodeEncodeError as exc:
                raise _unencodable(piece, out, exc, line, fmt) from None
            line += piece.count("\n")


def _unencodable(piece: str, out: str, exc: UnicodeEncodeError, line: int,
                 fmt: FileFormat) -> FileError:
    char = out[exc.start]
    # Map the position back through newline translation: count the newlines before it.
    before = out[:exc.start]
    line += before.count(fmt.newline) if fmt.newline != "\n" else before.count("\n")
    shown = repr(char) if char.isprintable() else "a character"
    message = (f"{shown} (U+{ord(char):04X}) on line {line} cannot be saved as {fmt.encoding}"
               if not 0xD800 <= ord(char) <= 0xDFFF else
               f"Line {line} holds a lone surrogate (U+{ord(char):04X}), which no file can hold")
    next_action = ("Save as UTF-8 (File > Save As)" if fmt.encoding == "latin-1"
                   else f"Delete that character (line {line}) and save again")
    return FileError("unencodable", message, next=next_action, line=line,
                     codepoint=ord(char), encoding=fmt.encoding)


# --------------------------------------------------------------------------------------------
# The port to the disk


#: Mode bits a save with ``keep_exec=False`` never sets or keeps: anyone's execute,
#: set-user-ID and set-group-ID (rio/files/owner_only.py).
EXEC_BITS = 0o111 | stat_module.S_ISUID | stat_module.S_ISGID


class FilePort(Protocol):
    """Everything :func:`load_file`, :func:`save_file` and :func:`disk_changed` ask of the disk.

    Methods raise ``OSError`` as the OS does; the functions above turn them into Rio errors.
    """

    def stat(self, path: Path) -> FileStat:
        """Stat; FileNotFoundError when absent. A symbolic link (at the end or on the way) is
        ``OSError(ELOOP)`` for the real disk, which never follows one (ADR-0019)."""

    def read_bytes(self, path: Path, limit: int) -> tuple[bytes, FileStat]:
        """At most ``limit + 1`` bytes (so the caller sees "too big") and the stat of what was read.

        Must not block on FIFOs; raises ``OSError(EINVAL)`` for anything not a regular file.
        """

    def sha256(self, path: Path) -> str:
        """Hex SHA-256 of the whole file, streamed."""

    def write_atomic(self, path: Path, chunks: Iterable[bytes], mode: int | None = None, *,
                     before_replace: Callable[[], None] | None = None,
                     keep_exec: bool = True) -> FileStat:
        """Replace ``path`` with ``chunks`` all-or-nothing; returns the new file's stat.

        ``mode`` None keeps the old file's permissions (new files get 0o666 less the umask).
        ``before_replace`` runs after the data is durable, just before the rename; if it raises,
        nothing on disk changes. ``keep_exec`` False: the new file has no execute, set-user-ID
        or set-group-ID bit, whatever the old one had (a remote editor key's save, ADR-0019).
        """


class OsFilePort:
    """The real disk."""

    def stat(self, path: Path) -> FileStat:
        path = Path(os.path.abspath(path))
        if path.parent == path:
            return FileStat.from_os(os.stat(path))   # "/" itself
        dfd = open_dir_nofollow(path.parent)
        try:
            st = lstat_at(dfd, path.name, path)
        finally:
            os.close(dfd)
        if st is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
        return FileStat.from_os(st)

    def read_bytes(self, path: Path, limit: int) -> tuple[bytes, FileStat]:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            st = FileStat.from_os(os.fstat(fd))
            if st.kind != "file":
                raise OSError(errno.EINVAL, f"not a regular file ({st.kind})", str(path))
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(limit + 1)
            return data, st
        finally:
            os.close(fd)

    def sha256(self, path: Path) -> str:
        digest = digests.sha256()
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:  # the port is the one place that opens files
            while block := f.read(_HASH_BLOCK):
                digest.update(block)
        return digest.hexdigest()

    def write_atomic(self, path: Path, chunks: Iterable[bytes], mode: int | None = None, *,
                     before_replace: Callable[[], None] | None = None,
                     keep_exec: bool = True) -> FileStat:
        # Never through a link (ADR-0004): ``path`` is the real path the workspace confined when
        # the file was opened, so if no part of it is a symbolic link now it still names the
        # same place inside the project. The folder is opened component by component from "/"
        # with O_NOFOLLOW, and everything after happens relative to that one handle, so a folder
        # or the file swapped for a link mid-save cannot redirect the write.
        path = Path(os.path.abspath(path))
        name = path.name
        dfd = open_dir_nofollow(path.parent)
        try:
            return self._write_in(dfd, path, name, chunks, mode, before_replace, keep_exec)
        finally:
            os.close(dfd)

    @staticmethod
    def _write_in(dfd: int, path: Path, name: str, chunks: Iterable[bytes], mode: int | None,
                  before_replace: Callable[[], None] | None, keep_exec: bool) -> FileStat:
        old = lstat_at(dfd, name, path)
        # The name is cut so the temp name stays under NAME_MAX (255) even for very long names.
        tmp = f".{name[:200]}.rio-{os.urandom(6).hex()}.tmp"
        # An existing file's temp copy starts private (it may hold secrets) and gets the old
        # mode before the rename; a new file gets 0o666 less the umask, as open() would give it.
        create_mode = 0o600 if old is not None or mode is not None else 0o666
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | getattr(os, "O_CLOEXEC", 0), create_mode, dir_fd=dfd)
        replaced = False
        try:
            # Held while the temp file is ours: the start-up sweep of killed saves' temp files
            # (rio/files/temp_sweep.py) leaves a locked one alone — another Rio is saving.
            # Best effort: on a file system without flock the sweep's age rule still holds.
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                pass
            with os.fdopen(fd, "wb", closefd=False) as f:
                for chunk in chunks:
                    f.write(chunk)
                f.flush()
            if old is not None:
                try:
                    os.fchown(fd, old.st_uid, old.st_gid)
                except OSError:
                    pass  # only root may give a file away; keeping the mode is what matters
            final_mode = mode if mode is not None else (
                stat_module.S_IMODE(old.st_mode) if old is not None else None)
            if final_mode is not None and not keep_exec:
                final_mode &= ~EXEC_BITS
            if final_mode is not None:
                os.fchmod(fd, final_mode)
            os.fsync(fd)
            st = FileStat.from_os(os.fstat(fd))
            if before_replace is not None:
                before_replace()
            lstat_at(dfd, name, path)  # swapped for a link while we wrote: still refused
            # rename(2) replaces the directory entry itself and never follows a link there.
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            replaced = True
        finally:
            os.close(fd)
            if not replaced:
                try:
                    os.unlink(tmp, dir_fd=dfd)
                except FileNotFoundError:
                    pass
        fsync_dir_fd(dfd)
        return st


# --------------------------------------------------------------------------------------------
# Load, save, check


#: Largest file fs.read (and an agent's read tool) will load at all (the reply is capped
#: separately by max_chars).
READ_LIMIT_BYTES = 64 * 1024 * 1024


def truncation_marker(shown: int, total: int) -> str:
    return f"\n[… truncated: showing {shown} of {total} characters …]\n"


def load_file(path: str | os.PathLike[str], *, port: FilePort | None = None,
              max_bytes: int = DEFAULT_MAX_BYTES) -> LoadedFile:
    """Read and decode one file, keeping its format and a fingerprint for conflict checks.
    (A document is loaded with :func:`rio.files.chunked_load.load_file_chunks` instead.)"""
    path = Path(path)
    data, st = read_for_load(path, port or OsFilePort(), max_bytes)
    text, fmt = decode_for_load(path, data)
    return LoadedFile(text=text, format=fmt, fingerprint=fingerprint_of(data, st), mode=st.mode)


def read_for_load(path: Path, port: FilePort, max_bytes: int) -> tuple[bytes, FileStat]:
    """A regular file's bytes and stat, refused when over ``max_bytes`` (before and after
    the read: it may grow between the two)."""
    st = _stat_for_load(path, port)
    _refuse_too_large(path, st.size, max_bytes)
    try:
        data, st = port.read_bytes(path, max_bytes)
    except OSError as exc:
        raise _read_failed(path, exc) from None
    _refuse_too_large(path, len(data), max_bytes)  # it grew between stat and read
    return data, st


def decode_for_load(path: Path, data: bytes) -> tuple[str, FileFormat]:
    """:func:`decode_bytes`, its errors naming the file."""
    try:
        return decode_bytes(data)
    except FileError as exc:
        raise FileError(exc.kind, f"{path.name}: {exc.message[0].lower()}{exc.message[1:]}",
                        next=exc.next, path=str(path)) from None


def fingerprint_of(data: bytes, st: FileStat) -> Fingerprint:
    return Fingerprint(size=len(data), mtime_ns=st.mtime_ns,
                       sha256=digests.sha256(data).hexdigest())


def starts_with_bom(data: bytes) -> bool:
    """Does ``data`` begin with a byte-order mark :func:`decode_bytes` looks for?"""
    return any(data.startswith(bom) for _, bom in _CODEC_AND_BOM.values() if bom)


def _stat_for_load(path: Path, port: FilePort) -> FileStat:
    try:
        st = port.stat(path)
    except FileNotFoundError:
        raise PathError("not_found", f"{path.name} does not exist",
                        next="Check the name, or create it with File > New", path=str(path)) from None
    except NotADirectoryError:
        raise PathError("not_found", f"{path} does not exist (a part of it is a file)",
                        next="Check the path", path=str(path)) from None
    except OSError as exc:
        raise _read_failed(path, exc) from None
    if st.kind == "dir":
        raise PathError("not_a_file", f"{path.name} is a folder, not a file",
                        next="Open a file inside it instead", path=str(path))
    if st.kind != "file":
        raise PathError("special_file", f"{path.name} is a {st.kind}, not a regular file",
                        next="Rio opens regular files only; pick another file", path=str(path))
    return st


def _refuse_too_large(path: Path, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise FileError("too_large",
                        f"{path.name} is {_human(size)}; Rio opens files up to {_human(max_bytes)}",
                        next=f"Raise the {MAX_BYTES_SETTING} setting, or open it in another tool",
                        path=str(path), size=size, max_bytes=max_bytes)


def _read_failed(path: Path, exc: OSError) -> FileError | PathError:
    if exc.errno == errno.ELOOP:
        return link_refused(path, "read")
    reason = exc.strerror or str(exc)
    next_action = ("Check the file's permissions" if exc.errno in (errno.EACCES, errno.EPERM)
                   else "Check the disk, then open it again")
    return FileError("read_failed", f"Could not read {path.name}: {reason}", next=next_action,
                     path=str(path), errno=errno.errorcode.get(exc.errno or 0, str(exc.errno)))


def save_file(path: str | os.PathLike[str], text_or_chunks: str | Iterable[str], fmt: FileFormat,
              *, expected: Fingerprint | None, port: FilePort | None = None,
              force: bool = False, keep_exec: bool = True) -> Fingerprint:
    """Encode and atomically write ``path``; returns the new fingerprint.

    Refuses with ``file.conflict`` when the file on disk is not the one described by ``expected``
    (or exists while ``expected`` is None), unless ``force``. The check runs again just before the
    rename, so a change made while a big file was being written is caught too. ``keep_exec``
    False writes the file without execute/set-ID bits (:meth:`FilePort.write_atomic`).
    """
    port = port or OsFilePort()
    path = Path(path)
    chunks: Iterable[str] = (text_or_chunks,) if isinstance(text_or_chunks, str) else text_or_chunks

    def check_disk(thorough: bool = True) -> None:
        _refuse_conflict(path, expected, port, thorough=thorough, force=force)

    check_disk(thorough=False)  # fail fast and cheaply, before encoding anything
    digest = digests.sha256()
    written = 0

    def hashed() -> Iterator[bytes]:
        nonlocal written
        for block in iter_encode(chunks, fmt):
            digest.update(block)
            written += len(block)
            yield block

    try:
        st = port.write_atomic(path, hashed(), None, before_replace=check_disk,
                               keep_exec=keep_exec)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise link_refused(path) from None
        raise _save_failed(path, exc) from None
    return Fingerprint(size=written, mtime_ns=st.mtime_ns, sha256=digest.hexdigest())


def _refuse_conflict(path: Path, expected: Fingerprint | None, port: FilePort, *,
                     thorough: bool, force: bool) -> None:
    try:
        st = port.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return  # absent (new, or deleted since it was opened): saving just creates it
    except OSError as exc:
        raise (link_refused(path) if exc.errno == errno.ELOOP else _save_failed(path, exc)) \
            from None
    if st.kind != "file":
        raise PathError("not_a_file" if st.kind == "dir" else "special_file",
                        f"{path.name} is a {'folder' if st.kind == 'dir' else st.kind}, "
                        "not a file, so Rio will not write over it",
                        next="Save under another name (File > Save As)", path=str(path))
    if force:
        return
    if expected is None:
        raise FileError("conflict", f"{path.name} already exists on disk",
                        next="Overwrite it (save again with force), or save under another name",
                        path=str(path))
    try:
        changed = _differs(path, st, expected, port, thorough=thorough)
    except OSError as exc:
        raise (link_refused(path) if exc.errno == errno.ELOOP else _save_failed(path, exc)) \
            from None
    if changed:
        raise FileError("conflict", f"{path.name} changed on disk since it was opened",
                        next="Reload it, keep yours (save again with force), or compare them",
                        path=str(path))


def link_refused(path: Path, doing: str = "save") -> PathError:
    """A save (or read) refused because the file, or a folder above it, is now a symbolic
    link."""
    after = (" The file is unchanged and your text is still in Rio" if doing == "save" else "")
    return PathError("symlink_refused",
                     f"{path.name} (or a folder above it) is now a symbolic link, so Rio will "
                     f"not {doing} through it.{after}",
                     next=("Look at what replaced it; save under another name (File > Save As), "
                           "or remove the link and save again" if doing == "save" else
                           "Look at what replaced it; open the file it leads to by its own "
                           "path if that is inside the project"), path=str(path))


def _save_failed(path: Path, exc: OSError) -> FileError:
    code = exc.errno or 0
    reason = exc.strerror or str(exc)
    if code == errno.ENOSPC or code == getattr(errno, "EDQUOT", -1):
        next_action = "Free some disk space, then save again"
    elif code in (errno.EACCES, errno.EPERM):
        next_action = "Check the folder's permissions, or save elsewhere (File > Save As)"
    elif code == errno.EROFS:
        next_action = "The disk is read-only: save elsewhere (File > Save As)"
    else:
        next_action = "Check the disk, then save again (your text is still in Rio)"
    return FileError("save_failed",
                     f"Could not save {path.name}: {reason}. The file on disk is unchanged",
                     next=next_action, path=str(path), errno=errno.errorcode.get(code, str(code)))


def disk_changed(path: str | os.PathLike[str], fingerprint: Fingerprint,
                 port: FilePort | None = None, *, thorough: bool = False) -> bool:
    """True when the file at ``path`` is no longer the one ``fingerprint`` describes.

    Cheap by default: a stat, and a hash only when the size matches but the mtime moved (a
    ``touch`` or a checkout of identical content is not a change). ``thorough`` also hashes when
    size and mtime both match, for file systems whose coarse timestamps hide a quick rewrite.
    A deleted or unreadable file counts as changed.
    """
    port = port or OsFilePort()
    path = Path(path)
    try:
        st = port.stat(path)
    except OSError:
        return True
    try:
        return _differs(path, st, fingerprint, port, thorough=thorough)
    except OSError:
        return True


def _differs(path: Path, st: FileStat, fingerprint: Fingerprint, port: FilePort, *,
             thorough: bool) -> bool:
    if st.kind != "file" or st.size != fingerprint.size:
        return True
    if st.mtime_ns == fingerprint.mtime_ns and not thorough:
        return False
    return port.sha256(path) != fingerprint.sha256


def _human(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"
