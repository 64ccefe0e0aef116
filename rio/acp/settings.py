"""What starts an ACP agent: its argv, environment and timings (:class:`AcpSettings`), found
from a discovered agent (:func:`settings_for`).

Kept apart from :mod:`rio.acp.client` because that module imports the ACP SDK (about 200
pydantic models, ~0.5 s here): a session process works out the settings and starts the agent's
process first, and imports the SDK while the agent boots (actors/agent/acp_session.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping


@dataclass(frozen=True)
class AcpSettings:
    argv: tuple[str, ...]
    root: Path
    env: Mapping[str, str]
    name: str = "agent"
    #: the agent's own program without its ACP arguments, for terminal sign-in commands
    #: (the method's args go after it); default: the whole argv — right for
    #: ``node …/claude-agent-acp/dist/index.js``, where argv[0] alone would be ``node``
    program: tuple[str, ...] = ()
    #: no update for this long while a prompt is pending → ``agent.silent``
    silent_after_s: float = 30.0
    #: …and this long → the prompt is cancelled and the turn ends with ``agent.agent_silent``
    give_up_after_s: float = 300.0
    #: initialize, session/new, session/load, set mode … (not prompts, not authenticate)
    request_timeout_s: float = 60.0
    authenticate_timeout_s: float = 600.0
    #: after session/cancel, how long the prompt may take to answer "cancelled"
    cancel_grace_s: float = 5.0
    version: str = "0"


def settings_for(info: Any, spec: Any, root: Path, user_env: Mapping[str, str],
                 **kw: Any) -> AcpSettings:
    """Settings for a discovered agent (:class:`rio.acp.discovery.AgentInfo` and its
    :class:`~rio.acp.discovery.AgentSpec`): its argv, its program for sign-in commands, and
    the user's environment minus Rio's variables plus the agent's configured ``env``.

    The program is the argv without the known agent's ACP-mode arguments (``opencode acp`` →
    ``opencode``) when it ends with them; any other argument stays — a configured
    ``command = "npx"``, ``args = ["pkg"]`` signs in as ``npx pkg <method args>``, so the
    command shown runs as it is."""
    from rio.acp.port import agent_environment
    argv = tuple(info.argv)            # raises agent.agent_not_found when not installed
    kw = {**dict(getattr(spec, "timing", None) or {}), **kw}
    acp_args = tuple(spec.known.args) if getattr(spec, "known", None) is not None else ()
    program = argv[:-len(acp_args)] if acp_args and len(argv) > len(acp_args) \
        and argv[-len(acp_args):] == acp_args else argv
    return AcpSettings(argv, root, agent_environment(user_env, spec.env), name=info.name,
                       program=program, **kw)
