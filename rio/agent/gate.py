"""The approval gate: for every tool call of a turn, allow it, ask the user, or refuse it.

Policy only; :mod:`actors.agent.gate_actor` serves it as ``gate.*`` in the core, so every session
process asks the same gate and a killed session cannot take its counters with it.

What the gate decides (issue 5, ADR-0016)::

    tool              review          auto_buffer       allow_all
    reads (fs_*, buffer_list/text)    allow everywhere
    propose_edit      ask             allow             allow
    propose_create    ask             ask               allow
    run_command       ask             ask               allow
    + a danger match (rio.agent.danger)     ask, whatever the mode or "always allow"
    + "always allow" (provider, tool) turns an ask into allow (never a danger or a refusal)
    unknown tools, a path or folder outside the project, an empty command,
    and any request outside a turn   refuse, whatever the mode

Per-turn limits count model requests and tool calls between ``begin`` and ``end``; one past
the limit raises ``agent.limit_reached`` (the turn ends with that error, the user can send
"continue").

An external (ACP) agent's calls to Rio's MCP tools have a table of their own
(:meth:`Gate.check_agent`, ADR-0025): counted per turn (24 changing, 400 in all by default),
refused outside a turn, and past a limit refused with words telling the agent to stop.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from rio.agent.danger import Danger, classify
from rio.files.atomic import write_json
from rio.protocol.errors import AgentError, ProtocolError

MODES = ("review", "auto_buffer", "allow_all")
READ_TOOLS = frozenset({"fs_list", "fs_read", "buffer_list", "buffer_text"})
WRITE_TOOLS = frozenset({"propose_edit", "propose_create"})
COMMAND_TOOLS = frozenset({"run_command"})
KNOWN_TOOLS = READ_TOOLS | WRITE_TOOLS | COMMAND_TOOLS
TURN_EVENTS = ("begin", "end", "model_request", "tool_call")

#: The tools of Rio's MCP endpoint (``rio mcp``, actors/agent/mcp.py) that an external agent
#: calls: reads run, ``open_in_editor`` only moves the user's view, writes are proposals.
AGENT_READ_TOOLS = frozenset({"list_buffers", "read_buffer", "get_selection", "search_project"})
AGENT_VIEW_TOOLS = frozenset({"open_in_editor"})
AGENT_TOOLS = AGENT_READ_TOOLS | AGENT_VIEW_TOOLS | WRITE_TOOLS

#: Turns whose session died never send "end"; keep the table from growing without bound.
MAX_OPEN_TURNS = 256

DecisionKind = Literal["allow", "ask", "refuse"]


@dataclass(frozen=True)
class Decision:
    decision: DecisionKind
    reason: str
    danger: Danger | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": self.decision, "reason": self.reason}
        if self.danger is not None:
            out["danger"] = self.danger.to_dict()
        return out


@dataclass(frozen=True)
class Limits:
    max_requests: int = 24
    max_tool_calls: int = 64
    #: An external agent's calls to Rio's MCP tools, per turn: those that change something
    #: (proposals, open_in_editor) and all of them.
    max_agent_changes: int = 24
    max_agent_requests: int = 400


#: The limits a user may set (AI Preferences, ``agent.limits``) and the range each must be in.
LIMIT_NAMES = ("max_requests", "max_tool_calls", "max_agent_changes", "max_agent_requests")
LIMIT_RANGE = (1, 100_000)


def check_limits(changes: Mapping[str, Any]) -> dict[str, int]:
    """The limits in ``changes`` (``None`` values skipped) as ints, each checked: a whole
    number in :data:`LIMIT_RANGE`; else ``protocol.bad_args`` naming the limit."""
    out: dict[str, int] = {}
    low, high = LIMIT_RANGE
    for name, value in changes.items():
        if value is None:
            continue
        if name not in LIMIT_NAMES:
            raise ProtocolError("bad_args", f"There is no per-turn limit {name!r}.",
                                f"Use one of {', '.join(LIMIT_NAMES)}.")
        # an int, or the digits of one as typed in a field ("24", " 400 "): nothing else
        if isinstance(value, int) and not isinstance(value, bool):
            number: int | None = value
        elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
            number = int(value.strip())
        else:
            number = None
        if number is None or not low <= number <= high:
            raise ProtocolError("bad_args", f"The per-turn limit {name} must be a whole number "
                                f"from {low} to {high:,}, not {value!r}.",
                                f"Enter a number from {low} to {high:,}.", limit=name)
        out[name] = number
    return out


@dataclass(frozen=True)
class TurnCount:
    requests: int = 0
    tool_calls: int = 0
    agent_changes: int = 0
    agent_requests: int = 0


class GateStore(Protocol):
    """Where the mode and the remembered "always allow" pairs are kept between runs."""

    def load(self) -> Mapping[str, Any]: ...

    def save(self, data: Mapping[str, Any]) -> None: ...


@dataclass
class MemoryStore:
    data: dict[str, Any] = field(default_factory=dict)

    def load(self) -> Mapping[str, Any]:
        return dict(self.data)

    def save(self, data: Mapping[str, Any]) -> None:
        self.data = dict(data)


class JsonFileStore:
    """A 0600 JSON file, written atomically (temp file, fsync, rename) in a 0700 folder."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> Mapping[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # no file yet, or a damaged one: defaults (review, nothing remembered)
        return data if isinstance(data, dict) else {}

    def save(self, data: Mapping[str, Any]) -> None:
        write_json(self.path, dict(data), sort_keys=True)


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ProtocolError("bad_args", f"Unknown gate mode {mode!r}.",
                            f"Use one of {', '.join(MODES)}.")
    return mode


