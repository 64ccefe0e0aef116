"""The ACP client's process port: an agent started and stopped by :mod:`actors.runtime.process_control`.

The agent gets everything a supervised child gets (ADR-0007): a process group of its own, the
spawn cookie (so its helpers are swept even when they leave the group), death with the
parent, an argv list. Its pipes are handed to the asyncio loop as streams; the SDK reads
stdout through the client, stderr is drained by the client.

Its exit is watched with ``waitid(WNOWAIT)``: the main process stays an unreaped zombie until
:func:`actors.runtime.process_control.stop` reaps it, so its pid — the group id we signal — cannot be
reused by another process in between. Stopping runs the blocking stop sequence in a worker
thread: close stdin → grace → SIGTERM the group → grace → SIGKILL → sweep the cookie.
claude-agent-acp and codex-acp ignore the end of stdin (still alive after 15 s) and end at
once on SIGTERM, so the graces are short by default.

Spawn from a long-lived thread (the loop's): Linux sends PDEATHSIG when the *thread* that
forked the child exits.

**In a box** (``box``: rio/acp/sandbox.py's plan for this agent, ADR-0038) the argv spawned is
bwrap's around the agent's, in the Landlock scope where the kernel has one (actors/runtime/landlock.py);
everything above holds for bwrap's process, the group leader. bwrap dies of SIGTERM at once and
the kernel then kills its whole PID namespace — the agent and every helper, whatever they did
to their environment or session. An agent killed by a signal inside is reported as bwrap
reports it (128 + the signal), turned back into ``-signal`` here.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from actors.runtime import process_control
from rio.acp.port import StopResult

#: How a session boxes its agent: (argv, cwd, env) → a rio.acp.sandbox.Plan
Box = Callable[[Sequence[str], str, Mapping[str, str]], Any]

#: The stop sequence's graces for agents (seconds): the supervisor's defaults are 1 s each.
AGENT_GRACES = {"stdin_grace": 0.5, "term_grace": 1.0, "kill_grace": 1.0}
STREAM_LIMIT = 16 << 20


class SpawnedAgent:
    def __init__(self, spawned: process_control.Spawned, stdin: asyncio.StreamWriter,
                 stdout: asyncio.StreamReader, stderr: asyncio.StreamReader,
                 graces: Mapping[str, float], plan: Any = None) -> None:
        self.spawned = spawned
        #: the sandbox's plan (rio.acp.sandbox.Plan), None when the agent runs unboxed
        self.plan = plan
        self.sandbox = f"in a box ({plan.tool})" if plan is not None else None
        self.pid = spawned.pid
        self.cookie = spawned.cookie
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.graces = dict(graces)
        self._exit: asyncio.Future[int] | None = None
        self._stopped: StopResult | None = None
        #: the stop sequence under way: a second stop (the session reaping an agent that died
        #: while idle, a turn starting it again meanwhile) waits for the same one
        self._stopping: asyncio.Future[StopResult] | None = None

    @property
    def returncode(self) -> int | None:
        if self.spawned.popen.returncode is not None:
            return self._agents(self.spawned.popen.returncode)
        if self._exit is not None and self._exit.done() and not self._exit.cancelled():
            return self._agents(self._exit.result())
        return None

    async def wait(self) -> int:
        if self.spawned.popen.returncode is not None:
            return self._agents(self.spawned.popen.returncode)
        if self._exit is None:
            loop = asyncio.get_running_loop()
            self._exit = loop.run_in_executor(None, _wait_no_reap, self.pid)
        return self._agents(await asyncio.shield(self._exit))

    def _agents(self, code: int) -> int:
        """The agent's own exit code: bwrap exits 128 + N for an agent killed by signal N."""
        if self.plan is not None and 128 < code < 128 + 65:
            return -(code - 128)
        return code

    async def stop(self) -> StopResult:
        if self._stopped is not None:
            return self._stopped
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop())
        return await asyncio.shield(self._stopping)

    async def _stop(self) -> StopResult:
        transport = self.stdin.transport
        if not transport.is_closing():   # the stop sequence's first step: end of input
            transport.close()
        loop = asyncio.get_running_loop()
        report = await loop.run_in_executor(
            None, functools.partial(process_control.stop, self.spawned, **self.graces))
        self._stopped = StopResult(report.how, report.returncode, report.elapsed,
                                   tuple(report.survivors), tuple(report.swept))
        return self._stopped


def _wait_no_reap(pid: int) -> int:
    """Block until ``pid`` exits, leaving it unreaped; its exit code (-signal when killed)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:   # reaped already (by the stop sequence)
        return -1
    if info is None:
        return -1
    if info.si_code == os.CLD_EXITED:
        return info.si_status
    return -info.si_status


class ProcessControlPort:
    """:class:`rio.acp.port.ProcessPort` over :func:`actors.runtime.process_control.spawn`."""

    def __init__(self, graces: Mapping[str, float] | None = None, box: Box | None = None
                 ) -> None:
        self.graces = dict(graces or AGENT_GRACES)
        self.box = box

    async def start(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str]
                    ) -> SpawnedAgent:
        loop = asyncio.get_running_loop()
        plan = self.box(argv, cwd, env) if self.box is not None else None
        step = None
        if plan is not None:
            argv = plan.argv
            if plan.scoped:
                from actors.runtime.landlock import scope_step
                step = scope_step()
        spawned = process_control.spawn(list(argv), cwd=cwd, env=dict(env),
                                        stdin=process_control.PIPE,
                                        stdout=process_control.PIPE,
                                        stderr=process_control.PIPE, child_step=step)
        try:
            stdout = asyncio.StreamReader(limit=STREAM_LIMIT)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdout),
                                         spawned.popen.stdout)
            stderr = asyncio.StreamReader(limit=STREAM_LIMIT)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stderr),
                                         spawned.popen.stderr)
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, spawned.popen.stdin)
            stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        except BaseException:
            await loop.run_in_executor(None, functools.partial(
                process_control.stop, spawned, **self.graces))
            raise
        return SpawnedAgent(spawned, stdin, stdout, stderr, self.graces, plan)
