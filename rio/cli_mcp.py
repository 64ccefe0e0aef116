"""``rio mcp``: Rio's MCP server on stdio, started by an external agent (never by hand).

    rio mcp --conversation ID --root DIR --token-file PATH [--instance-file PATH] [--agent NAME]

Rio puts this command in the ``mcpServers`` of the agent's ``session/new``
(:func:`rio.mcp_entry.mcp_server_entry`); the agent starts it and talks MCP on its stdin and
stdout. The token is read from the 0600 file, never from the command line or the environment.
The instance is the one in ``--instance-file`` (Rio passes it: the agent's environment has
none of Rio's variables), else the one holding ``--root``. docs/agent-chat.md, "MCP tools".
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("mcp", help="Rio's MCP server on stdio (started by an ACP agent)")
    p.add_argument("--conversation", required=True, help="the conversation it serves")
    p.add_argument("--root", required=True, help="the project root")
    p.add_argument("--token-file", required=True, help="the conversation's 0600 token file")
    p.add_argument("--instance-file", help="the instance's instance.json")
    p.add_argument("--agent", default="acp", help="the agent's name (for \"always allow\")")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    from rio.mcp_server import serve

    def connect():
        from actors.bus import connect as bus_connect
        from rio.instance import InstanceInfo, find_instance
        if args.instance_file:
            import json
            info = InstanceInfo(**json.loads(Path(args.instance_file).read_text()))
        else:
            info = find_instance(None, Path(args.root))
        return bus_connect(info, name="mcp", timeout=10.0)
    return serve(args.conversation, Path(args.token_file), connect, agent=args.agent)
