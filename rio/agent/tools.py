"""The agent's tools: their specifications for the model, and running them over the bus.

Every tool is a few bus calls to the core (``fs.*``, ``buffer.*``, ``run.*``) through one small
port, :class:`BusPort`, so this module holds no sockets and tests drive it with a fake. The
core confines every path (symlinks resolved, special files refused); this module adds what
the model needs on top: size caps with an explicit truncation marker, the unsaved buffer text
for files that are open, and results phrased so the model can act on them.

Writes come in two halves. ``prepare_*`` checks the request against the current text and
builds the unified diff the user reviews (or refuses with a reason, before anyone is asked);
``apply_*`` runs at approval and locates the edit *again* in the text as it is then.
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rio.agent.danger import classify
from rio.agent.proposals import Located, ProposalKind, Refusal, edit_diff, locate, unified_diff
from rio.files.files import READ_LIMIT_BYTES, truncation_marker
from rio.protocol.errors import AgentError, RioError
from rio.providers.base import ToolSpec

#: What one tool result may hand the model (characters); more is cut with a marker.
MAX_RESULT_CHARS = 60_000
#: Command output kept for the model: the head and the tail (errors are usually at the end).
COMMAND_HEAD_CHARS = 8_000
COMMAND_TAIL_CHARS = 24_000
#: How much of a command's result the agent.tool_result event carries for the UI (its tail).
SHOWN_OUTPUT_CHARS = 4_000
DEFAULT_COMMAND_TIMEOUT_S = 120.0
MAX_COMMAND_TIMEOUT_S = 1800.0
#: The full text read to build a diff (the core's own ceiling for fs.read).
FULL_TEXT_CHARS = READ_LIMIT_BYTES


class BusPort(Protocol):
    """The core, as the tools see it."""

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any: ...

    async def run(self, args: Mapping[str, Any], timeout: float) -> Mapping[str, Any]:
        """``run.start`` and wait for its end: {run, code, how, output, dropped_chars}."""
        ...


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_PATH = {"type": "string", "description": "relative to the project root"}

TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("fs_list", "List a folder of the project (ignored files left out).",
             _obj({"path": {**_PATH, "default": "."}}, [])),
    ToolSpec("fs_read", "Read a text file of the project. Shows unsaved changes when the file "
             "is open in the editor. Long files are cut with a marker; pass offset to read on.",
             _obj({"path": _PATH,
                   "offset": {"type": "integer", "description": "first character to return"},
                   "max_chars": {"type": "integer", "description": "at most this many"}},
                  ["path"])),
    ToolSpec("buffer_list", "The files open in the editor, with unsaved-change flags.",
             _obj({}, [])),
    ToolSpec("buffer_text", "The text of an open editor buffer (by id from buffer_list).",
             _obj({"buffer": {"type": "string"}, "start": {"type": "integer"},
                   "end": {"type": "integer"}}, ["buffer"])),
    ToolSpec("propose_edit", "Propose replacing old_text with new_text in a file. The user "
             "reviews a diff; old_text must occur exactly once.",
             _obj({"path": _PATH, "old_text": {"type": "string"},
                   "new_text": {"type": "string"}}, ["path", "old_text", "new_text"])),
    ToolSpec("propose_create", "Propose creating a new file with this text (refused if the "
             "path exists). The user reviews it first.",
             _obj({"path": _PATH, "text": {"type": "string"}}, ["path", "text"])),
    ToolSpec("run_command", "Run a shell command in the project (asks the user first). "
             "Returns the exit code and the output (capped).",
             _obj({"command": {"type": "string"},
                   "cwd": {**_PATH, "description": "folder relative to the project root"},
                   "timeout_s": {"type": "number"}}, ["command"])),
)
TOOL_NAMES = frozenset(t.name for t in TOOL_SPECS)
READ_TOOLS = frozenset({"fs_list", "fs_read", "buffer_list", "buffer_text"})
_REQUIRED = {t.name: tuple(t.input_schema.get("required", ())) for t in TOOL_SPECS}


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool gave back: ``content`` for the model, ``summary`` for the user's UI."""

    content: str
    ok: bool = True
    summary: str = ""
    truncated: bool = False
    #: For the user's UI (run_command): the tail of ``content``, what the model got back.
    output: str = ""


