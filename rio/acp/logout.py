"""Signing an ACP agent out of its own account: ``rio agents logout NAME`` and the core's
``agents.logout`` op.

Sign-out is the agent's, not a conversation's: its credentials live in the agent's own files
(Rio holds none). So the agent is started on its own — as a turn would start it, from
config.toml and discovery — asked ``initialize``, sent ``logout`` when it advertises it
(``agentCapabilities.auth.logout``), and stopped with the stop sequence. An agent that does
not advertise it (claude-agent-acp 0.23, codex-acp, …) answers ``agent.logout_not_offered``,
which names its own way out. Conversations that run the agent keep their process; its next
session needs a sign-in, which they show as usual.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rio.acp.port import PermissionQuestion, ProcessPort, WriteOutcome
from rio.protocol.errors import AgentError


class _NoTurn:
    """The port of a client that runs no turn: nothing to read, write or ask."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        self.events.append((topic, dict(data)))

    async def read_text(self, path: str) -> str:
        raise AgentError("outside_turn", "No turn is running.", "Send a message first.")

    async def propose_write(self, path: str, content: str) -> WriteOutcome:
        return WriteOutcome(False, "no turn is running")

    async def ask_permission(self, question: PermissionQuestion) -> str | None:
        return None


async def sign_out(name: str, root: Path, env: Mapping[str, str], config_dir: Path,
                   processes: ProcessPort) -> dict[str, Any]:
    """Start agent ``name``, sign it out, stop it. ``{agent, signed_out: true}``, or raises
    ``agent.logout_not_offered`` / the agent's start and request errors."""
    from rio.acp import discovery, registry
    from rio.acp.client import AcpClient, settings_for
    from rio.acp.protocol_log import ProtocolLog
    config = discovery.load_agents_config(config_dir)
    spec = discovery.spec_for(name, config, registry.load(env, network=False).agents)
    info = discovery.locate(spec, env, discovery.RealHost())
    client = AcpClient(settings_for(info, spec, root, env), _NoTurn(), processes, ProtocolLog())
    try:
        await client.start()
        await client.logout()
    finally:
        await client.close()
    return {"agent": name, "signed_out": True}
