"""The catalogue of ops: every request Rio serves, with its arguments, checked at the edge.

Each op is an :class:`OpSpec`; :func:`validate` turns a :class:`~rio.protocol.frames.Request` into a
plain, complete argument dict (defaults filled in) or raises ``protocol.unknown_op`` /
``protocol.bad_args``. Actors never see unchecked arguments. docs/protocol.md describes the same
catalogue for people; ``rio call system.ops`` prints it from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from rio.protocol.errors import ProtocolError
from rio.protocol.frames import Request, thaw

_MISSING = object()
_PLAIN = (str, int, float, bool, type(None))


@dataclass(frozen=True, slots=True)
class Arg:
    name: str
    kind: type | tuple[type, ...]
    required: bool = True
    default: Any = None
    check: Callable[[Any], str | None] | None = None  # returns a complaint, or None when fine
    doc: str = ""


@dataclass(frozen=True, slots=True)
class OpSpec:
    name: str
    args: tuple[Arg, ...]
    doc: str
    #: Ops carried by a prefix that a service registers on the bus (``buffer``, ``agent`` ...).
    @property
    def prefix(self) -> str:
        return self.name.split(".", 1)[0]


REGISTRY: dict[str, OpSpec] = {}


def define(name: str, doc: str, *args: Arg) -> OpSpec:
    spec = OpSpec(name, tuple(args), doc)
    REGISTRY[name] = spec
    return spec


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "integer", str: "string", bool: "boolean", float: "number", list: "list",
             dict: "map", type(None): "null"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _is_kind(value: Any, kind: type | tuple[type, ...]) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(value) in kinds and type(value) is not bool:
        return True   # the common case: exactly the declared type (every keystroke passes here)
    if isinstance(value, bool) and bool not in kinds:
        return False  # True is an int in Python, never on Rio's wire
    if isinstance(value, (tuple,)) and list in kinds:
        return True
    if isinstance(value, Mapping) and dict in kinds:
        return True
    if isinstance(value, int) and float in kinds and not isinstance(value, bool):
        return True
    return isinstance(value, kinds)


def unknown_op(op: str) -> ProtocolError:
    """The one answer to an op nobody serves, the same wherever it is given (the hub, the
    supervisor, a service's bus thread, an actor's op table): names the family's known ops."""
    hint = ""
    if op not in REGISTRY:
        family = op.split(".", 1)[0]
        known = sorted(name for name in REGISTRY if name.startswith(family + "."))
        hint = f" Known {family}.* ops: {', '.join(known)}." if known else ""
    return ProtocolError("unknown_op", f"Unknown op {op!r}.{hint}",
                         "Run `rio call system.ops` for the list of ops.", op=op)


def validate(request: Request) -> dict[str, Any]:
    spec = REGISTRY.get(request.op)
    if spec is None:
        raise unknown_op(request.op)
    return validate_args(spec, request.args)


def validate_args(spec: OpSpec, given: Mapping[str, Any]) -> dict[str, Any]:
    known = {a.name for a in spec.args}
    # keys are strings after rio.protocol.frames.decode; a locally built request may hold others
    extra = sorted(k if isinstance(k, str) else repr(k) for k in given if k not in known)
    if extra:
        raise ProtocolError("bad_args", f"{spec.name}: unknown argument(s) {', '.join(extra)}; "
                            f"it takes {', '.join(sorted(known)) or 'none'}.", op=spec.name)
    out: dict[str, Any] = {}
    for arg in spec.args:
        value = given.get(arg.name, _MISSING)
        if value is _MISSING or value is None and not _is_kind(None, arg.kind):
            if arg.required:
                raise ProtocolError("bad_args", f"{spec.name}: missing argument {arg.name!r} "
                                    f"({_type_name(arg.kind)}).", op=spec.name)
            out[arg.name] = arg.default
            continue
        if not _is_kind(value, arg.kind):
            raise ProtocolError("bad_args", f"{spec.name}: argument {arg.name!r} must be "
                                f"{_type_name(arg.kind)}, got {type(value).__name__}.",
                                op=spec.name)
        if type(value) not in _PLAIN:
            value = thaw(value)
        if arg.check is not None:
            complaint = arg.check(value)
            if complaint:
                raise ProtocolError("bad_args", f"{spec.name}: argument {arg.name!r} {complaint}.",
                                    op=spec.name)
        out[arg.name] = value
    return out


