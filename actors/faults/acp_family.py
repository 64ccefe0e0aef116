"""The ACP family of ``rio faults``: an external agent that misbehaves (docs/faults.md).

The agent is :mod:`actors.faults.acp_fake` — shipped with Rio, started by the scratch
instance as any ACP agent is, from two ``[agents.*]`` tables the harness writes into that
instance's config.toml (``faults-acp``, and ``faults-acp-quiet`` with a short silence
watchdog). No real agent is needed. Each scenario drives one conversation through the public
``agent.*`` ops, as a client does, and checks:

* ``acp_crash`` — the agent leaves helpers and crashes mid-turn: the turn ends
  ``agent.agent_exited``; the next message starts it again and resumes its session
  (``agent.restarted {resumed: true}``) and is answered; the dead agent's helpers are gone;
* ``acp_helpers`` — the agent leaves three helpers (in its group, setsid, double-forked): once
  the conversation is stopped, the agent and all three are gone;
* ``acp_silent`` — the agent says nothing: ``agent.silent`` is published, the turn does not
  wait forever (Rio gives up and ends it), and the next message is answered;
* ``acp_stderr`` — 4 MB on stderr: the turn is answered all the same (the pipe is drained);
  then a flood and a crash: the error quotes a bounded tail of stderr (its last line
  included), and the protocol log on disk stays bounded;
* ``acp_flood`` — the agent streams 100 MiB of reply in one turn: Rio stops the turn at its
  bound (``agent.output_limit``, one ``output_cut`` note, ADR-0041), what was shown stays
  within the 1 MiB a message keeps, the core is not restarted, and the next message is
  answered.

Every scenario also runs the harness's usual checks (edits lost, orphans, corrupt files).
Against an attached instance (``--instance``) the family is skipped: it would have to write
the user's config.toml.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from actors.bus.client import BusConnection, connect
from rio.protocol.errors import BusError, RioError
from rio.protocol.frames import thaw

SCENARIOS = ("acp_crash", "acp_helpers", "acp_silent", "acp_stderr", "acp_flood")
AGENT = "faults-acp"
QUIET = "faults-acp-quiet"
#: The quiet agent's watchdog: "silent" after this long, given up after GIVE_UP_S.
SILENT_AFTER_S = 0.5
GIVE_UP_S = 3.0
TURN_TIMEOUT_S = 60.0
#: How long a dead agent's helpers may take to be swept (the stop sequence's graces and more).
GONE_TIMEOUT_S = 10.0
FLOOD_BYTES = 4_000_000
#: What acp_flood's agent streams in one turn.
STREAM_MIB = 100
#: The protocol log's bound on disk (rio/acp/protocol_log.py) plus one kept line of slack.
LOG_SLACK = 16_384


def configure(config_dir: Path, state_file: Path) -> None:
    """Add the fault agents to the instance's config.toml (read at each agent start)."""
    fake = Path(__file__).with_name("acp_fake.py")
    args = json.dumps([str(fake), "--state", str(state_file)])
    block = (f'\n[agents.{AGENT}]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n'
             f'\n[agents.{QUIET}]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n'
             f'silent_after_s = {SILENT_AFTER_S}\ngive_up_after_s = {GIVE_UP_S}\n')
    path = config_dir / "config.toml"
    text = path.read_text() if path.exists() else ""
    if f"[agents.{AGENT}]" not in text:
        path.write_text(text + block)


class Chat:
    """One conversation with a fault agent, driven through ``agent.*`` as a client does."""

    def __init__(self, bench: Any, agent: str = AGENT) -> None:
        self.bench = bench
        self.conn: BusConnection = connect(bench.instance.endpoints(), name="faults-acp",
                                           subscribe=("agent.",), timeout=10)
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.conn.subscribe("agent.", lambda e: self.events.append((e.topic, thaw(e.data))))
        self.cid = str(self.conn.call("agent.new", {"title": "rio faults", "agent": agent},
                                      timeout=15)["conversation"])

    def send(self, text: str) -> str:
        return str(self.conn.call("agent.send", {"conversation": self.cid, "text": text},
                                  timeout=30)["turn"])

    def find(self, topic: str, **match: Any) -> dict[str, Any] | None:
        for t, data in self.events:
            if t == topic and all(data.get(k) == v for k, v in match.items()):
                return data
        return None

    def wait(self, topic: str, timeout: float = TURN_TIMEOUT_S, **match: Any
             ) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.find(topic, **match)
            if found is not None:
                return found
            self.conn.wait(0.02)
        return None

    def ended(self, turn: str, timeout: float = TURN_TIMEOUT_S) -> dict[str, Any] | None:
        """The turn's last ``agent.turn`` (done, stopped or error), or None in time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, data in self.events:
                if t == "agent.turn" and data.get("turn") == turn and \
                        data.get("state") in ("done", "stopped", "error"):
                    return data
            self.conn.wait(0.02)
        return None

    def said(self, turn: str) -> str:
        self.conn.drain()
        return "".join(str(d.get("text", "")) for t, d in self.events
                       if t == "agent.delta" and d.get("turn") == turn)

    def stop(self) -> None:
        """End the conversation's process (and so its agent, with the stop sequence)."""
        try:
            self.bench.client.call("system.restart", {"process": f"agent:{self.cid}",
                                                      "again": False}, timeout=20)
        except RioError:
            pass

    def close(self) -> None:
        self.stop()
        self.conn.close()


