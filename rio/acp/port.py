"""The two ports of the ACP client: what it reports through, and how it starts an agent.

:class:`AcpTurnPort` is the whole interface between the client and the turn owner (the
conversation's session process): the client *publishes* the same ``agent.*`` events as the
API path (:mod:`rio.agent.turn`) — ``agent.delta``, ``agent.tool``, ``agent.tool_result``,
``agent.error`` — plus the ACP-only ones in docs/protocol.md, and *asks* for three things
only the owner can give: the editor's text of a file, a proposal for a write, and the user's
answer to the agent's permission question. The owner adds ``conversation`` and ``turn`` to
every event, exactly as :meth:`rio.agent.turn.Turn.publish` does.

:class:`ProcessPort` starts the agent. The real one (``actors/agent/acp_process.py``) goes through
``actors/runtime/process_control.py``: own process group, environment cookie, death with the parent,
and the supervisor's stop sequence; tests may pass their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

PermissionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
PERMISSION_KINDS: tuple[PermissionKind, ...] = (
    "allow_once", "allow_always", "reject_once", "reject_always")


@dataclass(frozen=True)
class PermissionOption:
    id: str
    name: str
    kind: str


@dataclass(frozen=True)
class PermissionQuestion:
    """The agent asks before one of its own tool calls (``session/request_permission``)."""

    request: str                       # the client's id for this question (unique per client)
    call: str                          # the agent's toolCallId
    title: str
    tool_kind: str                     # read, edit, execute … ("other" when not given)
    input: Any
    options: tuple[PermissionOption, ...]

    def to_event(self) -> dict[str, Any]:
        return {"request": self.request, "call": self.call, "title": self.title,
                "tool_kind": self.tool_kind, "input": self.input,
                "options": [{"id": o.id, "name": o.name, "kind": o.kind} for o in self.options]}


@dataclass(frozen=True)
class WriteOutcome:
    """What became of ``fs/write_text_file``: applied (approved, in the buffer) or not."""

    applied: bool
    reason: str = ""


class AcpTurnPort(Protocol):
    """The turn owner, as the ACP client sees it. Every method is called on the client's loop.

    ``publish`` must not block or await: session updates keep their order only while the
    handler records them synchronously (the SDK runs each notification in its own task).
    """

    def publish(self, topic: str, data: Mapping[str, Any]) -> None: ...

    async def read_text(self, path: str) -> str:
        """The text of ``path`` (relative to the project root, already confined) as the user
        sees it: the open buffer's text with unsaved edits, else the file. Raise a RioError
        (``path.not_found`` …) to refuse."""
        ...

    async def propose_write(self, path: str, content: str) -> WriteOutcome:
        """The agent wants ``path`` (relative, confined) to hold ``content``: a proposal
        through the gate (publishes ``agent.propose``), answered when decided. Never writes
        the disk behind the user's back."""
        ...

    async def ask_permission(self, question: PermissionQuestion) -> str | None:
        """The user's answer as an option *kind* (``allow_once`` …), or None to decline
        (answered ``cancelled``). The owner publishes ``agent.permission`` itself."""
        ...


class AgentProcess(Protocol):
    """A started agent: its stdio as asyncio streams, and how to end it."""

    pid: int
    stdin: asyncio.StreamWriter
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...

    async def stop(self) -> StopResult:
        """stdin close → grace → TERM to the group → grace → KILL → sweep (never raises)."""
        ...


class ProcessPort(Protocol):
    async def start(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str]
                    ) -> AgentProcess:
        """Start ``argv`` (a list, never a shell string) in a process group of its own."""
        ...


@dataclass(frozen=True)
class StopResult:
    how: str                    # exited, stdin_closed, terminated, killed
    returncode: int | None
    elapsed: float
    survivors: tuple[int, ...] = ()
    swept: tuple[int, ...] = field(default=())


#: Prefixes of Rio's own variables, never passed to an agent (bus addresses, tokens, the
#: instance's folders). The process port adds its own spawn cookie afterwards, which is how
#: the supervisor finds the agent's helpers when it sweeps.
RIO_PREFIXES = ("RIO_",)


def agent_environment(user_env: Mapping[str, str],
                      extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The agent's environment: the user's, as in their shell (``ANTHROPIC_API_KEY``,
    ``ANTHROPIC_BASE_URL``, ``CODEX_HOME`` … pass through — that is how they configured their
    agent), minus Rio's own variables, plus the agent's configured ``env``. A key stored in
    Rio's keyring is never added."""
    env = {k: v for k, v in user_env.items() if not k.startswith(RIO_PREFIXES)}
    for key, value in (extra or {}).items():
        if not key.startswith(RIO_PREFIXES):
            env[key] = value
    return env
