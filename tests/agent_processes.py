"""A real ``rio serve`` whose ``[agents.fake]`` is the scripted fake ACP agent
(tests/fakes/acp_agent.py), and a conversation with it driven through the core's ``agent.*``
ops — the setup of the tests that meet an agent's session process for real
(tests/acp/test_acp_session.py, tests/agent/test_agent_processes.py, tests/mcp/).

The fake reads its script from a file at each start, so a test writes the script *before* the
agent process starts (a restarted one reads the new script: :meth:`FakeAgentChat.script`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rio.protocol.errors import RioError
from rio.protocol.frames import thaw
from tests.support import REPO, RioServer, rio_env, wait_for

FAKE = REPO / "tests" / "fakes" / "acp_agent.py"


def fake_agent_entry(script_file: Path, name: str = "fake") -> str:
    """config.toml's ``[agents.<name>]`` table: the fake agent reading ``script_file``."""
    return f'[agents.{name}]\ncommand = "{sys.executable}"\nargs = ["{FAKE}", "{script_file}"]\n'


def serve_fake_agent(root: Path, base: Path, script_file: Path, *,
                     env: dict[str, str] | None = None, config: str = "") -> RioServer:
    """A started ``rio serve`` on ``root`` (made if missing) whose config.toml names the fake
    agent as ``[agents.fake]``, then ``config`` (more tables or keys); ``env`` on top of
    :func:`tests.support.rio_env`. The caller stops it (a fixture finalizer)."""
    root.mkdir(exist_ok=True)
    full_env = {**rio_env(base), **(env or {})}
    config_dir = Path(full_env["RIO_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.toml").write_text(fake_agent_entry(script_file) + config)
    return RioServer(root, base, env=full_env).start()


class FakeAgentChat:
    """One conversation with the fake agent, through the core's ``agent.*`` ops: the events of
    ``prefixes`` it saw, in order."""

    def __init__(self, server: RioServer, script_file: Path, script: dict[str, Any], *,
                 name: str, agent: str = "fake", title: str | None = None,
                 prefixes: tuple[str, ...] = ("agent.",)):
        self.server = server
        self.script_file = script_file
        self.script(script)
        self.conn = server.connect(name, subscribe=prefixes)
        self.events: list[tuple[str, dict[str, Any]]] = []
        for prefix in prefixes:
            self.conn.subscribe(prefix, lambda e: self.events.append((e.topic, thaw(e.data))))
        new: dict[str, Any] = {"agent": agent}
        if title is not None:
            new["title"] = title
        created = self.call("agent.new", new)
        assert created["agent"] == agent
        self.conversation: str = created["conversation"]

    def script(self, script: dict[str, Any]) -> None:
        """The script the *next* agent process reads (a restarted one, after a crash, or the
        user's fixed configuration)."""
        self.script_file.write_text(json.dumps(script))

    def call(self, op: str, args: dict[str, Any] | None = None, timeout: float = 15.0) -> Any:
        return self.conn.call(op, args or {}, timeout=timeout)

    def wait(self, topic: str, timeout: float = 40.0, **match: Any) -> dict[str, Any]:
        """The first ``topic`` event whose fields equal ``match``; fails after ``timeout``."""
        def matching() -> dict[str, Any] | None:
            return next((data for t, data in self.events
                         if t == topic and all(data.get(k) == v for k, v in match.items())), None)
        found = wait_for(matching, timeout, 0.02, pause=self.conn.wait,
                         what=f"{topic} {match}", seen=lambda: self.events)
        assert found is not None    # given ``what``, wait_for fails instead of answering None
        return found

    def text(self, turn: str) -> str:
        """What ``turn`` streamed (its agent.delta events, in order)."""
        self.conn.drain()
        return "".join(d.get("text", "") for t, d in self.events
                       if t == "agent.delta" and d.get("turn") == turn)

    def send(self, text: str) -> str:
        turn: str = self.call("agent.send", {"conversation": self.conversation,
                                             "text": text})["turn"]
        return turn

    def close(self) -> None:
        """Close the connection and end the conversation's session process for good (the
        supervisor caps live ones); it may be gone already."""
        self.conn.close()
        try:
            self.server.call("system.restart", {"process": f"agent:{self.conversation}",
                                                "again": False}, timeout=10)
        except RioError:
            pass


def chats(make: Callable[..., FakeAgentChat]) -> Iterator[Callable[..., FakeAgentChat]]:
    """A ``chat`` fixture's body: hands out ``make(script, …)`` and closes every chat it made
    when the test ends."""
    made: list[FakeAgentChat] = []

    def tracked(*args: Any, **kwargs: Any) -> FakeAgentChat:
        c = make(*args, **kwargs)
        made.append(c)
        return c
    yield tracked
    for c in made:
        c.close()
