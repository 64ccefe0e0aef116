"""sha256 without mapping OpenSSL into a process that does not hash files.

``import hashlib`` loads OpenSSL's ``libcrypto`` (about 3.8 MB of RSS in every process that
imports it, shared pages counted again in each). At idle no Rio process hashes a file: the
supervisor and the window only hash a project's path into a name, and the core hashes only when
a file is opened or saved. So a file's hash imports hashlib at its first use (:func:`sha256`:
OpenSSL's sha256 is the fast one for 100 MB) and a path's short hash uses the interpreter's
built-in sha256 (:func:`name_hash`: the same digest, no OpenSSL). Measured in
docs/adr/0026-start-path-and-long-line-keys.md ("e").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:   # not at run time: that import is what this module avoids
    from hashlib import _Hash


def sha256(data: bytes = b"") -> _Hash:
    """``hashlib.sha256(data)``, hashlib imported on first use (the module's docstring)."""
    import hashlib
    return hashlib.sha256(data)


def _builtin_sha256() -> Callable[..., Any]:
    for module in ("_sha2", "_sha256"):   # Python ≥ 3.12, Python 3.11
        try:
            found: Callable[..., Any] = importlib.import_module(module).sha256
        except (ImportError, AttributeError):
            continue
        return found
    return sha256   # a build without the built-in hashes


_NAME_SHA256 = _builtin_sha256()


def name_hash(text: str, length: int) -> str:
    """The first ``length`` hex digits of the sha256 of ``text`` (UTF-8) — for names and
    folders derived from a path, without loading OpenSSL."""
    return str(_NAME_SHA256(text.encode()).hexdigest()[:length])
