"""Opt-in: the ACP client against the real agents, offline, against a loopback model server.

Install them with ``npm i --prefix /tmp/acp-agents @zed-industries/claude-agent-acp
@zed-industries/codex-acp opencode-ai`` (or point ``ACP_AGENTS_PREFIX`` at another prefix);
each test skips, with the reason, when its agent is absent. Every run gets a fresh empty
``HOME`` and a minimal environment with a fake key (``test``): nobody's account is used.
Versions observed: claude-agent-acp 0.23.1, codex-acp 0.16.0, opencode 1.18.33 (Node 20).
codex-acp speaks only the OpenAI Responses API: its test points ``$CODEX_HOME/config.toml`` at
the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import psutil
import pytest

from actors.agent.acp_process import ProcessControlPort
from rio.acp.client import AcpClient, AcpSettings
from tests.acp.test_acp_client import Owner
from tests.fakes.model_servers import (
    FakeModelServer,
    Reply,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    sse,
)
from tests.support import wait_for_async

PREFIX = Path(os.environ.get("ACP_AGENTS_PREFIX", "/tmp/acp-agents")) / "node_modules"
CLAUDE = PREFIX / "@zed-industries" / "claude-agent-acp" / "dist" / "index.js"
CODEX = PREFIX / "@zed-industries" / "codex-acp-linux-x64" / "bin" / "codex-acp"
OPENCODE = PREFIX / "opencode-linux-x64" / "bin" / "opencode"
NODE = shutil.which("node")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def need(path: Path, node: bool = False) -> None:
    if not path.exists():
        pytest.skip(f"{path} is not installed (npm i --prefix {PREFIX.parent} "
                    "@zed-industries/claude-agent-acp @zed-industries/codex-acp opencode-ai)")
    if node and NODE is None:
        pytest.skip("node is not on PATH")


def real_agent_sandbox() -> str:
    """``RIO_AGENT_SANDBOX`` for a ``rio serve`` driving a real agent: boxed ("required") where
    this machine can make the box (ADR-0038) — the real agents must keep working inside it —
    else "auto" (unboxed, said once). ``RIO_REAL_AGENTS_SANDBOX`` overrides it."""
    wanted = os.environ.get("RIO_REAL_AGENTS_SANDBOX")
    if wanted:
        return wanted
    from actors.runtime.landlock import abi
    from rio.acp import sandbox
    return "required" if sandbox.probe(landlock_abi=abi).usable else "auto"


def base_env(home: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8", **extra}


@contextlib.asynccontextmanager
async def client_for(argv: tuple[str, ...], root: Path, env: dict[str, str], owner: Owner,
                     **kw: Any):
    settings = AcpSettings(argv, root, env, name=Path(argv[-1]).name, request_timeout_s=120,
                           **kw)
    client = AcpClient(settings, owner, ProcessControlPort())
    try:
        await client.start()
        yield client
    finally:
        client.stop_result = await client.close()


def no_survivors(client: AcpClient) -> None:
    result = client.stop_result
    assert result is not None and result.survivors == ()
    assert not psutil.pid_exists(client.process.pid) or \
        psutil.Process(client.process.pid).status() == psutil.STATUS_ZOMBIE


def said_hello(argv: tuple[str, ...], root: Path, env: dict[str, str], owner: Owner,
               model: FakeModelServer) -> tuple[AcpClient, Any]:
    """One text turn ("Say hello") in a new session of the agent ``argv``: the client (stopped)
    and the turn's outcome; the loopback model server is closed after, whatever happened."""
    async def main() -> tuple[AcpClient, Any]:
        async with client_for(argv, root, env, owner) as client:
            await client.new_session()
            out = await client.prompt("Say hello")
        return client, out

    try:
        return asyncio.run(main())
    finally:
        model.close()


