"""Which process a request goes to, when its prefix alone does not say (the hub's rules).

Most ops go to the process that registered their prefix (``buffer`` → core). Three kinds do not:

* ``host.*`` goes to the process its ``process`` argument names (the supervisor's pings);
* ``session.*`` goes to the conversation's own process, ``agent:<conversation>``;
* the answers to a running turn — ``agent.approve``, ``agent.stop``,
  ``agent.permission_answer`` (:data:`TURN_ANSWERS`) — go straight to that process too,
  because it owns the turn (ADR-0027): an approval is client → hub → session → hub → client,
  without a detour through the core. When no such process is registered, they take the
  prefix route to the core, which answers as it always did (no turn running, no such
  proposal).

One op goes to another prefix's actor (:func:`route_prefix`): ``agent.approve`` of a proposal
of Rio's MCP tools (``mcp-…``) is held by the ``mcp`` actor, so both the hub and the bus thread
of the process that serves ``mcp`` hand it straight to that actor — client → hub → mcp → hub →
client, four hops, not through the conversations actor and back over the hub.

A request from ``agent:<conversation>`` itself is never sent back to it: the session asks the
core with the same op (its ``agent.stop`` with no turn of its own, say).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

#: agent.* ops answered by the conversation's session process when it runs (ADR-0027).
TURN_ANSWERS = ("agent.approve", "agent.stop", "agent.permission_answer")

#: Prefixes routed by an argument, never registered by prefix (many processes serve them).
BY_ARGUMENT = ("host", "session")

#: How a conversation id looks (rio.agent.conversations checks the same shape).
_CONVERSATION = re.compile(r"^[a-z0-9]{6,32}$")


def session_process(conversation: str) -> str:
    """The process name of a conversation's agent session."""
    return f"agent:{conversation}"


def turn_answer_conversation(op: str, args: Mapping[str, Any]) -> str | None:
    """The conversation whose session process should answer this request itself, or None
    when the request takes its ordinary route (not a turn answer, an MCP proposal, or
    arguments that name no conversation — the core then refuses them as before)."""
    if op not in TURN_ANSWERS:
        return None
    if op == "agent.approve":
        if route_prefix(op, args) == "mcp":
            return None          # held by the mcp actor (actors/agents/mcp.py)
        turn = args.get("turn")
        if not isinstance(turn, str) or "." not in turn:
            return None
        cid, _, number = turn.rpartition(".")
        conversation: Any = cid if number.isdigit() else None
    else:
        conversation = args.get("conversation")
    if isinstance(conversation, str) and _CONVERSATION.match(conversation):
        return conversation
    return None


#: Proposal ids of Rio's MCP tools (actors/agents/mcp.py) start with this.
MCP_PROPOSAL = "mcp-"


def route_prefix(op: str, args: Mapping[str, Any]) -> str:
    """The prefix whose actor serves this request: the op's own, except ``agent.approve`` of
    an MCP proposal (``mcp-…``), served by the ``mcp`` actor that holds it."""
    if op == "agent.approve" and str(args.get("proposal", "")).startswith(MCP_PROPOSAL):
        return "mcp"
    return op.split(".", 1)[0]
