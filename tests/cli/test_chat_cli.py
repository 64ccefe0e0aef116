"""`rio chat` as a user or a script runs it, against a real instance.

The session side is played by tests/fakes/fake_session.py (a turn's deltas, tool activity and a
proposal, scripted), so these tests are about the terminal client: what it prints, what it
answers, and how it exits. The end-to-end run with the real session and the loopback Anthropic
server is at the bottom.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from actors.bus.service import RequestContext
from tests.fakes.fake_session import FakeSession, assistant
from tests.fakes.model_servers import fresh_model, serve_model
from tests.support import RioServer, relax_hang_detection, rio_env, wait_for

pytestmark = pytest.mark.timeout(120)

DIFF = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+gamma\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("chat")
    root = base / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    srv = RioServer(root, base).start()
    yield srv
    srv.stop()


@pytest.fixture
def fakes():
    made: list[FakeSession] = []
    yield made
    for f in made:
        f.stop()


def chat_argv(server: RioServer, *args: str) -> list[str]:
    return [sys.executable, "-m", "rio.cli", "chat", "--root", str(server.root), *args]


def run_chat(server: RioServer, *args: str, input: str | None = None
             ) -> subprocess.CompletedProcess:
    return subprocess.run(chat_argv(server, *args), env=server.env, input=input,
                          capture_output=True, text=True, timeout=60, cwd=str(server.root))


def proposing_turn(fake: FakeSession, ctx: RequestContext) -> None:
    """Stream text, read a file, propose an edit, and finish once the proposal is answered."""
    base = {"conversation": ctx.args["conversation"], "turn": ctx.args["turn"]}
    for piece in ("I will ", "change ", "beta."):
        fake.bus.publish("agent.delta", {**base, "text": piece})
    fake.bus.publish("agent.tool", {**base, "call": "c1", "name": "fs_read",
                                    "input": {"path": "notes.txt"}})
    fake.bus.publish("agent.tool_result", {**base, "call": "c1", "name": "fs_read", "ok": True,
                                           "summary": "2 lines", "truncated": False})
    fake.bus.publish("agent.propose", {**base, "proposal": "p1", "call": "c2",
                                       "path": "notes.txt", "kind": "edit", "diff": DIFF})
    fake.pending.append(ctx)


def finish_after_answer(fake: FakeSession, args: dict) -> None:
    held = fake.pending.pop()
    held.reply({"status": "done", "messages": [assistant("I will change beta.")],
                "buffers": []})


def conversation_with(server: RioServer, fakes: list, on_turn, **kw) -> tuple[str, FakeSession]:
    cid = server.call("agent.new", {})["conversation"]
    fake = FakeSession(server.info(), cid, on_turn, **kw)
    fakes.append(fake)
    return cid, fake


def test_one_turn_streams_text_tools_and_diff_and_approves(server, fakes):
    cid, fake = conversation_with(server, fakes, proposing_turn, on_approve=finish_after_answer)
    done = run_chat(server, "--conversation", cid, "--approve", "yes", "change", "beta")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "I will change beta." in out
    assert "· fs_read path=notes.txt" in out and "✓ fs_read: 2 lines" in out
    assert "The agent proposes an edit to notes.txt:" in out
    assert "-beta\n+gamma" in out and "\033[" not in out   # not a terminal: no colours
    assert "applied" in out
    assert fake.turns[0]["text"] == "change beta"
    assert [a["decision"] for a in fake.approvals] == ["approve"]


def test_approve_no_rejects_and_exits_5(server, fakes):
    cid, fake = conversation_with(server, fakes, proposing_turn, on_approve=finish_after_answer)
    done = run_chat(server, "--conversation", cid, "--approve", "no", "change beta")
    assert done.returncode == 5, done.stderr
    assert "rejecting (--approve no)" in done.stdout
    assert [a["decision"] for a in fake.approvals] == ["reject"]


def test_ask_reads_the_answer_from_stdin(server, fakes):
    cid, fake = conversation_with(server, fakes, proposing_turn, on_approve=finish_after_answer)
    done = run_chat(server, "--conversation", cid, "change beta", input="maybe\na\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Apply? [y]es / [n]o / [a]lways:") == 2   # "maybe" asks again
    assert [a["decision"] for a in fake.approvals] == ["always"]


def test_an_error_turn_exits_1_with_the_classified_message(server, fakes):
    def fail(fake: FakeSession, ctx: RequestContext) -> None:
        base = {"conversation": ctx.args["conversation"], "turn": ctx.args["turn"]}
        fake.bus.publish("agent.delta", {**base, "text": "Part"})
        error = {"kind": "agent.rate_limited", "message": "The provider is rate limiting you.",
                 "next": "Retry in 20 s."}
        fake.bus.publish("agent.error", {**base, **error, "partial": True})
        ctx.reply({"status": "error", "error": error, "messages": [assistant("Part")],
                   "buffers": []})
    cid, _ = conversation_with(server, fakes, fail)
    done = run_chat(server, "--conversation", cid, "hello")
    assert done.returncode == 1
    assert "Part" in done.stdout
    # once, on one line: rio: <kind>: <message> — <next>, as every rio error
    assert done.stderr.count("The provider is rate limiting you") == 1
    assert "rio: agent.rate_limited: The provider is rate limiting you — Retry in 20 s\n" in \
        done.stderr


def test_interactive_loop_over_a_pipe(server, fakes):
    def echo(fake: FakeSession, ctx: RequestContext) -> None:
        base = {"conversation": ctx.args["conversation"], "turn": ctx.args["turn"]}
        fake.bus.publish("agent.delta", {**base, "text": f"echo: {ctx.args['text']}"})
        ctx.reply({"status": "done", "messages": [assistant(f"echo: {ctx.args['text']}")],
                   "buffers": []})
    cid, fake = conversation_with(server, fakes, echo)
    done = run_chat(server, "--conversation", cid, input="first\n\nsecond\n/quit\nnever\n")
    assert done.returncode == 0, done.stderr
    assert "echo: first" in done.stdout and "echo: second" in done.stdout
    assert [t["text"] for t in fake.turns] == ["first", "second"]
    # The second turn carried the first one's history.
    assert [m["role"] for m in fake.turns[1]["messages"]] == ["user", "assistant", "user"]


def read_until(stream, text: str, timeout: float) -> str:
    """What ``stream`` (a pipe from a child) says until ``text`` shows or ``timeout`` passes;
    read off the descriptor, so a later ``communicate()`` carries on from there."""
    seen, deadline = b"", time.monotonic() + timeout
    while text.encode() not in seen and (left := deadline - time.monotonic()) > 0:
        if select.select([stream.fileno()], [], [], left)[0]:
            chunk = os.read(stream.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
    return seen.decode(errors="replace")


def test_ctrl_c_stops_the_turn_and_exits_4(server, fakes):
    def hold(fake: FakeSession, ctx: RequestContext) -> None:
        fake.bus.publish("agent.delta", {"conversation": ctx.args["conversation"],
                                         "turn": ctx.args["turn"], "text": "working"})
        fake.pending.append(ctx)
    cid, fake = conversation_with(server, fakes, hold)
    proc = subprocess.Popen(chat_argv(server, "--conversation", cid, "long job"),
                            env=server.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=str(server.root))
    try:
        assert wait_for(lambda: fake.pending, 20)
        seen = read_until(proc.stdout, "working", 20)   # the chat is showing the turn
        assert "working" in seen, seen
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        out = seen + out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 4, err
    assert "Stopping the turn" in err and "(stopped)" in out
    assert len(fake.stops) == 1


def test_on_a_terminal_the_diff_is_coloured(server, fakes):
    import pty
    cid, fake = conversation_with(server, fakes, proposing_turn, on_approve=finish_after_answer)
    master, slave = pty.openpty()
    env = {k: v for k, v in server.env.items() if k != "NO_COLOR"}
    proc = subprocess.Popen(chat_argv(server, "--conversation", cid, "--approve", "yes",
                                      "change beta"), env=env, stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=subprocess.PIPE, cwd=str(server.root))
    os.close(slave)
    chunks = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not select.select([master], [], [], max(0.0, deadline - time.monotonic()))[0]:
                continue
            try:
                data = os.read(master, 4096)
            except OSError:   # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(30) == 0, proc.stderr.read()
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    out = b"".join(chunks).decode()
    assert "\033[31m-beta\033[0m" in out and "\033[32m+gamma\033[0m" in out


def test_diffs_are_coloured_only_when_asked():
    from ui.term.chat import Style
    plain = Style(False).diff(DIFF)
    assert plain == DIFF.rstrip("\n")
    coloured = Style(True).diff(DIFF).splitlines()
    assert coloured[4] == "\033[31m-beta\033[0m" and coloured[5] == "\033[32m+gamma\033[0m"
    assert coloured[2].startswith("\033[36m@@") and coloured[3] == " alpha"


def test_usage_errors_exit_3(server):
    assert run_chat(server, "--root", "/no/such/folder", "hi").returncode == 3
    bad = run_chat(server, "--approve", "sometimes", "hi")
    assert bad.returncode == 3 and "sometimes" in bad.stderr


@pytest.mark.slow
def test_without_an_instance_it_starts_one_and_stops_it_after(tmp_path):
    root = tmp_path / "alone"
    root.mkdir()
    env = rio_env(tmp_path)
    done = subprocess.run([sys.executable, "-m", "rio.cli", "chat", "--root", str(root),
                           "--conversation", "abcdef012345", "hi"], env=env,
                          capture_output=True, text=True, timeout=90, cwd=str(root))
    # The instance came up (the core answered: that conversation does not exist) ...
    assert done.returncode == 1, done.stderr
    assert "agent.unknown_conversation" in done.stderr
    # ... and is gone again: no instance file, no process left on that root.
    runtime = Path(env["RIO_RUNTIME_DIR"])
    assert not list(runtime.glob("*/instance.json"))
    assert not [p for p in psutil.process_iter(["cmdline"])
                if str(root) in " ".join(p.info["cmdline"] or ())]


def test_an_unreachable_named_instance_exits_2(server):
    done = run_chat(server, "--instance", "no-such-instance", "hi")
    assert done.returncode == 2 and "no-such-instance" in done.stderr


# --- end to end: the real session process and the loopback Anthropic server ---------------------

@pytest.fixture(scope="module")
def model_server():
    yield from serve_model()


@pytest.fixture
def model(model_server):
    return fresh_model(model_server)


@pytest.fixture(scope="module")
def real(tmp_path_factory, model_server):
    base = tmp_path_factory.mktemp("chat-e2e")
    root = base / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    env = rio_env(base)   # strips the user's keys and endpoints; the fake's go back in
    env.update({"ANTHROPIC_BASE_URL": model_server.url, "ANTHROPIC_API_KEY": "test-key"})
    relax_hang_detection(env)
    srv = RioServer(root, base, env=env).start()
    yield srv
    srv.stop()


@pytest.mark.slow
def test_e2e_a_text_turn(real, model):
    from tests.fakes.model_servers import anthropic_text
    model.push(anthropic_text("Hello ", "from ", "the fake model."))
    done = run_chat(real, "--approve", "yes", "hello")
    assert done.returncode == 0, done.stderr
    assert "Hello from the fake model." in done.stdout
    sent = model.requests[-1]
    assert sent.headers["x-api-key"] == "test-key"
    assert sent.json["messages"][-1]["content"][0]["text"] == "hello"
    assert "test-key" not in done.stdout + done.stderr


@pytest.mark.slow
def test_e2e_an_approved_edit_lands_in_the_buffer_as_one_undo_step(real, model):
    from tests.fakes.model_servers import anthropic_text, anthropic_tool_use
    model.push(anthropic_tool_use("toolu_1", "propose_edit", {
        "path": "notes.txt", "old_text": "beta", "new_text": "gamma"}, text="Editing."),
        anthropic_text("Renamed."))
    done = run_chat(real, "--approve", "yes", "rename beta to gamma")
    assert done.returncode == 0, done.stderr
    assert "Editing." in done.stdout and "Renamed." in done.stdout
    assert "-beta" in done.stdout and "+gamma" in done.stdout and "applied" in done.stdout
    buffers = [b for b in real.call("buffer.list") if b.get("path", "").endswith("notes.txt")]
    assert len(buffers) == 1
    buf = buffers[0]["buffer"]
    assert real.call("buffer.text", {"buffer": buf})["text"] == "alpha\ngamma\n"
    assert (real.root / "notes.txt").read_text() == "alpha\nbeta\n"   # unsaved: the user saves
    assert real.call("buffer.info", {"buffer": buf})["undo_label"] == \
        "Agent: rename beta to gamma"
    real.call("buffer.close", {"buffer": buf, "discard": True})


@pytest.mark.slow
def test_e2e_approve_no_leaves_the_file_alone(real, model):
    from tests.fakes.model_servers import anthropic_text, anthropic_tool_use
    model.push(anthropic_tool_use("toolu_2", "propose_edit", {
        "path": "notes.txt", "old_text": "alpha", "new_text": "omega"}),
        anthropic_text("Understood, leaving it."))
    done = run_chat(real, "--approve", "no", "rename alpha")
    assert done.returncode == 5, done.stderr
    assert "Understood, leaving it." in done.stdout
    assert not [b for b in real.call("buffer.list")
                if b.get("path", "").endswith("notes.txt") and b.get("dirty")]


# --- the client on its own: a scripted connection, no processes (issue 9) ----------------------

class ScriptedConn:
    """Answers ``call`` from a table (op → value or function of args) and records the calls."""

    def __init__(self, answers: dict | None = None):
        self.answers = answers or {}
        self.calls: list[tuple[str, dict]] = []

    def subscribe(self, topic, handler) -> None:
        pass

    def call(self, op, args=None, timeout=None):
        self.calls.append((op, dict(args or {})))
        answer = self.answers.get(op, {})
        return answer(dict(args or {})) if callable(answer) else answer

    def ops(self) -> list[str]:
        return [op for op, _ in self.calls]


def scripted_client(conn: ScriptedConn, **kw):
    import io

    from ui.term.chat import ChatClient
    out, err = io.StringIO(), io.StringIO()
    client = ChatClient(conn, "c0ffee000001", out=out, err=err, **kw)
    return client, out, err


def dangerous_proposal() -> dict:
    return {"conversation": "c0ffee000001", "turn": "t1", "proposal": "t1.1", "call": "x",
            "kind": "command", "command": "rm -rf ~/dir", "cwd": ".",
            "danger": {"rule": "rm_rf_outside", "reason": "deletes folders outside the project"}}


def test_approve_yes_refuses_a_dangerous_command_when_no_person_can_be_asked():
    from ui.term.chat import TurnResult
    conn = ScriptedConn({"agent.approve": {"applied": False, "reason": "rejected"}})
    client, out, _ = scripted_client(conn, approve="yes", can_ask=False,
                                     ask=lambda _: pytest.fail("nobody to ask"))
    result = TurnResult(turn="t1")
    client._show("agent.propose", dangerous_proposal(), result)
    assert [a["decision"] for op, a in conn.calls if op == "agent.approve"] == ["reject"]
    assert "--allow-dangerous" in out.getvalue() and "refused" in out.getvalue()
    assert result.rejected_by_policy == 1


def test_approve_yes_asks_a_person_about_a_dangerous_command_on_a_terminal():
    from ui.term.chat import TurnResult
    asked: list[str] = []
    conn = ScriptedConn({"agent.approve": {"applied": False}})
    client, out, _ = scripted_client(conn, approve="yes", can_ask=True,
                                     ask=lambda q: asked.append(q) or "n")
    client._show("agent.propose", dangerous_proposal(), TurnResult(turn="t1"))
    assert asked and [a["decision"] for op, a in conn.calls if op == "agent.approve"] == \
        ["reject"]
    assert "does not cover dangerous commands" in out.getvalue()


def test_allow_dangerous_lets_approve_yes_run_it():
    from ui.term.chat import TurnResult
    conn = ScriptedConn({"agent.approve": {"applied": True}})
    client, out, _ = scripted_client(conn, approve="yes", can_ask=False, allow_dangerous=True)
    client._show("agent.propose", dangerous_proposal(), TurnResult(turn="t1"))
    assert [a["decision"] for op, a in conn.calls if op == "agent.approve"] == ["approve"]


def test_a_plain_command_is_still_approved_by_approve_yes():
    from ui.term.chat import TurnResult
    conn = ScriptedConn({"agent.approve": {"applied": True}})
    client, _, _ = scripted_client(conn, approve="yes", can_ask=False)
    data = {**dangerous_proposal(), "command": "pytest -q"}
    del data["danger"]
    client._show("agent.propose", data, TurnResult(turn="t1"))
    assert [a["decision"] for op, a in conn.calls if op == "agent.approve"] == ["approve"]


def test_run_command_output_is_shown_folded_and_summaries_are_not_repeated():
    from ui.term.chat import TurnResult
    client, out, _ = scripted_client(ScriptedConn())
    lines = "\n".join(f"line {i}" for i in range(1, 21))
    client._show("agent.tool_result", {"name": "run_command", "ok": False,
                                       "summary": "pytest: exit code 1",
                                       "output": f"exit code 1\n{lines}\n"}, TurnResult())
    client._show("agent.tool_result", {"name": "propose_create", "ok": False,
                                       "summary": "propose_create: rejected"}, TurnResult())
    text = out.getvalue()
    assert "✗ run_command: pytest: exit code 1" in text
    assert "line 20" in text and "line 15" in text and "line 14\n" not in text
    assert "14 earlier lines folded" in text
    assert "✗ propose_create: rejected" in text and "propose_create: propose_create" not in text


def test_help_and_unknown_slash_commands_stay_local():
    import io

    from ui.term.chat import interactive
    conn = ScriptedConn()
    client, _, _ = scripted_client(conn)
    lines = iter(["/help", "/frobnicate", "/quit"])
    out = io.StringIO()
    assert interactive(client, read=lambda _: next(lines), out=out,
                       notice="No API key is set for anthropic") == 0
    text = out.getvalue()
    assert "/save" in text and "/undo" in text and "/diff" in text
    assert "unknown command /frobnicate" in text
    assert "No API key is set for anthropic" in text
    assert "agent.send" not in conn.ops()


def unsaved_conn(state: dict) -> ScriptedConn:
    """One buffer b1 on notes.txt; save clears dirty, undo puts the disk text back."""
    def info(_):
        return {"path": "notes.txt", "dirty": state["text"] != state["disk"],
                "undo_label": state.get("label", "Agent: rename")}

    def save(_):
        state["disk"] = state["text"]
        return {}

    def undo(_):
        state["text"] = state["disk"]
        return {}
    return ScriptedConn({"buffer.info": info, "buffer.save": save, "buffer.undo": undo,
                         "buffer.text": lambda _: {"text": state["text"]},
                         "fs.read": lambda _: {"text": state["disk"]}})


def test_the_turn_says_what_it_left_unsaved_and_save_diff_undo_work_on_it():
    from ui.term.chat import TurnResult
    state = {"disk": "alpha\nbeta\n", "text": "alpha\ngamma\n"}
    conn = unsaved_conn(state)
    client, out, _ = scripted_client(conn)
    assert client.note_unsaved(TurnResult(state="done", buffers=["b1"]), at_prompt=True)
    assert "Unsaved agent changes: notes.txt" in out.getvalue() and "/save" in out.getvalue()
    client.show_diff()
    assert "-beta\n+gamma" in out.getvalue()
    client.undo_last_turn()
    assert state["text"] == "alpha\nbeta\n" and not client.unsaved
    state["text"] = "alpha\ndelta\n"
    client.note_unsaved(TurnResult(state="done", buffers=["b1"]), at_prompt=True)
    assert client.save_unsaved() and state["disk"] == "alpha\ndelta\n" and not client.unsaved


def test_autosave_saves_at_the_end_of_the_turn():
    from ui.term.chat import TurnResult
    state = {"disk": "a\n", "text": "b\n"}
    conn = unsaved_conn(state)
    client, out, _ = scripted_client(conn)
    client.autosave = True
    assert client.note_unsaved(TurnResult(state="done", buffers=["b1"]), at_prompt=False)
    assert state["disk"] == "b\n" and "saved notes.txt" in out.getvalue()


# --- end to end: what an agent's edit leaves behind when `rio chat` started Rio itself ----------

def _alone(tmp_path: Path, model_server) -> tuple[Path, dict]:
    root = tmp_path / "alone"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    env = rio_env(tmp_path)
    env.update({"ANTHROPIC_BASE_URL": model_server.url, "ANTHROPIC_API_KEY": "test-key"})
    relax_hang_detection(env)
    return root, env


def _processes_on(root: Path) -> list:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if str(root) in " ".join(p.info["cmdline"] or ()):
                found.append(p)
        except psutil.Error:
            pass
    return found


@pytest.fixture
def leftovers():
    """Processes a test's `rio chat` left running on purpose: ended after the test."""
    roots: list[Path] = []
    yield roots
    for root in roots:
        for proc in _processes_on(root):
            try:
                proc.kill()
            except psutil.Error:
                pass


