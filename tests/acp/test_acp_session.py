"""An ACP agent as the turn owner's second brain, for real: `rio serve`, the core's agent.*
ops, the conversation's session process and the fake ACP agent (tests/fakes/acp_agent.py)
configured as ``[agents.fake]`` in config.toml."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from rio.protocol.errors import BusError, RioError
from rio.protocol.frames import thaw
from tests.agent_processes import FakeAgentChat, chats, fake_agent_entry, serve_fake_agent
from tests.support import RioServer, wait_for, wait_gone

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("acp-session")


@pytest.fixture(scope="module")
def script_file(base: Path) -> Path:
    return base / "script.json"


@pytest.fixture(scope="module")
def server(base: Path, script_file: Path):
    root = base / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    # [agents.quiet]: the same fake, with a short silence watchdog (config.toml's timing keys)
    srv = serve_fake_agent(root, base, script_file, config=fake_agent_entry(script_file, "quiet")
                           + "silent_after_s = 0.5\ngive_up_after_s = 2\n")
    yield srv
    srv.stop()


class Chat(FakeAgentChat):
    """One conversation with the fake agent, seeing its agent.* and buffer.* events."""

    def __init__(self, server: RioServer, script_file: Path, script: dict[str, Any],
                 agent: str = "fake"):
        super().__init__(server, script_file, script, name="acp-e2e", agent=agent, title="acp",
                         prefixes=("agent.", "buffer."))


@pytest.fixture
def chat(server, script_file):
    yield from chats(lambda script, agent="fake": Chat(server, script_file, script, agent))


def _buffer_text(server: RioServer, path: str) -> tuple[str, dict]:
    info = server.call("buffer.open", {"path": path})
    return server.call("buffer.text", {"buffer": info["buffer"]})["text"], info


def _meta(server: RioServer, cid: str) -> dict:
    found = list(Path(server.env["RIO_STATE_DIR"]).rglob(f"conversations/{cid}.json"))
    assert found, "the conversation's meta file"
    return json.loads(found[0].read_text())


def test_agent_new_refuses_an_unknown_agent_name(server, script_file):
    with pytest.raises(RioError) as err:
        server.call("agent.new", {"agent": "no-such-agent"})
    assert err.value.kind == "agent.not_configured"
    assert "[agents.no-such-agent]" in err.value.next


def test_a_streamed_turn_is_recorded_and_the_session_id_kept(chat, server):
    c = chat({"turns": [[{"text": "Hello "}, {"text": "there."}]]})
    turn = c.send("hi")
    ended = c.wait("agent.turn", turn=turn, state="done")
    assert "error" not in ended
    assert c.text(turn) == "Hello there."
    message = c.wait("agent.message", turn=turn)
    assert message["text"] == "Hello there."
    history = c.call("agent.history", {"conversation": c.conversation})
    assert history["agent"] == "fake"
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    assert _meta(server, c.conversation)["acp_session"] == c.wait("agent.session")["session"]
    # the same agent process answers the next turn (the default turn echoes)
    second = c.send("again")
    assert c.wait("agent.turn", turn=second, state="done")
    assert c.text(second) == "echo: again"


def test_a_permission_question_is_answered_by_kind(chat):
    c = chat({"turns": [[{"permission": {"id": "t1", "title": "rm -rf build",
                                         "options": [["yes-1", "allow_once"],
                                                     ["no-1", "reject_once"]]}}]]})
    turn = c.send("clean up")
    asked = c.wait("agent.permission", turn=turn)
    assert [o["kind"] for o in asked["options"]] == ["allow_once", "reject_once"]
    got = c.call("agent.permission_answer", {"conversation": c.conversation, "turn": turn,
                                             "request": asked["request"],
                                             "kind": "reject_once"})
    assert got == {"answered": True}
    assert c.wait("agent.turn", turn=turn, state="done")
    assert "permission: no-1" in c.text(turn)
    closed = c.wait("agent.permission_closed", turn=turn)
    assert closed["kind"] == "reject_once"


def test_a_write_is_a_proposal_approved_into_the_buffer_as_one_undo_step(chat, server):
    root = server.root
    c = chat({"turns": [[{"write": {"path": str(root / "notes.txt"),
                                    "content": "alpha\ngamma\n"}}]]})
    turn = c.send("beta becomes gamma")
    proposal = c.wait("agent.propose", turn=turn)
    assert proposal["kind"] == "edit" and "+gamma" in proposal["diff"]
    assert (root / "notes.txt").read_text() == "alpha\nbeta\n"   # never the disk
    got = c.call("agent.approve", {"turn": turn, "proposal": proposal["proposal"],
                                   "decision": "approve"})
    assert got["applied"] is True
    ended = c.wait("agent.turn", turn=turn, state="done")
    assert "write: ok" in c.text(turn)
    text, info = _buffer_text(server, "notes.txt")
    assert text == "alpha\ngamma\n"
    assert ended["buffers"] == [info["buffer"]]
    assert info["undo_label"].startswith("Agent: beta becomes gamma")
    server.call("buffer.undo", {"buffer": info["buffer"]})
    assert _buffer_text(server, "notes.txt")[0] == "alpha\nbeta\n"
    server.call("buffer.close", {"buffer": info["buffer"], "discard": True})


def test_a_rejected_write_leaves_the_file_and_tells_the_agent(chat, server):
    c = chat({"turns": [[{"write": {"path": "notes.txt", "content": "nope\n"}}]]})
    turn = c.send("overwrite it")
    proposal = c.wait("agent.propose", turn=turn)
    got = c.call("agent.approve", {"turn": turn, "proposal": proposal["proposal"],
                                   "decision": "reject"})
    assert got["applied"] is False
    assert c.wait("agent.turn", turn=turn, state="done")
    assert "write error" in c.text(turn)
    assert _buffer_text(server, "notes.txt")[0] == "alpha\nbeta\n"
    assert (server.root / "notes.txt").read_text() == "alpha\nbeta\n"


def test_stop_cancels_the_prompt(chat):
    c = chat({"turns": [[{"text": "working"}, {"hang": True}]]})
    turn = c.send("go")
    c.wait("agent.delta", turn=turn)
    t0 = time.monotonic()
    c.call("agent.stop", {"conversation": c.conversation})
    assert c.wait("agent.turn", turn=turn, state="stopped", timeout=10)
    assert time.monotonic() - t0 < 6
    history = c.call("agent.history", {"conversation": c.conversation})
    assert history["messages"][-1]["role"] == "assistant"   # the streamed text is kept


def test_sign_in_needed_shows_the_command_to_run(chat):
    c = chat({"auth": "new_session", "auth_methods": [
        {"id": "login", "name": "Log in", "type": "terminal", "args": ["--login"]}]})
    turn = c.send("hello")
    ended = c.wait("agent.turn", turn=turn, state="error")
    assert ended["error"]["kind"] == "agent.sign_in_needed"
    assert "--login" in ended["error"]["next"]
    sign_in = c.wait("agent.sign_in", turn=turn)
    assert sign_in["state"] == "needed" and sign_in["methods"][0]["type"] == "terminal"


def test_a_crash_mid_turn_is_restarted_and_resumed(chat, base):
    state = base / "sessions.json"
    c = chat({"load_session": True, "state": str(state),
              "turns": [[{"text": "halfway"}, {"crash": 3}]]})
    first = c.send("one")
    ended = c.wait("agent.turn", turn=first, state="error")
    assert ended["error"]["kind"] == "agent.agent_exited"
    # resumed and retried once in that turn (the same script crashes again), then it ends
    assert len([d for t, d in c.events if t == "agent.restarted" and d["turn"] == first]) == 1
    session = c.wait("agent.session", turn=first)["session"]
    c.script({"load_session": True, "state": str(state), "default_turn": [{"echo": True}]})
    second = c.send("two")
    restarted = c.wait("agent.restarted", turn=second)
    assert restarted["resumed"] is True and "started it again" in restarted["message"]
    assert c.wait("agent.session", turn=second)["session"] == session
    assert c.wait("agent.turn", turn=second, state="done")
    assert c.text(second) == "echo: two"


def test_a_crash_mid_turn_is_resumed_in_that_turn_and_the_prompt_sent_again(chat, base):
    """An agent that offers session/load and dies during a turn is started again, resumed and
    sent the prompt once more in that same turn: one agent.restarted line, no error."""
    marker = base / "crashed-once"
    c = chat({"load_session": True, "state": str(base / "sessions-retry.json"),
              "turns": [[{"text": "halfway "}, {"crash": 3, "once": str(marker)},
                         {"echo": True}]]})
    turn = c.send("one")
    c.wait("agent.turn", turn=turn, state="done")
    of_turn = [(t, d) for t, d in c.events if d.get("turn") == turn]
    restarted = [d for t, d in of_turn if t == "agent.restarted"]
    assert len(restarted) == 1 and restarted[0]["resumed"] is True
    sessions = [d["session"] for t, d in of_turn if t == "agent.session"]
    assert len(sessions) == 2 and len(set(sessions)) == 1    # new, then the same one loaded
    assert [d for t, d in of_turn if t == "agent.error"] == []
    assert marker.exists() and c.text(turn).endswith("echo: one")


def test_stopping_the_conversations_process_ends_the_agent_and_its_helpers(chat, server):
    c = chat({"turns": [[{"helper": "group"}, {"helper": "setsid"}, {"hang": True}]]})
    turn = c.send("spawn helpers")
    c.wait("agent.delta", turn=turn)
    assert wait_for(lambda: len(re.findall(r"helper (\d+)", c.text(turn))) == 2, 20)
    helpers = [psutil.Process(int(p)) for p in re.findall(r"helper (\d+)", c.text(turn))]
    agent = [p for p in psutil.Process(server.pids()[f"agent:{c.conversation}"]).children()
             if "acp_agent.py" in " ".join(p.cmdline())]
    assert agent, "the fake agent runs under the session process"
    server.call("system.restart", {"process": f"agent:{c.conversation}", "again": False},
                timeout=15)
    assert wait_gone(helpers + agent, 10) == []


def test_files_written_behind_rios_back_are_listed_with_a_diff(chat, server):
    target = server.root / "behind.txt"
    target.write_text("one\n")
    try:
        c = chat({"turns": [[{"write_disk": {"path": str(target), "content": "two\n"}},
                             {"text": "done"}]]})
        turn = c.send("edit it yourself")
        ended = c.wait("agent.turn", turn=turn, state="done")
        listed = c.wait("agent.changed_files", turn=turn)
        assert [f["path"] for f in listed["files"]] == ["behind.txt"]
        assert "-one" in listed["files"][0]["diff"] and "+two" in listed["files"][0]["diff"]
        assert ended["changed_files"][0]["change"] == "modified"
    finally:
        target.unlink(missing_ok=True)


def test_an_open_buffer_of_a_file_written_behind_rios_back_gets_a_conflict(chat, server):
    target = server.root / "open.txt"
    target.write_text("mine\n")
    info = server.call("buffer.open", {"path": "open.txt"})
    try:
        c = chat({"turns": [[{"write_disk": {"path": str(target), "content": "theirs\n"}}]]})
        turn = c.send("edit it yourself")
        c.wait("agent.turn", turn=turn, state="done")
        conflict = c.wait("buffer.conflict", buffer=info["buffer"], timeout=20)
        assert conflict["path"] == "open.txt"
        assert server.call("buffer.text", {"buffer": info["buffer"]})["text"] == "mine\n"
    finally:
        server.call("buffer.close", {"buffer": info["buffer"], "discard": True})
        target.unlink(missing_ok=True)


def test_an_agent_that_is_not_installed_fails_the_turn_with_how_to_install(server, tmp_path):
    config = Path(server.env["RIO_CONFIG_DIR"]) / "config.toml"
    before = config.read_text()
    config.write_text(before + '\n[agents.gone]\ncommand = "/nonexistent/agent-bin"\n')
    conn = server.connect("acp-gone", subscribe=("agent.",))
    events: list[tuple[str, dict]] = []
    conn.subscribe("agent.", lambda e: events.append((e.topic, thaw(e.data))))
    cid = conn.call("agent.new", {"agent": "gone"})["conversation"]
    try:
        turn = conn.call("agent.send", {"conversation": cid, "text": "hi"})["turn"]

        def ended() -> dict | None:
            conn.wait(0.02)
            return next((d for t, d in events if t == "agent.turn" and d.get("turn") == turn
                         and d.get("state") == "error"), None)
        assert wait_for(lambda: ended() is not None, 40)
        assert ended()["error"]["kind"] == "agent.agent_not_found"
    finally:
        config.write_text(before)
        conn.close()
        try:
            server.call("system.restart", {"process": f"agent:{cid}", "again": False})
        except (RioError, BusError):
            pass


# --- rio chat --agent ----------------------------------------------------------------------------

def _chat(server: RioServer, script_file: Path, script: dict, *args: str):
    script_file.write_text(json.dumps(script))
    return server.cli("chat", "--instance", server.name, "--agent", "fake", *args, timeout=90)


def test_rio_chat_agent_approve_yes_answers_permission_and_write_and_saves(server,
                                                                            script_file):
    target = server.root / "chat.txt"
    target.write_text("old\n")
    try:
        done = _chat(server, script_file, {"turns": [[
            {"permission": {"id": "t1", "title": "ls", "options": [["ok-1", "allow_once"],
                                                                    ["no-1", "reject_once"]]}},
            {"write": {"path": "chat.txt", "content": "new\n"}}, {"text": " finished"}]]},
            "--approve", "yes", "--save", "do it")
        assert done.returncode == 0, done.stderr + done.stdout
        assert "permission: ok-1" in done.stdout and "write: ok" in done.stdout
        assert "The agent asks permission: ls" in done.stdout
        assert target.read_text() == "new\n"
    finally:
        target.unlink(missing_ok=True)


def test_rio_chat_agent_approve_no_rejects_and_exits_5(server, script_file):
    done = _chat(server, script_file, {"turns": [[
        {"permission": {"id": "t1", "title": "ls", "options": [["ok-1", "allow_once"],
                                                                ["no-1", "reject_once"]]}}]]},
        "--approve", "no", "look")
    assert done.returncode == 5, done.stderr + done.stdout
    assert "permission: no-1" in done.stdout


def test_rio_chat_agent_a_dangerous_command_still_needs_a_person(server, script_file):
    done = _chat(server, script_file, {"turns": [[
        {"permission": {"id": "t1", "title": "rm -rf /", "kind": "execute",
                        "input": {"command": "rm -rf /"},
                        "options": [["ok-1", "allow_once"], ["no-1", "reject_once"]]}}]]},
        "--approve", "yes", "clean")
    assert done.returncode == 5, done.stderr + done.stdout
    assert "permission: no-1" in done.stdout and "needs a person" in done.stdout


def test_rio_chat_agent_sign_in_needed_shows_the_command_and_exits_1(server, script_file):
    done = _chat(server, script_file, {"auth": "new_session", "auth_methods": [
        {"id": "login", "name": "Log in", "type": "terminal", "args": ["--login"]}]}, "hello")
    assert done.returncode == 1, done.stderr + done.stdout
    assert "needs you to sign in" in done.stdout + done.stderr
    assert "--login" in done.stdout


def test_rio_agents_log_prints_the_protocol_log(chat, server):
    c = chat({"turns": [[{"text": "logged"}]]})
    turn = c.send("hi")
    c.wait("agent.turn", turn=turn, state="done")
    done = server.cli("agents", "log", c.conversation, "--root", str(server.root))
    assert done.returncode == 0, done.stderr
    assert "session/prompt" in done.stdout and "logged" in done.stdout


def test_a_new_message_while_a_permission_question_waits_interrupts_the_turn(chat):
    c = chat({"turns": [[{"permission": {"id": "t1", "title": "ls",
                                         "options": [["ok-1", "allow_once"]]}}]],
              "default_turn": [{"echo": True}]})
    first = c.send("one")
    c.wait("agent.permission", turn=first)
    second = c.send("two")          # the session owns the question: an interrupt at once
    stopped = c.wait("agent.turn", turn=first, state="stopped")
    assert stopped["error"]["kind"] == "agent.interrupted"
    assert c.wait("agent.turn", turn=second, state="done")
    assert c.text(second) == "echo: two"
    assert c.wait("agent.permission_closed", turn=first)["how"] == "declined"


def test_a_silent_agent_is_surfaced_and_the_turn_does_not_wait_forever(chat):
    c = chat({"turns": [[{"text": "thinking"}, {"silent": 60}]]}, agent="quiet")
    turn = c.send("go")
    silent = c.wait("agent.silent", turn=turn)
    assert silent["seconds"] >= 0.5 and silent["give_up_after_s"] == 2
    ended = c.wait("agent.turn", turn=turn, state="error", timeout=30)
    assert ended["error"]["kind"] == "agent.agent_silent"
    assert "protocol log" in ended["error"]["next"]


def test_rio_chat_agent_ctrl_c_stops_the_turn_and_ends_the_agent_and_its_helpers(
        server, script_file):
    import os
    import select
    import signal
    import subprocess
    script_file.write_text(json.dumps({"turns": [[{"helper": "group"}, {"helper": "setsid"},
                                                   {"hang": "forever"}]]}))
    proc = subprocess.Popen([sys.executable, "-m", "rio.cli", "chat", "--instance",
                             server.name, "--agent", "fake", "spawn and wait"],
                            env=server.env, cwd=str(server.root), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        out = b""
        deadline = time.monotonic() + 60
        while len(re.findall(rb"helper (\d+)", out)) < 2 and time.monotonic() < deadline:
            if select.select([proc.stdout], [], [], 0.5)[0]:
                out += os.read(proc.stdout.fileno(), 4096)
        pids = [int(p) for p in re.findall(rb"helper (\d+)", out)]
        assert len(pids) == 2, out
        helpers = [psutil.Process(p) for p in pids]
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
        assert proc.returncode == 4, (out + rest, err)
        assert b"Stopping the turn" in err
        assert wait_gone(helpers, 15) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_stop_is_answered_at_once_while_the_agent_ignores_the_cancel(chat):
    """agent.stop goes straight to the session process (the hub routes it there), which
    answers once it has cancelled the turn — not after the agent's stop sequence, which an
    agent that ignores session/cancel makes last seconds (rio chat waits 5 s for the reply)."""
    c = chat({"turns": [[{"text": "working"}, {"hang": "forever"}]]})
    turn = c.send("go")
    c.wait("agent.delta", turn=turn)
    t0 = time.monotonic()
    assert c.call("agent.stop", {"conversation": c.conversation}) == {"stopped": True,
                                                                      "turn": turn}
    answered = time.monotonic() - t0
    assert c.wait("agent.turn", turn=turn, state="stopped", timeout=30)
    ended = time.monotonic() - t0
    assert answered < 1.0 and answered < ended, (answered, ended)
