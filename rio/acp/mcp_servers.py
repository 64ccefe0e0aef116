"""Rio's MCP endpoint as an entry of ``session/new``'s ``mcpServers``, in the SDK's types.

Two forms (ADR-0034): an agent that advertises ``mcpCapabilities.http`` (claude-agent-acp,
codex-acp and opencode all do) gets ``{type: "http", name, url, headers: [Authorization]}``;
any other agent gets the stdio fallback ``rio mcp`` (``{name, command, args, env}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def supports_http(init: Any) -> bool:
    """Does the agent's ``initialize`` answer advertise MCP over HTTP?"""
    caps = getattr(init, "agent_capabilities", None)
    mcp = getattr(caps, "mcp_capabilities", None)
    return bool(getattr(mcp, "http", False))


def to_schema(entries: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Rio's entries (plain dicts) as the SDK's ``HttpMcpServer`` / ``McpServerStdio``."""
    from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio
    out: list[Any] = []
    for e in entries:
        if e.get("type") == "http":
            out.append(HttpMcpServer(
                type="http", name=str(e["name"]), url=str(e["url"]),
                headers=[HttpHeader(name=str(h["name"]), value=str(h["value"]))
                         for h in e.get("headers") or ()]))
            continue
        env = e.get("env") or []
        if isinstance(env, Mapping):
            env = [{"name": k, "value": v} for k, v in env.items()]
        out.append(McpServerStdio(name=str(e["name"]), command=str(e["command"]),
                                  args=[str(a) for a in e.get("args") or ()],
                                  env=[EnvVariable(name=str(v["name"]), value=str(v["value"]))
                                       for v in env]))
    return out
