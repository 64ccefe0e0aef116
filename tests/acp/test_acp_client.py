"""rio/acp/client.py against the fake ACP agent: a real subprocess on real stdio.

Every test starts the fake agent through the real process port (actors/agent/acp_process.py, i.e.
process_control) and ends it in a ``finally`` — and checks that nothing it started survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from actors.agent.acp_process import ProcessControlPort
from rio.acp.client import AcpClient, AcpSettings
from rio.acp.port import WriteOutcome, agent_environment
from rio.acp.protocol_log import ProtocolLog
from rio.protocol.errors import PathError
from tests.support import wait_for_async

FAKE = str(Path(__file__).parent.parent / "fakes" / "acp_agent.py")
pytestmark = pytest.mark.timeout(120)


class Owner:
    """The turn owner as a test double: records events, answers from scripted values."""

    def __init__(self, texts: dict[str, str] | None = None, permission: Any = "allow_once",
                 write: WriteOutcome = WriteOutcome(True)) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.texts = texts or {}
        self.permission = permission
        self.write = write
        self.writes: list[tuple[str, str]] = []
        self.questions: list[Any] = []
        self.asked = asyncio.Event()

    def publish(self, topic: str, data: Any) -> None:
        self.events.append((topic, dict(data)))

    def topics(self) -> list[str]:
        return [t for t, _ in self.events]

    def of(self, topic: str) -> list[dict[str, Any]]:
        return [d for t, d in self.events if t == topic]

    async def read_text(self, path: str) -> str:
        if path not in self.texts:
            raise PathError("not_found", f"{path} does not exist")
        return self.texts[path]

    async def propose_write(self, path: str, content: str) -> WriteOutcome:
        self.writes.append((path, content))
        return self.write

    async def ask_permission(self, question: Any) -> str | None:
        self.questions.append(question)
        self.asked.set()
        if self.permission == "wait":
            await asyncio.Event().wait()
        return self.permission


async def until(predicate: Any) -> None:
    """Return once ``predicate()`` holds (the caller bounds the wait with ``wait_for``)."""
    while not predicate():
        await asyncio.sleep(0.01)


def settings(tmp_path: Path, script: dict[str, Any], **kw: Any) -> AcpSettings:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    env = kw.pop("env", None) or agent_environment(os.environ)
    return AcpSettings((sys.executable, FAKE, str(path)), root, env, name="fake",
                       request_timeout_s=60, **kw)


@contextlib.asynccontextmanager
async def running(s: AcpSettings, owner: Owner, *, session: bool = True, **port: Any):
    client = AcpClient(s, owner, ProcessControlPort(port or None), ProtocolLog())
    try:
        await client.start()
        if session:
            await client.new_session()
        yield client
    finally:
        await client.close()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_turn_streams_text_in_order_and_logs_both_directions(tmp_path):
    owner = Owner()
    script = {"turns": [[{"text": "one "}, {"text": ""}, {"text": "two "}, {"echo": True}]]}

    async def main():
        async with running(settings(tmp_path, script), owner) as client:
            out = await client.prompt("hello")
            return out, client.log.text(), client.process.pid

    out, log, pid = run(main())
    assert out.status == "done" and out.stop_reason == "end_turn"
    assert out.text == "one two echo: hello"
    assert [d["text"] for d in owner.of("agent.delta")] == ["one ", "two ", "echo: hello"]
    assert "→ " in log and "← " in log and '"method":"session/prompt"' in log
    assert gone(pid)


def test_initialize_declares_fs_and_terminal_login_but_no_terminal(tmp_path):
    owner = Owner()

    async def main():
        async with running(settings(tmp_path, {"default_turn": [{"report_init": True}]}),
                           owner) as client:
            return await client.prompt("x")

    out = run(main())
    reported = json.loads(out.text.removeprefix("init: "))
    assert reported["capabilities"]["fs"] == {"readTextFile": True, "writeTextFile": True}
    assert reported["capabilities"]["terminal"] is False
    assert reported["capabilities"]["auth"] == {"terminal": True}
    assert reported["meta"] == {"terminal-auth": True}


def test_the_agent_gets_the_users_environment_without_rios_variables(tmp_path):
    owner = Owner()
    user = {**os.environ, "RIO_MCP_TOKEN": "t0ken", "RIO_BUS": "ipc:///x",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "ZZ_USER_VAR": "1"}
    env = agent_environment(user, {"ZZ_EXTRA": "2", "RIO_SNEAKY": "3"})
    script = {"default_turn": [{"env": "RIO_"}, {"env": "ZZ_"}, {"env": "ANTHROPIC_BASE"}]}

    async def main():
        async with running(settings(tmp_path, script, env=env), owner) as client:
            return await client.prompt("x")

    text = run(main()).text
    rio_vars = text.split("env: ")[1].split(",")
    # only process control's own spawn bookkeeping (cookie, lineage, parent, lifeline)
    assert set(rio_vars) <= {"RIO_SPAWN_COOKIE", "RIO_SPAWN_LINEAGE", "RIO_PARENT_PID",
                             "RIO_LIFELINE_FD"}
    assert "env: ZZ_EXTRA,ZZ_USER_VAR" in text and "env: ANTHROPIC_BASE_URL" in text


def test_reads_answer_with_the_buffer_text_and_stay_inside_the_project(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    root = tmp_path / "project"
    root.mkdir()
    (root / "link").symlink_to(outside)
    (root / "a.txt").write_text("on disk\n")
    owner = Owner(texts={"a.txt": "unsaved 1\nunsaved 2\nunsaved 3\n"})
    script = {"default_turn": [
        {"read": {"path": str(root / "a.txt")}},
        {"read": {"path": str(root / "a.txt"), "line": 2, "limit": 1}},
        {"read": {"path": str(outside)}},
        {"read": {"path": str(root / "link")}},
        {"read": {"path": str(root / ".." / "secret.txt")}},
        {"read": {"path": str(root / "missing.txt")}}]}

    async def main():
        async with running(settings(tmp_path, script), owner) as client:
            return await client.prompt("x")

    deltas = [d["text"] for d in owner.of("agent.delta")]
    run(main())
    deltas = [d["text"] for d in owner.of("agent.delta")]
    assert deltas[0] == "read: unsaved 1\nunsaved 2\nunsaved 3\n"
    assert deltas[1] == "read: unsaved 2\n"
    for refused in deltas[2:5]:
        assert refused.startswith("read error: -32602") and "outside the project" in refused
    assert deltas[5].startswith("read error: -32002") and "path.not_found" in deltas[5]
    assert "secret" not in "".join(d for d in deltas if not d.startswith("read error"))


def test_a_write_becomes_a_proposal_and_never_touches_the_disk(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    owner = Owner()
    script = {"turns": [[{"write": {"path": str(root / "new.txt"), "content": "N"}},
                         {"write": {"path": str(tmp_path / "escape.txt"), "content": "E"}}],
                        [{"write": {"path": str(root / "no.txt"), "content": "X"}}]]}

    async def main():
        async with running(settings(tmp_path, script), owner) as client:
            first = await client.prompt("x")
            owner.write = WriteOutcome(False, "the user rejected it")
            second = await client.prompt("y")
            return first, second

    first, second = run(main())
    assert owner.writes == [("new.txt", "N"), ("no.txt", "X")]
    assert "write: ok" in first.text and "write error: -32602" in first.text
    assert "write error: -32603" in second.text and "the user rejected it" in second.text
    assert not (root / "new.txt").exists() and not (tmp_path / "escape.txt").exists()


@pytest.mark.slow
def test_permission_is_answered_by_kind_with_the_agents_own_ids(tmp_path):
    opts = [["approved", "allow_once"], ["approved-always", "allow_always"],
            ["cancel", "reject_once"]]
    only_once = [["once", "allow_once"], ["never", "reject_always"]]
    script = {"default_turn": [
        {"tool": {"id": "call1", "title": "Run ls", "kind": "execute", "input": {}}},
        {"tool_update": {"id": "call1", "input": {"command": "ls"}}},
        {"permission": {"id": "call1", "options": opts}},
        {"permission": {"id": "call2", "options": only_once}}]}

    async def turn(answer):
        owner = Owner(permission=answer)
        async with running(settings(tmp_path, script), owner) as client:
            out = await client.prompt("x")
        return owner, out.text

    owner, text = run(turn("allow_once"))
    assert "permission: approved" in text and "permission: once" in text
    q = owner.questions[0]
    assert (q.call, q.title, q.tool_kind) == ("call1", "Run ls", "execute")
    assert q.input == {"command": "ls"}       # the input from the update, not the empty start
    assert [o.kind for o in q.options] == ["allow_once", "allow_always", "reject_once"]
    _, text = run(turn("allow_always"))
    assert "permission: approved-always" in text and "permission: once" in text
    _, text = run(turn("reject_once"))        # no reject_once in the second: cancelled
    assert "permission: cancel" in text and "permission: cancelled" in text
    _, text = run(turn(None))
    assert text.count("permission: cancelled") == 2


def test_stop_answers_open_questions_cancelled_first_then_cancels(tmp_path):
    owner = Owner(permission="wait")
    script = {"default_turn": [{"text": "working"},
                               {"permission": {"id": "c", "options": [["y", "allow_once"]]}},
                               {"hang": True}]}

    async def main():
        async with running(settings(tmp_path, script), owner) as client:
            task = asyncio.create_task(client.prompt("x"))
            await asyncio.wait_for(owner.asked.wait(), 60)
            assert client.open_questions()
            await client.cancel()
            out = await asyncio.wait_for(task, 30)
            log = client.log.text()
            return out, log

    out, log = run(main())
    assert out.status == "stopped" and out.stop_reason == "cancelled"
    assert out.text == "workingpermission: cancelled"
    assert log.index('"outcome":"cancelled"') < log.index('"method":"session/cancel"')


@pytest.mark.slow
def test_cancel_of_a_hanging_prompt_and_of_the_calling_task(tmp_path):
    owner = Owner()

    async def main():
        async with running(settings(tmp_path, {"default_turn": [{"hang": True}]}),
                           owner) as client:
            task = asyncio.create_task(client.prompt("x"))
            await asyncio.sleep(0)
            await client.cancel()
            out = await asyncio.wait_for(task, 30)
            task = asyncio.create_task(client.prompt("again"))
            await wait_for_async(lambda: client.state == "prompting", 10, 0.01,
                                 what="the client prompting")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return out, client.log.text()

    out, log = run(main())
    assert out.status == "stopped"
    assert log.count('"method":"session/cancel"') == 2


@pytest.mark.slow
def test_an_agent_that_never_answers_cancel_is_abandoned(tmp_path):
    owner = Owner()

    async def main():
        s = settings(tmp_path, {"default_turn": [{"hang": "forever"}]}, cancel_grace_s=0.5)
        async with running(s, owner) as client:
            task = asyncio.create_task(client.prompt("x"))
            await asyncio.wait_for(until(lambda: client.state == "prompting"), 10)
            await client.cancel()
            return await asyncio.wait_for(task, 30)

    out = run(main())
    assert out.status == "stopped"


def test_sign_in_needed_on_session_new_lists_the_agents_methods(tmp_path):
    owner = Owner()
    script = {"auth": "new_session", "auth_methods": [
        {"id": "login", "name": "Log in", "type": "terminal", "args": ["--cli", "login"]},
        {"id": "key", "name": "API key", "type": "env_var", "vars": ["FAKE_API_KEY"]},
        {"id": "browser", "name": "ChatGPT"}]}

    async def main():
        s = settings(tmp_path, script)
        async with running(s, owner, session=False) as client:
            with pytest.raises(Exception) as err:
                await client.new_session()
            state = client.state
            await client.authenticate("browser")
            session = await client.new_session()
            out = await client.prompt("after")
            return err.value, state, session, out, s

    err, state, session, out, s = run(main())
    assert err.kind == "agent.sign_in_needed" and state == "sign_in_needed"
    methods = {m["id"]: m for m in err.details["methods"]}
    # the agent's whole argv (node + script for the Zed adapters), then the method's args
    assert methods["login"]["command"] == [*s.argv, "--cli", "login"]
    assert methods["login"]["shell"].endswith("script.json --cli login")
    assert methods["key"]["vars"] == ["FAKE_API_KEY"] and methods["browser"]["type"] == "agent"
    assert "FAKE_API_KEY" in err.next and "--cli login" in err.next
    sign_in = owner.of("agent.sign_in")
    assert sign_in[0]["state"] == "needed" and sign_in[-1]["state"] == "signed_in"
    assert session and out.text == "echo: after"


def test_sign_in_needed_on_the_first_prompt_ends_the_turn_with_an_error(tmp_path):
    owner = Owner()
    script = {"auth": "prompt", "auth_methods": [{"id": "a", "name": "A"}]}

    async def main():
        async with running(settings(tmp_path, script), owner) as client:
            return await client.prompt("x")

    out = run(main())
    assert out.status == "error" and out.error.kind == "agent.sign_in_needed"
    assert owner.of("agent.error")[0]["kind"] == "agent.sign_in_needed"


@pytest.mark.slow
def test_a_silent_agent_is_surfaced_and_the_prompt_does_not_wait_forever(tmp_path):
    owner = Owner()
    script = {"default_turn": [{"text": "thinking"}, {"silent": 600}]}

    async def main():
        s = settings(tmp_path, script, silent_after_s=0.4, give_up_after_s=1.5)
        async with running(s, owner) as client:
            return await asyncio.wait_for(client.prompt("x"), 60), client.log.text()

    out, log = run(main())
    silent = owner.of("agent.silent")
    assert silent and silent[0]["seconds"] >= 0.4
    assert out.status == "error" and out.error.kind == "agent.agent_silent"
    assert out.partial and out.text == "thinking"
    assert '"method":"session/cancel"' in log


@pytest.mark.slow
def test_an_agent_that_speaks_again_after_a_silence_is_no_longer_silent(tmp_path):
    owner = Owner()
    script = {"default_turn": [{"text": "a"}, {"silent": 1.5}, {"text": "b"}, {"silent": 0.5},
                               {"text": "c"}]}

    async def main():
        s = settings(tmp_path, script, silent_after_s=0.4, give_up_after_s=30)
        async with running(s, owner) as client:
            return await client.prompt("x")

    out = run(main())
    assert out.status == "done" and out.text == "abc"
    silent = owner.of("agent.silent")
    assert silent[0]["seconds"] >= 0.4 and silent[1] == {"seconds": 0, "resumed": True}
    # every "silent" is followed by a "resumed", the last one at the latest when the turn ends
    assert silent[-1] == {"seconds": 0, "resumed": True}
    assert [("resumed" in e) for e in silent] == [False, True] * (len(silent) // 2)


@pytest.mark.slow
def test_a_question_to_the_user_is_not_silence(tmp_path):
    class SlowOwner(Owner):
        async def ask_permission(self, question):
            # the behaviour under test: the user takes longer to answer than the agent's
            # silence limits (0.3 s / 0.6 s), which must not count as the agent being silent
            await asyncio.sleep(1.0)
            return "allow_once"

    owner = SlowOwner()
    script = {"default_turn": [{"permission": {"id": "c", "options": [["y", "allow_once"]]}}]}

    async def main():
        s = settings(tmp_path, script, silent_after_s=0.3, give_up_after_s=0.6)
        async with running(s, owner) as client:
            return await client.prompt("x")

    out = run(main())
    assert out.status == "done" and "permission: y" in out.text
    assert owner.of("agent.silent") == []


@pytest.mark.slow
def test_a_crash_mid_turn_is_classified_with_the_exit_code_and_stderr(tmp_path):
    owner = Owner()
    script = {"default_turn": [{"text": "half"}, {"crash": 3}]}

    async def main():
        async with running(settings(tmp_path, script), owner) as client:
            return await client.prompt("x"), client.state

    out, state = run(main())
    assert out.status == "error" and out.error.kind == "agent.agent_exited"
    assert "exit code 3" in out.error.message and "crashes on purpose" in out.error.message
    assert out.partial and out.text == "half" and state in ("exited", "stopped")


def test_an_agent_that_dies_before_initialize(tmp_path):
    owner = Owner()
    s = AcpSettings((sys.executable, "-c", "import sys; sys.stderr.write('no config\\n'); "
                     "sys.exit(4)"), tmp_path, agent_environment(os.environ))

    async def main():
        client = AcpClient(s, owner, ProcessControlPort())
        try:
            await client.start()
        finally:
            await client.close()

    with pytest.raises(Exception) as err:
        run(main())
    assert err.value.kind == "agent.agent_exited"
    assert "exit code 4" in err.value.message and "no config" in err.value.message


def test_a_garbage_initialize_answer_is_classified_and_the_agent_stopped(tmp_path):
    """Issue 22: an ``initialize`` answer that is not one was reported "stopped during
    initialize (exit code None)" while the agent still ran. It is the agent's own failure
    (an answer Rio cannot read), said as such, and the agent is ended."""
    owner = Owner()
    s = settings(tmp_path, {"init": "garbage"})
    seen: dict[str, Any] = {}

    async def main():
        client = AcpClient(s, owner, ProcessControlPort(), ProtocolLog())
        try:
            await client.start()
        except Exception as exc:   # noqa: BLE001 -- examined below
            seen["error"] = exc
            seen["pid"] = client.process.pid if client.process else None
            seen["alive"] = client.process is not None and client.process.returncode is None
        finally:
            await client.close()

    run(main())
    err = seen["error"]
    assert err.kind == "agent.unexpected_response", (err.kind, err.message)
    assert "initialize" in err.message and "exit code" not in err.message
    assert seen["alive"] is False          # ended by Rio, before start() raised
    assert not psutil.pid_exists(seen["pid"]) or \
        psutil.Process(seen["pid"]).status() == psutil.STATUS_ZOMBIE


def test_a_command_that_does_not_exist(tmp_path):
    s = AcpSettings((str(tmp_path / "nope"),), tmp_path, {}, name="nope")

    async def main():
        client = AcpClient(s, Owner(), ProcessControlPort())
        try:
            await client.start()
        finally:
            await client.close()

    with pytest.raises(Exception) as err:
        run(main())
    assert err.value.kind == "agent.agent_start_failed" and "config.toml" in err.value.next


@pytest.mark.slow
def test_stderr_floods_and_malformed_lines_do_not_stop_a_turn(tmp_path):
    owner = Owner()
    script = {"startup_stderr": 1 << 20, "default_turn": [
        {"stderr": 5 << 20}, {"malformed": "this is not json"}, {"malformed": "[1, 2]"},
        {"text": "still here"}]}

    async def main():
        async with running(settings(tmp_path, script), owner) as client:
            out = await client.prompt("x")
            return out, client

    out, client = run(main())
    assert out.status == "done" and out.text == "still here"
    assert client.stderr.total_bytes >= 6 << 20
    assert len(client.stderr.text()) <= client.stderr.max_chars
    assert client.malformed_lines == 2
    assert "malformed line from the agent, dropped: this is not json" in client.log.text()
    assert len(client.log.lines()) <= 2000


@pytest.mark.slow
def test_a_usage_update_without_used_is_dropped_before_the_sdk(tmp_path, caplog):
    """claude-agent-acp sends one every turn; the SDK would log a traceback for each."""
    owner = Owner()
    bad = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": None,
                                     "size": 200000}}})
    script = {"default_turn": [{"malformed": bad}, {"usage": [5, 10]}, {"text": "ok"}]}

    async def main():
        async with running(settings(tmp_path, script), owner) as client:
            return await client.prompt("x"), client

    with caplog.at_level("ERROR"):
        out, client = run(main())
    assert out.status == "done" and out.text == "ok"
    assert owner.of("agent.usage") == [{"used": 5, "size": 10}]
    assert "usage_update without 'used' dropped" in client.log.text()
    assert client.malformed_lines == 0
    assert not [r for r in caplog.records if "validation" in r.getMessage().lower()
                or "Unhandled" in r.getMessage()]


@pytest.mark.slow
@pytest.mark.parametrize("script,how", [
    ({}, ("stdin_closed", "terminated")),
    ({"on_eof": "stay"}, ("terminated",)),
    ({"on_eof": "stay", "ignore_term": True}, ("killed",)),
])
def test_stop_ends_the_agent_and_its_helpers(tmp_path, script, how):
    owner = Owner()
    script = {**script, "default_turn": [{"helper": "group"}, {"helper": "setsid"}]}

    async def main():
        client = AcpClient(settings(tmp_path, script), owner,
                           ProcessControlPort({"stdin_grace": 0.3, "term_grace": 0.5,
                                               "kill_grace": 1.0}))
        try:
            await client.start()
            await client.new_session()
            out = await client.prompt("x")
        finally:
            result = await client.close()
        return out, result, client.process.pid

    out, result, pid = run(main())
    helpers = [int(w) for w in out.text.replace("helper ", " ").split()]
    assert len(helpers) == 2
    assert result.how in how and result.survivors == ()
    assert result.elapsed < 0.3 + 0.5 + 1.0 + 0.5 + 1.0
    assert gone(pid) and all(gone(h) for h in helpers)


@pytest.mark.slow
def test_a_session_is_resumed_in_a_new_process_with_session_load(tmp_path):
    state = tmp_path / "state.json"
    script = {"load_session": True, "state": str(state)}
    owner = Owner()

    async def first():
        async with running(settings(tmp_path, script), owner) as client:
            await client.prompt("remember me")
            return client.session_id

    sid = run(first())
    owner2 = Owner()

    async def second():
        async with running(settings(tmp_path, script), owner2, session=False) as client:
            resumed = await client.load_session(sid)
            replayed = list(owner2.events)
            out = await client.prompt("again")
            return resumed, replayed, out

    resumed, replayed, out = run(second())
    assert resumed and out.text == "echo: again"
    assert "agent.delta" not in [t for t, _ in replayed]       # history is not re-published
    assert ("agent.session", {"session": sid, "resumed": True}) in replayed

    async def no_load():
        async with running(settings(tmp_path, {}), Owner(), session=False) as client:
            return await client.load_session(sid)

    assert run(no_load()) is False


@pytest.mark.slow
def test_tools_plans_usage_modes_and_commands_become_agent_events(tmp_path):
    owner = Owner()
    script = {"modes": {"current": "ask", "available": ["ask", "code"]},
              "commands": [{"name": "review", "description": "Review the change"}],
              "default_turn": [
                  {"plan": ["read", "fix"]},
                  {"tool": {"id": "t1", "title": "Read a.py", "kind": "read", "input": {}}},
                  {"tool_update": {"id": "t1", "status": "in_progress",
                                   "input": {"path": "a.py"}}},
                  {"tool_update": {"id": "t1", "status": "completed", "output": "42 lines"}},
                  {"tool_update": {"id": "t2", "status": "failed"}},
                  {"thought": "hmm"}, {"usage": [1200, 200000]}, {"text": "done"}]}

    async def main():
        async with running(settings(tmp_path, script), owner) as client:
            await client.prompt("x")
            await client.set_mode("code")
            await client.set_config_option("model", "smart")
            for _ in range(200):
                if owner.of("agent.commands"):
                    break
                await asyncio.sleep(0.01)
            return client.updates

    updates = run(main())
    assert owner.of("agent.plan")[0]["entries"][0] == {
        "content": "read", "priority": "medium", "status": "pending"}
    assert owner.of("agent.tool")[0] == {"call": "t1", "name": "read", "title": "Read a.py",
                                         "kind": "read", "status": "pending", "input": {}}
    assert owner.of("agent.tool_update")[0] == {"call": "t1", "input": {"path": "a.py"},
                                                "status": "in_progress"}
    results = owner.of("agent.tool_result")
    assert results[0]["ok"] and results[0]["output"] == "42 lines"
    assert results[1]["call"] == "t2" and not results[1]["ok"]
    assert owner.of("agent.thought") == [{"text": "hmm"}]
    assert owner.of("agent.usage") == [{"used": 1200, "size": 200000}]
    modes = owner.of("agent.modes")
    assert modes[0]["current"] == "ask" and modes[-1]["current"] == "code"
    assert [m["id"] for m in modes[0]["available"]] == ["ask", "code"]
    assert owner.of("agent.commands")[0]["commands"][0]["name"] == "review"
    assert updates.modes["current"] == "code"
    configs = owner.of("agent.config")
    assert configs[0]["options"][0]["currentValue"] == "fast"
    assert configs[-1]["options"][0]["currentValue"] == "smart"
    assert [o["value"] for o in configs[-1]["options"][0]["options"]] == ["fast", "smart"]


@pytest.mark.slow
def test_terminal_methods_answer_method_not_found(tmp_path):
    owner = Owner()

    async def main():
        async with running(settings(tmp_path, {"default_turn": [{"terminal": "ls"}]}),
                           owner) as client:
            return await client.prompt("x")

    assert run(main()).text == "terminal: -32601"


@pytest.mark.slow
def test_a_write_behind_the_clients_back_is_no_proposal(tmp_path):
    """The slice does not detect it yet (fingerprints come with the turn owner); what it
    guarantees: nothing reached the proposal callback and the turn ends normally."""
    root = tmp_path / "project"
    root.mkdir()
    owner = Owner()
    script = {"default_turn": [{"write_disk": {"path": str(root / "x.txt"), "content": "Z"}},
                               {"text": "done"}]}

    async def main():
        async with running(settings(tmp_path, script), owner) as client:
            return await client.prompt("x")

    assert run(main()).status == "done"
    assert (root / "x.txt").read_text() == "Z" and owner.writes == []


@pytest.mark.slow
def test_a_question_about_rios_own_tool_is_allowed_once_with_a_note(tmp_path):
    """The agent asks before mcp__rio__propose_edit: Rio answers its "allow once" option
    (by kind: the ids are the agent's) without asking the user — the gate decides on the call
    itself — and says so; another server's tool, or no "allow once" option, is still asked."""
    script = {"default_turn": [
        {"permission": {"id": "c1", "title": "mcp__rio__propose_edit", "kind": "other",
                        "input": {"path": "a.py"},
                        "options": [["yes-please", "allow_once"], ["always", "allow_always"],
                                    ["nope", "reject_once"]]}},
        {"permission": {"id": "c2", "title": "mcp__other__propose_edit",
                        "options": [["y2", "allow_once"], ["n2", "reject_once"]]}},
        {"permission": {"id": "c3", "title": "mcp__rio__propose_edit", "kind": "other",
                        "options": [["a3", "allow_always"], ["n3", "reject_once"]]}}]}
    owner = Owner(permission="reject_once")

    async def main():
        async with running(settings(tmp_path, script), owner) as client:
            return await client.prompt("x"), client.log.text()

    out, log = run(main())
    assert "permission: yes-please" in out.text
    assert "permission: n2" in out.text and "permission: n3" in out.text
    assert [q.call for q in owner.questions] == ["c2", "c3"]   # c1 never reached the user
    notes = owner.of("agent.note")
    assert len(notes) == 1 and notes[0]["note"] == "auto_allowed" and notes[0]["call"] == "c1"
    assert "auto-allowed" in notes[0]["text"] and notes[0]["tool"] == "propose_edit"
    assert "auto-allowed allow_once yes-please" in log


def test_a_crash_is_seen_even_when_a_helper_keeps_the_agents_stdout_open(tmp_path):
    """The agent starts a helper (which inherits its stdout) and crashes: the end of the
    connection never comes, yet the prompt ends at once as agent_exited, quoting stderr
    (it used to wait for the silence watchdog to give up — agent_silent)."""
    script = {"default_turn": [{"helper": "group"}, {"crash": 3}]}
    owner = Owner()

    async def main():
        async with running(settings(tmp_path, script, give_up_after_s=30), owner) as client:
            t0 = asyncio.get_running_loop().time()
            out = await client.prompt("x")
            return out, asyncio.get_running_loop().time() - t0

    out, took = run(main())
    assert out.status == "error" and out.error.kind == "agent.agent_exited", out.error
    assert "exit code 3" in out.error.message and "crashes on purpose" in out.error.message
    assert took < 15
    helper = int(out.text.split("helper ")[1].split()[0])
    assert gone(helper)                      # the stop sequence swept it


#: An agent that fails every prompt the way codex-acp 0.16 answers a model's HTTP 400 (-32603
#: "Internal error", the server's words in data.message, more in data.details) after writing a
#: multi-line error to stderr in one write, as claude-agent-acp does.
FAILING_AGENT = r'''
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    method, result = msg["method"], None
    if method == "initialize":
        result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
    elif method == "session/new":
        result = {"sessionId": "s1"}
    elif method == "session/prompt":
        sys.stderr.write('turn error: {\n  "status": 400,\n  "type": "invalid_request_error"\n}\n')
        sys.stderr.flush()
        error = {"code": -32603, "message": "Internal error", "data": {
            "message": "Invalid value for 'reasoning.effort': 'max' is not supported.",
            "details": {"param": "reasoning.effort", "status": 400}}}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": error}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
'''


def test_a_model_400_ends_the_turn_with_the_agents_words_and_every_stderr_line(tmp_path):
    owner = Owner()
    root = tmp_path / "project"
    root.mkdir()
    s = AcpSettings((sys.executable, "-c", FAILING_AGENT), root, agent_environment(os.environ),
                    name="codex")
    log = ProtocolLog(tmp_path / "conversations" / "3f9a0c12b7de.acp.log")

    async def main():
        client = AcpClient(s, owner, ProcessControlPort(), log)
        try:
            await client.start()
            await client.new_session()
            out = await client.prompt("hello")
            await asyncio.wait_for(until(lambda: any(line.endswith(" stderr }")
                                                     for line in log.lines())), 10)
            return out
        finally:
            await client.close()

    out = run(main())
    err = out.error
    assert out.status == "error" and err.kind == "agent.request_rejected"
    assert "Invalid value for 'reasoning.effort'" in err.message and "HTTP 400" in err.message
    assert "fails the same way" in err.next
    assert err.details["said"].startswith("Invalid value") and err.details["code"] == -32603
    assert '"param": "reasoning.effort"' in err.details["details"]
    published = owner.of("agent.error")
    assert len(published) == 1 and published[0]["kind"] == "agent.request_rejected"
    assert published[0]["details"]["said"] == err.details["said"]
    assert published[0]["details"]["details"] == err.details["details"]
    stderr = [line.split(" stderr ", 1)[1] for line in log.lines() if " stderr " in line]
    assert stderr[:4] == ["turn error: {", '  "status": 400,',
                          '  "type": "invalid_request_error"', "}"]


def test_close_goes_on_when_the_connection_fails_to_close_and_says_so(tmp_path):
    """The SDK's close awaits its reader task, re-raising whatever it died of: the stop goes
    on (the state is "stopped") and the failure is in the protocol log, not swallowed."""
    class DeadConnection:
        async def close(self) -> None:
            raise RuntimeError("reader died: broken pipe")

    log = ProtocolLog()
    client = AcpClient(settings(tmp_path, {}), Owner(), ProcessControlPort(), log)
    client.conn = DeadConnection()
    assert run(client.close()) is None
    assert client.state == "stopped"
    assert any("closing the connection: RuntimeError: reader died" in line
               for line in log.lines())