def _helpers(text: str) -> list[int]:
    """The helpers' pids the agent said (``helpers P P P ns INODE``), as this machine numbers
    them: a boxed agent (ADR-0038) sees its own PID namespace's numbers, which name other
    processes out here — checked or killed unmapped, they would be somebody else's."""
    for line in text.splitlines():
        if line.startswith("helpers "):
            words, ns = line.split()[1:], 0
            if "ns" in words:
                at = words.index("ns")
                tail = words[at + 1:at + 2]
                ns = int(tail[0]) if tail and tail[0].isdigit() else 0
                words = words[:at]
            return host_pids([int(p) for p in words if p.isdigit()], ns)
    return []


def host_pids(pids: list[int], ns: int) -> list[int]:
    """``pids`` numbered in the PID namespace ``ns`` (its inode), as numbered in ours. The
    same namespace (or none said): as they are. Another: each process of that namespace is
    found by its ``NSpid`` line (its pid in every namespace from ours down, the last its own
    namespace's); a pid not found there is left out (gone, or not visible from here)."""
    try:
        ours = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return pids
    if not ns or ns == ours:
        return pids
    wanted, found = set(pids), {}
    for pid in psutil.pids():
        try:
            if os.stat(f"/proc/{pid}/ns/pid").st_ino != ns:
                continue
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
                line = next((x for x in f if x.startswith("NSpid:")), "")
        except (OSError, StopIteration):
            continue
        inner = line.split()[-1:] if line else []
        if inner and inner[0].isdigit() and int(inner[0]) in wanted:
            found[int(inner[0])] = pid
    return [found[p] for p in pids if p in found]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _survivors(pids: list[int], timeout: float = GONE_TIMEOUT_S) -> list[int]:
    """The pids still alive after up to ``timeout`` (each one left is an orphan)."""
    deadline = time.monotonic() + timeout
    left = [p for p in pids if _alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if _alive(p)]
    for pid in left:   # counted; and not left running on the machine either
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass
    return left


def _record(bench: Any, scenario: str, fault: str, ok: bool, took: float | None,
            note: str, extra_orphans: int = 0) -> None:
    from rio.faults.report import FaultResult
    result = bench._check(scenario, fault, "acp agent", ok, took, note)
    if extra_orphans:
        bench.results[-1] = FaultResult(**{**result.__dict__,
                                           "orphans": result.orphans + extra_orphans})


def _problems(checks: list[tuple[bool, str]]) -> tuple[bool, str]:
    bad = [what for ok, what in checks if not ok]
    return not bad, "; ".join(bad)


def scenario_acp_crash(bench: Any) -> None:
    chat = Chat(bench)
    try:
        first = chat.send("helpers crash")
        crashed = chat.ended(first)
        pids = _helpers(chat.said(first))
        started = time.monotonic()
        second = chat.send("again")
        answered = chat.ended(second)
        took = time.monotonic() - started
        restarted = chat.find("agent.restarted", turn=second)
        left = _survivors(pids)
        ok, note = _problems([
            (crashed is not None and crashed.get("state") == "error"
             and (crashed.get("error") or {}).get("kind") == "agent.agent_exited",
             f"the crash did not end the turn as agent_exited ({crashed})"),
            (len(pids) == 3, "the agent did not report its helpers"),
            (restarted is not None and bool(restarted.get("resumed")),
             f"no agent.restarted with resumed: true ({restarted})"),
            (answered is not None and answered.get("state") == "done"
             and chat.said(second).endswith("ok again"), "the next message was not answered"),
            (not left, f"helpers of the crashed agent left running: {left}")])
        _record(bench, "acp_crash", "agent crash mid-turn", ok, took if ok else None, note,
                len(left))
    finally:
        chat.close()


def scenario_acp_helpers(bench: Any) -> None:
    chat = Chat(bench)
    try:
        turn = chat.send("helpers")
        done = chat.ended(turn)
        pids = _helpers(chat.said(turn))
        agent = _agent_of(pids)
        started = time.monotonic()
        chat.stop()
        left = _survivors(pids + agent)
        took = time.monotonic() - started
        ok, note = _problems([
            (done is not None and done.get("state") == "done", "the turn was not answered"),
            (len(pids) == 3, "the agent did not report its helpers"),
            (not left, f"left running after the conversation stopped: {left}")])
        _record(bench, "acp_helpers", "stop with 3 helpers", ok, took if ok else None, note,
                len(left))
    finally:
        chat.close()


