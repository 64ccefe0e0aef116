"""The ``stale_resend`` scenario of ``rio faults``: clients that resend across a core restart
(ADR-0020; the harness is actors/faults/harness.py).

A client types with ``base_version`` (as the desktop does) and the core is killed with one edit
in flight, whose reply never comes. After the restart the client does what a client that cannot
tell a lost request from a lost reply must: it resends the *same* request id with the *same*,
now stale, base version — and also replays an edit the core had already acknowledged. The
contract: a resend of an edit the journal holds is answered ``already_applied`` and never applied
twice; an edit the crash lost is refused ``buffer.stale_base`` (never transformed against the
recovered history) and typed again on a fresh copy. The checks: no acknowledged token lost, none
duplicated, the text equal to the journal's.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from actors.faults.journal_scenarios import _kill_core
from actors.faults.workload import Client, Typist
from rio.protocol.errors import DocumentError, RioError


class ResendBench(Protocol):
    @property
    def client(self) -> Client: ...      # read only: the harness's is a property
    typist: Typist | None
    rng: Any
    tag: str
    pacer: Any

    def _workload(self, edits: int) -> None: ...
    def _wait_back(self, name: str, old_pid: int, started: float
                   ) -> tuple[bool, float | None]: ...
    def _check(self, scenario: str, fault: str, target: str, recovered: bool,
               recover_s: float | None, note: str = "") -> Any: ...


def _edit(typist: Typist, token: str, version: int) -> dict[str, Any]:
    return {"buffer": typist.bid, "start": 0, "end": 0, "text": token + "\n",
            "base_version": version, "origin": "faults"}


def scenario_stale_resend(h: ResendBench) -> None:
    assert h.typist is not None
    typist = h.typist
    h._workload(h.rng.randint(1, 3))
    conn = h.client.conn
    snap = h.client.call("buffer.text", {"buffer": typist.bid}, timeout=10)
    version = int(snap["version"])
    # One edit acknowledged before the crash, with its request id remembered.
    typist.count += 1
    acked_token = f"<{h.tag}-{typist.count:05d}>"
    acked_rid = conn.next_id()
    reply = h.client.call("buffer.replace", _edit(typist, acked_token, version),
                          request_id=acked_rid, timeout=10)
    typist.acked.append(acked_token)
    # One edit in flight when the core dies: sent, and the core killed before its reply.
    typist.count += 1
    flying_token = f"<{h.tag}-{typist.count:05d}>"
    flying_rid = conn.next_id()
    flying_base = int(reply["version"])
    conn.request("buffer.replace", _edit(typist, flying_token, flying_base), lambda _r: None,
                 timeout=30, request_id=flying_rid)
    name, pid, started = _kill_core(h)  # type: ignore[arg-type]
    ok, took = h._wait_back(name, pid, started)
    note = ""
    if ok:
        note = _resend_after_restart(h, typist, acked_token, acked_rid, version,
                                     flying_token, flying_rid, flying_base)
    typist.fetch()
    h._check("stale_resend", "kill -9 + resend", name, ok and not note, took, note)


def _resend_after_restart(h: ResendBench, typist: Typist, acked_token: str, acked_rid: str,
                          acked_base: int, flying_token: str, flying_rid: str,
                          flying_base: int) -> str:
    """The resends; returns what went wrong ("" when the contract held)."""
    # The acknowledged edit, replayed under its id: answered, never applied again.
    try:
        again = h.client.call("buffer.replace", _edit(typist, acked_token, acked_base),
                              request_id=acked_rid, timeout=10)
    except RioError as err:
        return f"an acknowledged edit's resend was refused: {err.kind}"
    if not again.get("already_applied"):
        return "an acknowledged edit's resend was not answered already_applied"
    # The edit in flight: either the journal has it (already applied) or it was lost with the
    # crash and its stale base is refused; then it is typed again on a fresh copy.
    deadline = time.monotonic() + 10
    while True:
        try:
            answer = h.client.call("buffer.replace", _edit(typist, flying_token, flying_base),
                                   request_id=flying_rid, timeout=10)
            if not answer.get("already_applied"):
                return "a resend with a stale base was applied instead of refused"
            typist.acked.append(flying_token)
            return ""
        except DocumentError as err:
            if err.kind == "buffer.stale_base":
                fresh = h.client.call("buffer.text", {"buffer": typist.bid}, timeout=10)
                if flying_token in fresh["text"]:
                    return "stale_base refused an edit the text already holds"
                h.client.call("buffer.replace", _edit(typist, flying_token,
                                                      int(fresh["version"])), timeout=10)
                typist.acked.append(flying_token)
                return ""
            if err.kind != "buffer.unknown_buffer" or time.monotonic() > deadline:
                return f"the resend failed: {err.kind}"
            time.sleep(0.05)