def describe() -> list[dict[str, Any]]:
    from rio.protocol.roles import required  # the least role per op (ADR-0019)
    return [{"op": s.name, "doc": s.doc, "role": required(s.name),
             "args": [{"name": a.name, "type": _type_name(a.kind), "required": a.required,
                       **({"default": a.default} if not a.required else {}), "doc": a.doc}
                      for a in s.args]}
            for s in sorted(REGISTRY.values(), key=lambda s: s.name)]


# --- checks -------------------------------------------------------------------------------------

def non_negative(value: int) -> str | None:
    return "must be ≥ 0" if value < 0 else None


def non_empty(value: str) -> str | None:
    return "must not be empty" if not value else None


def one_of(*choices: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(choices)}"
    return check


def str_list(value: list[Any]) -> str | None:
    return None if all(isinstance(v, str) for v in value) else "must be a list of strings"


def str_map(value: dict[Any, Any]) -> str | None:
    ok = all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    return None if ok else "must map strings to strings"


def edit_list(value: list[Any]) -> str | None:
    for item in value:
        if (not isinstance(item, (list, tuple)) or len(item) != 3
                or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                           for x in item[:2]) or not isinstance(item[2], str)):
            return "must be a list of [start, end, text] triples"
    return None


# --- the catalogue ------------------------------------------------------------------------------

BUFFER = Arg("buffer", str, check=non_empty, doc="buffer id from buffer.open/new/list")
ORIGIN = Arg("origin", str, False, "client", doc="who made the edit (ui, agent:<id>, cli ...)")

define("buffer.open", "Open a file of the project as a buffer (or return the one already open).",
       Arg("path", str, check=non_empty, doc="relative to the project root, or absolute inside it"))
define("buffer.new", "A new untitled buffer.",
       Arg("text", str, False, "", doc="initial text"))
define("buffer.close", "Close a buffer. A modified buffer is refused unless discard is true.",
       BUFFER, Arg("discard", bool, False, False, doc="drop unsaved changes and the journal"))
define("buffer.save", "Save atomically. A file changed on disk is a conflict unless force.",
       BUFFER, Arg("path", str, False, None, doc="save as this path (inside the project)"),
       Arg("force", bool, False, False, doc="overwrite a file that changed on disk"),
       Arg("encoding", str, False, None, doc="save with another encoding (utf-8, utf-8-sig, "
           "utf-16-le, utf-16-be, latin-1)"),
       Arg("newline", str, False, None, check=one_of("lf", "crlf", "cr"),
           doc="save with other line endings"))
define("buffer.replace", "Replace [start, end) with text (code points); one undoable edit.",
       BUFFER, Arg("start", int, check=non_negative), Arg("end", int, check=non_negative),
       Arg("text", str), Arg("base_version", int, False, None,
                             doc="version the edit was made on; stale edits are transformed"),
       ORIGIN, Arg("label", str, False, None, doc="undo label"))
define("buffer.apply", "Several replacements as ONE undo step (replace all, an agent's turn).",
       BUFFER, Arg("edits", list, check=edit_list,
                   doc="[[start, end, text], ...] against base_version, in any order"),
       Arg("base_version", int, False, None), ORIGIN, Arg("label", str, False, None))
define("buffer.undo", "Undo the last step.", BUFFER, ORIGIN)
define("buffer.redo", "Redo the last undone step.", BUFFER, ORIGIN)
define("buffer.merge_undo", "Merge every step since a version into one labelled undo step.",
       BUFFER, Arg("since_version", int, check=non_negative), Arg("label", str, check=non_empty))
define("buffer.list", "The open buffers.")
define("buffer.info", "One buffer's state (path, version, dirty, format, lines).", BUFFER)
define("buffer.text", "Text of a buffer, whole or [start, end), with its version.", BUFFER,
       Arg("start", int, False, 0, check=non_negative),
       Arg("end", int, False, None, check=non_negative))
define("buffer.lines", "Lines [first, last) of a buffer (0-based) — the big-file window.", BUFFER,
       Arg("first", int, check=non_negative), Arg("last", int, check=non_negative))
define("buffer.revert", "Reload the buffer from disk as one undoable step.", BUFFER)
define("buffer.recover", "Bring back unsaved buffers from the journal (done at start too).")

define("fs.list", "List a folder of the project (ignores applied, size-capped).",
       Arg("path", str, False, "."))
define("fs.read", "Read a text file of the project (confined, size-capped).",
       Arg("path", str, check=non_empty),
       Arg("max_chars", int, False, 200_000, check=non_negative))
