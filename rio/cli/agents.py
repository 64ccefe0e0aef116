"""``rio agents``: the ACP agents on this machine (found or not, version, signed-in hint).

    rio agents                 a table
    rio agents --json          the same rows as JSON (the shape of the ``agents.list`` op)
    rio agents --verbose       also one line on the public ACP agent registry (with --json:
                               ``{agents, registry}``, as ``agents.list`` answers)
    rio agents --timeout S     how long the version probes may take together (default 3)
    rio agents log CONVERSATION [--root DIR]
                               the conversation's ACP protocol log (bounded; secrets redacted)
    rio agents logout NAME     sign the agent out of its own account, where it offers that
                               through ACP (it is started for this, then stopped)

It runs discovery right here, in this shell's environment — no Rio instance is needed (a
running instance answers ``agents.list`` from its own environment). Nothing is started but
``<agent> --version`` (and a trial sandbox around ``true``: the last line says whether agents
run in a box here, ADR-0038). The logic is rio/acp/discovery.py; docs/agent-chat.md explains
the columns.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from rio.acp import discovery
from rio.agent.config import config_dir

EPILOG = """\
Columns: VERSION (or why it is unknown), SIGNED IN ("yes": the agent's own login file exists;
"no": it does not; a hint only — the agent decides), KEYS (variables set, names only).
Add an agent, or move a known one, in config.toml:
  [agents.mine]
  command = "/opt/mine/bin/mine"
  args = ["acp"]
docs/agent-chat.md has the whole guide.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("agents", help="the ACP agents found on this machine",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--verbose", action="store_true",
                   help="say where the public ACP agent registry's agents came from")
    p.add_argument("--timeout", type=float, default=discovery.VERSION_TIMEOUT_S, metavar="S",
                   help="seconds the version probes may take together (default %(default)s)")
    p.add_argument("action", nargs="*", metavar="log CONVERSATION | logout NAME",
                   help="print a conversation's ACP protocol log; sign an agent out")
    p.add_argument("--root", help="the project folder of the conversation (default: here)")
    p.set_defaults(func=cmd_agents)


def cmd_log(conversation: str, root: str | None) -> int:
    """``rio agents log CONVERSATION``: the protocol log, oldest line first."""
    from pathlib import Path

    from rio.acp.protocol_log import log_path
    try:
        path = log_path(Path(root or ".").resolve(), conversation)
    except ValueError:
        print(f"rio agents log: {conversation!r} is not a conversation id (agent.list, or the "
              "id `rio chat` printed).", file=sys.stderr)
        return 3
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        print(f"rio agents log: no protocol log for {conversation} in this project ({path}). "
              "Only conversations with an ACP agent have one; pass --root for another "
              "project.", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


def cmd_logout(name: str, root: str | None) -> int:
    """``rio agents logout NAME``: the agent started here, signed out, stopped."""
    import asyncio
    from pathlib import Path

    from actors.agent.acp_process import ProcessControlPort
    from rio.acp.logout import sign_out
    from rio.cli.main import EXIT_ERROR, print_error
    from rio.protocol.errors import RioError
    try:
        asyncio.run(sign_out(name, Path(root or ".").resolve(), os.environ, config_dir(),
                             ProcessControlPort()))
    except RioError as err:
        print_error(err.kind, err.message, err.next)
        return EXIT_ERROR
    print(f"Signed out of {name}. Its next session asks you to sign in again.")
    return 0


def cmd_agents(args: argparse.Namespace) -> int:
    action = list(getattr(args, "action", None) or ())
    if action:
        if len(action) != 2 or action[0] not in ("log", "logout"):
            print("rio agents: usage: rio agents log CONVERSATION [--root DIR] | "
                  "rio agents logout NAME", file=sys.stderr)
            return 3
        if action[0] == "logout":
            return cmd_logout(action[1], args.root)
        return cmd_log(action[1], args.root)
    from rio.acp import registry
    config = discovery.load_agents_config(config_dir())
    view = registry.load(os.environ)    # cached on disk; offline: the built-in list serves
    infos = discovery.discover(os.environ, discovery.RealHost(), discovery.run_version_probes,
                               config, timeout=max(0.1, args.timeout), extra=view.agents)
    box = sandbox_line()
    if args.json:
        rows = [i.to_dict() for i in infos]
        json.dump({"agents": rows, "registry": view.to_dict(), "sandbox": box}
                  if args.verbose else rows, sys.stdout, indent=2)
        print()
        return 0
    print(render_table(infos))
    print(f"Sandbox: {box}")
    if args.verbose:
        print(view.note)
    return 0


def sandbox_line() -> str:
    """Whether agents started from here run boxed (ADR-0038), as one line."""
    from actors.runtime.landlock import abi
    from rio.acp import sandbox
    from rio.protocol.errors import ConfigError
    try:
        config = sandbox.load_config(config_dir())
    except ConfigError as err:
        return f"unknown — {err.message}"
    if config.mode == "off":
        where = "RIO_AGENT_SANDBOX" if config.source.startswith("env:") else \
            "[sandbox] mode in config.toml"
        return f"off ({where}) — agents run with your own access to everything."
    available = sandbox.probe(config.bwrap, landlock_abi=abi)
    if not available.usable and config.mode == "required":
        return (f"none — {available.reason} [sandbox] mode is \"required\": agents are not "
                "started.")
    return available.describe()


def render_table(infos: list[discovery.AgentInfo]) -> str:
    rows = [("NAME", "AGENT", "VERSION", "SIGNED IN", "KEYS", "WHERE")]
    for i in infos:
        if i.found:
            version = i.version or (f"? ({i.version_error})" if i.version_error else "?")
            where = " ".join([i.path or "", *i.args])
        else:
            version = "not found"
            where = i.install or f"set [agents.{i.name}] command in config.toml"
        rows.append((i.name, i.title + (" (config)" if i.configured else ""), version,
                     i.signed_in, ",".join(i.keys_set) or "-", where))
    widths = [max(len(r[c]) for r in rows) for c in range(5)]
    lines = ["  ".join(r[c].ljust(widths[c]) for c in range(5)) + "  " + r[5] for r in rows]
    found = sum(1 for i in infos if i.found)
    lines.append(f"{found} of {len(infos)} found. Nothing was started but --version.")
    return "\n".join(line.rstrip() for line in lines)