def _agent_of(helpers: list[int]) -> list[int]:
    """The agent itself: the parent of its in-group helper (while it runs)."""
    try:
        parent = psutil.Process(helpers[0]).ppid() if helpers else 0
    except psutil.Error:
        return []
    return [parent] if parent > 1 else []


def scenario_acp_silent(bench: Any) -> None:
    chat = Chat(bench, QUIET)
    try:
        started = time.monotonic()
        turn = chat.send("silent")
        silent = chat.wait("agent.silent", turn=turn, timeout=GIVE_UP_S + 20)
        ended = chat.ended(turn, timeout=GIVE_UP_S + 30)
        took = time.monotonic() - started
        nxt = chat.send("after")
        answered = chat.ended(nxt)
        ok, note = _problems([
            (silent is not None, "no agent.silent while the agent said nothing"),
            (ended is not None and ended.get("state") in ("error", "stopped"),
             f"the silent turn did not end ({ended})"),
            (answered is not None and answered.get("state") == "done",
             "the next message was not answered")])
        _record(bench, "acp_silent", "agent goes silent", ok, took if ok else None, note)
    finally:
        chat.close()


def scenario_acp_stderr(bench: Any) -> None:
    chat = Chat(bench)
    try:
        started = time.monotonic()
        flooded = chat.send(f"flood={FLOOD_BYTES}")
        done = chat.ended(flooded)
        took = time.monotonic() - started
        crash = chat.send("flood=1000000 crash")
        crashed = chat.ended(crash) or {}
        message = str((crashed.get("error") or {}).get("message", ""))
        again = chat.send("again")
        answered = chat.ended(again)
        log = _protocol_log(bench, chat.cid)
        from rio.acp.protocol_log import MAX_FILE_BYTES
        size = log.stat().st_size if log is not None else None
        ok, note = _problems([
            (done is not None and done.get("state") == "done",
             f"a turn with {FLOOD_BYTES} bytes on stderr was not answered"),
            ("fatal: the faults agent crashes on purpose" in message and len(message) < 2000,
             f"the crash's error does not quote a bounded stderr tail ({len(message)} chars)"),
            (answered is not None and answered.get("state") == "done",
             "the message after the crash was not answered"),
            (size is None or size <= MAX_FILE_BYTES + LOG_SLACK,
             f"the protocol log grew to {size} bytes")])
        _record(bench, "acp_stderr", f"stderr flood {FLOOD_BYTES // 1_000_000} MB", ok,
                took if ok else None, note)
    finally:
        chat.close()


def _core_restarts(bench: Any) -> int | None:
    for p in bench.client.call("system.status", timeout=10)["processes"]:
        if p["name"] == "core":
            return int(p.get("restarts", 0))
    return None


def scenario_acp_flood(bench: Any) -> None:
    from rio.agent.output_limits import MESSAGE_CHARS
    chat = Chat(bench)
    try:
        restarts = _core_restarts(bench)
        started = time.monotonic()
        flooded = chat.send(f"stream={STREAM_MIB}")
        ended = chat.ended(flooded) or {}
        took = time.monotonic() - started
        notes = [d.get("note") for t, d in chat.events
                 if t == "agent.note" and d.get("turn") == flooded]
        shown = len(chat.said(flooded))
        again = chat.send("again")
        answered = chat.ended(again)
        ok, note = _problems([
            (ended.get("state") == "error"
             and (ended.get("error") or {}).get("kind") == "agent.output_limit",
             f"the flooded turn did not end with agent.output_limit ({ended})"),
            (notes == ["output_cut"], f"not one output_cut note: {notes}"),
            (shown <= MESSAGE_CHARS, f"{shown} characters were shown"),
            (_core_restarts(bench) == restarts, "the core was restarted"),
            (answered is not None and answered.get("state") == "done"
             and chat.said(again).endswith("ok again"), "the next message was not answered")])
        _record(bench, "acp_flood", f"agent streams {STREAM_MIB} MiB", ok,
                took if ok else None, note)
    finally:
        chat.close()


def _protocol_log(bench: Any, conversation: str) -> Path | None:
    """The conversation's protocol log in the scratch instance's state folder."""
    state = getattr(bench.instance, "base", None)
    if state is None:
        return None
    found = list((Path(state) / "state").rglob(f"{conversation}.acp.log"))
    return found[0] if found else None


def prepare(bench: Any) -> None:
    """Once per run, before the first ACP scenario: the fault agents in config.toml."""
    base = getattr(bench.instance, "base", None)
    if base is None:
        raise BusError("unreachable", "The ACP scenarios need the harness's own instance.",
                       "Run them without --instance.")
    configure(Path(base) / "config", Path(base) / "acp-sessions.json")


def run(bench: Any, scenario: str) -> None:
    prepare(bench)
    {"acp_crash": scenario_acp_crash, "acp_helpers": scenario_acp_helpers,
     "acp_silent": scenario_acp_silent, "acp_stderr": scenario_acp_stderr,
     "acp_flood": scenario_acp_flood}[scenario](bench)