define("fs.walk", "The text-looking files under a folder, sorted, ignores applied (for @file).",
       Arg("path", str, False, "."),
       Arg("max_files", int, False, 5000, check=non_negative))
define("fs.search", "Find in Files: start a search; replies with its first page of results.",
       Arg("pattern", str, check=non_empty),
       Arg("regex", bool, False, False), Arg("match_case", bool, False, False),
       Arg("whole_word", bool, False, False), Arg("folder", str, False, "."),
       Arg("globs", list, False, [], check=str_list),
       Arg("overrides", dict, False, {}, check=str_map,
           doc="path -> unsaved text of an open buffer, searched instead of the file"),
       Arg("max_results", int, False, 5000, check=non_negative))
define("fs.search_more", "Find in Files: the next page of a search started by fs.search.",
       Arg("search", str, check=non_empty))
define("fs.search_stop", "Find in Files: stop a search (Stop, or a new search).",
       Arg("search", str, check=non_empty))

define("host.ping", "Liveness: answered by an actor of the named process (the supervisor's ping).",
       Arg("process", str, check=non_empty))
define("host.stop", "Ask the named process to end cleanly.", Arg("process", str, check=non_empty))

define("system.ping", "Is the instance alive? Replies with its pid.")
define("system.status", "Processes, their pids, restarts and memory.",
       Arg("tree", bool, False, False, doc="also each process's descendants (an agent "
           "session's ACP agent and its helpers) with their memory, the processes the "
           "supervisor adopted, and the instance's total rss_total (rio status)"))
define("system.stop", "Stop the instance.")
define("system.ops", "This catalogue.")
define("system.open_folder", "File → Open Folder: start another Rio instance (`rio FOLDER`) on a "
       "folder of this machine, in a new window (local desktops only).",
       Arg("path", str, check=non_empty, doc="the folder's absolute path"),
       Arg("display", str, False, None, doc="the X display of the asking desktop"))
define("system.spawn", "Start an on-demand process (one per agent conversation); answered "
       "once it is ready on the bus, or bus.spawn_failed if it ends first.",
       Arg("kind", str, check=non_empty), Arg("key", str, check=non_empty))
define("system.restart", "Stop one process with the stop sequence and start it again.",
       Arg("process", str, check=non_empty, doc="a name from system.status"),
       Arg("again", bool, False, True, doc="false: stop it and leave it stopped"),
       Arg("reason", str, False, "requested", check=one_of("requested", "idle"),
           doc="idle: an agent process with no turn for idle_stop_s (state idle-stopped; the "
               "next message starts it again)"))
define("system.fault", "Inject a fault (only with `rio serve --fault-injection`).",
       Arg("fault", str, check=non_empty, doc="kill, stop, cont, save_fail, bus_drop ..."),
       Arg("target", str, False, None, doc="process name"),
       Arg("params", dict, False, None))


# --- bus.*: answered by the hub itself (actors/bus/hub.py) ------------------------------------------

def prefix_list(value: list[Any]) -> str | None:
    if len(value) > 64 or not all(isinstance(p, str) and p and len(p) <= 64 and "." not in p
                                  for p in value):
        return "must be a list of at most 64 op prefixes (non-empty strings without dots)"
    return None


define("bus.register", "A service: route requests for these op prefixes to me.",
       Arg("prefixes", list, False, (), check=prefix_list, doc='e.g. ["buffer", "fs"]'),
       Arg("name", str, False, None, check=non_empty, doc="process name (default: identity)"),
       Arg("pid", int, False, 0, check=non_negative, doc="the service's process id"))
define("bus.unregister", "A service: stop routing to me; my pending requests fail.")
define("bus.services", "The registered services: name, prefixes, pid, pending requests.")
define("bus.stats", "The hub's counters and the last seq of each event topic.")


# --- run.*: the project's Run/Build commands (actors/core/runner_actor.py) ---------------------------

def run_command(value: Any) -> str | None:
    if isinstance(value, str):
        return None if value.strip() else "must not be empty"
    if not value or not all(isinstance(a, str) and a for a in value[:1]) or \
            not all(isinstance(a, str) for a in value):
        return "must be a shell string or a non-empty list of strings"
    return None


define("run.start", "Start a command in its own process group; output streams as run.output.",
       Arg("command", (str, list), check=run_command,
           doc="a shell string (run as /bin/sh -c) or an argv list (run as is)"),
       Arg("cwd", str, False, ".", doc="folder inside the project, relative to the root"),
       Arg("timeout_s", float, False, None, doc="end the whole group after this many seconds"))
