"""Small private files written atomically: a crash mid-write keeps the previous version.

For Rio's own state (settings, sessions, the gate's memory, project commands). The user's
documents have their own, format-keeping save in :mod:`rio.files.files`.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json(path: Path, data: Any, *, sort_keys: bool = False) -> Path:
    """Write ``data`` as JSON to ``path``: a 0600 temp file in the same folder, fsync,
    ``os.replace``. On any failure the temp file is removed and the old file is untouched."""
    return write_text(path, json.dumps(data, indent=1, sort_keys=sort_keys) + "\n")


def write_text(path: Path, text: str, *, keep_mode: bool = False) -> Path:
    """Write ``text`` to ``path`` the same way (``keep_mode``: an existing file's mode is kept,
    a new one is 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    mode: int | None = None
    if keep_mode:
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:   # mkstemp: mode 0600
            fh.write(text)
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
