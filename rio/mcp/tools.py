"""Rio's MCP tools for external agents: their specifications, and running one call.

The tools an ACP agent sees through ``rio mcp`` (ADR-0025). :class:`McpCall` runs one call
against the core through a small port (bus calls, events, the gate, the user's answer), so it
holds no sockets and tests drive it with fakes; actors/agents/mcp.py gives it the real port.

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

from rio.mcp.entry import QUESTION_TIMEOUT_S
from rio.protocol.errors import AgentError, PathError, RioError

if TYPE_CHECKING:   # run in the core only: `rio mcp` needs TOOLS, not these (~0.3 s of imports)
    from rio.agent.tools import Proposal
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
    """The core, as one MCP call sees it."""

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any: ...

    def publish(self, topic: str, data: Mapping[str, Any]) -> None: ...

    async def ask(self, proposal: str, timeout: float) -> str | None:
        """Wait for the user's answer to ``proposal`` (approve, reject, always), None when it
        was not answered in ``timeout`` seconds or the turn ended."""
        ...


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
    """One call of one of Rio's MCP tools, in a conversation's running turn."""

    def __init__(self, port: McpPort, root: Path, conversation: str, turn: str, call: str,
                 *, question_timeout_s: float = QUESTION_TIMEOUT_S) -> None:
        self.port = port
        from rio.agent.tools import Tools
        from rio.files.workspace import Workspace
        self.workspace = Workspace(root)
        self.conversation = conversation
        self.turn = turn
        self.call_id = call
        self.question_timeout_s = question_timeout_s
        # McpPort has no run(): only propose_edit/propose_create reach Tools, never run_command.
        self.tools = Tools(port, conversation, self.workspace.root)  # type: ignore[arg-type]

    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        self.port.publish(topic, {"conversation": self.conversation, "turn": self.turn,
                                  **data})

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

    # --- writes: proposals -----------------------------------------------------------------------
    async def propose(self, tool: str, args: Mapping[str, Any], decision: str,
                      agent: str) -> dict[str, Any]:
        """propose_edit / propose_create: a diff, then (``ask``) the user's answer, then the
        same apply as the API agent's tools."""
        rel = confine(self.workspace, args.get("path"), must_exist=tool == "propose_edit")
        given = {"path": rel, **{k: v for k, v in args.items() if k != "path"}}
        for key in ("old_text", "new_text") if tool == "propose_edit" else ("text",):
            if not isinstance(given.get(key), str):
                raise AgentError("tool_refused", f"{tool} needs {key} as a string.",
                                 f"Pass {key}.")
        prepared = await self.tools.prepare(tool, given)
        from rio.agent.tools import Proposal
        if not isinstance(prepared, Proposal):
            return {"applied": False, "message": prepared.content}
        if decision == "ask":
            answer = await self._ask(prepared)
            if answer is None:
                self._result(tool, False, f"{rel}: not answered")
                return {"applied": False, "message": "The user did not answer in time, so the "
                        "proposal was declined. Do not repeat it unchanged; say what you "
                        "wanted to change."}
            if answer not in ("approve", "always", "reject"):   # "interrupted"
                self._result(tool, False, f"{rel}: interrupted")
                return {"applied": False, "message": "Interrupted: the user sent a new message "
                        "instead of deciding on this change, so it was not applied. Stop "
                        "and read their message."}
            if answer == "reject":
                self._result(tool, False, f"{rel}: rejected")
                return {"applied": False, "message": "The user rejected this change. Do not "
                        "repeat it unchanged; ask them what they want."}
            if answer == "always":
                await self.port.call("gate.remember", {"provider": agent, "tool": tool})
        outcome = await self.tools.apply(prepared)
        self._result(tool, outcome.ok, outcome.summary)
        return {"applied": outcome.ok, "message": outcome.content}

    async def _ask(self, proposal: Proposal) -> str | None:
        self.publish("agent.propose", {"proposal": self.call_id, "call": self.call_id,
                                       "source": "mcp", **proposal.event()})
        return await self.port.ask(self.call_id, self.question_timeout_s)

    def _result(self, tool: str, ok: bool, summary: str) -> None:
        self.publish("agent.tool_result", {"call": self.call_id, "name": tool, "ok": ok,
                                           "summary": summary, "truncated": False})

    def changed(self) -> dict[str, int]:
        """Buffers this call's edits changed → their version before (for the undo merge)."""
        return dict(self.tools.changed)

    async def run(self, tool: str, args: Mapping[str, Any], decision: str,
                  agent: str) -> dict[str, Any]:
        if tool in ("propose_edit", "propose_create"):
            return await self.propose(tool, args, decision, agent)
        handler = getattr(self, tool, None)
        if tool not in BY_NAME or handler is None:
            raise AgentError("tool_refused", f"There is no tool named {tool!r}.",
                             f"Use one of {', '.join(BY_NAME)}.")
        result: dict[str, Any] = await handler(args)
        return result


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
