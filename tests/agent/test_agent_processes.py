"""An ACP conversation's agent process, as the user meets it between and around turns (issue
18): a sign-in the agent does itself that never finishes (point 5), an agent killed while idle
(point 12), and what `rio status` says about the agents' processes and their memory (point
15). A real `rio serve`, the conversation's session process and the fake ACP agent
(tests/fakes/acp_agent.py) as ``[agents.fake]``."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from rio.protocol.errors import RioError
from tests.agent_processes import FAKE, FakeAgentChat, chats, serve_fake_agent
from tests.support import RioServer, wait_for

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

#: The session gives up on a sign-in after this long here (300 s as shipped).
SIGN_IN_TIMEOUT_S = 4


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("agent-processes")


@pytest.fixture(scope="module")
def script_file(base: Path) -> Path:
    return base / "script.json"


@pytest.fixture(scope="module")
def server(base: Path, script_file: Path):
    srv = serve_fake_agent(base / "proj", base, script_file,
                           env={"RIO_AGENT_SIGN_IN_TIMEOUT_S": str(SIGN_IN_TIMEOUT_S)})
    yield srv
    srv.stop()


class Chat(FakeAgentChat):
    """One conversation with the fake agent, its session process and the agent under it."""

    def __init__(self, server: RioServer, script_file: Path, script: dict[str, Any]):
        super().__init__(server, script_file, script, name="agent-processes")

    def ended(self, turn: str, timeout: float = 40.0) -> dict:
        """The turn's end, however it ended."""
        def end() -> dict | None:
            return next((data for t, data in self.events if t == "agent.turn"
                         and data.get("turn") == turn and data.get("state") != "started"), None)
        return wait_for(end, timeout, 0.02, pause=self.conn.wait, what=f"the end of turn {turn}",
                        seen=lambda: self.events)

    def session_pid(self) -> int:
        return self.server.pids()[f"agent:{self.conversation}"]

    def agent_process(self) -> psutil.Process:
        """The fake agent: the session process's child running acp_agent.py."""
        found = [p for p in psutil.Process(self.session_pid()).children()
                 if str(FAKE) in " ".join(p.cmdline())]
        assert len(found) == 1, found
        return found[0]


@pytest.fixture
def chat(server, script_file):
    yield from chats(lambda script: Chat(server, script_file, script))


def _signing_in(chat, base: Path, name: str) -> tuple[Any, Path]:
    """A conversation whose agent wants a sign-in at session/new and whose own sign-in
    (the card's button) never finishes — a browser login while offline."""
    marker = base / f"{name}.authenticating"
    c = chat({"auth": "new_session", "auth_hang": str(marker),
              "auth_methods": [{"id": "browser", "name": "Log in with the browser"}]})
    turn = c.send("hello")
    ended = c.wait("agent.turn", turn=turn, state="error")
    assert ended["error"]["kind"] == "agent.sign_in_needed"
    return c, marker


def _authenticate_in_background(c: Any) -> dict[str, Any]:
    outcome: dict[str, Any] = {}

    def sign_in() -> None:
        conn = c.server.connect("sign-in")
        started = time.monotonic()
        try:
            outcome["result"] = conn.call("agent.authenticate", {
                "conversation": c.conversation, "method": "browser"}, timeout=60)
        except RioError as err:
            outcome["error"] = err
        finally:
            outcome["after_s"] = time.monotonic() - started
            conn.close()
    thread = threading.Thread(target=sign_in, daemon=True)
    thread.start()
    outcome["thread"] = thread
    return outcome


# --- point 5: a sign-in that never finishes ----------------------------------------------------

def test_stop_cancels_a_sign_in_and_the_next_message_starts_the_fixed_agent(chat, base):
    c, marker = _signing_in(chat, base, "cancel")
    signing = _authenticate_in_background(c)
    assert wait_for(marker.exists, 20), "the agent was never asked to sign in"
    agent_pid = int(marker.read_text())
    stopped = c.call("agent.stop", {"conversation": c.conversation})
    assert stopped == {"stopped": True, "sign_in": "cancelled"}
    signing["thread"].join(20)
    err = signing.get("error")
    assert err is not None and err.kind == "agent.sign_in_cancelled", signing
    assert signing["after_s"] < SIGN_IN_TIMEOUT_S          # at once, not after the wait
    assert "Send your message again" in err.next
    # the agent, still waiting for its browser, was ended (nothing left behind)
    assert wait_for(lambda: not psutil.pid_exists(agent_pid) or psutil.Process(
        agent_pid).status() == psutil.STATUS_ZOMBIE, 10)
    # The user fixes the agent's configuration (here: it no longer wants a sign-in): the
    # next message starts it afresh and is answered.
    c.script({"auth": "none"})
    turn = c.send("again")
    assert c.wait("agent.turn", turn=turn, state="done")
    assert c.text(turn) == "echo: again"


