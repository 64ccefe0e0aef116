"""Rio's MCP tools for external agents: their specifications, and the reads they run.

The tools an ACP agent sees on Rio's MCP endpoint (over HTTP, or `rio mcp` on stdio; ADR-0034).
A call is served by the conversation's running turn in its session process
(rio/agent/turn_mcp.py): :class:`McpCall` runs the reads through a small port (bus calls), so
it holds no sockets and tests drive it with fakes, and checks a proposal's arguments; the turn's
own :class:`~rio.agent.tools.Tools` builds and applies proposals.

Paths are relative to the project root or absolute inside it; anything else — ``..``, an
absolute path elsewhere, a symlink that leads out — is refused before the core is asked
(:class:`rio.files.workspace.Workspace` resolves them, symlinks included). Reads see the editor's
text, unsaved edits included. Writes are proposals built and applied by the same code as the
API agent's tools (:mod:`rio.agent.tools`, :mod:`rio.agent.proposals`): a diff the user
reviews, the edit located again at approval, landing in a buffer (undoable, unsaved).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rio.protocol.errors import AgentError, PathError, RioError

if TYPE_CHECKING:   # run in the session only: `rio mcp` needs TOOLS, not these (~0.3 s)
    from rio.files.workspace import Workspace

#: Characters one read_buffer answer may carry; more is cut (the answer says how to go on).
MAX_READ_CHARS = 60_000
DEFAULT_SEARCH_RESULTS = 200
MAX_SEARCH_RESULTS = 2_000


@dataclass(frozen=True)
class ToolDef:
    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool
    destructive: bool = False


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


_PATH = {"type": "string", "description": "relative to the project root, or absolute inside it"}

TOOLS: tuple[ToolDef, ...] = (
    ToolDef("list_buffers", "List open buffers", "The files open in Rio's editor, with "
            "unsaved-change flags.", _obj({}, []), True),
    ToolDef("read_buffer", "Read a file as the editor has it", "The text of a project file "
            "as the user sees it: the open buffer with unsaved edits, else the file. Optional "
            "1-based inclusive line range.",
            _obj({"path": _PATH, "start_line": {"type": "integer", "minimum": 1},
                  "end_line": {"type": "integer", "minimum": 1}}, ["path"]), True),
    ToolDef("get_selection", "The user's selection", "The file, cursor and selected text in "
            "Rio's desktop window (says so when no window is open).", _obj({}, []), True),
    ToolDef("search_project", "Search the project", "Search the project's text files (open "
            "buffers as edited) for a string or regular expression; path:line:col results.",
            _obj({"query": {"type": "string"}, "regex": {"type": "boolean"},
                  "match_case": {"type": "boolean"},
                  "max_results": {"type": "integer", "minimum": 1}}, ["query"]), True),
    ToolDef("open_in_editor", "Show a file in the editor", "Open a project file in Rio's "
            "desktop window at a line (nothing is changed).",
            _obj({"path": _PATH, "line": {"type": "integer", "minimum": 1}}, ["path"]), False),
    ToolDef("propose_edit", "Propose an edit", "Propose replacing old_text (which must occur "
            "exactly once) with new_text in a project file. The user reviews a diff; the "
            "edit lands in the editor, undoable and unsaved.",
            _obj({"path": _PATH, "old_text": {"type": "string"},
                  "new_text": {"type": "string"}}, ["path", "old_text", "new_text"]),
            False, destructive=True),
    ToolDef("propose_create", "Propose a new file", "Propose creating a new project file with "
            "this text (refused if it exists). The user reviews it first.",
            _obj({"path": _PATH, "text": {"type": "string"}}, ["path", "text"]),
            False, destructive=False),
)
BY_NAME = {t.name: t for t in TOOLS}


class McpPort(Protocol):
    """The core, as one MCP call's reads see it (bus calls)."""

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any: ...


def confine(workspace: Workspace, path: Any, *, must_exist: bool = True) -> str:
    """``path`` as a root-relative POSIX path, or ``path.outside_root`` / ``path.invalid`` …
    (realpath-confined: a symlink that leads out is refused)."""
    if not isinstance(path, str) or not path:
        raise PathError("invalid", "path must be a non-empty string",
                        "Pass a path relative to the project root.")
    real = workspace.resolve(path, must_exist=must_exist, kind="file" if must_exist else "any")
    return real.relative_to(workspace.root).as_posix()


def slice_lines(text: str, start: int | None, end: int | None) -> tuple[str, int, int, int]:
    """Lines [start, end] (1-based, inclusive) of ``text``: (text, first, last, total)."""
    lines = text.splitlines(keepends=True)
    total = len(lines)
    first = max(1, start or 1)
    last = min(total, end if end is not None else total)
    if last < first:
        return "", first, first - 1, total
    return "".join(lines[first - 1:last]), first, last, total


