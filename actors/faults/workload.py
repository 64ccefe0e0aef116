"""The workload of ``rio faults``: a bus client with frame faults, and the typist.

The typist inserts unique token lines into one file through ``buffer.replace`` (its own mirror
of the text picks the positions; it is the only writer) and saves now and then; it remembers
every token the core acknowledged and what the file on disk may hold, which is what the edit
and disk invariants are checked against (rio/faults/report.py).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from actors.bus.client import Endpoints, connect, result_of
from rio.faults.report import count_edits, disk_verdict
from rio.protocol.errors import BusError, DocumentError, FileError
from rio.protocol.frames import Reply, Request, encode

RECOVER_TIMEOUT_S = 20.0
EDIT_TIMEOUT_S = 3.0
DROP_WAIT_S = 0.3        # the client's timeout for a dropped frame before it resends

class Client:
    """One bus connection used from the harness's thread, with client-layer frame faults."""

    def __init__(self, endpoints: Endpoints) -> None:
        self.conn = connect(endpoints, name="faults", subscribe=("fake.",), timeout=10)
        self.deltas = 0
        self.conn.subscribe("fake.delta", self._on_delta)

    def _on_delta(self, _event: Any) -> None:
        self.deltas += 1

    def close(self) -> None:
        self.conn.close()

    def call(self, op: str, args: dict[str, Any] | None = None, *, timeout: float = 10.0,
             request_id: str | None = None, frame_fault: str | None = None,
             rng: random.Random | None = None) -> Any:
        """A request; ``frame_fault`` drop / dup / delay acts on the outgoing frame."""
        conn = self.conn
        rid = request_id or conn.next_id()
        box: list[Any] = []
        if frame_fault == "drop":
            # The frame never leaves; the client's short timeout fires and it resends the
            # SAME id, as a client that cannot tell a lost request from a lost reply must.
            self._wait(box, DROP_WAIT_S)
        elif frame_fault == "delay":
            time.sleep((rng or random).uniform(0.005, 0.08))
        conn.request(op, args or {}, box.append, timeout=timeout, request_id=rid)
        if frame_fault == "dup":
            conn.send_raw(encode(Request(rid, op, dict(args or {}))))
        if not self._wait(box, timeout + 0.5):
            raise BusError("timeout", f"No reply to {op} after {timeout:g} s.", op=op)
        return result_of(box[0])

    def _wait(self, box: list[Reply], seconds: float) -> bool:
        return self.conn.wait_for(lambda: box, seconds)

    def pump(self) -> None:
        self.conn.drain()


TRANSIENT = ("bus.timeout", "bus.actor_dead", "bus.no_route", "bus.unreachable", "bus.closed")


class _Instance(Protocol):
    root: Path


class Bench(Protocol):
    """What a workload uses of the harness that runs it (actors/faults/harness.py); read
    only, so the harness may hold a wider type (its instance) or a property (its client)."""

    @property
    def client(self) -> Client: ...
    @property
    def tag(self) -> str: ...
    @property
    def rng(self) -> random.Random: ...
    @property
    def instance(self) -> _Instance: ...


class Typist:
    """Types unique token lines into one file and keeps what the core acknowledged."""

    def __init__(self, harness: Bench, rel_path: str) -> None:
        self.h = harness
        self.rel = rel_path
        self.path = harness.instance.root / rel_path
        self.bid = ""
        self.text = ""
        self.acked: list[str] = []
        self.count = 0
        self.allowed: list[bytes | None] = []  # what the file on disk may hold right now

    def open(self) -> None:
        summary = self._retry(lambda: self.h.client.call("buffer.open", {"path": self.rel}))
        self.bid = summary["buffer"]
        self.text = self._retry(lambda: self.h.client.call(
            "buffer.text", {"buffer": self.bid}))["text"]
        if not self.allowed:
            self.allowed = [self._disk()]

    def _disk(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None

    def _retry(self, fn: Callable[[], Any], deadline_s: float = RECOVER_TIMEOUT_S) -> Any:
        deadline = time.monotonic() + deadline_s
        while True:
            try:
                return fn()
            except DocumentError as err:
                if err.kind != "buffer.unknown_buffer" or time.monotonic() > deadline:
                    raise
                self.open()   # a restarted core did not bring back a clean buffer: reopen
            except BusError as err:
                if err.kind not in TRANSIENT or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def fetch(self) -> str:
        self.text = self._retry(lambda: self.h.client.call(
            "buffer.text", {"buffer": self.bid}, timeout=EDIT_TIMEOUT_S))["text"]
        return self.text

    def type_one(self, frame_fault: str | None = None) -> float:
        """Insert one token line; returns the seconds until it was acknowledged."""
        self.count += 1
        token = f"<{self.h.tag}-{self.count:05d}>"
        line = token + "\n"
        started = time.monotonic()
        deadline = started + RECOVER_TIMEOUT_S
        fault = frame_fault
        rid = None
        while True:
            bounds = [0] + [i + 1 for i, c in enumerate(self.text) if c == "\n"]
            pos = self.h.rng.choice(bounds)
            try:
                self.h.client.call("buffer.replace", {"buffer": self.bid, "start": pos,
                                                      "end": pos, "text": line,
                                                      "origin": "faults"},
                                   timeout=EDIT_TIMEOUT_S, request_id=rid, frame_fault=fault,
                                   rng=self.h.rng)
                self.text = self.text[:pos] + line + self.text[pos:]
                self.acked.append(token)
                return time.monotonic() - started
            except DocumentError as err:
                if err.kind != "buffer.unknown_buffer" or time.monotonic() > deadline:
                    raise
                self.open()
            except BusError as err:
                if err.kind not in TRANSIENT or time.monotonic() > deadline:
                    raise
                # No reply: did it land? (An applied edit is journalled before its reply.)
                if token in self.fetch():
                    self.acked.append(token)
                    return time.monotonic() - started
            fault = None
            rid = None

    def save(self, fail: dict[str, Any] | None = None) -> bool:
        """Save; True when the save reported success. Updates what the disk may hold."""
        text = self.fetch()
        new = text.encode()
        old = self._disk()
        self.allowed = [old, new]
        if fail is not None:
            self.h.client.call("system.fault", {"fault": "save_fail", "params": fail})
        try:
            self.h.client.call("buffer.save", {"buffer": self.bid}, timeout=10)
        except FileError as err:
            if err.kind != "file.save_failed":
                raise
            self.allowed = [old]          # a failed save must leave the old file intact
            return False
        except BusError as err:
            if err.kind not in TRANSIENT:
                raise
            return False                  # ambiguous (core gone mid-save): old or new
        else:
            self.allowed = [new]
            return True
        finally:
            if fail is not None:
                self.h.client.call("system.fault", {"fault": "clear"})

    def check(self) -> tuple[int, int, int]:
        """(lost, duplicated, corrupt) right now."""
        text = self.fetch()
        lost, duplicated = count_edits(text, self.acked)
        actual = self._disk()
        corrupt = 0 if disk_verdict(actual, self.allowed) else 1
        self.allowed = [actual]
        return lost, duplicated, corrupt
