"""`rio chat` as a user or a script runs it, against a real instance.

The session side is played by tests/fakes/fake_session.py (a turn's deltas, tool activity and a
proposal, scripted), so these tests are about the terminal client: what it prints, what it
answers, and how it exits. The end-to-end run with the real session and the loopback Anthropic
server is at the bottom.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from actors.bus_thread import RequestContext
from tests.fakes.fake_session import FakeSession, assistant
from tests.support import RioServer, rio_env, wait_for

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
    assert done.stderr.count("The provider is rate limiting you.") == 1
    assert "(agent.rate_limited)" in done.stderr and "Retry in 20 s." in done.stderr


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
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
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
        while True:
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
    from ui.term.chat import Style, short_input
    plain = Style(False).diff(DIFF)
    assert plain == DIFF.rstrip("\n")
    coloured = Style(True).diff(DIFF).splitlines()
    assert coloured[4] == "\033[31m-beta\033[0m" and coloured[5] == "\033[32m+gamma\033[0m"
    assert coloured[2].startswith("\033[36m@@") and coloured[3] == " alpha"
    assert short_input({"path": "a.py", "text": "x\ny" * 50}).startswith("path=a.py text=x y")
    assert len(short_input({"text": "z" * 500})) <= 80


def test_usage_errors_exit_3(server):
    assert run_chat(server, "--root", "/no/such/folder", "hi").returncode == 3
    bad = run_chat(server, "--approve", "sometimes", "hi")
    assert bad.returncode == 3 and "sometimes" in bad.stderr


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

def relax_hang_detection(env: dict) -> None:
    """A loaded test machine (2 cores, other suites) can miss 3 pings of 1 s: a session killed
    as "hung" would fail these tests for a reason they are not about."""
    folder = Path(env["RIO_CONFIG_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "supervisor.toml").write_text("[defaults]\nping_misses = 30\n")


@pytest.fixture(scope="module")
def model_server():
    from tests.fakes.model_servers import FakeModelServer
    with FakeModelServer() as server:
        yield server


@pytest.fixture
def model(model_server):
    """The module's model server with an empty script: a test that failed half-way must not
    leave replies for the next one."""
    with model_server.state.lock:
        model_server.state.script.clear()
    return model_server


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