class McpCall:
    """The reads of Rio's MCP tools, and the checks a proposal needs before it is asked.

    It runs inside the conversation's running turn (rio/agent/turn_mcp.py): the turn's own
    :class:`~rio.agent.tools.Tools` builds and applies proposals, so what an MCP call changes
    is the turn's — listed, merged into its undo step, saved with it (ADR-0034)."""

    def __init__(self, port: McpPort, root: Path) -> None:
        self.port = port
        from rio.files.workspace import Workspace
        self.workspace = Workspace(root)

    # --- reads ---------------------------------------------------------------------------------
    async def _buffers(self) -> list[Mapping[str, Any]]:
        return list(await self.port.call("buffer.list", {}))

    async def _open(self, rel: str) -> Mapping[str, Any] | None:
        for info in await self._buffers():
            if info.get("path") and posixpath.normpath(str(info["path"])) == rel:
                return info
        return None

    async def list_buffers(self, args: Mapping[str, Any]) -> dict[str, Any]:
        out = [{"path": i.get("path"), "name": i.get("name"), "unsaved": bool(i.get("dirty")),
                "length": i.get("length", 0)} for i in await self._buffers()]
        return {"buffers": out}

    async def read_buffer(self, args: Mapping[str, Any]) -> dict[str, Any]:
        rel = confine(self.workspace, args.get("path"))
        info = await self._open(rel)
        if info is not None:
            text = (await self.port.call("buffer.text", {"buffer": info["buffer"]}))["text"]
            source, unsaved = "buffer", bool(info.get("dirty"))
        else:
            got = await self.port.call("fs.read", {"path": rel})
            text, source, unsaved = got["text"], "file", False
        part, first, last, total = slice_lines(text, _int(args.get("start_line")),
                                               _int(args.get("end_line")))
        truncated = len(part) > MAX_READ_CHARS
        if truncated:
            part = part[:MAX_READ_CHARS]
            shown = first + part.count("\n")
            part += (f"\n[… truncated: ask again with start_line={shown} to read on …]\n")
        return {"path": rel, "text": part, "start_line": first, "end_line": last,
                "total_lines": total, "source": source, "unsaved": unsaved,
                "truncated": truncated}

    async def get_selection(self, args: Mapping[str, Any]) -> dict[str, Any]:
        try:
            state = await self.port.call("ui.state", {}, timeout=5.0)
        except RioError as err:
            if err.kind not in ("bus.no_route", "protocol.unknown_op"):
                raise
            return {"window": False, "message": "No desktop window is open, so there is no "
                    "selection or cursor; ask the user which file and lines they mean."}
        active = next((t for t in state.get("tabs") or () if t.get("active")), None)
        if active is None:
            return {"window": True, "path": None, "message": "No file is open in the window."}
        out: dict[str, Any] = {"window": True, "path": active.get("path"),
                               "name": active.get("name"), "cursor": state.get("cursor"),
                               "selection": None}
        sel = state.get("selection")
        if isinstance(sel, Mapping) and sel.get("size"):
            got = await self.port.call("buffer.text", {"buffer": active["buffer"],
                                                       "start": sel["start"], "end": sel["end"]})
            out["selection"] = {"start": sel["start"], "end": sel["end"],
                                "text": got["text"][:MAX_READ_CHARS]}
        return out

    async def search_project(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from rio.files.find_in_files import ProjectSearch, format_match
        from rio.files.search import SearchOptions
        query = args.get("query")
        if not isinstance(query, str) or not query:
            raise AgentError("tool_refused", "search_project needs a non-empty query.",
                             "Pass the text to look for as query.")
        limit = min(MAX_SEARCH_RESULTS, _int(args.get("max_results")) or DEFAULT_SEARCH_RESULTS)
        open_texts: dict[str, str] = {}
        for info in await self._buffers():
            if info.get("path") and info.get("dirty"):
                got = await self.port.call("buffer.text", {"buffer": info["buffer"]})
                open_texts[posixpath.normpath(str(info["path"]))] = got["text"]
        ws = self.workspace

        def read_text(rel: str) -> str | None:
            if rel in open_texts:
                return open_texts[rel]
            try:
                return (ws.root / rel).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
        search = ProjectSearch(query, SearchOptions(regex=bool(args.get("regex")),
                                                    match_case=bool(args.get("match_case"))),
                               max_results=limit)
        matches = [format_match(m) for m in search.run(ws.walk_files(), read_text)]
        return {"matches": matches, "files_searched": search.files_searched,
                "truncated": len(matches) >= limit}

    async def open_in_editor(self, args: Mapping[str, Any]) -> dict[str, Any]:
        rel = confine(self.workspace, args.get("path"))
        line = _int(args.get("line"))
        try:
            await self.port.call("ui.open", {"path": rel, **({"line": line} if line else {})},
                                 timeout=10.0)
        except RioError as err:
            if err.kind not in ("bus.no_route", "protocol.unknown_op"):
                raise
            return {"opened": False, "message": "No desktop window is open; nothing was "
                    "shown."}
        return {"opened": True, "path": rel}

    async def read(self, tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Run one of the tools that change nothing (and ``open_in_editor``)."""
        handler = getattr(self, tool, None) if tool in READ_TOOL_NAMES else None
        if handler is None:
            raise AgentError("tool_refused", f"There is no tool named {tool!r}.",
                             f"Use one of {', '.join(BY_NAME)}.")
        result: dict[str, Any] = await handler(args)
        return result

    # --- writes: what a proposal is checked for before anyone is asked -----------------------
    def proposal_args(self, tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """``propose_edit`` / ``propose_create``'s arguments, path confined (relative), the
        texts checked to be strings; raises ``path.*`` or ``agent.tool_refused``."""
        rel = confine(self.workspace, args.get("path"), must_exist=tool == "propose_edit")
        given = {"path": rel, **{k: v for k, v in args.items() if k != "path"}}
        for key in ("old_text", "new_text") if tool == "propose_edit" else ("text",):
            if not isinstance(given.get(key), str):
                raise AgentError("tool_refused", f"{tool} needs {key} as a string.",
                                 f"Pass {key}.")
        return given


#: The tools that read (and open_in_editor, which only moves the user's view).
READ_TOOL_NAMES = frozenset({"list_buffers", "read_buffer", "get_selection", "search_project",
                             "open_in_editor"})
#: The tools that propose a change the user reviews.
PROPOSE_TOOL_NAMES = frozenset({"propose_edit", "propose_create"})


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
