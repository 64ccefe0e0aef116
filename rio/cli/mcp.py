"""``rio mcp``: Rio's MCP server on stdio, started by an external agent (never by hand).

    rio mcp --conversation ID --url URL         (the token: RIO_MCP_TOKEN in its environment)

Rio puts this command in the ``mcpServers`` of the agent's ``session/new`` when the agent does
not speak MCP over HTTP (:func:`rio.mcp.entry.mcp_server_entry`); the agent starts it and talks
MCP on its stdin and stdout. It is a thin client of Rio's MCP endpoint over HTTP on 127.0.0.1
(``--url``, rio/mcp/stdio_link.py): it runs in the agent's box where there is one (ADR-0038),
which shows it neither the bus nor ``instance.json`` nor a token file. The conversation's
token comes in the entry's ``env`` (``RIO_MCP_TOKEN``), which the agent hands to this process
alone; it is taken out of this process's environment as soon as it is read. ``--token-file
PATH`` reads it from a file instead (by hand, outside a box). ``--root``, ``--instance-file``
and ``--agent`` are accepted and ignored (entries written by an older Rio pass them; "always
allow" is keyed on the agent Rio started, never on a name given here). docs/agent-chat.md, "MCP
tools".

When the agent closes stdin, calls still in flight are cancelled in the instance and the
process ends within a second (rio/mcp/server.py; the worker threads of
actors/bus/call_pool.py never hold it open).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("mcp", help="Rio's MCP server on stdio (started by an ACP agent)")
    # Checked in cmd_mcp, not by argparse, so a mistyped option is named first.
    p.add_argument("--conversation", help="the conversation it serves (required)")
    p.add_argument("--url", help="Rio's MCP endpoint (required; http://127.0.0.1:PORT/mcp)")
    p.add_argument("--token-file", help="read the token from this 0600 file instead of "
                   "RIO_MCP_TOKEN")
    # Ignored: older entries still pass them, and the core never trusts a name given here.
    p.add_argument("--root", help="ignored (accepted so that older entries still start)")
    p.add_argument("--instance-file", help="ignored (accepted so that older entries still "
                   "start)")
    p.add_argument("--agent", help="ignored (accepted so that older entries still start)")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    from rio.cli.main import EXIT_USAGE, print_error
    from rio.mcp.stdio_link import TOKEN_ENV
    missing = [f"--{n.replace('_', '-')}" for n in ("conversation", "url")
               if not getattr(args, n)]
    if missing:
        print_error("usage", f"rio mcp: missing {', '.join(missing)}",
                    "rio mcp is started by an ACP agent from the entry Rio gives it; see "
                    "`rio mcp --help`")
        return EXIT_USAGE
    token = os.environ.pop(TOKEN_ENV, "").strip()
    if not token and args.token_file:
        from rio.mcp.entry import read_token
        token = read_token(Path(args.token_file)) or ""
    if not token:
        print_error("auth.bad_token", f"rio mcp: no token ({TOKEN_ENV} is not set"
                    + (f", {args.token_file} is empty or missing" if args.token_file else "")
                    + ")", "Start the agent from Rio (agent panel or `rio chat --agent`): "
                    "Rio hands the token to the agent with this command.")
        return EXIT_USAGE
    from rio.mcp.server import serve
    from rio.mcp.stdio_link import HttpConnection, stdio_url
    url = stdio_url(args.url)

    def connect() -> Any:
        return HttpConnection(url, token)
    from actors.bus.call_pool import CallPool  # worker threads, a connection each
    return serve(args.conversation, token, lambda: CallPool(connect))
