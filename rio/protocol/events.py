"""The catalogue of events: every topic Rio publishes, with its fields, checked in tests.

Ops are typed at the edge (:mod:`rio.protocol.ops`); events are read by key all over — the
agent panel (ui/tk/agent/), ``rio chat`` (ui/term/chat*.py), the desktop's editors, the
core's own conversations actor — so a field a publisher forgets or misspells becomes a reader's
silent ``None``. This module is the one list of topics, one :class:`EventSpec` per topic, each
field an :class:`~rio.protocol.ops.Arg` (name, type, required or not, a line of doc) and nested
maps a :class:`Shape`. docs/protocol.md "Events" is written from it (a test holds the two
together), and :func:`describe_events` gives it to tools.

:func:`check_event` checks one event: an unknown topic, a missing required field, a wrong type,
a field the record does not declare (refused, as :func:`rio.protocol.ops.validate_args` refuses
an unknown argument), at every level of the nested shapes. A failure is
``protocol.bad_event`` naming the topic and the field.

When it runs: every publish path of the bus (actors/bus: ``BusConnection.publish``,
``BusThread.publish`` and the events sent with a reply, ``AsyncLink.publish``, ``Hub.publish``)
calls :func:`guard` when :data:`CHECKING` — the environment variable ``RIO_CHECK_EVENTS=1``,
which the test suite sets (tests/conftest.py, tests/support.py ``rio_env``) and production
never does. Off, a publish pays one read of a module global that is False: ``buffer.changed``
goes out per keystroke. On, :func:`guard` raises in the publishing thread and logs an ERROR
line starting with :data:`MARKER` first, so a failure that a catch-all swallows (an actor, the
bus thread) still fails the test: the suite looks for the marker in the log of every process
of an instance it ran (tests/support.py ``RioServer.stop``) and in its own (tests/conftest.py).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Mapping

from rio.protocol.errors import ProtocolError
from rio.protocol.ops import Arg, _is_kind, _type_name, one_of, str_list

log = logging.getLogger("rio.events")

#: Is every published event checked against the catalogue? Read once, at import: the test
#: suite sets the variable before Rio's modules load, and every process it starts inherits it.
CHECKING: bool = os.environ.get("RIO_CHECK_EVENTS") == "1"
#: The start of the ERROR line a failed check logs; the test suite fails on any log holding it.
MARKER = "rio: event check failed:"

_MISSING = object()
#: Any msgpack value: what an agent sent as it sent it (a tool's input, its config options).
ANY: tuple[type, ...] = (str, int, float, bool, list, dict, type(None))
NUM: tuple[type, ...] = (int, float)
OPT_STR: tuple[type, ...] = (str, type(None))


class Shape:
    """The fields of a nested map, checked like an event's own (unknown fields refused).
    Used as an :class:`Arg`'s ``check``: ``Arg("error", dict, check=Shape(...))``."""

    def __init__(self, *fields: Arg) -> None:
        self.fields = fields

    def __call__(self, value: Any) -> str | None:
        try:
            _check_map(self.fields, value, "")
        except _Bad as bad:
            return bad.message
        return None


class ListOf:
    """A list whose every item is of ``item``: a :class:`Shape` (a list of maps) or a type."""

    def __init__(self, item: Shape | type | tuple[type, ...]) -> None:
        self.item = item

    def __call__(self, value: Any) -> str | None:
        try:
            _check_list(self, value, "")
        except _Bad as bad:
            return bad.message
        return None


@dataclass(frozen=True, slots=True)
class EventSpec:
    topic: str
    #: who publishes it: core, session, supervisor, fault harness
    source: str
    #: what it says and when it is published (one line)
    doc: str
    fields: tuple[Arg, ...]

    @property
    def family(self) -> str:
        return self.topic.split(".", 1)[0]


EVENTS: dict[str, EventSpec] = {}


def define_event(topic: str, source: str, doc: str, *fields: Arg) -> EventSpec:
    if topic in EVENTS:
        raise ValueError(f"event {topic!r} is defined twice")
    spec = EventSpec(topic, source, doc, tuple(fields))
    EVENTS[topic] = spec
    return spec