define("run.stop", "Stop a run: its whole process group ends; replies once it has.",
       Arg("run", str, check=non_empty, doc="run id from run.start"))
define("run.list", "Runs still going and the last finished ones.")


# --- agent.*: conversations with the agent, served by the core (actors/agent/conversations_actor.py) --

CONVERSATION = Arg("conversation", str, check=non_empty, doc="conversation id from agent.new")

define("agent.new", "Start a conversation; provider/endpoint/model override the config for it.",
       Arg("title", str, False, None, doc="default: the first message"),
       Arg("provider", str, False, None, doc="a provider name (default: the configured one)"),
       Arg("endpoint", str, False, None, doc="the provider's URL for this conversation only"),
       Arg("model", str, False, None, doc="the model for this conversation only"),
       Arg("agent", str, False, None, doc="an ACP agent's discovery name (claude, codex, "
           "opencode, gemini … or [agents.NAME] of config.toml) instead of a provider"))
define("agent.list", "The conversations, most recent first.")
define("agent.history", "A conversation's messages and turns.", CONVERSATION)
define("agent.discard", "Forget a conversation that never had an answer (no assistant message, "
       "no turn running) and end its session process: `rio chat` discards the one it made when "
       "no message could reach a model (no API key …).", CONVERSATION)
define("agent.send", "Send a message; replies {turn} at once, the turn streams as agent.* events.",
       CONVERSATION, Arg("text", str, check=non_empty))
define("agent.approve", "Answer a proposal (agent.propose) of a running turn.",
       Arg("turn", str, check=non_empty), Arg("proposal", (str, int)),
       Arg("decision", str, check=one_of("approve", "reject", "always")))
define("agent.stop", "End the conversation's running turn now (the Stop button).", CONVERSATION)
define("agent.permission_answer", "Answer an ACP agent's permission question (agent.permission) "
       "by option kind; kind null declines it.",
       CONVERSATION, Arg("turn", str, check=non_empty), Arg("request", str, check=non_empty),
       Arg("kind", str, False, None, check=one_of("allow_once", "allow_always", "reject_once",
                                                   "reject_always")))
define("agent.mode", "Get, or set, the approval gate's mode.",
       Arg("mode", str, False, None, check=one_of("review", "auto_buffer", "allow_all")))
define("agent.set_mode", "Set an ACP agent's own session mode (an id of agent.modes' available) "
       "— not the approval gate's mode (agent.mode).", CONVERSATION,
       Arg("mode", str, check=non_empty))
define("agent.set_config", "Set one of an ACP agent's config options (agent.config: its model "
       "picker …) to one of its values.", CONVERSATION, Arg("option", str, check=non_empty),
       Arg("value", (str, bool)))
LIMIT_ARGS = tuple(Arg(name, int, False, None, doc=doc) for name, doc in (
    ("max_requests", "model requests per turn of an API provider (default 24)"),
    ("max_tool_calls", "tool calls per turn of an API provider (default 64)"),
    ("max_agent_changes", "an ACP agent's changing requests to Rio's tools per turn "
     "(default 24)"),
    ("max_agent_requests", "an ACP agent's requests of any kind to Rio's tools per turn "
     "(default 400)")))
define("agent.limits", "Get, or set, the approval gate's per-turn limits (AI Preferences).",
       *LIMIT_ARGS)
define("agent.pending", "What waits for the user in the running turns (a window started "
       "since draws it): each turn's start, its proposals and questions (the MCP tools' too), "
       "as their events; and what each running agent offers (agent.modes, agent.config, "
       "agent.commands).",
       Arg("conversation", str, False, None, doc="only this conversation"))
define("agent.authenticate", "Sign in to an ACP agent with one of its own 'agent' methods "
       "(agent.sign_in's methods): the agent does it (it may open the browser).",
       CONVERSATION, Arg("method", str, check=non_empty))


# --- agents.*: the ACP agents installed here (actors/agent/discovery_actor.py, rio/acp/discovery.py) ---

define("agents.list", "The known and configured ACP agents: found or not, path, version, "
       "signed-in hint, key variables set (names only).",
       Arg("refresh", bool, False, False, doc="ask the versions again (else kept 60 s)"))
define("agents.logout", "Sign an ACP agent out of its own account, where it offers that (ACP "
       "logout): started on its own for it, then stopped.",
       Arg("agent", str, check=non_empty, doc="the discovery name (rio agents)"))


# --- mcp.*: Rio's MCP endpoint for external agents (actors/agent/mcp_endpoint.py, rio/mcp/) ---