@dataclass(frozen=True)
class Proposal:
    """A write waiting for the user: what the agent.propose event shows."""

    kind: ProposalKind
    path: str
    diff: str
    input: Mapping[str, Any]
    command: str | None = None
    cwd: str | None = None
    danger: Mapping[str, str] | None = None

    def event(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "path": self.path, "diff": self.diff}
        if self.kind == "command":
            out.update(command=self.command, cwd=self.cwd or ".")
            if self.danger:
                out["danger"] = dict(self.danger)
        return out


def cap(text: str, limit: int = MAX_RESULT_CHARS) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit] + truncation_marker(limit, len(text)), True


def missing_args(name: str, given: Mapping[str, Any]) -> list[str]:
    return [k for k in _REQUIRED.get(name, ()) if k not in given]


def _error(err: BaseException, what: str) -> ToolOutcome:
    if isinstance(err, RioError):
        return ToolOutcome(f"Error: {err.message} ({err.kind}). {err.next}", False,
                           f"{what}: {err.message}")
    return ToolOutcome(f"Error: {err}", False, f"{what}: failed")


@dataclass
class Tools:
    """The tools of one conversation; remembers which buffers its edits changed."""

    port: BusPort
    conversation: str
    root: Path | None = None
    changed: dict[str, int] = field(default_factory=dict)  # buffer → version before 1st change

    @property
    def origin(self) -> str:
        return f"agent:{self.conversation}"

    # --- paths and open buffers ---------------------------------------------------------------
    def _relative(self, path: str) -> str:
        """The path as buffer.list spells it (relative, normalised), for matching only; the
        core confines the path itself whatever this returns."""
        if self.root is not None and path.startswith("/"):
            try:
                path = str(Path(path).relative_to(self.root))
            except ValueError:
                return path
        return posixpath.normpath(path.replace("\\", "/"))

    async def _open_buffer(self, path: str) -> Mapping[str, Any] | None:
        wanted = self._relative(path)
        info: Mapping[str, Any]
        for info in await self.port.call("buffer.list", {}):
            if info.get("path") and posixpath.normpath(info["path"]) == wanted:
                return info
        return None

    async def _current_text(self, path: str) -> tuple[str, str]:
        """(text, where) — the open buffer's text, else the file's."""
        info = await self._open_buffer(path)
        if info is not None:
            got = await self.port.call("buffer.text", {"buffer": info["buffer"]})
            return got["text"], "buffer"
        got = await self.port.call("fs.read", {"path": path, "max_chars": FULL_TEXT_CHARS})
        if got.get("truncated"):
            raise AgentError("too_large", f"{path} is too large to edit through the agent.",
                             "Edit it in the editor.")
        return got["text"], "file"

    # --- reads ---------------------------------------------------------------------------------
    async def read(self, name: str, args: Mapping[str, Any]) -> ToolOutcome:
        try:
            if name == "fs_list":
                return await self._fs_list(str(args.get("path") or "."))
            if name == "fs_read":
                return await self._fs_read(args)
            if name == "buffer_list":
                return await self._buffer_list()
            if name == "buffer_text":
                return await self._buffer_text(args)
        except RioError as err:
            return _error(err, name)
        return ToolOutcome(f"Error: {name} is not a read tool.", False, f"{name}: unknown")

    async def _fs_list(self, path: str) -> ToolOutcome:
        got = await self.port.call("fs.list", {"path": path})
        lines = [f"{e['kind']:4} {e['path']}" + (f"  ({e['size']} bytes)"
                                                   if e.get("size") is not None else "")
                 for e in got["entries"]]
        text = "\n".join(lines) or "(empty folder)"
        if got.get("truncated"):
            text += "\n[… truncated: the folder has more entries …]"
        text, cut = cap(text)
        return ToolOutcome(text, True, f"{got['path']}: {len(got['entries'])} entries",
                           cut or bool(got.get("truncated")))

    async def _fs_read(self, args: Mapping[str, Any]) -> ToolOutcome:
        path = str(args["path"])
        offset = max(0, _int(args.get("offset"), 0))
        limit = min(MAX_RESULT_CHARS, max(1, _int(args.get("max_chars"), MAX_RESULT_CHARS)))
        info = await self._open_buffer(path)
        if info is not None:
            length = int(info.get("length", 0))
            start = min(offset, length)
            end = min(length, start + limit)
            got = await self.port.call("buffer.text", {"buffer": info["buffer"], "start": start,
                                                       "end": end})
            text, total, source = got["text"], length, " (open in the editor, unsaved text)" \
                if info.get("dirty") else " (open in the editor)"
        else:
            got = await self.port.call("fs.read", {"path": path, "max_chars": offset + limit})
            total = int(got.get("length", 0))
            text = got["text"]
            if got.get("truncated"):  # strip the core's marker: we add our own, with offsets
                text = text[:offset + limit]
            text = text[offset:]
            source = ""
        shown_end = offset + len(text)
        truncated = shown_end < total
        if truncated:
            text += (f"\n[… truncated: showing characters {offset}–{shown_end} of {total}; "
                     f"call fs_read with offset={shown_end} to read on …]\n")
        return ToolOutcome(text, True, f"{path}: {total} characters{source}", truncated)

    async def _buffer_list(self) -> ToolOutcome:
        infos = await self.port.call("buffer.list", {})
        lines = [f"{i['buffer']}  {i.get('path') or i.get('name')}"
                 f"{'  (unsaved changes)' if i.get('dirty') else ''}  {i.get('length', 0)} chars"
                 for i in infos]
        return ToolOutcome("\n".join(lines) or "(no open buffers)", True,
                           f"{len(infos)} open buffers")

    async def _buffer_text(self, args: Mapping[str, Any]) -> ToolOutcome:
        bid = str(args["buffer"])
        start = max(0, _int(args.get("start"), 0))
        info = await self.port.call("buffer.info", {"buffer": bid})
        length = int(info.get("length", 0))
        end = min(length, _int(args.get("end"), length))
        start = min(start, end)
        limited_end = min(end, start + MAX_RESULT_CHARS)
        got = await self.port.call("buffer.text", {"buffer": bid, "start": start,
                                                   "end": limited_end})
        text = got["text"]
        truncated = limited_end < end
        if truncated:
            text += (f"\n[… truncated: showing characters {start}–{limited_end} of {length}; "
                     f"ask again with start={limited_end} …]\n")
        return ToolOutcome(text, True, f"{info.get('name', bid)}: {len(got['text'])} characters",
                           truncated)

    # --- writes: prepare (diff for review) and apply (at approval) ----------------------------
    async def prepare(self, name: str, args: Mapping[str, Any]) -> Proposal | ToolOutcome:
        try:
            if name == "propose_edit":
                return await self._prepare_edit(args)
            if name == "propose_create":
                return await self._prepare_create(args)
            if name == "run_command":
                return self._prepare_command(args)
        except RioError as err:
            return _error(err, name)
        return ToolOutcome(f"Error: {name} is not a write tool.", False, f"{name}: unknown")

    async def _prepare_edit(self, args: Mapping[str, Any]) -> Proposal | ToolOutcome:
        path = str(args["path"])
        try:
            text, _where = await self._current_text(path)
        except RioError as err:
            if err.kind == "path.not_found":
                return ToolOutcome(f"Error: {path} does not exist; use propose_create for a new "
                                   "file.", False, f"{path}: not found")
            raise
        diff, refusal = edit_diff(path, text, str(args["old_text"]), str(args["new_text"]))
        if refusal is not None:
            return _refused(path, refusal)
        return Proposal("edit", path, diff, dict(args))

    async def _exists(self, path: str) -> bool:
        try:
            await self.port.call("fs.read", {"path": path, "max_chars": 0})
        except RioError as err:
            if err.kind == "path.not_found":
                return False
            if err.kind in ("path.not_a_file", "path.special_file", "file.binary",
                            "file.too_large"):
                return True
            raise
        return True

    async def _prepare_create(self, args: Mapping[str, Any]) -> Proposal | ToolOutcome:
        path = str(args["path"])
        if await self._exists(path) or await self._open_buffer(path) is not None:
            return _refused(path, Refusal("exists", f"{path} already exists; use propose_edit "
                                          "to change it."))
        return Proposal("create", path, unified_diff(path, "", str(args["text"]), created=True),
                        dict(args))

    def _prepare_command(self, args: Mapping[str, Any]) -> Proposal | ToolOutcome:
        command = str(args["command"])
        if not command.strip():
            return ToolOutcome("Error: the command is empty.", False, "run_command: empty")
        danger = classify(command, str(args.get("cwd") or "."))
        return Proposal("command", str(args.get("cwd") or "."), "", dict(args), command=command,
                        cwd=str(args.get("cwd") or "."),
                        danger=danger.to_dict() if danger else None)

    async def apply(self, proposal: Proposal) -> ToolOutcome:
        try:
            if proposal.kind == "edit":
                return await self._apply_edit(proposal)
            if proposal.kind == "create":
                return await self._apply_create(proposal)
            return await self._apply_command(proposal)
        except RioError as err:
            return _error(err, proposal.path if proposal.kind != "command" else "run_command")

    async def _apply_edit(self, proposal: Proposal) -> ToolOutcome:
        # Files that are not open are opened first: the edit lands in a buffer, undoable and
        # unsaved, like any other edit the user reviews before saving (ADR-0016).
        info = await self.port.call("buffer.open", {"path": proposal.path})
        bid = info["buffer"]
        for attempt in (1, 2):
            got = await self.port.call("buffer.text", {"buffer": bid})
            where = locate(got["text"], str(proposal.input["old_text"]))
            if isinstance(where, Refusal):
                return _refused(proposal.path, where, at_approval=True)
            assert isinstance(where, Located)
            version = int(got["version"])
            try:
                await self.port.call("buffer.replace", {
                    "buffer": bid, "start": where.start, "end": where.end,
                    "text": str(proposal.input["new_text"]), "base_version": version,
                    "origin": self.origin, "label": "Agent edit"})
                break
            except RioError as err:
                # The core restarted between the read and the edit (ADR-0020): read the
                # recovered text and locate the old text again, once.
                if err.kind != "buffer.stale_base" or attempt == 2:
                    raise
        self.changed.setdefault(bid, version)
        return ToolOutcome(f"Applied the edit to {proposal.path} (in the editor, unsaved; the "
                           "user saves).", True, f"{proposal.path}: edited")

    async def _apply_create(self, proposal: Proposal) -> ToolOutcome:
        path = proposal.path
        if await self._exists(path):  # created meanwhile: never overwrite
            return _refused(path, Refusal("exists", f"{path} was created meanwhile; read it "
                                          "and use propose_edit."), at_approval=True)
        info = await self.port.call("buffer.new", {"text": str(proposal.input["text"])})
        try:
            await self.port.call("buffer.save", {"buffer": info["buffer"], "path": path})
        except RioError:
            await _quietly(self.port.call("buffer.close", {"buffer": info["buffer"],
                                                           "discard": True}))
            raise
        return ToolOutcome(f"Created {path}.", True, f"{path}: created")

    async def _apply_command(self, proposal: Proposal) -> ToolOutcome:
        timeout = min(MAX_COMMAND_TIMEOUT_S,
                      max(1.0, _float(proposal.input.get("timeout_s"),
                                      DEFAULT_COMMAND_TIMEOUT_S)))
        try:
            final = await self.port.run({"command": proposal.command, "cwd": proposal.cwd or ".",
                                         "timeout_s": timeout}, timeout + 30.0)
        except RioError as err:
            if err.kind in ("bus.no_route", "protocol.unknown_op"):
                return ToolOutcome("Error: commands cannot run here (this Rio has no command "
                                   f"runner: {err.kind}).", False, "run_command: unavailable")
            raise
        output = str(final.get("output", ""))
        truncated = bool(final.get("dropped_chars"))
        if len(output) > COMMAND_HEAD_CHARS + COMMAND_TAIL_CHARS:
            left_out = len(output) - COMMAND_HEAD_CHARS - COMMAND_TAIL_CHARS
            output = (output[:COMMAND_HEAD_CHARS] + f"\n[… truncated: {left_out} characters "
                      "left out …]\n" + output[-COMMAND_TAIL_CHARS:])
            truncated = True
        elif truncated:
            output += f"\n[… truncated: {final.get('dropped_chars')} characters dropped …]\n"
        how, code = final.get("how", "exited"), final.get("code")
        head = f"exit code {code}" if how == "exited" else f"{how} (exit code {code})"
        content = f"{head}\n{output}"
        return ToolOutcome(content, how == "exited" and code == 0,
                           f"{proposal.command}: {head}", truncated,
                           output=content[-SHOWN_OUTPUT_CHARS:])


def _refused(path: str, refusal: Refusal, *, at_approval: bool = False) -> ToolOutcome:
    when = "At approval, the edit was refused" if at_approval else "Refused"
    return ToolOutcome(f"{when} ({refusal.reason}): {refusal.message}", False,
                       f"{path}: {refusal.reason}")


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _float(value: Any, default: float) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return default


async def _quietly(awaitable: Any) -> None:
    try:
        await awaitable
    except (RioError, asyncio.TimeoutError):
        pass
