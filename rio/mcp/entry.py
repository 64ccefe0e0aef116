"""How an external agent reaches Rio's MCP endpoint: the per-conversation token file, the
``mcpServers`` entry for ``session/new``, and the permission predicate (ADR-0025).

The agent starts ``rio mcp`` itself (stdio). That process is a bus client of the running
instance and carries a token in every request; the core's ``mcp`` actor (actors/agents/mcp.py)
compares it with the conversation's token file. The token:

* is 256 random bits (:func:`secrets.token_urlsafe`), fresh at every :func:`mcp_server_entry`
  (every ``session/new``/``session/load``), so an older one stops working at once;
* lives only in ``<state>/projects/<hash>/mcp/<conversation>.token`` (0600, folder 0700,
  written atomically) — never in argv, the environment or a log: the entry's ``args`` carry the
  file's *path*, ``rio mcp`` reads it;
* is bound to its conversation: the actor reads the file of the conversation the request
  names, so one conversation's token is refused for another;
* is removed by :func:`end_conversation` when the conversation's agent is closed, after which
  every request with it is refused.

Everything here is plain file work, usable from the session process (which calls
:func:`mcp_server_entry` before ``session/new``) and from the core (which verifies).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from rio.protocol.errors import AuthError

#: The server's name in ``mcpServers``; agents show its tools as ``mcp__rio__<tool>``.
SERVER_NAME = "rio"
TOKEN_DIR = "mcp"
_CONVERSATION = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
#: A question to the user about an agent's proposal not answered in this many seconds is
#: declined (issue 11: 4 minutes).
QUESTION_TIMEOUT_S = 240.0
#: What the ACP permission path says when it answers "allow once" for one of Rio's tools.
AUTO_ALLOWED_NOTE = "auto-allowed: Rio's own tool; Rio's gate decides on it"


def token_dir(root: Path) -> Path:
    """The token folder of the project at ``root`` (resolved: the core and the session process
    name the same folder however the root was spelt)."""
    from rio.config.instance import project_state_dir
    return project_state_dir(Path(root).resolve()) / TOKEN_DIR


def token_path(root: Path, conversation: str) -> Path:
    if not _CONVERSATION.match(conversation) or conversation.startswith("."):
        raise AuthError("bad_token", f"{conversation!r} is not a conversation id.",
                        "Start the agent from Rio's agent panel or `rio chat --agent`.")
    return token_dir(root) / f"{conversation}.token"


def issue_token(root: Path, conversation: str) -> Path:
    """A fresh token for ``conversation`` in its 0600 file (replacing any older one)."""
    path = token_path(root, conversation)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        import secrets  # here, not above: secrets imports hashlib (rio/files/digest.py)
        os.write(fd, secrets.token_urlsafe(32).encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def read_token(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        data = os.read(fd, 256)
    finally:
        os.close(fd)
    text = data.decode("ascii", "replace").strip()
    return text or None


def check_token(root: Path, conversation: str, token: Any) -> None:
    """Raise ``auth.bad_token`` unless ``token`` is the conversation's current token."""
    import hmac  # here, not above: hmac imports hashlib (rio/files/digest.py)
    expected = read_token(token_path(root, conversation))
    if not isinstance(token, str) or not token or expected is None or not hmac.compare_digest(
            token.encode("utf-8", "replace"), expected.encode("ascii")):
        raise AuthError("bad_token", "This request to Rio's tools carries no valid token for "
                        "its conversation (missing, wrong, or from a conversation that ended).",
                        "Rio's tools work only for an agent Rio started; start a new turn in "
                        "the conversation.")


def end_conversation(conversation: str, root: Path | str) -> None:
    """Remove the conversation's token: its ``rio mcp`` is refused from now on. Call it when
    the conversation's agent is closed (stop, switch of agent, quit). The arguments may come
    in either order (a project root is a ``Path`` or an absolute path; a conversation id is
    neither), so a swapped call still removes the token instead of leaving it behind."""
    # Typed as callers should call it; a swapped call still passes a Path here (see above).
    if isinstance(conversation, Path) or str(conversation).startswith("/"):  # type: ignore[unreachable]
        conversation, root = str(root), conversation
    root = Path(root).resolve()
    try:
        token_path(root, conversation).unlink()
    except FileNotFoundError:
        pass


def end_if_older(conversation: str, root: Path, before: float) -> bool:
    """Remove the conversation's token if it was written before ``before`` (a time.time()):
    used when the conversation's session process ended, so a token written since by its
    restarted process is kept. True when a token was removed."""
    path = token_path(Path(root).resolve(), conversation)
    try:
        if os.stat(path, follow_symlinks=False).st_mtime > before:
            return False
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def mcp_server_entry(conversation_id: str, root: Path | str,
                     agent: str | None = None) -> dict[str, Any]:
    """The ``mcpServers`` item for ``session/new`` (ACP stdio form): a fresh token is written
    for the conversation and ``rio mcp`` is told where to find it and the instance. Only file
    paths and the conversation id are in ``args``; ``env`` is empty (the agent passes its own
    environment, from which Rio's variables were already removed). ``agent`` (the discovery
    name) is what "always allow" is remembered under."""
    root = Path(root).resolve()
    path = issue_token(root, conversation_id)
    # -P: the agent runs it in the project, whose own modules must not shadow Rio's
    args = ["-P", "-m", "rio.cli", "mcp", "--conversation", conversation_id, "--root", str(root),
            "--token-file", str(path)]
    instance = os.environ.get("RIO_INSTANCE")
    if instance:
        from rio.config.instance import InstancePaths
        args += ["--instance-file", str(InstancePaths.for_name(instance).info_file)]
    if agent:
        args += ["--agent", agent]
    return {"name": SERVER_NAME, "command": sys.executable, "args": args, "env": []}


def is_rio_tool(title: Any, raw_input: Any = None) -> bool:
    """Is an agent's permission question (``session/request_permission``) about one of Rio's
    own MCP tools? Agents name them ``mcp__rio__<tool>`` (Claude Code) or ``rio_<tool>`` /
    ``rio.<tool>``; such a question is answered "allow once" with :data:`AUTO_ALLOWED_NOTE`,
    because Rio's gate decides on the call itself when it arrives."""
    from rio.agent.gate import AGENT_TOOLS
    for text in (title, raw_input.get("tool") if isinstance(raw_input, dict) else None):
        if not isinstance(text, str):
            continue
        name = text.strip().split()[0] if text.strip() else ""
        for prefix in (f"mcp__{SERVER_NAME}__", f"{SERVER_NAME}_", f"{SERVER_NAME}.",
                       f"{SERVER_NAME}/", f"{SERVER_NAME}:"):
            if name.startswith(prefix) and name[len(prefix):] in AGENT_TOOLS:
                return True
    return False
