"""What Rio's processes started, with its memory: the rows under each process in ``rio status``.

An agent conversation's session process (``agent:<id>``) starts the ACP agent as its child, and
the agent starts more (opencode's server, the claude CLI under claude-agent-acp, language
servers …) — often several times the memory of Rio's own processes. ``system.status {tree:
true}`` lists, per process of the instance, its descendants (depth-first, each with its pid, a
short name, its resident memory and, when not running, its state: a ``zombie`` not reaped yet)
and the instance's total; processes the supervisor adopted (it is a child subreaper: a helper
whose parent died is reparented to it) are listed apart, so the total leaves nothing out.

One pass over the system's processes (``psutil.process_iter``) builds the parent → children map
for the whole answer, instead of one pass per process (``Process.children`` walks them all
each time): a few milliseconds, paid only when asked for (``rio status``), never by the
probes and pings that ask ``system.status`` often.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import psutil

#: Interpreters whose first argument says more than their own name (``node …/index.js``).
_INTERPRETERS = frozenset({"node", "nodejs", "bun", "deno", "python", "python3", "sh", "bash",
                           "dash", "env", "npx", "uv", "uvx"})
#: How deep the tree is followed (a runaway fork chain must not make the answer huge).
MAX_DEPTH = 8
#: How many descendants one process lists at most; the rest are counted in ``more``.
MAX_LISTED = 64
NAME_LIMIT = 48


@dataclass
class Tree:
    """The descendants of each asked-for pid, and the processes adopted by the supervisor."""
    children: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    adopted: list[dict[str, Any]] = field(default_factory=list)


def short_name(cmdline: list[str] | None, name: str) -> str:
    """``node claude-agent-acp/dist/index.js`` rather than ``node`` or a whole command line."""
    argv = [a for a in (cmdline or ()) if a]
    if not argv:
        return name or "?"
    program = os.path.basename(argv[0]) or name
    shown = program
    if program.rstrip("0123456789.") in _INTERPRETERS and len(argv) > 1:
        shown = f"{program} {_what_it_runs(argv[1:])}".rstrip()
    elif len(argv) > 1 and not argv[1].startswith("-") and "/" not in argv[1]:
        shown = f"{program} {argv[1]}"          # `opencode acp`, `codex app-server`
    return shown if len(shown) <= NAME_LIMIT else shown[:NAME_LIMIT - 1] + "…"


def _what_it_runs(args: list[str]) -> str:
    """An interpreter's script (its last three path parts), ``-m module``, or ``-c``."""
    for i, arg in enumerate(args):
        if arg == "-c":
            return "-c"                          # the code itself says little
        if arg == "-m":
            return f"-m {args[i + 1]}" if i + 1 < len(args) else "-m"
        if not arg.startswith("-"):
            parts = arg.rstrip("/").split("/")
            return "/".join(parts[-3:]) if len(parts) > 3 else arg
    return ""


def _row(proc: psutil.Process, depth: int) -> dict[str, Any]:
    info = proc.info
    memory = info.get("memory_info")
    status = str(info.get("status") or "")
    row: dict[str, Any] = {"pid": proc.pid, "name": short_name(info.get("cmdline"),
                                                                 str(info.get("name") or "")),
                           "rss": int(memory.rss) if memory is not None else None,
                           "depth": depth}
    if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD, psutil.STATUS_STOPPED):
        row["state"] = status
    return row


def children_map() -> dict[int, list[psutil.Process]]:
    """Every process of the system under its parent's pid (one pass)."""
    by_parent: dict[int, list[psutil.Process]] = {}
    for proc in psutil.process_iter(["ppid", "name", "cmdline", "memory_info", "status"]):
        ppid = proc.info.get("ppid")
        if ppid:
            by_parent.setdefault(int(ppid), []).append(proc)
    return by_parent


def descendants(pid: int, by_parent: Mapping[int, list[psutil.Process]]) -> list[dict[str, Any]]:
    """``pid``'s descendants, depth-first (a child, then its own children), ``depth`` 1 for a
    child; at most :data:`MAX_LISTED` rows, the rest summed into a last ``more`` row."""
    rows: list[dict[str, Any]] = []
    hidden, hidden_rss = 0, 0
    stack = [(p, 1) for p in reversed(sorted(by_parent.get(pid, ()), key=lambda p: p.pid))]
    seen = {pid}
    while stack:
        proc, depth = stack.pop()
        if proc.pid in seen:
            continue
        seen.add(proc.pid)
        row = _row(proc, depth)
        if len(rows) < MAX_LISTED:
            rows.append(row)
        else:
            hidden += 1
            hidden_rss += row["rss"] or 0
        if depth < MAX_DEPTH:
            stack += [(p, depth + 1) for p in
                      reversed(sorted(by_parent.get(proc.pid, ()), key=lambda p: p.pid))]
    if hidden:
        rows.append({"pid": None, "name": f"{hidden} more", "rss": hidden_rss, "depth": 1,
                     "more": hidden})
    return rows


def for_instance(supervisor: int, pids: Iterable[int], known: Iterable[int] = ()) -> Tree:
    """The descendants of each of the instance's processes ``pids``, and the supervisor's
    children that are none of ``pids`` nor ``known`` (spares, the window being adopted):
    the processes it adopted, with their own descendants."""
    try:
        by_parent = children_map()
    except psutil.Error:
        return Tree()
    wanted = [p for p in pids if p]
    tree = Tree({pid: descendants(pid, by_parent) for pid in wanted})
    ours = set(wanted) | set(known)
    for proc in sorted(by_parent.get(supervisor, ()), key=lambda p: p.pid):
        if proc.pid in ours:
            continue
        tree.adopted.append(_row(proc, 0))
        tree.adopted += descendants(proc.pid, by_parent)
    return tree


def total_rss(status: Mapping[str, Any]) -> int:
    """The instance's resident memory: the supervisor, its processes, their descendants and
    what it adopted, the spare (a ``system.status {tree: true}`` answer)."""
    total = int(status.get("rss") or 0)
    for proc in status.get("processes") or ():
        total += int(proc.get("rss") or 0)
        total += sum(int(c.get("rss") or 0) for c in proc.get("children") or ())
    total += sum(int(c.get("rss") or 0) for c in status.get("adopted") or ())
    total += sum(int(s.get("rss") or 0) for s in status.get("spares") or ())
    return total


def uss(pid: int | None) -> int | None:
    """``pid``'s unique set size: the pages only it maps, what ending it gives back. Unlike
    RSS it does not count the pages a session forked from the zygote shares with it and the
    other sessions (docs/adr/0039). None when it cannot be read."""
    if not pid:
        return None
    try:
        return int(psutil.Process(pid).memory_full_info().uss)
    except (psutil.Error, AttributeError):
        return None


def add_uss(status: dict[str, Any]) -> None:
    """Each of Rio's own processes' USS into a ``system.status {tree: true}`` answer — the
    supervisor's, its running processes' and its spares' and zygote's — and their sum
    (``uss_own``): what Rio itself keeps, apart from what it started."""
    total = 0
    status["uss"] = uss(int(status.get("pid") or 0))
    total += status["uss"] or 0
    for entry in [*(status.get("processes") or ()), *(status.get("spares") or ())]:
        entry["uss"] = uss(entry.get("pid")) if entry.get("rss") is not None else None
        total += entry["uss"] or 0
    status["uss_own"] = total