def test_claude_text_turn_against_a_loopback_anthropic_server(tmp_path):
    need(CLAUDE, node=True)
    server = FakeModelServer([lambda r: anthropic_text("Hello ", "from the fake model")] * 20)
    server.start()
    owner = Owner()
    env = base_env(tmp_path / "home", ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="test")
    (tmp_path / "home").mkdir()
    client, out = said_hello((NODE, str(CLAUDE)), tmp_path, env, owner, server)
    assert out.status == "done" and out.stop_reason == "end_turn"
    assert out.text == "Hello from the fake model"
    assert any(r.path.startswith("/v1/messages") for r in server.requests)
    assert owner.of("agent.modes") and owner.of("agent.commands")
    # claude-agent-acp ignores the end of its input: the group needed a signal
    assert client.stop_result.how in ("terminated", "killed")
    no_survivors(client)


def test_claude_permission_answered_by_kind_then_the_turn_goes_on(tmp_path):
    need(CLAUDE, node=True)
    server = FakeModelServer([
        anthropic_tool_use("toolu_1", "Bash", {"command": "echo hi > made.txt",
                                               "description": "make a file"}),
        *[lambda r: anthropic_text("I did not run it.")] * 20])
    server.start()
    owner = Owner(permission="reject_once")
    env = base_env(tmp_path / "home", ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="test")

    async def main():
        async with client_for((NODE, str(CLAUDE)), tmp_path, env, owner) as client:
            await client.new_session()
            return await client.prompt("Make a file")

    try:
        (tmp_path / "home").mkdir()
        out = asyncio.run(main())
    finally:
        server.close()
    assert owner.questions, "claude asked no permission"
    kinds = {o.kind for o in owner.questions[0].options}
    assert {"allow_once", "reject_once"} <= kinds
    assert out.status == "done" and "did not run" in out.text
    assert not (tmp_path / "made.txt").exists()
    assert [r["ok"] for r in owner.of("agent.tool_result")][:1] == [False]


def test_claude_cancel_mid_stream(tmp_path):
    need(CLAUDE, node=True)
    slow = anthropic_text(*["word "] * 200).slow(delay_s=0.05)
    server = FakeModelServer([lambda r: slow] * 20)
    server.start()
    owner = Owner()
    env = base_env(tmp_path / "home", ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="test")

    async def main():
        async with client_for((NODE, str(CLAUDE)), tmp_path, env, owner) as client:
            await client.new_session()
            task = asyncio.create_task(client.prompt("Talk"))
            await wait_for_async(lambda: owner.of("agent.delta"), 120, 0.05,
                                 what="streamed text")
            t0 = asyncio.get_running_loop().time()
            await client.cancel()
            out = await asyncio.wait_for(task, 30)
            return out, asyncio.get_running_loop().time() - t0

    try:
        (tmp_path / "home").mkdir()
        out, took = asyncio.run(main())
    finally:
        server.close()
    assert out.status == "stopped" and out.stop_reason == "cancelled"
    assert took < 5


def test_claude_without_a_key_needs_a_terminal_sign_in_on_the_first_prompt(tmp_path):
    need(CLAUDE, node=True)
    owner = Owner()
    (tmp_path / "home").mkdir()

    async def main():
        async with client_for((NODE, str(CLAUDE)), tmp_path, base_env(tmp_path / "home"),
                              owner) as client:
            await client.new_session()              # succeeds: claude asks at the prompt
            return await client.prompt("hello")

    out = asyncio.run(main())
    assert out.status == "error" and out.error.kind == "agent.sign_in_needed"
    methods = out.error.details["methods"]
    assert methods and methods[0]["type"] == "terminal"          # offered: we declared it
    assert methods[0]["command"][:2] == [NODE, str(CLAUDE)]


def responses_text(text: str) -> Reply:
    """One OpenAI Responses API stream (codex-acp speaks only this) answering ``text``."""
    msg = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": []}]}
    resp = {"id": "resp_1", "object": "response", "created_at": 0, "status": "in_progress",
            "model": "gpt-5.4-mini", "output": []}
    usage = {"input_tokens": 5, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 8}
    return Reply(chunks=(
        sse("response.created", {"type": "response.created", "response": resp}),
        sse("response.output_item.added", {"type": "response.output_item.added",
                                           "output_index": 0,
                                           "item": {**msg, "status": "in_progress",
                                                    "content": []}}),
        sse("response.output_text.delta", {"type": "response.output_text.delta",
                                           "item_id": "msg_1", "output_index": 0,
                                           "content_index": 0, "delta": text}),
        sse("response.output_item.done", {"type": "response.output_item.done",
                                          "output_index": 0, "item": msg}),
        sse("response.completed", {"type": "response.completed", "response": {
            **resp, "status": "completed", "output": [msg], "usage": usage}})))


