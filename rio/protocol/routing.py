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

Every proposal of a turn is its session's — an API tool's, an ACP agent's own write, a call of
Rio's MCP tools alike (ADR-0034) — so an approval has one way in.

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
    when the request takes its ordinary route (not a turn answer, or arguments that name no
    conversation — the core then refuses them as before)."""
    if op not in TURN_ANSWERS:
        return None
    if op == "agent.approve":
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