@pytest.mark.slow
def test_e2e_an_edit_without_an_instance_keeps_rio_running_and_says_how_to_save(
        tmp_path, model, leftovers):
    from tests.fakes.model_servers import anthropic_text, anthropic_tool_use
    root, env = _alone(tmp_path, model)
    leftovers.append(root)
    model.push(anthropic_tool_use("toolu_9", "propose_edit", {
        "path": "notes.txt", "old_text": "beta", "new_text": "gamma"}), anthropic_text("Done."))
    done = subprocess.run([sys.executable, "-m", "rio.cli", "chat", "--root", str(root),
                           "--approve", "yes", "rename beta"], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=90, cwd=str(root))
    assert done.returncode == 0, done.stderr
    assert "applied" in done.stdout
    assert "Unsaved agent changes: notes.txt" in done.stdout and "--save" in done.stdout
    assert (root / "notes.txt").read_text() == "alpha\nbeta\n"
    # The edit exists only in the instance it started: that one keeps running, and says so.
    assert "Rio keeps running" in done.stderr and "notes.txt" in done.stderr
    assert "rio stop --instance" in done.stderr
    runtime = Path(env["RIO_RUNTIME_DIR"])
    assert list(runtime.glob("*/instance.json"))
    # Saving it from a second chat (which attaches to that instance) puts it on disk.
    model.push(anthropic_text("Nothing to do."))
    again = subprocess.run([sys.executable, "-m", "rio.cli", "chat", "--root", str(root)],
                           env=env, input="/diff\n/save\n/quit\n", capture_output=True,
                           text=True, timeout=60, cwd=str(root))
    assert again.returncode == 0, again.stderr
    stop = subprocess.run([sys.executable, "-m", "rio.cli", "stop"], env=env,
                          capture_output=True, text=True, timeout=60, cwd=str(root))
    assert stop.returncode == 0, stop.stderr


