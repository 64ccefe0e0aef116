"""Rio's error taxonomy, written down once.

Every failure a user or a client can meet is a :class:`RioError` with three parts:

* ``kind``    -- a dotted, stable identifier a program can switch on (``path.outside_root``);
* ``message`` -- what happened, in words a user understands;
* ``next``    -- the next action the user can take ("Open a file inside the project").

The tree (the first dotted part is the family; the leaves in use)::

    RioError
    ├── ProtocolError          protocol.*   the frame or request itself is wrong
    │     malformed_frame, unsupported_version, unknown_op, bad_args, oversize_frame,
    │     unknown_run, unknown_search, fault_injection_off, bad_event
    ├── PathError              path.*       a path the workspace will not serve
    │     outside_root, not_found, not_a_file, not_a_directory, special_file, invalid,
    │     symlink_refused
    ├── FileError              file.*       a file that cannot be loaded or saved as asked
    │     binary, too_large, conflict, save_failed, read_failed, unencodable, exec_failed,
    │     journal_unreadable, journal_needs_base, journal_closed, bad_journal_name,
    │     journal_write_failed, journal_damaged
    ├── DocumentError          buffer.*     an edit or request about an open document
    │     unknown_buffer, bad_range, stale_version, bad_version, out_of_sync, nothing_to_undo,
    │     nothing_to_redo, dirty, untitled, path_open, bad_format, bad_pattern, bad_replacement,
    │     loading, no_editor, unsupported, stale_base,
    │     too_many_buffers ([editor] max_buffers open: no more is opened)
    ├── BusError               bus.*        the message bus could not carry a request
    │     spawn_failed (system.spawn: the process ended before it was ready),
    │     timeout, unreachable, no_route, actor_dead, closed, instance_exists,
    │     ambiguous_instance, path_too_long, unsafe_runtime_dir, prefix_taken, listen_failed,
    │     bad_listen_address, no_server_key(s), no_client_key, ambiguous_client_key,
    │     remote_not_allowed, no_window, spawn_limit, no_display,
    │     remote keys over their limits (actors/bus/remote.py, ADR-0021): backpressure,
    │     connection_limit
    ├── ConfigError            config.*     a configuration file or setting is wrong
    │     invalid, unknown_placement, invalid_instance_name, insecure_credentials,
    │     credentials_unreadable, empty_key, keyring_failed, bad_key_file, bad_public_key,
    │     bad_client_name, unknown_client, bad_role
    ├── AuthError              auth.*       a remote key's role does not allow the request
    │     forbidden, bad_token (Rio's MCP endpoint: no valid token for the conversation),
    │     owner_only_path (below owner: saving or editing a file whose contents run as code
    │     later, or an executable: rio/files/owner_only.py)
    ├── AgentError             agent.*      a model provider or agent failed
    │     not_configured, auth_rejected, rate_limited, server_error, network,
    │     unexpected_response, request_rejected, insecure_endpoint, endpoint_refused,
    │     output_truncated, provider_crashed, stopped, limit_reached, interrupted, busy,
    │     outside_turn, session_died, session_timeout, session_unavailable, unknown_conversation,
    │     unknown_turn, too_large,
    │     output_limit (a turn streamed more than it may: rio/agent/output_limits.py),
    │     ACP agents (rio/acp, docs/agent-chat.md): agent_not_found, agent_start_failed,
    │     agent_exited, agent_silent, sign_in_needed, agent_failed, agent_timeout,
    │     agent_not_running, logout_not_offered, sign_in_cancelled, sign_in_timeout,
    │     sandbox_unavailable ([sandbox] mode "required" and no box here: ADR-0038),
    │     not_discardable (agent.discard: the conversation has an answer or a running turn),
    │     Rio's MCP tools (rio/agent/turn_mcp.py): tool_refused, cancelled
    └── InternalError          internal.*   a bug in Rio; the message says where to report it
          unexpected, bad_error, unknown

Errors cross the bus as ``{kind, message, next}`` maps (:meth:`RioError.to_wire`) and are
rebuilt on the other side with :func:`error_from_wire`, so a client can ``except PathError``.
The tree above is the one list of kinds: :data:`KINDS` is read from it, and the test suite checks
every kind the code compares against or builds (tests/protocol/test_error_kinds.py), so a misspelt kind
fails the suite instead of silently never matching. :func:`kind_of` checks one at run time.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar


class RioError(Exception):
    """Base of every error Rio reports. ``kind`` is ``family.leaf``."""

    family: ClassVar[str] = "internal"
    default_next: ClassVar[str] = "Report this as a bug with the log from `rio status`."

    def __init__(self, leaf: str, message: str, next: str | None = None, **details: Any):
        kind = leaf if "." in leaf else f"{self.family}.{leaf}"
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.next = next or self.default_next
        self.details = details

    @property
    def leaf(self) -> str:
        return self.kind.split(".", 1)[1]

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"kind": self.kind, "message": self.message, "next": self.next}
        if self.details:
            wire["details"] = self.details
        return wire

    def __str__(self) -> str:
        return f"{self.message} ({self.kind}). {self.next}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind!r}, {self.message!r})"


class ProtocolError(RioError):
    family = "protocol"
    default_next = "Check the request against docs/protocol.md."


class PathError(RioError):
    family = "path"
    default_next = "Use a path inside the project folder."


class FileError(RioError):
    family = "file"
    default_next = "Check the file and try again."


class DocumentError(RioError):
    """``buffer.*`` (named so as not to shadow Python's built-in ``BufferError``)."""

    family = "buffer"
    default_next = "Refresh the document list with buffer.list and try again."


class BusError(RioError):
    family = "bus"
    default_next = "Check that Rio is running with `rio status`."


class ConfigError(RioError):
    family = "config"
    default_next = "Fix the file at the line named and start again."


class AuthError(RioError):
    family = "auth"
    default_next = "Ask the server's owner for a key with a role that allows it (rio keys)."


class AgentError(RioError):
    family = "agent"
    default_next = "Try the message again."


class InternalError(RioError):
    family = "internal"


FAMILIES: dict[str, type[RioError]] = {
    cls.family: cls
    for cls in (ProtocolError, PathError, FileError, DocumentError, BusError, ConfigError,
                AuthError, AgentError, InternalError)
}


def error_line(kind: str, message: str, next_action: str = "") -> str:
    """The one line every error is printed as at a terminal (``rio`` and ``rio chat``):
    ``rio: <kind>: <message> — <next>``, whitespace folded, no trailing full stops."""
    def flat(text: str) -> str:
        return " ".join(str(text).split()).rstrip(".")
    line = f"rio: {kind}: {flat(message)}"
    return f"{line} — {flat(next_action)}" if next_action else line


def error_from_wire(wire: Any) -> RioError:
    """Rebuild an error sent by :meth:`RioError.to_wire`; anything malformed is internal."""
    if not isinstance(wire, dict):
        return InternalError("internal.bad_error", f"Malformed error from peer: {wire!r:.200}")
    kind = str(wire.get("kind", "internal.unknown"))
    family = kind.split(".", 1)[0]
    cls = FAMILIES.get(family, InternalError)
    raw_details = wire.get("details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    return cls(kind if "." in kind else f"{family}.unknown", str(wire.get("message", "")),
               str(wire.get("next") or cls.default_next), **details)


def _kinds_from_tree(doc: str) -> frozenset[str]:
    """``family.leaf`` for every leaf listed under a family in the tree of this docstring.

    A leaf is an identifier in a family's comma-separated list; what stands in brackets is a
    note about the leaf before it (and may run over lines), and words before a colon label a
    group of leaves (``ACP agents (…): agent_not_found, …``): neither is a kind. ``key(s)``
    is two leaves, ``key`` and ``keys``."""
    lists: dict[str, list[str]] = {}
    family = ""
    for line in doc.splitlines():
        words = line.strip(" │├└─").split()
        if len(words) >= 2 and words[0].endswith("Error") and words[1].endswith(".*"):
            family = words[1][:-2]
            lists[family] = []
        elif family and line.startswith(("    │     ", "          ")):
            lists[family].append(line.strip(" │"))
        elif family and not line.strip():
            family = ""
    kinds: set[str] = set()
    for family, lines in lists.items():
        text = _PLURAL.sub(r"\1, \1s", " ".join(lines))
        while (bare := _NOTE.sub(" ", text)) != text:
            text = bare
        for piece in text.split(","):
            leaf = piece.rpartition(":")[2].strip()
            if _LEAF.fullmatch(leaf):
                kinds.add(f"{family}.{leaf}")
            elif leaf:
                raise ValueError(f"error tree: {leaf!r} under {family}.* is not a kind")
    return frozenset(kinds)


_PLURAL = re.compile(r"\b([a-z][a-z0-9_]*)\(s\)")
_NOTE = re.compile(r"\([^()]*\)")
_LEAF = re.compile(r"[a-z][a-z0-9_]*")


#: Every error kind Rio uses, read from the tree at the top of this module.
KINDS: frozenset[str] = _kinds_from_tree(__doc__ or "")


def kind_of(kind: str) -> str:
    """``kind`` itself, checked against the tree: a misspelt kind raises at once."""
    if kind not in KINDS:
        raise ValueError(f"{kind!r} is not an error kind of rio/protocol/errors.py's tree")
    return kind