def test_a_sign_in_that_never_finishes_ends_with_a_clear_error_in_bounded_time(chat, base):
    c, marker = _signing_in(chat, base, "timeout")
    signing = _authenticate_in_background(c)
    signing["thread"].join(SIGN_IN_TIMEOUT_S + 20)
    err = signing.get("error")
    assert err is not None and err.kind == "agent.sign_in_timeout", signing
    assert f"did not finish in {SIGN_IN_TIMEOUT_S} s" in err.message
    assert SIGN_IN_TIMEOUT_S - 1 < signing["after_s"] < SIGN_IN_TIMEOUT_S + 10
    c.script({"auth": "none"})
    turn = c.send("after the timeout")
    assert c.wait("agent.turn", turn=turn, state="done")
    assert c.text(turn) == "echo: after the timeout"


def test_a_fixed_configuration_rescues_a_conversation_that_wanted_a_sign_in(chat):
    """No sign-in done at all: the agent's configuration is fixed instead (it no longer needs
    one). The agent kept from the last message never reads it again; the next message must
    start it afresh rather than ask the old process again."""
    c = chat({"auth": "new_session", "auth_methods": [
        {"id": "login", "name": "Log in", "type": "terminal", "args": ["--login"]}]})
    first = c.send("hello")
    assert c.wait("agent.turn", turn=first, state="error")["error"]["kind"] == \
        "agent.sign_in_needed"
    c.script({"auth": "none"})
    second = c.send("hello again")
    ended = c.ended(second)
    assert ended["state"] == "done", ended
    assert c.text(second) == "echo: hello again"
    # started again quietly: it had not stopped, so no "the agent had stopped" line
    assert not [d for t, d in c.events if t == "agent.restarted" and d.get("turn") == second]


# --- point 12: an idle agent killed --------------------------------------------------------------

def test_an_idle_agent_killed_is_reaped_said_and_shown_not_running(chat, server):
    c = chat({"default_turn": [{"echo": True}]})
    first = c.send("one")
    assert c.wait("agent.turn", turn=first, state="done")
    agent = c.agent_process()
    session = psutil.Process(c.session_pid())
    os.kill(agent.pid, signal.SIGKILL)
    note = c.wait("agent.note", note="agent_exited", timeout=20)
    assert note["turn"] == first and "killed by signal 9" in note["text"]
    assert "next message starts it again" in note["text"]
    # reaped: no zombie left under the session process
    assert wait_for(lambda: agent.pid not in {p.pid for p in session.children()}, 10)
    state = c.call("session.status", {"conversation": c.conversation})["agent"]
    assert state["name"] == "fake" and state["running"] is False and state["pid"] is None
    assert "killed by signal 9" in state["ended"]
    shown = server.cli("status")
    assert "agent fake: not running — it stopped while idle (killed by signal 9" in shown.stdout
    # the next message starts it again (and says so once)
    second = c.send("two")
    assert c.wait("agent.turn", turn=second, state="done")
    assert c.wait("agent.restarted", turn=second)
    assert c.text(second) == "echo: two"
    assert c.call("session.status", {"conversation": c.conversation})["agent"]["running"]


# --- point 15: what `rio status` shows of the agents' processes ----------------------------------

def test_rio_status_shows_each_conversations_agent_and_helpers_with_memory(chat, server):
    c = chat({"turns": [[{"helper": "group"}, {"text": "started a helper"}]]})
    turn = c.send("start a helper")
    assert c.wait("agent.turn", turn=turn, state="done")
    helper = int(re.search(r"helper (\d+)", c.text(turn)).group(1))
    agent = c.agent_process()
    status = json.loads(server.cli("status", "--json").stdout)
    proc = next(p for p in status["processes"] if p["name"] == f"agent:{c.conversation}")
    rows = {row["pid"]: row for row in proc["children"]}
    assert rows[agent.pid]["depth"] == 1 and "acp_agent.py" in rows[agent.pid]["name"]
    assert rows[helper]["depth"] == 2 and rows[helper]["name"].endswith(" -c")
    assert all(rows[pid]["rss"] > 1 << 20 for pid in (agent.pid, helper))
    assert proc["agent"]["running"] is True and proc["agent"]["pid"] == agent.pid
    own = status["rss"] + sum(p["rss"] or 0 for p in status["processes"])
    assert status["rss_total"] >= own + rows[agent.pid]["rss"] + rows[helper]["rss"]
    text = server.cli("status").stdout
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"agent:{c.conversation}"))
    assert "└ " in lines[at + 1] and "acp_agent.py" in lines[at + 1] and str(agent.pid) in \
        lines[at + 1] and " MB" in lines[at + 1]
    assert lines[at + 2].startswith("    └ ") and str(helper) in lines[at + 2]
    assert any(line.startswith("memory: ") and " in all " in line for line in lines), text