@pytest.mark.slow
def test_e2e_save_writes_the_edit_and_stops_the_instance_it_started(tmp_path, model, leftovers):
    from tests.fakes.model_servers import anthropic_text, anthropic_tool_use
    root, env = _alone(tmp_path, model)
    leftovers.append(root)
    model.push(anthropic_tool_use("toolu_8", "propose_edit", {
        "path": "notes.txt", "old_text": "beta", "new_text": "gamma"}), anthropic_text("Done."))
    done = subprocess.run([sys.executable, "-m", "rio.cli", "chat", "--root", str(root),
                           "--approve", "yes", "--save", "rename beta"], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90,
                          cwd=str(root))
    assert done.returncode == 0, done.stderr
    assert "saved notes.txt" in done.stdout
    assert (root / "notes.txt").read_text() == "alpha\ngamma\n"
    assert "Rio keeps running" not in done.stderr
    assert not list(Path(env["RIO_RUNTIME_DIR"]).glob("*/instance.json"))
    assert wait_for(lambda: not _processes_on(root), 20)


@pytest.mark.slow
def test_e2e_approve_yes_does_not_run_a_dangerous_command_without_a_person(real, model,
                                                                          tmp_path):
    from tests.fakes.model_servers import anthropic_text, anthropic_tool_use
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    model.push(anthropic_tool_use("toolu_7", "run_command", {"command": f"rm -rf {victim}"}),
               anthropic_text("Could not."))
    done = run_chat(real, "--approve", "yes", "clean up", input="")
    assert done.returncode == 5, done.stderr
    assert "--allow-dangerous" in done.stdout
    assert (victim / "keep.txt").read_text() == "precious"


