"""16 proposals waiting at once, from two conversations' agents calling Rio's MCP tools in
parallel (issue 22, point 3): the user's Approve and Stop answer at once.

Before ADR-0034 a waiting MCP proposal held one of the core's 16 MCP workers and
``agent.approve`` was served by the same pool: two conversations with 8 parallel
``propose_create`` each stalled every MCP call of every conversation, and the Approve waited
until the question timed out. Now a proposal is its turn's, in the session process, waiting on
an asyncio future: it holds no thread anywhere — over HTTP, and on the stdio fallback's path.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agent_events import AgentEvents
from tests.support import REPO, RioServer, rio_env, wait_for

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

FAKE = REPO / "tests" / "fakes" / "acp_agent.py"
EACH = 8


def _script(tag: str, http: bool) -> dict[str, Any]:
    return {"mcp_http": http, "default_turn": [{"echo": True}], "turns": [[{"mcp_many": [
        {"tool": "propose_create", "args": {"path": f"{tag}-{i}.txt", "text": f"{tag} {i}\n"}}
        for i in range(EACH)]}]]}


def _ended(chat: AgentEvents, turn: str) -> bool:
    return any(t.get("turn") == turn and t.get("state") != "started"
               for t in chat.of("agent.turn"))


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_approve_and_stop_answer_at_once_with_16_proposals_waiting(tmp_path: Path,
                                                                    transport: str) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    env = rio_env(tmp_path)
    config = Path(env["RIO_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    lines = []
    scripts = {tag: _script(tag, transport == "http") for tag in ("a", "b")}
    # a third conversation's agent reads while the 16 proposals wait: served at once
    scripts["c"] = {"mcp_http": transport == "http", "default_turn": [{"echo": True}],
                    "turns": [[{"mcp": {"tool": "list_buffers"}}]]}
    for tag, body in scripts.items():
        script = tmp_path / f"{tag}.json"
        script.write_text(json.dumps(body))
        lines.append(f'[agents.fake-{tag}]\ncommand = "{sys.executable}"\n'
                     f'args = ["{FAKE}", "{script}"]\n')
    (config / "config.toml").write_text("\n".join(lines))
    server = RioServer(root, tmp_path, env=env).start()
    chat = AgentEvents(server, "parallel")
    cids: list[str] = []
    try:
        for tag in ("a", "b"):
            cids.append(chat.call("agent.new", {"agent": f"fake-{tag}"})["conversation"])
        turns = [chat.call("agent.send", {"conversation": cid, "text": "make files"},
                           timeout=30)["turn"] for cid in cids]
        wait_for(lambda: len(chat.of("agent.propose")) >= 2 * EACH, 120, 0.05,
                 pause=chat.conn.wait)
        proposals = chat.of("agent.propose")
        assert len(proposals) == 2 * EACH, ([p.get("path") for p in proposals],
                                            [chat.said(t) for t in turns],
                                            chat.of("agent.error"))
        mine = {turn: [p for p in proposals if p["turn"] == turn] for turn in turns}
        assert all(len(p) == EACH for p in mine.values())

        # another conversation's call of Rio's tools is served meanwhile, at once
        third = chat.call("agent.new", {"agent": "fake-c"})["conversation"]
        cids.append(third)
        started = time.perf_counter()
        read = chat.call("agent.send", {"conversation": third, "text": "read"},
                         timeout=30)["turn"]
        chat.wait("agent.turn", turn=read, state="done", timeout=60)
        read_s = time.perf_counter() - started
        assert chat.said(read).startswith("mcp: {"), chat.said(read)

        # Approve one of A's: answered at once, and applied
        first = mine[turns[0]][0]
        started = time.perf_counter()
        answer = chat.call("agent.approve", {"turn": turns[0], "proposal": first["proposal"],
                                             "decision": "approve"}, timeout=30)
        approve_s = time.perf_counter() - started
        assert answer == {"applied": True}
        # …while every other proposal still waits: it was not served behind them
        assert not _ended(chat, turns[1]) and not _ended(chat, turns[0])

        # Stop B: answered at once, its turn ends stopped, its 8 proposals closed unapplied
        started = time.perf_counter()
        stopped = chat.call("agent.stop", {"conversation": cids[1]}, timeout=30)
        stop_s = time.perf_counter() - started
        ended = chat.wait("agent.turn", turn=turns[1], state="stopped", timeout=30)
        stop_end_s = time.perf_counter() - started
        assert stopped.get("stopped") is not False and ended["state"] == "stopped"
        assert not _ended(chat, turns[0])      # A's seven still wait

        # A's other seven, answered one after the other: each at once too
        times = []
        for p in mine[turns[0]][1:]:
            started = time.perf_counter()
            chat.call("agent.approve", {"turn": turns[0], "proposal": p["proposal"],
                                        "decision": "reject"}, timeout=30)
            times.append(time.perf_counter() - started)
        done = chat.wait("agent.turn", turn=turns[0], state="done", timeout=60)
        print(f"\n{transport}: 16 proposals waiting — a third conversation's turn with one "
              f"MCP read {read_s * 1000:.0f} ms (its agent's start included); "
              f"approve {approve_s * 1000:.0f} ms, "
              f"stop {stop_s * 1000:.0f} ms (turn ended {stop_end_s * 1000:.0f} ms), "
              f"the next seven answers max {max(times) * 1000:.0f} ms")
        assert done["state"] == "done"
        # the one approved file was made; none of the rejected or stopped ones
        made = sorted(p.name for p in root.iterdir())
        assert made == [first["path"]], made
        said = chat.said(turns[0])
        assert said.count("mcp: ") == EACH and said.count('"applied": true') == 1
    finally:
        for cid in cids:
            chat.end_session(cid)
        chat.close()
        server.stop()