define("mcp.address", "Where Rio's MCP endpoint listens: {url} (Streamable HTTP on 127.0.0.1; "
       "asked by a session process before its agent's session/new).")


# --- session.*: one conversation's agent process (actors/agent/session.py) ----------------------
# Internal: the core's conversations actor sends these; the hub routes them to the process
# named "agent:" + conversation.

SESSION_CONVERSATION = Arg("conversation", str, check=non_empty, doc="conversation id")

define("session.send", "A user's message: the session answers {turn} once the store has "
       "recorded it (after the turn it interrupts, if a proposal or question of that one "
       "waited), or agent.busy.",
       SESSION_CONVERSATION, Arg("text", str, check=non_empty))
define("session.mcp_call", "A call of Rio's MCP tools by the conversation's agent (forwarded by "
       "the endpoint once the token was checked): served by the running turn, refused outside "
       "one.", SESSION_CONVERSATION, Arg("tool", str, check=non_empty),
       Arg("args", dict, False, None),
       Arg("call", str, False, None, doc="the endpoint's id for the call (session.mcp_cancel)"))
define("session.mcp_cancel", "The agent cancelled a call of Rio's MCP tools: its question closes "
       "and nothing is applied.", SESSION_CONVERSATION, Arg("call", str, check=non_empty))
define("session.status", "The session's running turn and pending proposals, if any.",
       SESSION_CONVERSATION)
define("session.close", "End the conversation's ACP agent (the stop sequence), if one runs.",
       SESSION_CONVERSATION)
define("session.set_mode", "ACP session/set_mode on the conversation's running agent.",
       SESSION_CONVERSATION, Arg("mode", str, check=non_empty))
define("session.set_config", "ACP session/set_config_option on the conversation's running agent.",
       SESSION_CONVERSATION, Arg("option", str, check=non_empty), Arg("value", (str, bool)))
define("session.pending", "The running turn's waiting proposals and questions, then what "
       "the running agent offers (agent.modes, agent.config, agent.commands), as events.",
       SESSION_CONVERSATION)
define("session.authenticate", "ACP authenticate on the conversation's running agent.",
       SESSION_CONVERSATION, Arg("method", str, check=non_empty))

# --- conversation.*: what a session process records in the core's store ------------------------
# Internal: the conversation's session process sends these (actors/agent/conversations_actor.py).

define("conversation.begin_turn", "Record a user's message as a new running turn; answers {turn, "
       "messages, provider?, endpoint?, model?, agent?, acp_session?} and publishes agent.turn "
       "started.", SESSION_CONVERSATION, Arg("text", str, check=non_empty))
define("conversation.end_turn", "Record how a turn ended: its messages, status, error, the buffers "
       "it left unsaved, files changed on disk; publishes agent.message and agent.turn.",
       SESSION_CONVERSATION, Arg("turn", str, check=non_empty),
       Arg("messages", list, False, None, doc="the turn's new Message dicts"),
       Arg("error", dict, False, None), Arg("buffers", list, False, None),
       Arg("acp_session", str, False, None), Arg("changed_files", list, False, None),
       Arg("paths", list, False, None, doc="the project paths of the buffers it changed"),
       Arg("status", str, check=one_of("done", "stopped", "error")))

# --- gate.*: the approval gate in the core (actors/agent/gate_actor.py, policy in rio/agent/gate.py) --------

define("gate.check", "Should this tool call run, ask the user, or be refused?",
       SESSION_CONVERSATION, Arg("turn", str, check=non_empty),
       Arg("provider", str, check=non_empty), Arg("tool", str, check=non_empty),
       Arg("args", dict, False, None, doc="the tool's input"))
define("gate.agent_check", "An external agent's call to one of Rio's MCP tools: allow, ask "
       "or refuse, counted against the running turn's limits; answers with the turn.",
       SESSION_CONVERSATION, Arg("agent", str, check=non_empty, doc="the ACP agent's name"),
       Arg("tool", str, check=non_empty), Arg("args", dict, False, None, doc="the tool's input"))
define("gate.remember", "Always allow this tool for this provider (persisted).",
       Arg("provider", str, check=non_empty), Arg("tool", str, check=non_empty))
define("gate.forget", "Stop always allowing this tool for this provider.",
       Arg("provider", str, check=non_empty), Arg("tool", str, check=non_empty))
