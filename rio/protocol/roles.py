"""What a remote key may do: three roles, and the least role each op needs (ADR-0019).

* ``observer`` reads: open buffers, the project's files, the event stream, status.
* ``editor``   also edits and saves buffers (the default for a new key: ``rio keys --role``).
* ``owner``    also runs commands, changes the approval gate, talks to agents, and starts,
  stops, restarts or faults processes — everything the server's user can do.

Local clients (the unix-socket bus, reachable only by the server's user) are owners. A remote
client's role is fixed by the bridge (actors/bus/remote.py) from the key it authenticated with and
carried in the routing identity the hub sees, ``remote:<role>:<client id>``; a client cannot
choose that prefix, and anything else in the request (a ``role`` field, say) is never read. The
hub checks every request with :func:`refusal` before routing it, so the check covers ops served
by any process. An op missing from :data:`OP_ROLES` is owner-only: new ops fail closed.

Events are not filtered: every role sees the whole event stream (buffer text included).
"""

from __future__ import annotations

from typing import Literal

from rio.protocol.errors import AuthError

Role = Literal["observer", "editor", "owner"]
ROLES: tuple[Role, ...] = ("observer", "editor", "owner")
DEFAULT_ROLE: Role = "editor"
REMOTE_PREFIX = b"remote:"

_OBSERVER = (
    "buffer.list", "buffer.info", "buffer.text", "buffer.lines",
    "fs.list", "fs.read", "fs.walk", "fs.search", "fs.search_more", "fs.search_stop",
    "system.ping", "system.status", "system.ops",
    "bus.services", "bus.stats",
    "run.list", "gate.status",
)
_EDITOR = (
    "buffer.open", "buffer.new", "buffer.close", "buffer.save", "buffer.replace",
    "buffer.apply", "buffer.undo", "buffer.redo", "buffer.merge_undo", "buffer.revert",
    "buffer.recover",
)
_OWNER = (
    "run.start", "run.stop",
    "agent.new", "agent.list", "agent.history", "agent.discard", "agent.send", "agent.approve", "agent.stop",
    "agent.mode", "agent.permission_answer", "agent.set_mode", "agent.set_config",
    "agent.authenticate", "agent.limits", "gate.limits", "agent.pending", "session.pending",
    "agents.list", "mcp.address", "agents.logout",
    "gate.check", "gate.agent_check", "gate.remember", "gate.forget", "gate.turn", "gate.mode",
    "session.send", "session.mcp_call", "session.mcp_cancel", "session.status",
    "session.close", "session.set_mode", "session.set_config", "session.authenticate",
    "conversation.begin_turn", "conversation.end_turn",
    "system.spawn", "system.stop", "system.restart", "system.fault", "system.open_folder",
    "host.ping", "host.stop", "bus.register", "bus.unregister",
    "ui.state", "ui.type", "ui.key", "ui.menu", "ui.open", "ui.dialog", "ui.dialog_answer",
    "ui.screenshot", "ui.quit", "ui.raise", "ui.agent",
)

#: op → the least role that may call it. Listed out, one op per entry, so a review sees every
#: grant; tests/bus/test_roles.py fails when an op of the catalogue (rio/protocol/ops.py) is missing here.
OP_ROLES: dict[str, Role] = {
    **{op: "observer" for op in _OBSERVER},
    **{op: "editor" for op in _EDITOR},
    **{op: "owner" for op in _OWNER},
}

_RANK = {role: rank for rank, role in enumerate(ROLES)}
_GRANTS = {
    "observer": "read buffers and the project's files, watch events",
    "editor": "also edit and save buffers",
    "owner": "also run commands, change the approval gate, use agents and control processes",
}


def check_role(role: str) -> Role:
    """``role`` if it is one of :data:`ROLES`, else ``ValueError`` naming them."""
    if role not in _RANK:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    return role


def required(op: str) -> Role:
    """The least role that may call ``op``; an op not in the table is owner-only."""
    return OP_ROLES.get(op, "owner")


def allows(role: str, op: str) -> bool:
    return (_RANK[role] if role in _RANK else -1) >= _RANK[required(op)]


def identity_for(role: str, client: bytes) -> bytes:
    """The routing identity the bridge gives a remote client of ``role`` toward the hub."""
    return REMOTE_PREFIX + check_role(role).encode() + b":" + client


def role_of_identity(identity: bytes) -> Role:
    """The role of whoever sent a request with this routing identity: a local client is an
    owner; a remote one has the role the bridge wrote; a malformed remote identity is an
    observer (fail closed)."""
    if not identity.startswith(REMOTE_PREFIX):
        return "owner"
    role = identity[len(REMOTE_PREFIX):].split(b":", 1)[0].decode("ascii", "replace")
    return role if role in _RANK else "observer"


def refusal(identity: bytes, op: str) -> AuthError | None:
    """The ``auth.forbidden`` error for ``op`` from ``identity``, or None when it may."""
    role = role_of_identity(identity)
    if allows(role, op):
        return None
    needed = required(op)
    if op not in OP_ROLES:     # most likely a typo: say so before naming a role
        return AuthError("forbidden", f"{op} is not an op this server lists; an op it does not "
                         f"list needs the owner role (this key is an {role})",
                         next="Check the op's name: `rio call system.ops` lists them",
                         op=op, role=role, needed=needed)
    # every role's name starts with a vowel: "an" throughout
    return AuthError("forbidden", f"{op} needs the {needed} role; this key is an {role} "
                     f"(an {role} may {_GRANTS[role]})",
                     next=f"Ask the server's owner to grant it: `rio keys --set-role NAME "
                          f"{needed}` on the server", op=op, role=role, needed=needed)


def describe() -> list[dict[str, str]]:
    """The roles and what each grants (``rio keys --list``, docs)."""
    return [{"role": role, "grants": _GRANTS[role]} for role in ROLES]