def test_codex_text_turn_against_a_loopback_responses_server(tmp_path):
    need(CODEX)
    server = FakeModelServer([lambda r: responses_text("Hello from Responses")] * 20)
    server.start()
    codex_home = tmp_path / "home" / ".codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.4-mini"\nmodel_provider = "fake"\n[model_providers.fake]\n'
        f'name = "fake"\nbase_url = "{server.url}/v1"\nwire_api = "responses"\n'
        'env_key = "FAKE_KEY"\n')
    owner = Owner()
    env = base_env(tmp_path / "home", CODEX_HOME=str(codex_home), FAKE_KEY="test")
    client, out = said_hello((str(CODEX),), tmp_path, env, owner, server)
    assert out.status == "done" and out.text == "Hello from Responses"
    assert [r.path for r in server.requests] == ["/v1/responses"]
    assert client.stop_result.how in ("terminated", "killed")
    no_survivors(client)


def test_codex_without_a_login_needs_sign_in_on_session_new(tmp_path):
    need(CODEX)
    owner = Owner()
    (tmp_path / "home").mkdir()

    async def main():
        async with client_for((str(CODEX),), tmp_path, base_env(tmp_path / "home"),
                              owner) as client:
            with pytest.raises(Exception) as err:
                await client.new_session()
        return err.value, client

    err, client = asyncio.run(main())
    assert err.kind == "agent.sign_in_needed"
    kinds = {m["id"]: m["type"] for m in err.details["methods"]}
    assert kinds.get("chatgpt") == "agent"
    env_vars = {v for m in err.details["methods"] for v in m.get("vars", [])}
    assert {"CODEX_API_KEY", "OPENAI_API_KEY"} <= env_vars
    assert client.stop_result.how in ("terminated", "killed")    # ignores stdin close too
    no_survivors(client)


def test_opencode_text_turn_against_a_loopback_chat_completions_server(tmp_path):
    need(OPENCODE)
    server = FakeModelServer([lambda r: openai_text("Hello from chat completions")] * 20)
    server.start()
    owner = Owner()
    (tmp_path / "home").mkdir()
    config = {"provider": {"fake": {
        "npm": "@ai-sdk/openai-compatible", "name": "Fake",
        "options": {"baseURL": server.url + "/v1", "apiKey": "test"},
        "models": {"m1": {"name": "M1"}}}}, "model": "fake/m1", "small_model": "fake/m1"}
    env = base_env(tmp_path / "home", OPENCODE_CONFIG_CONTENT=json.dumps(config),
                   OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_MODELS_FETCH="1",
                   OPENCODE_DISABLE_LSP_DOWNLOAD="1", npm_config_registry="http://127.0.0.1:9")
    client, out = said_hello((str(OPENCODE), "acp"), tmp_path, env, owner, server)
    assert out.status == "done" and out.text == "Hello from chat completions"
    assert out.usage.get("total_tokens")
    assert all(r.path == "/v1/chat/completions" for r in server.requests)  # title + turn
    assert client.stop_result.how in ("stdin_closed", "terminated")  # it obeys stdin close
    no_survivors(client)


def test_opencode_unconfigured_goes_silent_and_the_client_gives_up(tmp_path):
    need(OPENCODE)
    owner = Owner()
    (tmp_path / "home").mkdir()
    env = base_env(tmp_path / "home", OPENCODE_DISABLE_AUTOUPDATE="1",
                   OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_LSP_DOWNLOAD="1",
                   npm_config_registry="http://127.0.0.1:9")

    async def main():
        async with client_for((str(OPENCODE), "acp"), tmp_path, env, owner,
                              silent_after_s=3, give_up_after_s=8) as client:
            await client.new_session()
            return await client.prompt("hello")

    out = asyncio.run(main())
    assert owner.of("agent.silent")
    assert out.status == "error" and out.error.kind == "agent.agent_silent"