# --- checking -----------------------------------------------------------------------------------

class _Bad(Exception):
    """One complaint about one field, raised out of the nested walk."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


#: The field names of each record and shape (their tuples live as long as the module).
_NAMES: dict[int, frozenset[str]] = {}


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return "any value" if kind == ANY else _type_name(kind)


def _check_map(fields: tuple[Arg, ...], data: Any, prefix: str) -> None:
    if type(data) is not dict and not isinstance(data, Mapping):
        where = prefix[:-1]
        what = f"field {where!r}" if where else "its data"
        raise _Bad(where, f"{what} must be a map, got {type(data).__name__}")
    known = _NAMES.get(id(fields))
    if known is None:
        known = _NAMES[id(fields)] = frozenset(f.name for f in fields)
    extra = sorted(k if isinstance(k, str) else repr(k) for k in data if k not in known)
    if extra:
        where = prefix[:-1]
        owner = f"field {where!r} has " if where else ""
        raise _Bad(prefix + extra[0], f"{owner}unknown field(s) {', '.join(extra)}; it takes "
                   f"{', '.join(sorted(known)) or 'none'}")
    for arg in fields:
        name = prefix + arg.name
        value = data.get(arg.name, _MISSING)
        if value is _MISSING:
            if arg.required:
                raise _Bad(name, f"missing field {name!r} ({_kind_name(arg.kind)})")
            continue
        if not _is_kind(value, arg.kind):
            raise _Bad(name, f"field {name!r} must be {_kind_name(arg.kind)}, got "
                       f"{type(value).__name__}")
        check = arg.check
        if check is None or value is None:
            continue
        if isinstance(check, Shape):
            _check_map(check.fields, value, name + ".")
        elif isinstance(check, ListOf):
            _check_list(check, value, name)
        else:
            complaint = check(value)
            if complaint:
                raise _Bad(name, f"field {name!r} {complaint}")


def _check_list(of: ListOf, value: Any, name: str) -> None:
    if not isinstance(value, (list, tuple)):
        raise _Bad(name, f"field {name!r} must be a list, got {type(value).__name__}")
    for i, item in enumerate(value):
        at = f"{name}[{i}]"
        if isinstance(of.item, Shape):
            _check_map(of.item.fields, item, at + ".")
        elif not _is_kind(item, of.item):
            raise _Bad(at, f"field {at!r} must be {_kind_name(of.item)}, got "
                       f"{type(item).__name__}")


def check_event(topic: str, data: Any) -> None:
    """Raise ``protocol.bad_event`` unless ``data`` is what the catalogue says ``topic``
    carries: the message names the topic and the field, ``details`` has both."""
    spec = EVENTS.get(topic)
    if spec is None:
        raise ProtocolError("bad_event", f"{topic}: not an event topic of the catalogue.",
                            "Add the event to rio/protocol/events.py and docs/protocol.md, or "
                            "fix the topic's spelling.", topic=topic, field=None)
    try:
        _check_map(spec.fields, data, "")
    except _Bad as bad:
        raise ProtocolError("bad_event", f"{topic}: {bad.message}.",
                            "Fix the publisher; if the event changed on purpose, change its "
                            "record in rio/protocol/events.py and docs/protocol.md.",
                            topic=topic, field=bad.field) from None


def guard(topic: str, data: Any) -> None:
    """:func:`check_event` for a publish path: a failure is logged (ERROR, :data:`MARKER`, with
    the publisher's stack) before it is raised in the publishing thread."""
    try:
        check_event(topic, data)
    except ProtocolError as err:
        log.error("%s %s", MARKER, err.message, stack_info=True)
        raise


def audit(topic: str, data: Any) -> bool:
    """:func:`guard` for a thread that must not raise (the hub's, for events services send):
    a failure is logged with :data:`MARKER` only. False when the event failed."""
    try:
        check_event(topic, data)
    except ProtocolError as err:
        log.error("%s %s (published by a service)", MARKER, err.message)
        return False
    return True


def describe_events() -> list[dict[str, Any]]:
    """The catalogue as plain data (for docs and tools), sorted by topic."""
    return [{"topic": s.topic, "source": s.source, "doc": s.doc,
             "fields": [_describe(a) for a in s.fields]}
            for s in sorted(EVENTS.values(), key=lambda s: s.topic)]


def _describe(arg: Arg) -> dict[str, Any]:
    out: dict[str, Any] = {"name": arg.name, "type": _kind_name(arg.kind),
                           "required": arg.required, "doc": arg.doc}
    check = arg.check
    if isinstance(check, Shape):
        out["fields"] = [_describe(a) for a in check.fields]
    elif isinstance(check, ListOf):
        if isinstance(check.item, Shape):
            out["items"] = [_describe(a) for a in check.item.fields]
        else:
            out["items"] = _kind_name(check.item)
    return out


# --- shapes used by several events --------------------------------------------------------------

def _f(name: str, kind: type | tuple[type, ...], doc: str = "", *,
       check: Any = None) -> Arg:
    """A required field."""
    return Arg(name, kind, True, None, check, doc)


def _o(name: str, kind: type | tuple[type, ...], doc: str = "", *,
       check: Any = None) -> Arg:
    """An optional field: absent when it does not apply."""
    return Arg(name, kind, False, None, check, doc)


ERROR = Shape(_f("kind", str, "family.leaf (rio/protocol/errors.py)"),
              _f("message", str, "what happened"), _f("next", str, "what to do"),
              _o("details", dict, "the error's details, when it has any"))
FORMAT = Shape(_f("encoding", str), _f("bom", bool), _f("newline", str, "the newline as text"),
               _f("mixed_newlines", bool), _f("final_newline", bool),
               _f("warning", OPT_STR, "why the file loaded oddly, or null"))
#: What buffer.open/new/list/info/save answer, and buffer.opened/saved carry.
SUMMARY = (
    _f("buffer", str, "the buffer's id"), _f("name", str, "shown name (Untitled-… if new)"),
    _f("path", OPT_STR, "relative to the root; null for an untitled buffer"),
    _f("path_error", (dict, type(None)), "why a save would be refused (the file became a "
       "link), or null", check=ERROR),
    _f("version", int), _f("dirty", bool), _f("length", int, "code points"),
    _f("line_count", int), _f("format", dict, check=FORMAT),
    _f("can_undo", bool), _f("can_redo", bool),
    _f("undo_label", OPT_STR), _f("redo_label", OPT_STR),
    _f("epoch", int, "rises at every recovery after a restart (ADR-0020)"),
    _f("recovered", bool, "brought back from the journal, not saved since"))
RECOVERY_FAILURE = Shape(
    _f("journal", str, "the journal's name"), _o("buffer", str), _o("name", str),
    _f("kind", str, "file.journal_damaged, file.conflict, internal.unexpected …"),
    _f("message", str), _f("next", str), _o("details", dict, "kept, replayed, skipped …"))
CHANGED_FILE = Shape(
    _f("path", str, "relative to the root"),
    _f("change", str, check=one_of("modified", "created", "deleted")),
    _o("diff", str, "unified diff, for a text file read at the turn's start"),
    _o("note", str, "why there is no diff"),
    _o("stored_as", dict, "a deleted file's encoding and newline (buffer.save takes them)",
       check=Shape(_f("encoding", str), _f("newline", str))))
DANGER = Shape(_f("rule", str, "the rule's stable id"), _f("reason", str, "in words"))
SIGN_IN_METHOD = Shape(
    _f("id", str), _f("name", str), _f("type", str, check=one_of("terminal", "agent", "env_var")),
    _f("description", str), _o("command", list, "terminal: the argv", check=str_list),
    _o("shell", str, "terminal: the command line to show"), _o("env", dict, "terminal"),
    _o("vars", list, "env_var: the variable names", check=str_list), _o("link", str))

CONVERSATION = _f("conversation", str, "the conversation's id")
TURN = _f("turn", str, "the turn's id, <conversation>.<n>")


# --- buffer.*: the core's documents (actors/core/documents_actor.py, rio/text/buffer_state.py) -------------

define_event(
    "buffer.changed", "core", "A change applied to a buffer (an edit, an undo or redo step, a "
    "revert): replace [start, end) of version−1 with text. Per keystroke.",
    _f("buffer", str), _f("version", int, "the version after the change"),
    _f("start", int), _f("end", int), _f("text", str),
    _f("origin", str, "who made it: ui, agent:<id>, cli, revert …"),
    _f("label", str, "its undo label"),
    _f("kind", str, "edit, or a step of an undo/redo", check=one_of("edit", "undo", "redo")))
define_event("buffer.opened", "core", "A buffer was opened or created (its summary).", *SUMMARY)
define_event("buffer.saved", "core", "A buffer was saved, or reverted from disk (its summary).",
             *SUMMARY)
define_event("buffer.closed", "core", "A buffer was closed.", _f("buffer", str), _f("name", str))
define_event(
    "buffer.conflict", "core", "The file changed on disk under an open buffer (once per change).",
    _f("buffer", str), _f("name", str), _f("path", str), _f("dirty", bool),
    _f("next", str, "what the user can do"))
define_event(
    "buffer.recovered", "core", "At the core's start: unsaved buffers brought back from their "
    "journals, and the journals that could not be (fully) replayed.",
    _f("buffers", list, "their summaries", check=ListOf(Shape(*SUMMARY))),
    _f("failures", list, check=ListOf(RECOVERY_FAILURE)), _f("count", int))
define_event(
    "buffer.journal_failed", "core", "A buffer's edits cannot be journaled (edits are refused "
    "until they can); once per episode.",
    _f("buffer", str), _f("name", str), _f("kind", str, "file.journal_write_failed"),
    _f("message", str), _f("next", str), _o("details", dict, "journal, buffer_name, errno"))
define_event("buffer.journal_restored", "core", "The buffer's journal is written again.",
             _f("buffer", str), _f("name", str))


# --- fs.*: the project's files on disk (actors/core/fs_watcher.py, rio/files/watch.py) -------------

define_event(
    "fs.changed", "core", "Files or folders were made, deleted or renamed on disk in these "
    "folders (not ignored ones); a storm is one event per 400 ms at most.",
    _f("folders", list, "project-relative folders whose entries changed (\".\" the root), "
       "at most 100", check=ListOf(str)),
    _f("more", bool, "list again every folder you show: more folders changed than are named, "
       "or the ignore rules changed"))


# --- run.*: the project's Run/Build commands (actors/core/runner_actor.py) ---------------------------

define_event(
    "run.output", "core", "A run's output, batched (≤ 32 K characters, ≤ 50 ms late).",
    _f("run", str), _f("stream", str, check=one_of("stdout", "stderr")), _f("text", str))
define_event(
    "run.exit", "core", "A run ended: exactly one per run, after its last run.output.",
    _f("run", str), _f("code", (int, type(None)), "128+N for a death by signal N"),
    _f("how", str, check=one_of("exited", "stopped", "timeout", "failed")),
    _f("stop", OPT_STR, "the step that ended the main process (exited, terminated, killed)"),
    _f("survivors", list, "pids that could not be killed (always empty)", check=ListOf(int)),
    _f("output_chars", int), _f("dropped_chars", int))


# --- agent.*: a conversation's turn (actors/agent/conversations_actor.py, session.py, rio/agent/) ----

define_event(
    "agent.turn", "core", "A turn started (with the user's text), or ended (with its state, "
    "error, the buffers it left unsaved, the files its ACP agent changed on disk).",
    CONVERSATION, TURN,
    _f("state", str, check=one_of("started", "done", "stopped", "error")),
    _o("text", str, "started: the user's message"),
    _o("error", dict, "the end's error (stopped, error)", check=ERROR),
    _o("buffers", list, "the buffers the turn changed (unsaved)", check=ListOf(str)),
    _o("changed_files", list, "as agent.changed_files' files", check=ListOf(CHANGED_FILE)),
    _o("again", bool, "a late end of a turn the core had ended (its session hung or died)"))
define_event("agent.delta", "session", "A chunk of the model's (or agent's) text, in order.",
             CONVERSATION, TURN, _f("text", str))
define_event("agent.thought", "session", "A chunk of an ACP agent's reasoning.",
             CONVERSATION, TURN, _f("text", str))
define_event(
    "agent.message", "core", "The turn's text, once the turn has ended.",
    CONVERSATION, TURN, _f("role", str, check=one_of("assistant")), _f("text", str))
define_event(
    "agent.error", "session or core", "A classified failure of the turn.",
    CONVERSATION, TURN, _f("kind", str), _f("message", str), _f("next", str),
    _f("partial", bool, "text before the failure is kept"),
    _o("details", dict, "the agent's words, an exit code, sign-in methods …"))
define_event(
    "agent.tool", "session", "A tool call begins (an ACP agent's: updated by agent.tool_update).",
    CONVERSATION, TURN, _f("call", str, "the call's id"),
    _f("name", str, "the tool (an ACP agent's: its kind)"),
    _f("input", ANY, "the tool's input, long strings cut"),
    _o("title", str, "ACP"), _o("kind", str, "ACP: read, edit, execute …"),
    _o("status", str, "ACP: pending, in_progress …"),
    _o("source", str, "mcp: a call of Rio's MCP tools", check=one_of("mcp")))
define_event(
    "agent.tool_update", "session", "What changed in an ACP agent's running tool call.",
    CONVERSATION, TURN, _f("call", str), _o("title", str), _o("kind", str),
    _o("input", ANY), _o("status", str))
define_event(
    "agent.tool_result", "session", "A tool call ended.",
    CONVERSATION, TURN, _f("call", str), _f("name", str), _f("ok", bool),
    _f("summary", str, "one line for the user"), _f("truncated", bool),
    _o("output", str, "run_command and ACP tools: the tail of the output"))
define_event(
    "agent.propose", "session", "A write or command waiting for agent.approve.",
    CONVERSATION, TURN, _f("proposal", str, "the id agent.approve names"),
    _f("call", str), _f("kind", str, check=one_of("edit", "create", "command")),
    _f("path", str), _f("diff", str, "unified diff (empty for a command)"),
    _o("command", str, "command: the shell command"), _o("cwd", str, "command: its folder"),
    _o("danger", dict, "command: why it always asks", check=DANGER),
    _o("reason", str, "the gate's reason for asking"))
define_event(
    "agent.permission", "session", "An ACP agent asks before one of its own tools; answered "
    "with agent.permission_answer, declined after 240 s.",
    CONVERSATION, TURN, _f("request", str, "the question's id"), _f("call", str),
    _f("title", str), _f("tool_kind", str), _f("input", ANY, "the agent's, as it sent it"),
    _f("options", list, check=ListOf(Shape(_f("id", str), _f("name", str), _f("kind", str)))))
define_event(
    "agent.permission_closed", "session", "A permission question is closed: clients stop "
    "asking.", CONVERSATION, TURN, _f("request", str),
    _f("kind", OPT_STR, "the option kind chosen, or null"),
    _f("how", str, check=one_of("answered", "declined", "timed_out")))
define_event(
    "agent.changed_files", "session", "At the end of an ACP agent's turn: the files it changed "
    "on disk itself.", CONVERSATION, TURN,
    _f("files", list, check=ListOf(CHANGED_FILE)), _f("more", int, "files not listed"),
    _o("unchecked", dict, "{after, note}: no file after `after` (in path order) was compared "
       "(the project has more files than one turn compares, ADR-0042)"))
define_event(
    "agent.restarted", "session", "The ACP agent had died and was started again for this turn.",
    CONVERSATION, TURN, _f("agent", str), _f("resumed", bool, "its session was loaded"),
    _f("message", str, "the one line to show"))
define_event(
    "agent.plan", "session", "An ACP agent's whole plan, each time it changes.",
    CONVERSATION, TURN, _f("entries", list, check=ListOf(Shape(
        _f("content", str), _f("priority", str), _f("status", str)))))
define_event(
    "agent.commands", "session", "An ACP agent's slash commands.", CONVERSATION, TURN,
    _f("commands", list, check=ListOf(Shape(_f("name", str), _f("description", str),
                                            _f("hint", str)))))
define_event(
    "agent.modes", "session", "An ACP agent's own modes and the current one.",
    CONVERSATION, TURN, _f("current", str, "the current mode's id"),
    _o("available", list, "absent only when the agent never listed its modes",
       check=ListOf(Shape(_f("id", str), _f("name", str), _f("description", str)))))
define_event(
    "agent.config", "session", "An ACP agent's config options (model pickers …), as it sent "
    "them.", CONVERSATION, TURN, _f("options", list, check=ListOf(dict)))
define_event(
    "agent.usage", "session", "An ACP agent's context window use.", CONVERSATION, TURN,
    _f("used", int), _f("size", int),
    _o("cost", dict, check=Shape(_f("amount", NUM), _f("currency", str))))
define_event(
    "agent.session", "session", "The ACP agent's session id.", CONVERSATION, TURN,
    _f("session", str), _f("resumed", bool, "loaded with session/load"))
define_event(
    "agent.session_info", "session", "What an ACP agent says about its session.",
    CONVERSATION, TURN, _o("title", str), _o("updated_at", str))
define_event(
    "agent.sign_in", "session", "An ACP agent needs a sign-in (with its methods), or is signed in.",
    CONVERSATION, TURN, _f("state", str, check=one_of("needed", "signed_in")),
    _o("agent", str, "needed"), _o("methods", list, "needed", check=ListOf(SIGN_IN_METHOD)),
    _o("method", str, "signed_in: the method used"))
define_event(
    "agent.silent", "session", "No word from the ACP agent while a prompt is pending (seconds "
    "0 and resumed when it speaks again).", CONVERSATION, TURN,
    _f("seconds", NUM), _o("give_up_after_s", NUM), _o("resumed", bool))
define_event(
    "agent.note", "session", "One line for the conversation, shown as is.", CONVERSATION, TURN,
    _f("note", str, "auto_allowed, signed_out, empty_reply, agent_exited (the agent stopped "
       "between turns: reaped, started again by the next message), no_sandbox (the agent "
       "runs unboxed: said once per conversation's session, ADR-0038), output_cut (the turn "
       "streamed past its bound and is stopped, ADR-0041)"), _f("text", str),
    _o("call", str),
    _o("title", str), _o("tool", str, "auto_allowed: Rio's MCP tool"))
define_event(
    "agent.auth_status", "session", "An ACP adapter's _auth/status_update extension.",
    CONVERSATION, TURN, _f("status", ANY, "its parameters, as sent"))


# --- system.process: the supervisor (actors/runtime/supervisor.py) ---------------------------------------

define_event(
    "system.process", "supervisor", "A process of the instance changed state (the hub's own "
    "restart included: name hub, event restarted).",
    _f("name", str, "the process (core, agent:<id>, ui, hub)"),
    _f("event", str, check=one_of("started", "ready", "exited", "hung", "gave_up", "stopped",
                                  "restarting", "idle-stopped", "restarted")),
    _o("pid", (int, type(None))), _o("restarts", int), _o("last_exit", OPT_STR),
    _o("state", str, "starting, running, restarting, stopping, stopped, idle-stopped, failed"),
    _o("reason", str), _o("stop", (dict, type(None)), "system.restart: how the stop went",
                          check=Shape(_f("how", str), _f("elapsed_s", NUM),
                                      _f("survivors", list, check=ListOf(int)))))


# --- fake.*: the fault harness's stand-in agent (actors/faults/injection.py) ---------------------

define_event("fake.helpers", "fault harness", "The helpers the stand-in agent spawned.",
             _f("process", str), _f("pids", list, check=ListOf(int)))
define_event("fake.delta", "fault harness", "A stream tick of the stand-in agent.",
             _f("process", str), _f("seq", int), _f("text", str))
