"""``rio mcp``: Rio's MCP server on stdio, started by an external agent (never by hand).

    rio mcp --conversation ID --root DIR --token-file PATH [--instance-file PATH] [--agent NAME]

Rio puts this command in the ``mcpServers`` of the agent's ``session/new``
(:func:`rio.mcp.entry.mcp_server_entry`); the agent starts it and talks MCP on its stdin and
stdout. The token is read from the 0600 file, never from the command line or the environment.
The instance is the one in ``--instance-file`` (Rio passes it: the agent's environment has
none of Rio's variables), else the one holding ``--root``. ``--agent`` is accepted and ignored:
entries written by an older Rio pass it, and the core keys "always allow" on the agent it
started for the conversation, never on a name given here (rio/protocol/ops.py, ``mcp.call``).
docs/agent-chat.md, "MCP tools".

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
    p.add_argument("--root", help="the project root (required)")
    p.add_argument("--token-file", help="the conversation's 0600 token file (required)")
    p.add_argument("--instance-file", help="the instance's instance.json")
    # Ignored: older entries still pass it, and the core never trusts a name given here.
    p.add_argument("--agent", help="ignored (accepted so that older entries still start)")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    missing = [f"--{n.replace('_', '-')}" for n in ("conversation", "root", "token_file")
               if not getattr(args, n)]
    if missing:
        from rio.cli.main import EXIT_USAGE, print_error
        print_error("usage", f"rio mcp: missing {', '.join(missing)}",
                    "rio mcp is started by an ACP agent from the entry Rio gives it; see "
                    "`rio mcp --help`")
        return EXIT_USAGE
    from rio.mcp.server import serve

    def connect() -> Any:   # a BusConnection: rio/ names no actors type (layering)
        # The bus connection as every command makes it (rio.cli.main wires the layers). The agent's
        # environment has none of Rio's variables, so the instance comes from --instance-file
        # (<runtime>/<name>/instance.json), else from the project root.
        from rio.cli.main import _connect
        given = argparse.Namespace(connect=None, server_key=None, timeout=10.0, instance=None)
        if args.instance_file:
            info = Path(args.instance_file)
            os.environ["RIO_RUNTIME_DIR"] = str(info.parent.parent)
            given.instance = info.parent.name
        else:
            os.chdir(args.root)   # find_instance picks the instance holding the cwd
        return _connect(given)
    from actors.bus.call_pool import CallPool  # worker threads, a bus connection each
    return serve(args.conversation, Path(args.token_file), lambda: CallPool(connect))