@pytest.mark.slow
def test_e2e_run_command_output_is_shown(real, model):
    from tests.fakes.model_servers import anthropic_text, anthropic_tool_use
    model.push(anthropic_tool_use("toolu_6", "run_command",
                                  {"command": "printf 'first\\nsecond\\nthird-line\\n'"}),
               anthropic_text("Ran it."))
    done = run_chat(real, "--approve", "yes", "run it", input="")
    assert done.returncode == 0, done.stderr
    assert "│ third-line" in done.stdout and "exit code 0" in done.stdout


# --- the key a running Rio cannot see (issue 9) -------------------------------------------------

class _Store:
    def __init__(self, stored: bool):
        self.stored = stored

    def get(self, provider):
        from rio.agent.secrets import Secret
        return (Secret("sk-stored-000000"), "keyring") if self.stored else (None, None)


def test_the_prompt_says_when_no_key_is_set(tmp_path, monkeypatch):
    from rio.cli.agent import key_notice
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path))
    none = key_notice("anthropic", None, True, env={}, store=_Store(False))
    assert none and "No API key is set for anthropic" in none and "rio key set anthropic" in none
    assert "--provider openai" in none and "--agent NAME" in none      # the key-less ways
    assert key_notice("anthropic", None, False, env={}, store=_Store(True)) is None
    # The variable reaches an instance `rio chat` starts, not one that was running already.
    env = {"ANTHROPIC_API_KEY": "sk-shell-000000"}
    assert key_notice("anthropic", None, True, env=env, store=_Store(False)) is None
    running = key_notice("anthropic", None, False, env=env, store=_Store(False))
    assert running and "cannot see this shell's environment" in running
    assert "sk-shell" not in running
    # A local OpenAI-compatible server needs no key at all.
    assert key_notice("openai", "http://127.0.0.1:11434/v1", False, env={},
                      store=_Store(False)) is None


