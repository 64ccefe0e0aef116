"""agent.* end to end: the core's conversation store with REAL session processes and a loopback
Anthropic server — a session killed or stopped mid-stream, a new message that interrupts a
waiting proposal, an idle session process stopped and started again (issue 9).

The store with fake sessions is tests/agent/test_conversations_actor.py; the actor alone, on a
fake bus, tests/agent/test_conversations_in_process.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.test_conversations_actor import Client, new_conversation
from tests.fakes.model_servers import fresh_model, serve_model
from tests.support import RioServer, relax_hang_detection

pytestmark = pytest.mark.timeout(90)


# --- end to end: the real session process and the loopback Anthropic server ---------------------

@pytest.fixture(scope="module")
def model_server():
    yield from serve_model()


@pytest.fixture
def model(model_server):
    return fresh_model(model_server)


@pytest.fixture(scope="module")
def real(tmp_path_factory, model_server):
    from tests.support import rio_env
    base = tmp_path_factory.mktemp("conv-e2e")
    root = base / "proj"
    root.mkdir()
    env = rio_env(base)
    env.update({"ANTHROPIC_BASE_URL": model_server.url, "ANTHROPIC_API_KEY": "test-key"})
    relax_hang_detection(env)
    srv = RioServer(root, base, env=env).start()
    yield srv
    srv.stop()


@pytest.fixture
def real_client(real):
    c = Client(real)
    yield c
    c.close()


def session_pid(server: RioServer, cid: str) -> int | None:
    for p in server.call("system.status")["processes"]:
        if p["name"] == f"agent:{cid}" and p.get("pid") and p.get("state") == "running":
            server.known_pids.add(p["pid"])
            return p["pid"]
    return None


@pytest.mark.slow
def test_e2e_kill_9_of_the_session_mid_stream(real, real_client, model):
    import os
    import signal

    from tests.fakes.model_servers import anthropic_text
    client = real_client
    cid = new_conversation(client)
    # First reply: a few words, then the stream stays open (a slow model).
    model.push(anthropic_text("Thinking", " about", " it").slow(hold_open=True))
    turn = client.call("agent.send", {"conversation": cid, "text": "first"})["turn"]
    client.wait("agent.delta", turn=turn, timeout=30)
    pid = session_pid(real, cid)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)

    err = client.wait("agent.error", turn=turn, kind="agent.session_died", timeout=20)
    assert "send your message again" in err["message"]
    client.wait("agent.turn", turn=turn, state="error")
    history = client.call("agent.history", {"conversation": cid})
    assert history["turns"][0]["status"] == "error"
    assert history["messages"][0]["content"][0]["text"] == "first"

    model.push(anthropic_text("Back again."))
    turn2 = client.call("agent.send", {"conversation": cid, "text": "second"})["turn"]
    client.wait("agent.turn", turn=turn2, state="done", timeout=30)
    assert client.wait("agent.message", turn=turn2)["text"] == "Back again."
    assert session_pid(real, cid) not in (None, pid)
    sent = model.requests[-1].json["messages"]
    assert [m["role"] for m in sent][-1] == "user" and "second" in str(sent[-1])
    # What streamed before the kill is in the history, marked: not two user messages in a row.
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert "Thinking about it" in str(sent[1]) and "interrupted" in str(sent[1])


def test_e2e_stop_mid_stream_ends_the_turn_quickly(real, real_client, model):
    from tests.fakes.model_servers import anthropic_text
    client = real_client
    cid = new_conversation(client)
    model.push(anthropic_text("Slow", " words").slow(hold_open=True))
    turn = client.call("agent.send", {"conversation": cid, "text": "go slowly"})["turn"]
    client.wait("agent.delta", turn=turn, timeout=30)
    client.call("agent.stop", {"conversation": cid})
    client.wait("agent.turn", turn=turn, state="stopped", timeout=5)
    history = client.call("agent.history", {"conversation": cid})
    assert history["turns"][0]["status"] == "stopped"


@pytest.mark.slow
def test_e2e_a_new_message_interrupts_a_waiting_proposal(real, real_client, model):
    from tests.fakes.model_servers import anthropic_text, anthropic_tool_use
    client = real_client
    (real.root / "todo.txt").write_text("one\ntwo\n")
    cid = new_conversation(client)
    model.push(anthropic_tool_use("toolu_w", "propose_edit", {
        "path": "todo.txt", "old_text": "two", "new_text": "three"}))
    turn = client.call("agent.send", {"conversation": cid, "text": "edit todo"})["turn"]
    client.wait("agent.propose", turn=turn, timeout=30)
    model.push(anthropic_text("Fine, no edit."))
    turn2 = client.call("agent.send", {"conversation": cid, "text": "forget it"})["turn"]
    assert client.wait("agent.turn", turn=turn, state="stopped")["error"]["kind"] == \
        "agent.interrupted"
    client.wait("agent.turn", turn=turn2, state="done", timeout=30)
    sent = model.requests[-1].json["messages"]
    results = [b for m in sent for b in m["content"] if isinstance(m["content"], list)
               and b.get("type") == "tool_result" and b.get("tool_use_id") == "toolu_w"]
    assert len(results) == 1, sent
    assert "interrupt" in results[0]["content"].lower()
    assert sent[-1]["role"] == "user" and "forget it" in str(sent[-1])
    assert (real.root / "todo.txt").read_text() == "one\ntwo\n"


# --- idle session processes are stopped, and come back on the next message (issue 9) ----------

@pytest.fixture
def idle_server(tmp_path, model_server):
    from tests.support import rio_env
    root = tmp_path / "proj"
    root.mkdir()
    env = rio_env(tmp_path)
    env.update({"ANTHROPIC_BASE_URL": model_server.url, "ANTHROPIC_API_KEY": "test-key"})
    relax_hang_detection(env)
    (Path(env["RIO_CONFIG_DIR"]) / "config.toml").write_text("[agent]\nidle_stop_s = 1\n")
    srv = RioServer(root, tmp_path, env=env).start()
    yield srv
    srv.stop()


def agent_state(server: RioServer, cid: str) -> tuple[str | None, int | None]:
    for p in server.call("system.status")["processes"]:
        if p["name"] == f"agent:{cid}":
            if p.get("pid"):
                server.known_pids.add(p["pid"])
            return p["state"], p.get("pid")
    return None, None


@pytest.mark.slow
def test_e2e_an_idle_session_process_is_stopped_and_started_again(idle_server, model):
    import psutil

    from rio.cli.main import render_status
    from tests.fakes.model_servers import anthropic_text
    from tests.support import wait_for
    client = Client(idle_server)
    try:
        cid = new_conversation(client)
        model.push(anthropic_text("One."))
        turn = client.call("agent.send", {"conversation": cid, "text": "first"})["turn"]
        client.wait("agent.turn", turn=turn, state="done", timeout=30)
        state, pid = agent_state(idle_server, cid)
        assert state == "running" and pid
        # No turn for idle_stop_s: the process goes, and `rio status` says why.
        assert wait_for(lambda: agent_state(idle_server, cid)[0] == "idle-stopped", 20)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
        shown = "\n".join(render_status(idle_server.call("system.status")))
        assert f"agent:{cid}" in shown and "idle-stopped" in shown
        # The next message starts it again; the conversation goes on.
        model.push(anthropic_text("Two."))
        turn2 = client.call("agent.send", {"conversation": cid, "text": "second"})["turn"]
        client.wait("agent.turn", turn=turn2, state="done", timeout=30)
        assert client.wait("agent.message", turn=turn2)["text"] == "Two."
        state, pid2 = agent_state(idle_server, cid)
        assert pid2 not in (None, pid) and state in ("running", "idle-stopped")
        sent = model.requests[-1].json["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    finally:
        client.close()