def outside_project(path: str) -> bool:
    """Lexically outside: absolute paths and ``..`` escapes. (Symlinks are the core's job:
    it resolves every path again when the tool runs.)"""
    if not path:
        return False
    if path.startswith(("/", "~")) or "\x00" in path:
        return True
    norm = posixpath.normpath(path.replace("\\", "/"))
    return norm == ".." or norm.startswith("../")


class Gate:
    def __init__(self, *, mode: str = "review", limits: Limits = Limits(),
                 store: GateStore | None = None, root: Path | None = None) -> None:
        self.store: GateStore = store or MemoryStore()
        saved = self.store.load()
        saved_mode = saved.get("mode")
        self._mode = saved_mode if saved_mode in MODES else check_mode(mode)
        self._always: set[tuple[str, str]] = {
            (str(p), str(t)) for p, t in (tuple(x) for x in saved.get("always", ())
                                          if isinstance(x, (list, tuple)) and len(x) == 2)}
        #: the limits set by the user (agent.limits), kept over config.toml's defaults
        try:
            self._limits_set = check_limits(saved.get("limits") or {})
        except (ProtocolError, AttributeError):
            self._limits_set = {}   # a damaged file: the defaults
        self.limits = replace(limits, **self._limits_set)
        self.root = root
        self._turns: dict[tuple[str, str], TurnCount] = {}

    # --- mode and memory --------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return self._mode

    def set_mode(self, mode: str) -> str:
        self._mode = check_mode(mode)
        self._save()
        return self._mode

    def remember(self, provider: str, tool: str) -> None:
        if tool not in KNOWN_TOOLS | AGENT_TOOLS:
            raise ProtocolError("bad_args", f"There is no tool {tool!r} to always allow.",
                                f"Use one of {', '.join(sorted(KNOWN_TOOLS | AGENT_TOOLS))}.")
        self._always.add((provider, tool))
        self._save()

    def forget(self, provider: str, tool: str) -> None:
        self._always.discard((provider, tool))
        self._save()

    def always_allowed(self) -> list[tuple[str, str]]:
        return sorted(self._always)

    def set_limits(self, changes: Mapping[str, Any]) -> Limits:
        """Set per-turn limits (checked first: all or nothing); they apply from the next
        check on, and are kept with the mode."""
        checked = check_limits(changes)
        self._limits_set.update(checked)
        self.limits = replace(self.limits, **checked)
        self._save()
        return self.limits

    def limits_dict(self) -> dict[str, int]:
        return {name: getattr(self.limits, name) for name in LIMIT_NAMES}

    def _save(self) -> None:
        data: dict[str, Any] = {"mode": self._mode,
                                "always": [list(p) for p in sorted(self._always)]}
        if self._limits_set:
            data["limits"] = dict(self._limits_set)
        self.store.save(data)

    # --- turns and limits -------------------------------------------------------------------
    def in_turn(self, conversation: str, turn: str) -> bool:
        return (conversation, turn) in self._turns

    def current_turn(self, conversation: str) -> str | None:
        """The conversation's running turn (a conversation has at most one), or None."""
        return next((t for c, t in self._turns if c == conversation), None)

    def turn_event(self, conversation: str, turn: str, event: str) -> TurnCount:
        key = (conversation, turn)
        if event == "begin":
            # A conversation has one turn at a time: a new one replaces a turn whose session
            # died without saying "end".
            for other in [k for k in self._turns if k[0] == conversation]:
                del self._turns[other]
            while len(self._turns) >= MAX_OPEN_TURNS:
                del self._turns[next(iter(self._turns))]
            self._turns[key] = TurnCount()
            return self._turns[key]
        count = self._turns.get(key)
        if event == "end":
            self._turns.pop(key, None)
            return count or TurnCount()
        if count is None:
            raise outside_turn(conversation, turn)
        if event == "model_request":
            count = replace(count, requests=count.requests + 1)
            if count.requests > self.limits.max_requests:
                raise AgentError("limit_reached", f"This turn reached its limit of "
                                 f"{self.limits.max_requests} model requests.",
                                 "Send \"continue\" to let the agent go on, or raise "
                                 "max_requests_per_turn in config.toml.",
                                 limit="max_requests_per_turn")
        elif event == "tool_call":
            count = replace(count, tool_calls=count.tool_calls + 1)
            if count.tool_calls > self.limits.max_tool_calls:
                raise AgentError("limit_reached", f"This turn reached its limit of "
                                 f"{self.limits.max_tool_calls} tool calls.",
                                 "Send \"continue\" to let the agent go on, or raise "
                                 "max_tool_calls_per_turn in config.toml.",
                                 limit="max_tool_calls_per_turn")
        else:
            raise ProtocolError("bad_args", f"Unknown turn event {event!r}.",
                                f"Use one of {', '.join(TURN_EVENTS)}.")
        self._turns[key] = count
        return count

    # --- the decision -----------------------------------------------------------------------
    def check(self, conversation: str, turn: str, provider: str, tool: str,
              args: Mapping[str, Any]) -> Decision:
        if not self.in_turn(conversation, turn):
            return Decision("refuse", "Tools run only inside a turn of the conversation.")
        if tool not in KNOWN_TOOLS:
            return Decision("refuse", f"There is no tool named {tool!r}.")
        if tool in READ_TOOLS:
            return Decision("allow", "Reads inside the project run automatically.")
        for key in ("path", "cwd"):
            value = args.get(key)
            if isinstance(value, str) and outside_project(value):
                return Decision("refuse", f"{key} {value!r} is outside the project; only "
                                "paths inside the project root are allowed.")
        remembered = (provider, tool) in self._always
        if tool in COMMAND_TOOLS:
            command = args.get("command")
            if not isinstance(command, str) or not command.strip():
                return Decision("refuse", "run_command needs a non-empty command.")
            danger = classify(command, str(args.get("cwd") or "."))
            if danger is not None:
                return Decision("ask", f"This command {danger.reason}; it always asks.", danger)
            if self._mode == "allow_all":
                return Decision("allow", "Mode \"allow everything\".")
            if remembered:
                return Decision("allow", f"Always allowed for {provider}.")
            return Decision("ask", "Commands ask before they run.")
        if self._mode == "allow_all":
            return Decision("allow", "Mode \"allow everything\".")
        if tool == "propose_edit" and self._mode == "auto_buffer":
            return Decision("allow", "Mode \"auto-apply buffer edits\" (undoable).")
        if remembered:
            return Decision("allow", f"Always allowed for {provider}.")
        return Decision("ask", "Writes are reviewed before they apply.")


    # --- an external agent's calls to Rio's MCP tools ------------------------------------------
    def check_agent(self, conversation: str, agent: str, tool: str,
                    args: Mapping[str, Any]) -> tuple[Decision, str | None]:
        """Decide on an ACP agent's call to one of Rio's MCP tools, and count it against the
        running turn's limits. Returns the decision and the turn it belongs to (None when no
        turn runs: refused). One past a limit is refused with words telling the agent to
        stop and say what is left; the count stays past the limit, so every further call of
        the turn is refused too.

        Table (ADR-0025)::

            tool                         review   auto_buffer   allow_all
            list_buffers, read_buffer,   allow    allow         allow
            get_selection, search_project
            open_in_editor               allow    allow         allow   (moves the view only)
            propose_edit                 ask      allow         allow
            propose_create               ask      ask           allow
            "always allow" (agent, tool) turns an ask into allow
            unknown tool, a path outside the project, no turn running: refuse
        """
        turn = self.current_turn(conversation)
        if turn is None:
            return Decision("refuse", "Rio's tools work only while the user's message is being "
                            "answered (no turn is running in this conversation)."), None
        if tool not in AGENT_TOOLS:
            return Decision("refuse", f"There is no tool named {tool!r}."), turn
        changing = tool not in AGENT_READ_TOOLS
        count = self._turns[(conversation, turn)]
        count = replace(count, agent_requests=count.agent_requests + 1,
                        agent_changes=count.agent_changes + (1 if changing else 0))
        self._turns[(conversation, turn)] = count
        limits = self.limits
        if count.agent_requests > limits.max_agent_requests:
            return _limit_refusal(f"{limits.max_agent_requests} requests to Rio's tools"), turn
        if changing and count.agent_changes > limits.max_agent_changes:
            return _limit_refusal(f"{limits.max_agent_changes} changing requests (proposals, "
                                  "opening files)"), turn
        if tool in AGENT_READ_TOOLS or tool in AGENT_VIEW_TOOLS:
            return Decision("allow", "Reads and showing a file run automatically."), turn
        value = args.get("path")
        if isinstance(value, str) and outside_project(value) and not (
                self.root is not None and value.startswith(str(self.root) + "/")):
            return Decision("refuse", f"path {value!r} is outside the project; only paths "
                            "inside the project root are allowed."), turn
        if self._mode == "allow_all":
            return Decision("allow", "Mode \"allow everything\"."), turn
        if tool == "propose_edit" and self._mode == "auto_buffer":
            return Decision("allow", "Mode \"auto-apply buffer edits\" (undoable)."), turn
        if (agent, tool) in self._always:
            return Decision("allow", f"Always allowed for {agent}."), turn
        return Decision("ask", "Writes are reviewed before they apply."), turn


def _limit_refusal(what: str) -> Decision:
    return Decision("refuse", f"This turn reached its limit of {what}. Stop now: do not call "
                    "Rio's tools again in this turn; tell the user what you did and what is "
                    "left to do, so they can send \"continue\".")


def outside_turn(conversation: str, turn: str) -> AgentError:
    return AgentError("outside_turn", f"No turn {turn!r} is running in conversation "
                      f"{conversation!r}; the gate refuses requests outside a turn.",
                      "Send a message to start a turn.")