@pytest.mark.slow
def test_e2e_a_key_only_in_this_shell_is_explained_against_a_running_instance(tmp_path):
    base = tmp_path
    root = base / "proj"
    root.mkdir()
    srv = RioServer(root, base).start()        # started without any key
    try:
        env = dict(srv.env, ANTHROPIC_API_KEY="sk-only-in-this-shell-1234")
        done = subprocess.run([sys.executable, "-m", "rio.cli", "chat", "--root", str(root),
                               "hello"], env=env, capture_output=True, text=True, timeout=90,
                              cwd=str(root), stdin=subprocess.DEVNULL)
        assert done.returncode == 1, done.stderr
        assert "agent.not_configured" in done.stderr
        assert "ANTHROPIC_API_KEY is set in this shell" in done.stderr
        assert f"(instance {srv.name})" in done.stderr
        assert "rio key set anthropic" in done.stderr and "rio stop" in done.stderr
        assert "sk-only-in-this-shell" not in done.stdout + done.stderr
    finally:
        srv.stop()


@pytest.mark.slow
def test_a_chat_with_no_key_says_so_in_one_line_and_keeps_no_conversation(tmp_path, leftovers):
    """No API key anywhere, no instance running: `rio chat TEXT` starts one, the turn fails
    with agent.not_configured — said in the one-line format, naming the key-less choices —
    and the conversation it made for that message is not kept (no pile of failed chats)."""
    root = tmp_path / "nokey"
    root.mkdir()
    leftovers.append(root)
    env = rio_env(tmp_path)
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"   # no stored key either
    for _ in range(2):     # twice: no conversation is left by either
        done = subprocess.run([sys.executable, "-m", "rio.cli", "chat", "--root", str(root),
                               "hello"], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=90, cwd=str(root))
        assert done.returncode == 1, done.stderr
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("rio: agent.not_configured: No API key is set for "
                                   "anthropic — "), done.stderr
        assert "--provider openai" in lines[0] and "--agent NAME" in lines[0]
    stored = list(Path(env["RIO_STATE_DIR"]).glob("projects/*/conversations/*.json*"))
    assert stored == [], stored


