"""``rio health [--instance N] [--json]``: is the instance whole? For exec probes (Kubernetes'
readiness and liveness, a container's HEALTHCHECK, a monitoring script).

Exit 0: every process runs and the core answered ``buffer.list``; 1: degraded — a process is
restarting or Rio gave up on it (``failed``), or the core did not answer (the JSON's
``problems`` say which); 2: unreachable — no instance, or no answer within ``--timeout``.

Fast and without side effects: two read-only requests (``system.status`` to the supervisor,
``buffer.list`` to the core) sent together on one connection; only this module and the bus
client are imported (``rio health`` builds its own parser alone, rio/cli/main.py). The
verdict's rules are :mod:`rio.service.health`.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from rio.service import health

DEFAULT_TIMEOUT_S = 3.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "health", help="exit 0 healthy, 1 degraded, 2 unreachable (for probes)",
        description="Ask a running instance whether it is whole: exit 0 when every process "
                    "runs and the core answers, 1 when a process is restarting or failed (or "
                    "the core does not answer), 2 when no instance answers in time. Fit for "
                    "an exec probe: read-only, a fraction of a second.")
    p.add_argument("--instance", help="the instance to ask (default: the one for this folder)")
    p.add_argument("--connect", metavar="tcp://HOST:PORT",
                   help="a remote instance over CURVE-encrypted TCP")
    p.add_argument("--server-key", help="the remote server's public key (from `rio keys`)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                   help=f"seconds for the whole check (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--process", action="append", metavar="NAME",
                   help="judge only this process (repeatable; a kind such as `agent` means "
                        "every agent:<id>); the core's answer is judged always")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.set_defaults(func=cmd_health)


def cmd_health(args: argparse.Namespace) -> int:
    started = time.monotonic()
    verdict = check(args, started)
    elapsed_ms = (time.monotonic() - started) * 1000
    if args.json:
        print(json.dumps({**verdict.to_json(), "elapsed_ms": round(elapsed_ms, 1)},
                         indent=2, ensure_ascii=False, default=str))
    else:
        name = f"instance {verdict.instance}: " if verdict.instance else ""
        print(f"{name}{verdict.summary}", flush=True)
    return verdict.code


def check(args: argparse.Namespace, started: float) -> health.Verdict:
    from rio.cli.main import _connect
    from rio.protocol.errors import RioError
    deadline = started + args.timeout
    try:
        conn = _connect(args)
    except RioError as err:
        return health.unreachable(err.kind, err.message, args.instance)
    try:
        replies: dict[str, Any] = {}
        sent_at = time.monotonic()
        core_ms: list[float] = []
        remaining = max(0.05, deadline - sent_at)

        def core_answered(reply: Any) -> None:
            core_ms.append((time.monotonic() - sent_at) * 1000)
            replies["core"] = reply

        conn.request("system.status", {}, lambda reply: replies.__setitem__("status", reply),
                     timeout=remaining)
        conn.request(health.CORE_PROBE, {}, core_answered, timeout=remaining)
        while len(replies) < 2:
            conn.wait(max(0.01, deadline - time.monotonic()))
    finally:
        conn.close()
    return judge(replies["status"], replies["core"], core_ms[0], args.process, args.instance)


def judge(status_reply: Any, core_reply: Any, core_ms: float, only: list[str] | None,
          instance: str | None) -> health.Verdict:
    from actors.bus.client import result_of
    from rio.protocol.errors import RioError
    try:
        status = result_of(status_reply)
    except RioError as err:     # the supervisor did not answer in time
        return health.unreachable(err.kind, err.message, instance)
    try:
        result_of(core_reply)
        core = health.CoreAnswer(True, core_ms)
    except RioError as err:
        core = health.CoreAnswer(False, core_ms, err.kind, err.message)
    return health.judge(status, core, only)
