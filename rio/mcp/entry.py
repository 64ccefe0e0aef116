"""How an external agent reaches Rio's MCP endpoint: the per-conversation token file, the
``mcpServers`` entry for ``session/new``, and the permission predicate (ADR-0025).

An agent that speaks MCP over HTTP gets Rio's endpoint with the conversation's token in a
header (:func:`http_server_entry`); any other starts ``rio mcp`` itself (stdio), a client of
the same endpoint with the token in its environment (:func:`mcp_server_entry`). The endpoint
process (actors/agent/mcp_endpoint.py) compares it with the conversation's token file. The
token:

* is 256 random bits (:func:`secrets.token_urlsafe`), fresh at every :func:`mcp_server_entry`
  (every ``session/new``/``session/load``), so an older one stops working at once;
* lives in ``<state>/projects/<hash>/mcp/<conversation>.token`` (0600, folder 0700, written
  atomically; hidden from a boxed agent with the rest of Rio's state), and reaches the agent
  only in ``session/new`` — an HTTP header, or the stdio entry's ``env`` — never in argv or a
  log;
* is bound to its conversation: the actor reads the file of the conversation the request
  names, so one conversation's token is refused for another;
* is removed by :func:`end_conversation` when the conversation's agent is closed, after which
  every request with it is refused.

Everything here is plain file work, usable from the session process (which calls
:func:`fresh_token` before ``session/new``) and from the endpoint process (which verifies).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
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
#: What the ACP permission path says when it answers "allow once" for one of Rio's tools
#: (:func:`rio_tool_of_question`).
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


def fresh_token(root: Path, conversation: str) -> str:
    """Issue a fresh token for ``conversation`` (its 0600 file) and return its value — for
    the ``Authorization`` header of the HTTP entry, which goes to the agent in
    ``session/new`` and nowhere else (the protocol log redacts it)."""
    token = read_token(issue_token(root, conversation))
    if token is None:   # written a moment ago: only a full or failing disk gets here
        raise AuthError("bad_token", "The token for Rio's tools could not be written.",
                        "Check the disk space and the state folder's permissions.")
    return token


def conversation_of_token(root: Path, token: Any) -> str | None:
    """The conversation whose current token is ``token`` (the HTTP endpoint's bearer check),
    None for any other value. Every token file is compared in constant time; a removed file
    (the conversation ended) is a revoked token."""
    import hmac  # here, not above: hmac imports hashlib (rio/files/digest.py)
    if not isinstance(token, str) or not token or len(token) > 256:
        return None
    try:
        names = sorted(os.listdir(token_dir(root)))
    except OSError:
        return None
    found = None
    given = token.encode("utf-8", "replace")
    for name in names:
        if not name.endswith(".token") or name.startswith("."):
            continue
        expected = read_token(token_dir(root) / name)
        if expected is not None and hmac.compare_digest(given, expected.encode("ascii")):
            found = name[:-len(".token")]
    return found


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


def mcp_server_entry(conversation_id: str, url: str, token: str) -> dict[str, Any]:
    """The ``mcpServers`` item for ``session/new`` (ACP stdio form) for an agent without MCP
    over HTTP: ``rio mcp``, a client of Rio's endpoint at ``url`` (it runs in the agent's box,
    where there is neither a bus nor a token file to read: ADR-0038). The conversation's token
    (:func:`fresh_token`) is in the entry's ``env``, which the agent hands to that process
    alone — as it hands an HTTP agent's header to its own client — never in ``args`` (``ps``
    shows those to everyone); the protocol log redacts it."""
    from rio.mcp.stdio_link import TOKEN_ENV
    # -P: the agent runs it in the project, whose own modules must not shadow Rio's
    args = ["-P", "-m", "rio.cli", "mcp", "--conversation", conversation_id, "--url", url]
    env = [{"name": TOKEN_ENV, "value": token}]
    where = rio_import_root()
    if where is not None:
        env.append({"name": "PYTHONPATH", "value": where})
    return {"name": SERVER_NAME, "command": sys.executable, "args": args, "env": env}


def rio_import_root(environ: Mapping[str, str] | None = None) -> str | None:
    """The ``PYTHONPATH`` entry that makes Rio importable in this process, when that is how
    it is (a checkout run with ``PYTHONPATH``, as the tests do) rather than an install: ``rio
    mcp`` must import the same Rio, and an agent hands its MCP servers only a few variables of
    its own (the ``mcp`` SDK: ``HOME``, ``PATH`` …), so the entry names it. None for an
    installed Rio (``pip install``, editable or not: its site-packages finds it)."""
    import rio
    root = os.path.abspath(Path(rio.__file__).resolve().parent.parent)
    given = (os.environ if environ is None else environ).get("PYTHONPATH", "")
    for item in given.split(os.pathsep):
        if item and os.path.abspath(item) == root:
            return root
    return None


def http_server_entry(url: str, token: str) -> dict[str, Any]:
    """The ``mcpServers`` item for an agent that speaks MCP over HTTP: Rio's endpoint with the
    conversation's bearer token in a header (never in the URL, argv or an environment)."""
    return {"type": "http", "name": SERVER_NAME, "url": url,
            "headers": [{"name": "Authorization", "value": f"Bearer {token}"}]}