def test_the_store_discards_only_a_conversation_without_an_answer(tmp_path):
    from rio.agent.conversations import ConversationStore
    from rio.protocol.errors import AgentError
    from rio.providers.base import Message
    store = ConversationStore(tmp_path)
    failed = store.create(provider="anthropic")
    _, turn = store.begin_turn(failed.conversation, "hello")
    store.end_turn(turn.turn, "error", {"kind": "agent.not_configured", "message": "No key.",
                                        "next": "Set one."})
    answered = store.create(provider="anthropic")
    _, turn = store.begin_turn(answered.conversation, "hi")
    store.add_messages(turn.turn, [Message.assistant("Hello.")])
    store.end_turn(turn.turn, "done")
    running = store.create(provider="anthropic")
    store.begin_turn(running.conversation, "still going")
    store.discard(failed.conversation)
    assert not list(tmp_path.glob(f"{failed.conversation}*"))
    with pytest.raises(AgentError):
        store.get(failed.conversation)
    for kept in (answered, running):
        with pytest.raises(AgentError) as err:
            store.discard(kept.conversation)
        assert err.value.kind == "agent.not_discardable"
        assert (tmp_path / f"{kept.conversation}.json").exists()
    assert {c.conversation for c in ConversationStore(tmp_path).list()} == {
        answered.conversation, running.conversation}


