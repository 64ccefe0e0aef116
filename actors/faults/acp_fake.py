"""The misbehaving ACP agent of ``rio faults`` (the ``acp_*`` scenarios: acp_family.py).

It ships with Rio, not with the tests: ``rio faults`` runs on deployments that have no test
tree. Written with the SDK's agent side (``acp.run_agent``), started by Rio as any agent is —
the harness names it in the scratch instance's config.toml::

    [agents.faults-acp]
    command = "/usr/bin/python3"
    args = [".../actors/faults/acp_fake.py", "--state", "/tmp/…/sessions.json"]

A prompt is a list of words, each an action, done in order; then it says ``ok <prompt>``:

* ``crash`` — a line on stderr, then exits (code 3) mid-turn;
* ``helpers`` — leaves three sleeping helpers: one in its process group, one in a new session
  (setsid), one double-forked into a new session (its parent exits at once, so it is
  re-parented); says ``helpers <pid> <pid> <pid>``;
* ``silent`` — sends nothing until the prompt is cancelled;
* ``flood=BYTES`` — writes BYTES of 1 KiB lines to stderr (the pipe must be drained, and only
  a tail kept);
* ``stream=MIB`` — streams MIB mebibytes of reply text in 64 KiB chunks, as fast as Rio reads
  them (a cancel stops it: Rio cancels past its bound on a turn's output, ADR-0041);
* anything else is echoed.

``--state FILE`` keeps the session ids across processes, so ``session/load`` resumes a session
after a crash (the conversation goes on, ``agent.restarted`` says it was resumed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import uuid
from typing import Any, cast

#: The double-forked helper: it prints its pid, leaves the session, sleeps.
_DOUBLE_FORK = ("import os, sys, time\n"
                "if os.fork(): os._exit(0)\n"
                "os.setsid()\n"
                "if os.fork(): os._exit(0)\n"
                "sys.stdout.write(f'{os.getpid()}\\n'); sys.stdout.flush(); os.close(1)\n"
                "time.sleep(3600)\n")
_SLEEP = "import time; time.sleep(3600)"


class FaultAgent:
    def __init__(self, state: str | None) -> None:
        self.state = state
        self.conn: Any = None
        self.cancelled = asyncio.Event()
        self.sessions: list[str] = self._load()

    def _load(self) -> list[str]:
        try:
            with open(self.state or "", encoding="utf-8") as fh:
                return list(json.load(fh))
        except (OSError, ValueError):
            return []

    def _save(self) -> None:
        if self.state:
            with open(self.state, "w", encoding="utf-8") as fh:
                json.dump(self.sessions[-50:], fh)

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kw: Any) -> Any:
        from acp.schema import AgentCapabilities, Implementation, InitializeResponse
        return InitializeResponse(
            protocol_version=1, auth_methods=[],
            agent_capabilities=AgentCapabilities(load_session=True),
            agent_info=Implementation(name="rio-faults-acp", version="1"))

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kw: Any) -> Any:
        from acp.schema import NewSessionResponse
        sid = uuid.uuid4().hex[:12]
        self.sessions.append(sid)
        self._save()
        return NewSessionResponse(session_id=sid)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **kw: Any) -> Any:
        from acp import RequestError
        from acp.schema import LoadSessionResponse
        if session_id not in self.sessions:
            raise RequestError.resource_not_found(session_id)
        return LoadSessionResponse()

    async def authenticate(self, method_id: str, **kw: Any) -> Any:
        from acp.schema import AuthenticateResponse
        return AuthenticateResponse()

    async def cancel(self, session_id: str, **kw: Any) -> None:
        self.cancelled.set()

    async def prompt(self, session_id: str, prompt: list[Any], **kw: Any) -> Any:
        from acp.schema import PromptResponse
        text = "".join(getattr(b, "text", "") for b in prompt).strip()
        self.cancelled = asyncio.Event()
        for word in text.split():
            if word == "crash":
                sys.stderr.write("fatal: the faults agent crashes on purpose\n")
                sys.stderr.flush()
                os._exit(3)
            elif word == "helpers":
                await self.say(session_id, "helpers " + " ".join(map(str, helpers()))
                               + f" ns {pid_namespace()}\n")
            elif word == "silent":
                await self.cancelled.wait()
                return PromptResponse(stop_reason="cancelled")
            elif word.startswith("flood="):
                flood(int(word.split("=", 1)[1]))
            elif word.startswith("stream="):
                if not await self.stream(session_id, float(word.split("=", 1)[1])):
                    return PromptResponse(stop_reason="cancelled")
        await self.say(session_id, f"ok {text}")
        return PromptResponse(stop_reason="end_turn")

    async def stream(self, sid: str, mib: float) -> bool:
        """``mib`` MiB of text; False when a cancel stopped it."""
        chunk = ("stream " * 9363)[:65535] + "\n"
        left = int(mib * 1024 * 1024)
        while left > 0:
            if self.cancelled.is_set():
                return False
            await self.say(sid, chunk[:left])
            left -= len(chunk)
        return True

    async def say(self, sid: str, text: str) -> None:
        from acp.helpers import update_agent_message_text
        await self.conn.session_update(session_id=sid, update=update_agent_message_text(text))


def pid_namespace() -> int:
    """This process's PID namespace (its inode; 0 when unreadable). In a box (ADR-0038) the
    pids it reports are the namespace's own; the harness maps them to the machine's."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def helpers() -> list[int]:
    """Three sleeping helpers, as agents leave them (language servers, watchers)."""
    group = subprocess.Popen([sys.executable, "-c", _SLEEP], stdin=subprocess.DEVNULL)
    setsid = subprocess.Popen([sys.executable, "-c", _SLEEP], stdin=subprocess.DEVNULL,
                              start_new_session=True)
    forker = subprocess.Popen([sys.executable, "-c", _DOUBLE_FORK], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE)
    assert forker.stdout is not None
    line = forker.stdout.readline()
    forker.wait()
    return [group.pid, setsid.pid, int(line)]


def flood(count: int) -> None:
    line = b"noise " + b"x" * 1017 + b"\n"
    while count > 0:
        os.write(2, line[:min(count, len(line))])
        count -= len(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", help="file keeping session ids (for session/load)")
    args = parser.parse_args(argv)
    from acp import Agent, run_agent
    # A part of the Agent protocol on purpose: the library looks each method up and answers
    # the ones this fake leaves out (list_sessions, fork_session …) with method_not_found.
    asyncio.run(run_agent(cast(Agent, FaultAgent(args.state))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
