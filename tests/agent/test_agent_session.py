"""The agent session process for real: `rio serve`, the loopback fake Anthropic server, and
``session.send`` driven directly (the core only records the turn); plus a few turns end to end
through agent.send."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from rio.protocol.errors import BusError, RioError
from rio.protocol.frames import thaw
from tests.agent_events import AgentEvents
from tests.fakes.model_servers import (
    FakeModelServer,
    Reply,
    anthropic_error,
    anthropic_stream_error,
    anthropic_text,
    anthropic_tool_use,
    huge_sse,
    openai_text,
    openai_tool_call,
    sse,
)
from tests.support import RioServer, rio_env, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def model():
    with FakeModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory, model):
    base = tmp_path_factory.mktemp("agent")
    root = base / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (root / "src").mkdir()
    (root / "src" / "m.py").write_text("x = 1\ny = 2\n")
    env = rio_env(base)
    env.update({"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "test-key"})
    srv = RioServer(root, base, env=env).start()
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def fresh_script(model):
    with model.state.lock:
        model.state.script.clear()
    yield


class TurnBox(dict):
    """A turn sent with session.send: ``join`` pumps the connection until its ``agent.turn``
    end arrives, then ``["result"]`` holds {status, error, messages, buffers} as the store
    recorded them (the turn's messages from agent.history)."""

    def __init__(self, session: "Session", turn: str, text: str):
        super().__init__()
        self.session, self.turn, self.text = session, turn, text

    def join(self, timeout: float = 60.0) -> None:
        ended = self.session.wait("agent.turn", timeout=timeout, turn=self.turn,
                                  state=lambda s: s != "started")
        self["done"] = time.monotonic()
        error = dict(ended["error"]) if ended.get("error") else None
        if error is not None:
            said = [d for d in self.session.of("agent.error") if d.get("turn") == self.turn]
            error["partial"] = bool(said and said[-1].get("partial"))
        self["result"] = {"status": ended["state"], "error": error,
                          "buffers": list(ended.get("buffers") or ()),
                          "messages": self.session.turn_messages(self.text)}


class Session(AgentEvents):
    """One conversation's session process, driven with session.* from the test (the core
    only records: conversation.begin_turn / end_turn)."""

    def __init__(self, server: RioServer, **new: Any):
        super().__init__(server, "agent-test")
        self.conversation = self.conn.call("agent.new", {"title": "session", **new})[
            "conversation"]
        server.call("system.spawn", {"kind": "agent", "key": self.conversation})
        assert wait_for(self._up, 20), "the session process did not register"

    def _up(self) -> bool:
        try:
            self.server.call("session.status", {"conversation": self.conversation}, timeout=2)
            return True
        except BusError:
            return False

    def call(self, op: str, args: dict | None = None, timeout: float = 15.0) -> Any:
        """``op`` with the conversation filled in."""
        return self.conn.call(op, {"conversation": self.conversation, **(args or {})},
                              timeout=timeout)

    def start_turn(self, text: str) -> tuple[str, TurnBox]:
        """session.send straight to the session process; returns (turn id, its box)."""
        turn = self.call("session.send", {"text": text}, timeout=30)["turn"]
        return turn, TurnBox(self, turn, text)

    def turn(self, text: str) -> dict:
        _, box = self.start_turn(text)
        box.join(90)
        return box["result"]

    def turn_messages(self, text: str) -> list[dict]:
        """The messages recorded after the user's ``text`` (the turn's own)."""
        history = self.call("agent.history")["messages"]
        for index in range(len(history) - 1, -1, -1):
            m = history[index]
            if m["role"] == "user" and any(b.get("text") == text for b in m["content"]
                                           if isinstance(b, dict)):
                return history[index + 1:]
        return []

    def pump(self) -> None:
        self.conn.wait(0.02)

    def wait(self, topic: str, timeout: float = 20.0, **match: Any) -> dict:
        return super().wait(topic, timeout, **match)


@pytest.fixture
def session(server):
    s = Session(server)
    yield s
    s.close()
    # The supervisor's stop sequence, and the process stays stopped (host.stop alone ends it
    # with SIGABRT, which the supervisor restarts): live agents are capped by max_live.
    s.end_session(s.conversation)


def test_text_turn(session: Session, model: FakeModelServer) -> None:
    model.push(anthropic_text("Hello", ", ", "world"))
    result = session.turn("hi")
    assert result["status"] == "done"
    assert result["messages"] == [{"role": "assistant",
                                   "content": [{"type": "text", "text": "Hello, world"}]}]
    session.wait("agent.delta")
    assert "".join(d["text"] for d in session.of("agent.delta")) == "Hello, world"
    sent = model.requests[-1]
    assert sent.headers["x-api-key"] == "test-key"
    body = sent.json
    assert "inside Rio" in body["system"] and str(session.server.root) in body["system"]
    assert {t["name"] for t in body["tools"]} >= {"fs_read", "propose_edit", "run_command"}


def test_tool_loop_reads_a_file_through_the_core(session: Session,
                                                 model: FakeModelServer) -> None:
    model.push(anthropic_tool_use("toolu_1", "fs_read", {"path": "notes.txt"}),
               anthropic_text("It has two lines."))
    result = session.turn("what is in notes?")
    assert result["status"] == "done"
    tool_result = model.requests[-1].json["messages"][-1]["content"][0]
    assert tool_result["tool_use_id"] == "toolu_1" and "alpha\nbeta" in tool_result["content"]
    assert session.wait("agent.tool_result", call="toolu_1")["ok"] is True
    assert [m["role"] for m in result["messages"]] == ["assistant", "user", "assistant"]


def _buffer_text(server: RioServer, path: str) -> tuple[str, dict]:
    info = server.call("buffer.open", {"path": path})
    return server.call("buffer.text", {"buffer": info["buffer"]})["text"], info


def test_propose_then_approve_edits_a_buffer_and_reports_it(session: Session,
                                                            model: FakeModelServer) -> None:
    model.push(anthropic_tool_use("toolu_e", "propose_edit", {
        "path": "src/m.py", "old_text": "y = 2", "new_text": "y = 3"}),
        anthropic_text("Changed."))
    turn, box = session.start_turn("make y 3")
    proposal = session.wait("agent.propose", turn=turn)
    assert proposal["kind"] == "edit" and "+y = 3" in proposal["diff"]
    reply = session.conn.call("agent.approve", {"turn": turn, "proposal": proposal["proposal"],
                                             "decision": "approve"})
    assert reply == {"applied": True}
    box.join(30)
    result = box["result"]
    assert result["status"] == "done"
    text, info = _buffer_text(session.server, "src/m.py")
    assert text == "x = 1\ny = 3\n" and info["dirty"]
    assert (session.server.root / "src" / "m.py").read_text() == "x = 1\ny = 2\n"
    assert result["buffers"] == [info["buffer"]]
    session.server.call("buffer.close", {"buffer": info["buffer"], "discard": True})


def test_propose_then_reject(session: Session, model: FakeModelServer) -> None:
    model.push(anthropic_tool_use("toolu_r", "propose_create", {"path": "new.txt",
                                                                "text": "hi\n"}),
               anthropic_text("OK, not creating it."))
    turn, box = session.start_turn("create new.txt")
    proposal = session.wait("agent.propose", turn=turn)
    assert proposal["kind"] == "create"
    reply = session.conn.call("agent.approve", {"turn": turn, "proposal": proposal["proposal"],
                                             "decision": "reject"})
    assert reply["applied"] is False
    box.join(30)
    assert box["result"]["status"] == "done"
    assert not (session.server.root / "new.txt").exists()
    answer = model.requests[-1].json["messages"][-1]["content"][0]
    assert answer["is_error"] and "rejected" in answer["content"]


def test_stop_mid_stream_ends_the_turn_quickly(session: Session,
                                               model: FakeModelServer) -> None:
    model.push(anthropic_text("partial answer").slow(hold_open=True))
    turn, box = session.start_turn("talk slowly")
    session.wait("agent.delta", turn=turn)
    asked = time.monotonic()
    assert session.call("agent.stop") == {"stopped": True, "turn": turn}
    box.join(10)
    result = box["result"]
    assert result["status"] == "stopped" and result["error"]["kind"] == "agent.stopped"
    assert result["messages"][0]["content"][0]["text"].startswith("partial")
    assert box["done"] >= asked
    assert wait_for(model.disconnected.is_set, 5)  # the HTTP stream was closed


@pytest.mark.parametrize("reply, kind", [
    (anthropic_error(401, "authentication_error", "invalid x-api-key"), "agent.auth_rejected"),
    (anthropic_error(403, "permission_error", "no access"), "agent.auth_rejected"),
    (anthropic_error(429, "rate_limit_error", headers={"retry-after": "600"}),
     "agent.rate_limited"),
])
def test_http_failures_are_classified(session: Session, model: FakeModelServer, reply: Reply,
                                      kind: str) -> None:
    model.push(reply)
    result = session.turn("hi")
    assert result["status"] == "error" and result["error"]["kind"] == kind
    assert result["error"]["next"]
    assert session.wait("agent.error")["kind"] == kind


def test_server_errors_are_retried_then_classified(session: Session,
                                                   model: FakeModelServer) -> None:
    model.push(anthropic_error(500, "api_error"), anthropic_text("recovered"))
    assert session.turn("hi")["messages"][0]["content"][0]["text"] == "recovered"
    model.push(*[anthropic_error(529, "overloaded_error")] * 3)
    result = session.turn("again")
    assert result["error"]["kind"] == "agent.server_error"


def test_connection_cut_mid_stream_keeps_the_partial_text(session: Session,
                                                          model: FakeModelServer) -> None:
    model.push(anthropic_text("one ", "two ", "three").cut(4))
    result = session.turn("hi")
    assert result["status"] == "error" and result["error"]["partial"] is True
    assert result["messages"][0]["content"][0]["text"].startswith("one")


def test_malformed_sse_is_an_unexpected_response(session: Session,
                                                 model: FakeModelServer) -> None:
    model.push(Reply(chunks=(sse("message_start", "{not json"),)))
    result = session.turn("hi")
    assert result["status"] == "error"
    assert result["error"]["kind"] == "agent.unexpected_response"


def test_mid_stream_error_event(session: Session, model: FakeModelServer) -> None:
    model.push(anthropic_stream_error("overloaded_error", "par", "tial"))
    result = session.turn("hi")
    assert result["status"] == "error" and result["error"]["kind"] == "agent.server_error"


def test_huge_response_is_cut_off_with_a_classified_error(session: Session,
                                                          model: FakeModelServer) -> None:
    model.push(huge_sse(40 * 1024 * 1024))
    result = session.turn("hi")
    assert result["status"] == "error"
    assert result["error"]["kind"] == "agent.unexpected_response"


def test_a_second_message_while_a_turn_streams_is_busy(session: Session,
                                                       model: FakeModelServer) -> None:
    model.push(anthropic_text("slow").slow(hold_open=True))
    turn, box = session.start_turn("first")
    session.wait("agent.delta", turn=turn)
    with pytest.raises(RioError) as err:
        session.call("session.send", {"text": "second"})
    assert err.value.kind == "agent.busy"
    session.call("agent.stop")
    box.join(10)


def test_kill_9_mid_stream_then_the_next_turn_works(session: Session,
                                                    model: FakeModelServer) -> None:
    model.push(anthropic_text("before the crash").slow(hold_open=True))
    turn, box = session.start_turn("hi")
    session.wait("agent.delta", turn=turn)
    pid = session.server.pids()[f"agent:{session.conversation}"]
    os.kill(pid, signal.SIGKILL)
    box.join(30)
    assert box["result"]["status"] == "error"
    assert box["result"]["error"]["kind"] == "agent.session_died"
    assert box["result"]["messages"][0]["content"][0]["text"].startswith("before the crash")
    model.push(anthropic_text("back again"))
    assert wait_for(lambda: session.server.pids().get(f"agent:{session.conversation}")
                    not in (None, pid), 20)
    assert wait_for(session._up, 20)
    result = session.turn("hello again")
    assert result["status"] == "done"
    assert result["messages"][0]["content"][0]["text"] == "back again"


def test_session_refuses_another_conversations_requests(session: Session) -> None:
    with pytest.raises(RioError):
        session.server.call("session.status", {"conversation": "someone-else"}, timeout=3)


# --- end to end through the core's agent.* ops ------------------------------------------------

class Chat(AgentEvents):
    def __init__(self, server: RioServer):
        super().__init__(server, "agent-e2e")
        self.conversation = self.call("agent.new", {"title": "e2e"})["conversation"]
        # Start the session process up front: on a loaded machine its start-up can take
        # longer than the core's wait for a fresh session, and that is not what these test.
        server.call("system.spawn", {"kind": "agent", "key": self.conversation})

        def up() -> bool:
            try:
                server.call("session.status", {"conversation": self.conversation}, timeout=2)
                return True
            except BusError:
                return False
        assert wait_for(up, 30), "the session process did not register"

    def wait(self, topic: str, timeout: float = 30.0, **match: Any) -> dict:
        return super().wait(topic, timeout, **match)

    def send(self, text: str) -> str:
        return self.call("agent.send", {"conversation": self.conversation, "text": text})["turn"]


@pytest.fixture
def chat(server):
    c = Chat(server)
    yield c
    c.close()
    # End the conversation's process: the supervisor caps live agent processes (max_live),
    # and this module's instance serves every test.
    c.end_session(c.conversation)


def test_e2e_edit_approved_is_one_undo_step_and_history_is_recorded(
        chat: Chat, model: FakeModelServer) -> None:
    model.push(anthropic_tool_use("toolu_x", "propose_edit", {
        "path": "notes.txt", "old_text": "beta", "new_text": "gamma"}),
        anthropic_text("Replaced beta."))
    turn = chat.send("replace beta with gamma")
    proposal = chat.wait("agent.propose", turn=turn)
    reply = chat.call("agent.approve", {"turn": turn, "proposal": proposal["proposal"],
                                        "decision": "approve"})
    assert reply["applied"] is True
    assert chat.wait("agent.turn", turn=turn, state="done")
    text, info = _buffer_text(chat.server, "notes.txt")
    assert text == "alpha\ngamma\n"
    assert info["undo_label"].startswith("Agent: replace beta")
    history = chat.call("agent.history", {"conversation": chat.conversation})
    assert [m["role"] for m in history["messages"]] == ["user", "assistant", "user", "assistant"]
    chat.server.call("buffer.undo", {"buffer": info["buffer"]})
    assert _buffer_text(chat.server, "notes.txt")[0] == "alpha\nbeta\n"
    chat.server.call("buffer.close", {"buffer": info["buffer"], "discard": True})


def test_e2e_kill_9_mid_stream_keeps_the_conversation(chat: Chat, model: FakeModelServer,
                                                      server: RioServer) -> None:
    model.push(anthropic_text("streaming when killed").slow(hold_open=True))
    turn = chat.send("first")
    chat.wait("agent.delta", turn=turn)
    name = f"agent:{chat.conversation}"
    os.kill(server.pids()[name], signal.SIGKILL)
    ended = chat.wait("agent.turn", turn=turn, state="error")
    assert ended["error"]["kind"].startswith("agent.")
    model.push(anthropic_text("I am back"))
    second = chat.send("second")
    assert chat.wait("agent.turn", turn=second, state="done", timeout=40)
    history = chat.call("agent.history", {"conversation": chat.conversation})
    texts = [m["content"][0].get("text") for m in history["messages"] if m["content"]]
    assert "first" in texts and "second" in texts and "I am back" in texts


def test_e2e_a_message_sent_on_the_last_turns_end_is_never_busy(chat: Chat,
                                                                 model: FakeModelServer) -> None:
    """The store publishes a turn's end (``agent.turn``) before the session hears back from
    it, so a client that sends its next message on that event — `rio chat` fed a file, a
    script, a fast user — once met ``agent.busy`` (seen in the sandbox test). A turn that has
    run only has its record left: the next message waits behind it instead."""
    count = 24
    for i in range(count):
        model.push(anthropic_text(f"answer {i}"))
    turn = chat.send("message 0")
    for i in range(1, count):
        chat.wait("agent.turn", turn=turn, state="done")
        turn = chat.send(f"message {i}")     # at once, on the event
    assert chat.wait("agent.turn", turn=turn, state="done")
    assert len([d for d in chat.of("agent.turn") if d.get("state") == "done"]) >= count


def test_e2e_stop_button(chat: Chat, model: FakeModelServer) -> None:
    model.push(anthropic_text("never ending").slow(hold_open=True))
    turn = chat.send("go")
    chat.wait("agent.delta", turn=turn)
    chat.call("agent.stop", {"conversation": chat.conversation})
    assert chat.wait("agent.turn", turn=turn, state="stopped", timeout=5)


def test_e2e_new_message_while_a_proposal_waits_interrupts_it(chat: Chat,
                                                              model: FakeModelServer) -> None:
    model.push(anthropic_tool_use("toolu_i", "propose_edit", {
        "path": "notes.txt", "old_text": "alpha", "new_text": "omega"}),
        anthropic_text("Fine, something else then."))
    first = chat.send("edit it")
    chat.wait("agent.propose", turn=first)
    # The session owns the waiting proposal and the core asks it: no race with the event.
    second = chat.send("actually, don't")
    assert chat.wait("agent.turn", turn=first, state="stopped")
    assert chat.wait("agent.turn", turn=second, state="done")
    sent = model.requests[-1].json["messages"]
    results = [b for m in sent for b in m["content"] if isinstance(b, dict)
               and b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["toolu_i"]
    assert sent[-1]["role"] == "user" and "actually, don't" in str(sent[-1]["content"])
    assert (chat.server.root / "notes.txt").read_text() == "alpha\nbeta\n"


def test_run_command_approved_runs_in_the_project_and_returns_output(
        session: Session, model: FakeModelServer) -> None:
    model.push(anthropic_tool_use("toolu_c", "run_command", {"command": "echo hi-from-$PWD; "
                                                                        "exit 3"}),
               anthropic_text("It printed."))
    turn, box = session.start_turn("run it")
    proposal = session.wait("agent.propose", turn=turn)
    assert proposal["kind"] == "command" and proposal["cwd"] == "."
    reply = session.conn.call("agent.approve", {"turn": turn, "proposal": proposal["proposal"],
                                             "decision": "approve"}, timeout=60)
    assert reply["applied"] is False and "exit code 3" in reply["reason"]
    box.join(60)
    answer = model.requests[-1].json["messages"][-1]["content"][0]
    assert f"hi-from-{session.server.root}" in answer["content"]
    assert answer["content"].startswith("exit code 3")


def test_dangerous_command_asks_even_in_allow_all(session: Session,
                                                  model: FakeModelServer) -> None:
    session.server.call("gate.mode", {"mode": "allow_all"})
    try:
        model.push(anthropic_tool_use("toolu_d", "run_command", {"command": "rm -rf build"}),
                   anthropic_text("ok"))
        turn, box = session.start_turn("clean")
        proposal = session.wait("agent.propose", turn=turn)
        assert proposal["danger"]["rule"] == "rm_rf"
        session.conn.call("agent.approve", {"turn": turn, "proposal": proposal["proposal"],
                                         "decision": "reject"})
        box.join(30)
        assert box["result"]["status"] == "done"
    finally:
        session.server.call("gate.mode", {"mode": "review"})


def test_auto_buffer_mode_applies_edits_without_asking(session: Session,
                                                       model: FakeModelServer) -> None:
    session.server.call("gate.mode", {"mode": "auto_buffer"})
    try:
        model.push(anthropic_tool_use("toolu_a", "propose_edit", {
            "path": "src/m.py", "old_text": "x = 1", "new_text": "x = 100"}),
            anthropic_text("Done."))
        result = session.turn("make x 100")
        assert result["status"] == "done" and result["buffers"]
        assert not [d for d in session.of("agent.propose")]
        text, info = _buffer_text(session.server, "src/m.py")
        assert text.startswith("x = 100\n")
        session.server.call("buffer.close", {"buffer": info["buffer"], "discard": True})
    finally:
        session.server.call("gate.mode", {"mode": "review"})


def test_gate_refuses_requests_outside_a_turn(server: RioServer) -> None:
    verdict = server.call("gate.check", {"conversation": "nobody", "turn": "t", "provider": "x",
                                         "tool": "fs_read", "args": {"path": "a"}})
    assert verdict["decision"] == "refuse"
    with pytest.raises(RioError) as err:
        server.call("gate.turn", {"conversation": "nobody", "turn": "t",
                                  "event": "model_request"})
    assert err.value.kind == "agent.outside_turn"
    status = server.call("gate.status")
    assert status["limits"]["max_requests"] == 24


def test_stop_right_after_send_stops_the_turn(session: Session, model: FakeModelServer) -> None:
    # Sent back to back on one connection, the Stop reaches the session right behind the
    # message: the turn it has just taken (still being set up) is the one stopped.
    model.push(anthropic_text("slow").slow(hold_open=True))
    conn = session.conn
    replies: dict[str, Any] = {}
    conn.request("session.send", {"conversation": session.conversation, "text": "hi"},
                 lambda r: replies.update(send=r), timeout=30)
    conn.request("agent.stop", {"conversation": session.conversation},
                 lambda r: replies.update(stop=r), timeout=30)
    deadline = time.monotonic() + 20
    while len(replies) < 2 and time.monotonic() < deadline:
        session.pump()
    assert thaw(replies["stop"].result)["stopped"] is True, replies
    turn = thaw(replies["send"].result)["turn"]
    box = TurnBox(session, turn, "hi")
    box.join(20)
    assert box["result"]["status"] == "stopped"


def test_openai_compatible_provider_with_the_conversations_endpoint(
        server: RioServer, model: FakeModelServer) -> None:
    model.push(openai_tool_call("call_1", "buffer_list", {}), openai_text("No buffers ", "open."))
    session = Session(server, provider="openai", endpoint=model.url + "/v1",
                      model="local-model")
    try:
        result = session.turn("which buffers?")
    finally:
        session.close()
        server.call("system.restart", {"process": f"agent:{session.conversation}",
                                       "again": False}, timeout=5)
    assert result["status"] == "done", result
    assert result["messages"][-1]["content"][0]["text"] == "No buffers open."
    sent = model.requests[-1]
    assert sent.path == "/v1/chat/completions" and sent.json["model"] == "local-model"
    assert "authorization" not in sent.headers  # no OpenAI key set: none is sent


def test_liveness_ping_is_answered_by_the_loop(session: Session) -> None:
    name = f"agent:{session.conversation}"
    reply = session.server.call("host.ping", {"process": name})
    assert reply["process"] == name and reply["pid"] == session.server.pids()[name]


def test_stopping_the_process_ends_a_running_turn_with_an_answer(
        session: Session, model: FakeModelServer) -> None:
    model.push(anthropic_text("slow").slow(hold_open=True))
    turn, box = session.start_turn("hi")
    session.wait("agent.delta", turn=turn)
    session.server.call("host.stop", {"process": f"agent:{session.conversation}"})
    box.join(20)
    assert "result" in box, box.get("error")
    assert box["result"]["status"] == "stopped"