def rio_tool_of_question(tool_call_id: Any, kind: Any, title: Any, raw_input: Any,
                         locations: Any) -> str | None:
    """Is an agent's own permission question (``session/request_permission``) about a call to
    Rio's MCP endpoint? The tool's name when it provably is, else None.

    Only fields the agent's adapter sets itself are read — never text a model can write (a
    shell command's title, the arguments): a question titled ``mcp__rio__read_buffer ||
    touch …`` is a shell command, and one carrying ``tool: mcp__rio__propose_edit`` in its
    input is whatever the model said. The shapes, observed with the real adapters
    (claude-agent-acp 0.23.1, codex-acp 0.16.0, opencode 1.18.33; ADR-0034):

    * claude: ``kind == "other"`` and the title exactly ``mcp__rio__<tool>`` (for a tool it
      has no case for — every MCP tool — the adapter sets kind "other" and the title to the
      tool's name; a shell command is kind "execute");
    * codex: ``rawInput.server_name == "rio"`` (codex's own name for the connection),
      ``rawInput.request._meta.codex_approval_kind == "mcp_tool_call"`` and ``rawInput.id``
      ``== "mcp_tool_call_approval_" + toolCallId``; the tool from codex's fixed message
      ``Allow the rio MCP server to run tool "<tool>"?`` (an exec approval has none of these);
    * opencode: ``kind == "other"``, ``rawInput == {}``, no locations and the title exactly
      ``rio_<tool>`` (its permission id for an MCP tool; a command's question carries the
      command and its folders).

    The gate still decides on the call itself when it reaches the endpoint; this only spares
    the user a second question about the same call."""
    from rio.agent.gate import AGENT_TOOLS
    if kind == "other" and isinstance(title, str):
        prefix = f"mcp__{SERVER_NAME}__"
        if title.startswith(prefix) and title[len(prefix):] in AGENT_TOOLS:
            return title[len(prefix):]                                    # claude
        prefix = f"{SERVER_NAME}_"
        if raw_input == {} and not locations and title.startswith(prefix) \
                and title[len(prefix):] in AGENT_TOOLS:
            return title[len(prefix):]                                    # opencode
    if isinstance(raw_input, dict) and raw_input.get("server_name") == SERVER_NAME \
            and isinstance(tool_call_id, str) \
            and raw_input.get("id") == f"mcp_tool_call_approval_{tool_call_id}":
        request = raw_input.get("request")
        meta = request.get("_meta") if isinstance(request, dict) else None
        if isinstance(meta, dict) and meta.get("codex_approval_kind") == "mcp_tool_call":
            message = request.get("message") if isinstance(request, dict) else None
            match = re.fullmatch(rf'Allow the {SERVER_NAME} MCP server to run tool '
                                 r'"([A-Za-z0-9_-]+)"\?', message or "") \
                if isinstance(message, str) else None
            if match and match.group(1) in AGENT_TOOLS:
                return match.group(1)                                     # codex
    return None
