"""``fs.*``: the project's files as clients (and agents) may see them — ``fs.list`` and
``fs.read``, ``fs.walk`` (the files a walk finds, for ``@file`` completion) and Find in Files
(``fs.search``, ``fs.search_more``, ``fs.search_stop``: :mod:`rio.files.search_jobs`).

Confined by :class:`~rio.files.workspace.Workspace` (symlinks resolved), capped in size, and explicit
about truncation: a cut text ends with a marker that says how much was left out. A desktop reads
the project only through these ops, so it works the same on a remote instance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rio.files.files import READ_LIMIT_BYTES, load_file, truncation_marker
from rio.files.search_jobs import SearchPages
from rio.files.workspace import Workspace
from rio.protocol.op_table import OpTable


class FsOps:
    handles: OpTable[FsOps] = OpTable()

    def __init__(self, root: Path):
        self.workspace = Workspace(root)
        self.searches = SearchPages(self.workspace.root)

    def handle(self, op: str, args: dict[str, Any]) -> Any:
        """Serve ``op`` with its checked arguments (``protocol.unknown_op`` if not an fs op)."""
        return self.handles.call(self, op, args)

    @handles("fs.list")
    def list_op(self, args: dict[str, Any]) -> Any:
        return self.list(args["path"])

    @handles("fs.read")
    def read_op(self, args: dict[str, Any]) -> Any:
        return self.read(args["path"], args["max_chars"])

    @handles("fs.walk")
    def walk_op(self, args: dict[str, Any]) -> Any:
        return self.walk(args["path"], args["max_files"])

    @handles("fs.search")
    def search_op(self, args: dict[str, Any]) -> Any:
        return self.searches.start(args)

    @handles("fs.search_more")
    def search_more_op(self, args: dict[str, Any]) -> Any:
        return self.searches.page(args["search"])

    @handles("fs.search_stop")
    def search_stop_op(self, args: dict[str, Any]) -> Any:
        return self.searches.stop(args["search"])

    def list(self, path: str) -> dict[str, Any]:
        folder = self.workspace.resolve(path, kind="dir")
        listing = self.workspace.listing(folder)
        return {"path": self.workspace.relative(folder) or ".",
                "entries": [{"name": e.name, "path": e.rel, "kind": e.kind, "size": e.size,
                             **({"undecodable": True} if e.undecodable else {})}
                            for e in listing.entries],
                "truncated": listing.truncated}

    def walk(self, path: str, max_files: int) -> dict[str, Any]:
        """The text-looking files under ``path`` in sorted depth-first order (ignores applied,
        binary names and undecodable names left out), at most ``max_files``."""
        files = list(self.workspace.walk_files(path, max_files=max_files + 1))
        return {"files": files[:max_files], "truncated": len(files) > max_files}

    def read(self, path: str, max_chars: int) -> dict[str, Any]:
        target = self.workspace.resolve(path, kind="file")
        loaded = load_file(target, max_bytes=READ_LIMIT_BYTES)
        text = loaded.text
        truncated = len(text) > max_chars
        if truncated:
            text = text[:max_chars] + truncation_marker(max_chars, len(loaded.text))
        return {"path": self.workspace.relative(target), "text": text, "truncated": truncated,
                "length": len(loaded.text), "format": loaded.format.to_dict()}