@pytest.mark.slow
def test_key_status_says_a_shell_variable_is_not_seen_by_a_running_instance(tmp_path):
    env = rio_env(tmp_path)
    env["ANTHROPIC_API_KEY"] = "sk-shell-variable-9876"
    done = subprocess.run([sys.executable, "-m", "rio.cli", "key", "status", "anthropic"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "ANTHROPIC_API_KEY" in done.stdout and "one already running does not see it" in \
        done.stdout
    assert "sk-shell-variable" not in done.stdout


@pytest.mark.slow
def test_an_endpoint_that_is_not_a_url_is_said_so_at_once(server):
    done = run_chat(server, "--endpoint", "notaurl", "hi", input="")
    assert done.returncode == 1
    assert "not a usable URL" in done.stderr and "plain http" not in done.stderr
    assert "agent.not_configured" in done.stderr


def test_an_acp_agents_error_prints_its_own_words_and_details_under_the_line():
    """codex-acp's answer to a model HTTP 400, as the client publishes it: the error line and
    its next action, then the agent's words whole (the line quotes them cut) and the details
    of its error, every line of them."""
    import io
    from types import SimpleNamespace

    from ui.term.chat import ChatClient, TurnResult
    out, err = io.StringIO(), io.StringIO()
    client = ChatClient(SimpleNamespace(subscribe=lambda *a: None), "c1", out=out, err=err)
    said = "Invalid value for 'reasoning.effort': 'max' is not supported. " + "More. " * 60
    data = {"conversation": "c1", "turn": "c1.1", "kind": "agent.request_rejected",
            "message": "The agent 'codex' failed session/prompt: its model server refused the "
                       "request as invalid (HTTP 400). It said: Invalid value for…",
            "next": "Change codex's model or request settings; sending the message again "
                    "fails the same way.", "partial": False,
            "details": {"agent": "codex", "code": -32603, "said": said.strip(),
                        "details": '{\n  "param": "reasoning.effort"\n}'}}
    result = TurnResult(turn="c1.1")
    client._show("agent.error", data, result)
    lines = err.getvalue().splitlines()
    # the error itself is one line, as every rio error: rio: <kind>: <message> — <next>
    assert lines[0].startswith("rio: agent.request_rejected: The agent 'codex' failed "
                               "session/prompt")
    assert lines[0].endswith(" — Change codex's model or request settings; sending the "
                             "message again fails the same way")
    assert lines[1:] == ["  The agent said:", "    │ " + said.strip(), "  Details:",
                         "    │ {", '    │   "param": "reasoning.effort"', "    │ }"]
    assert result.error["details"]["said"] == said.strip()
    # Another error's details (an exit code) are for programs: nothing more is printed.
    err.truncate(0), err.seek(0)
    client._error({"kind": "agent.agent_exited", "message": "It stopped.", "next": "Again.",
                   "details": {"exit_code": 3}})
    assert err.getvalue() == "rio: agent.agent_exited: It stopped — Again\n"


def test_a_missing_key_is_one_line_that_names_the_ways_without_a_key():
    """rio chat with no API key: the one-line error format, and the choices that need no key
    (a local server with --provider openai, a signed-in agent with --agent)."""
    import io
    from types import SimpleNamespace

    from rio.agent.failures import not_configured
    from ui.term.chat import ChatClient
    err = io.StringIO()
    client = ChatClient(SimpleNamespace(subscribe=lambda *a: None), "c1", out=io.StringIO(),
                        err=err)
    client._error(not_configured("anthropic").to_wire())
    text = err.getvalue()
    assert text.count("\n") == 1, text
    assert text.startswith("rio: agent.not_configured: No API key is set for anthropic — ")
    assert "rio key set anthropic" in text and "--provider openai" in text
    assert "--agent NAME" in text and "rio agents" in text
    # another not_configured (a bad endpoint) is not about keys: no key-less advice
    err.truncate(0), err.seek(0)
    client._error({"kind": "agent.not_configured", "message": "The openai endpoint 'x' is "
                   "not a usable URL.", "next": "Pass a full URL."})
    assert "--agent" not in err.getvalue()