define("gate.turn", "A turn's life and counters: begin, end, model_request, tool_call.",
       SESSION_CONVERSATION, Arg("turn", str, check=non_empty),
       Arg("event", str, check=one_of("begin", "end", "model_request", "tool_call")))
define("gate.mode", "Get, or set, the gate's mode (review, auto_buffer, allow_all).",
       Arg("mode", str, False, None, check=one_of("review", "auto_buffer", "allow_all")))
define("gate.status", "The mode, the always-allowed pairs and the limits.")
define("gate.limits", "Get, or set, the per-turn limits (each 1 to 100,000; kept with the "
       "mode).", *LIMIT_ARGS)


# --- ui.*: the desktop's control ops (ui/tk/app/control.py), served by the ui process ---------------
# Tests and the screenshot script drive the real window with these; each does what a user would.

define("ui.state", "What the desktop shows: tabs, active buffer, cursor, selection, status bar, "
       "open dialogs, theme.")
define("ui.type", "Type text into the active editor as keys would (Enter auto-indents, Tab "
       "indents).", Arg("text", str))
define("ui.key", "Send one key event to the focused editor (or the window).",
       Arg("keysym", str, check=non_empty, doc="X keysym: Return, BackSpace, a, F3 ..."),
       Arg("state", str, False, None, doc="modifiers: Control, Shift, Alt, Control-Shift ..."))
define("ui.menu", "Invoke a menu item, as a click would.",
       Arg("path", str, check=non_empty, doc='"Menu/Item" as shown, e.g. "File/Save As"'))
define("ui.open", "Open a file in a tab; replies once it is loaded and editable.",
       Arg("path", str, check=non_empty), Arg("line", int, False, None, doc="1-based"),
       Arg("col", int, False, None, doc="1-based"))
define("ui.dialog", "Open a dialog by name (open, save_as, preferences, about, shortcuts, find, "
       "replace, goto, find_in_files, conflict, unsaved).", Arg("name", str, check=non_empty),
       Arg("fields", dict, False, None, doc="initial values, e.g. {pattern} for find_in_files"))
define("ui.dialog_answer", "Fill an open dialog's fields and press one of its buttons.",
       Arg("name", str, check=non_empty), Arg("button", str, check=non_empty),
       Arg("fields", dict, False, None, doc="field name → value"))
define("ui.screenshot", "Save a PNG of the window (dialogs over it included).",
       Arg("path", str, check=non_empty, doc="where to write the PNG (absolute)"),
       Arg("delay_ms", int, False, 150, check=non_negative, doc="let the window settle first"))
define("ui.raise", "Bring the desktop window to the front (a second `rio` on the same folder "
       "does this instead of opening a second window).")
define("ui.agent", "Drive the agent panel as a user would: open, close, minimise, send, type, "
       "approve, reject, always, answer, stop, undo, new, mode, tick, agent_setting, sign_in, "
       "review, revert, provider.",
       Arg("action", str, check=non_empty,
           doc="open, close, minimise, send, type, approve, reject, always, answer, stop, "
               "undo, new, mode, tick, agent_setting, sign_in, review, revert, provider "
               "(checked by the desktop)"),
       Arg("text", str, False, None, doc="send: the message; type: typed into the input, "
           "then Enter"),
       Arg("proposal", (str, int), False, None,
           doc="approve/reject/always/answer: the proposal or question (default: the first "
               "waiting)"),
       Arg("side", str, False, None, check=one_of("left", "right"), doc="open: dock here"),
       Arg("conversation", str, False, None,
           doc="open: show this conversation (its history is loaded)"),
       Arg("mode", str, False, None, check=one_of("review", "auto_buffer", "allow_all"),
           doc="mode: the approval gate's mode to set (none: just read it)"),
       Arg("on", bool, False, None, doc="tick: the 'Name the active file' tick on or off"),
       Arg("path", str, False, None, doc="review/revert: the file's row on the card of files "
           "the agent changed on disk (default: the first)"),
       Arg("picker", str, False, None, doc="agent_setting: 'mode' (the ACP agent's own mode) "
           "or one of its config options' id (model …)"),
       Arg("value", str, False, None, doc="agent_setting: the value to pick (an id); "
           "provider: the Provider picker's entry to pick (e.g. 'claude (ACP)')"),
       Arg("option", str, False, None,
           doc="answer: the agent's option for its permission question, by kind or id "
               "(none declines)"))
define("ui.quit", "Quit the desktop as File → Exit does (unsaved-changes prompts included).",
       Arg("force", bool, False, False, doc="quit without prompting; unsaved text stays in "
                                            "the core"))
