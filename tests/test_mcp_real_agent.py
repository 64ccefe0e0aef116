"""Opt-in: claude-agent-acp calls one of Rio's MCP tools through the gate, offline.

The real agent (``npm i --prefix /tmp/acp-agents @zed-industries/claude-agent-acp``, or
``ACP_AGENTS_PREFIX``) is driven by Rio's ACP client with Rio's ``mcpServers`` entry, against a
scripted loopback Anthropic server whose model calls ``mcp__rio__propose_edit``. The proposal
is approved through ``agent.approve`` and lands in the buffer of a real ``rio serve``. Skips,
with the reason, when the agent, node, or the client's ``mcp_servers`` support is absent.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from typing import Any

import pytest

from rio.mcp.entry import end_conversation, is_rio_tool, mcp_server_entry
from tests.fakes.model_servers import FakeModelServer, anthropic_text, anthropic_tool_use
from tests.support import RioServer, rio_env
from tests.test_acp_client import Owner
from tests.test_acp_real_agents import CLAUDE, NODE, base_env, client_for, need
from tests.test_mcp_endpoint import Approver, turn

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _model(request: Any) -> Any:
    """The scripted model: call Rio's propose_edit once it is offered, then say it is done."""
    body = request.json if request.body else {}
    tools = {t.get("name") for t in body.get("tools") or ()}
    answered = any(isinstance(part, dict) and part.get("type") == "tool_result"
                   for m in body.get("messages") or () if isinstance(m.get("content"), list)
                   for part in m["content"])
    if "mcp__rio__propose_edit" in tools and not answered:
        return anthropic_tool_use("toolu_rio_1", "mcp__rio__propose_edit",
                                  {"path": "notes.txt", "old_text": "beta",
                                   "new_text": "gamma"})
    return anthropic_text("Done.")


def test_claude_calls_rios_propose_edit_through_the_gate(tmp_path, monkeypatch):
    need(CLAUDE, node=True)
    from rio.acp.client import AcpClient
    if "mcp_servers" not in inspect.signature(AcpClient.new_session).parameters:
        pytest.skip("AcpClient.new_session takes no mcp_servers yet (the turn owner's wiring)")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    conversation = f"real{time.monotonic_ns() % 10**9}"
    rio = RioServer(root, tmp_path, env=rio_env(tmp_path)).start()
    model = FakeModelServer([_model] * 30).start()
    approver = None
    try:
        for key in ("RIO_STATE_DIR", "RIO_RUNTIME_DIR"):
            monkeypatch.setenv(key, rio.env[key])
        monkeypatch.setenv("RIO_INSTANCE", rio.name)
        entry = mcp_server_entry(conversation, root, agent="claude")
        owner = Owner()
        home = tmp_path / "home"
        home.mkdir()
        env = base_env(home, ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY="test")
        approver = Approver(rio)

        async def main() -> Any:
            async with client_for((NODE, str(CLAUDE)), root, env, owner) as client:
                await client.new_session(mcp_servers=[entry])
                return await client.prompt("Change beta to gamma in notes.txt")

        with turn(rio, conversation, text="beta to gamma"):
            out = asyncio.run(main())
        assert out.status == "done", out
        assert approver.seen and approver.seen[0]["proposal"].startswith("mcp-")
        assert approver.answers == [{"applied": True}]
        buf = next(b for b in rio.call("buffer.list") if b.get("path") == "notes.txt")
        assert rio.call("buffer.text", {"buffer": buf["buffer"]})["text"] == "alpha\ngamma\n"
        results = [json.dumps(r.json) for r in model.requests if r.body]
        assert any("applied" in r for r in results), "the tool's answer reached the model"
        for question in owner.questions:     # claude may ask first: it is about Rio's tool
            assert is_rio_tool(question.title, question.input)
    finally:
        if approver is not None:
            approver.close()
        model.close()
        rio.stop()
        end_conversation(conversation, root)
