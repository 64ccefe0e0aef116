"""`rio status` counts what Rio's processes started (issue 18, point 15): an agent session's ACP
agent and its helpers — opencode's server, the claude CLI — are rows under their conversation,
with their memory, and the instance's memory in all is said. The end-to-end check with a real
instance and agent is tests/agent/test_agent_processes.py."""

from __future__ import annotations

import subprocess
import sys

from actors.runtime import process_tree
from rio.cli import main as cli
from tests.support import wait_for

MB = 1 << 20


def test_a_process_is_named_by_what_it_runs():
    assert process_tree.short_name(["/usr/bin/node", "/usr/lib/node_modules/@zed-industries/"
                                    "claude-agent-acp/dist/index.js"], "node") == \
        "node claude-agent-acp/dist/index.js"
    assert process_tree.short_name(["/home/me/.local/bin/opencode", "acp"], "opencode") == \
        "opencode acp"
    assert process_tree.short_name(["python3", "-P", "-m", "actors.runtime.host", "--spare"], "py") == \
        "python3 -m actors.runtime.host"
    assert process_tree.short_name(["python3", "-c", "import time; time.sleep(9)"], "p") == \
        "python3 -c"
    assert process_tree.short_name([], "claude") == "claude"
    assert len(process_tree.short_name(["x" * 200], "x")) == process_tree.NAME_LIMIT


def test_the_descendants_of_a_process_come_with_their_memory():
    """A child and its grandchild, found in one pass over the system's processes."""
    code = ("import subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            "time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        assert wait_for(lambda: len(process_tree.for_instance(
            -1, [child.pid]).children[child.pid]) == 1, 10)
        import os
        tree = process_tree.for_instance(os.getpid(), [child.pid])
        (grandchild,) = tree.children[child.pid]
        assert grandchild["depth"] == 1 and grandchild["name"].endswith(" -c")
        assert grandchild["rss"] > MB and "state" not in grandchild
        # this process's own child is one of "ours": not listed as adopted
        assert child.pid not in {row["pid"] for row in tree.adopted}
    finally:
        import psutil
        for p in psutil.Process(child.pid).children(recursive=True):
            p.kill()
        child.kill()
        child.wait()


def _status() -> dict:
    return {
        "instance": "proj", "root": "/p", "pid": 10, "uptime_s": 3.0, "rss": 30 * MB,
        "spares": [{"for": "core", "pid": 15, "rss": 25 * MB}],
        "processes": [
            {"name": "core", "pid": 11, "state": "running", "restarts": 0, "rss": 60 * MB,
             "actors": ["documents"], "last_exit": None, "log": "/s/logs/proj.core.log",
             "children": []},
            {"name": "agent:3f9a0c12b7de", "pid": 12, "state": "running", "restarts": 0,
             "rss": 50 * MB, "actors": ["agent_session"], "last_exit": None,
             "log": "/s/logs/proj.agent.log",
             "children": [{"pid": 13, "name": "opencode acp", "rss": 560 * MB, "depth": 1},
                          {"pid": 14, "name": "node server.js", "rss": 40 * MB, "depth": 2}],
             "agent": {"name": "opencode", "running": True, "pid": 13}},
            {"name": "agent:77aa00bb11cc", "pid": 20, "state": "running", "restarts": 0,
             "rss": 48 * MB, "actors": ["agent_session"], "last_exit": None,
             "log": "/s/logs/proj.agent2.log", "children": [],
             "agent": {"name": "claude", "running": False, "pid": None,
                       "ended": "it stopped while idle (killed by signal 9 (SIGKILL))"}}],
        "adopted": [{"pid": 30, "name": "rg", "rss": 5 * MB, "depth": 0}],
    }


def test_rio_status_lists_them_under_their_conversation_and_sums_the_memory():
    from actors.runtime.process_tree import total_rss
    status = _status()
    status["rss_total"] = total_rss(status)
    assert status["rss_total"] == (30 + 25 + 60 + 50 + 560 + 40 + 48 + 5) * MB
    lines = cli.render_status(status)
    text = "\n".join(lines)
    at = next(i for i, line in enumerate(lines) if line.startswith("agent:3f9a0c12b7de"))
    assert lines[at + 1].startswith("  └ opencode acp") and "560.0 MB" in lines[at + 1]
    assert lines[at + 2].startswith("    └ node server.js") and "40.0 MB" in lines[at + 2]
    # the numbers stay in their column, child rows included
    header = lines[1]
    assert lines[at + 1].index("560.0 MB") + len("560.0 MB") == header.index("RSS") + 3
    # a conversation whose agent is not running says so, and how it ended
    assert "  agent claude: not running — it stopped while idle (killed by signal 9 " \
           "(SIGKILL)); the next message starts it again" in lines
    assert "└ rg (adopted)" in text
    memory = next(line for line in lines if line.startswith("memory: "))
    assert memory.startswith("memory: 818.0 MB in all — the supervisor 30.0 MB, Rio's "
                             "processes 158.0 MB, the spare 25.0 MB, and 3 processes they "
                             "started (agents and their helpers) 605.0 MB")
    assert lines[-1].startswith("logs: ")


def test_a_status_without_the_tree_renders_as_before():
    status = _status()
    for proc in status["processes"]:
        proc.pop("children"), proc.pop("agent", None)
    status.pop("adopted")
    lines = cli.render_status(status)
    assert not [line for line in lines if "└" in line or line.startswith("memory:")]
