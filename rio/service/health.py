"""``rio health``'s verdict: from an instance's ``system.status`` and whether its core answered
a request, one of three answers an exec probe can act on.

* ``ok`` (exit 0): every process judged is running (or stopped on purpose: an agent's idle stop)
  and the core answered ``buffer.list``;
* ``degraded`` (exit 1): a process judged is restarting or failed (Rio gave up on it), or the
  supervisor answered and the core did not; ``problems`` says which;
* ``unreachable`` (exit 2): no instance, or it did not answer in time.

Pure: the command (rio/cli/health.py) asks the instance and prints; the rules live here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

OK, DEGRADED, UNREACHABLE = 0, 1, 2
Health = Literal["ok", "degraded", "unreachable"]
#: States of a process that make an instance degraded: it ended and waits for its restart, or
#: Rio gave up on it (restart budget spent). starting/stopping are moments of a start or an
#: on-purpose stop; idle-stopped and stopped are agents with nothing to do.
DEGRADED_STATES = ("restarting", "failed")
#: The request that says the core serves: read-only, answered by the documents actor.
CORE_PROBE = "buffer.list"


@dataclass(frozen=True)
class CoreAnswer:
    """How the core answered :data:`CORE_PROBE`: ``error`` is the error kind when it did not
    (``bus.no_route`` while it restarts, ``bus.timeout``)."""

    answered: bool
    elapsed_ms: float
    error: str | None = None
    message: str | None = None


@dataclass
class Verdict:
    health: Health
    code: int
    instance: str | None
    summary: str
    problems: list[dict[str, Any]] = field(default_factory=list)
    core: CoreAnswer | None = None
    processes: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        core = None if self.core is None else {
            "answered": self.core.answered, "ms": round(self.core.elapsed_ms, 2),
            "error": self.core.error, "message": self.core.message}
        return {"health": self.health, "code": self.code, "instance": self.instance,
                "summary": self.summary, "problems": self.problems, "core": core,
                "processes": self.processes}


def unreachable(kind: str, message: str, instance: str | None = None) -> Verdict:
    return Verdict("unreachable", UNREACHABLE, instance, f"{kind}: {message}",
                   problems=[{"error": kind, "message": message}])


def judge(status: Mapping[str, Any], core: CoreAnswer,
          only: Iterable[str] | None = None) -> Verdict:
    """The verdict on an instance that answered ``system.status``. ``only``: judge these
    processes (names, or a kind such as ``agent`` for every ``agent:<id>``) and no others;
    the core's answer is judged always."""
    wanted = set(only or ())
    processes = {str(p.get("name")): str(p.get("state")) for p in status.get("processes", ())}
    problems: list[dict[str, Any]] = []
    for proc in status.get("processes", ()):
        name = str(proc.get("name"))
        if wanted and name not in wanted and name.split(":", 1)[0] not in wanted:
            continue
        if proc.get("state") in DEGRADED_STATES:
            problems.append({"process": name, "state": proc.get("state"),
                             "restarts": proc.get("restarts", 0),
                             "last_exit": proc.get("last_exit"), "log": proc.get("log")})
    if not core.answered:
        problems.append({"process": "core", "state": "not answering", "op": CORE_PROBE,
                         "error": core.error, "message": core.message})
    instance = status.get("instance")
    if problems:
        said = "; ".join(_describe(p) for p in problems)
        return Verdict("degraded", DEGRADED, instance, f"degraded: {said}", problems, core,
                       processes)
    running = sum(1 for s in processes.values() if s == "running")
    return Verdict("ok", OK, instance,
                   f"ok: {running} process{'es' if running != 1 else ''} running, the core "
                   f"answered {CORE_PROBE} in {core.elapsed_ms:.1f} ms", [], core, processes)


def _describe(problem: Mapping[str, Any]) -> str:
    if problem.get("state") == "not answering":
        return f"the core did not answer {CORE_PROBE} ({problem.get('error')})"
    last = f", last exit: {problem['last_exit']}" if problem.get("last_exit") else ""
    return f"{problem['process']} {problem['state']}{last}"


def failed_processes(status: Mapping[str, Any]) -> list[str]:
    """Names of the processes Rio gave up on (state ``failed``)."""
    return [str(p.get("name")) for p in status.get("processes", ())
            if p.get("state") == "failed"]
