"""Replica: a client's copy of a document that it edits at once and keeps in step with the core.

The UI and each agent hold one. Local edits apply to the local text immediately (no round trip
on a keystroke) and go to the core as :class:`Request` records; the core (the one order, see
rio/text/document.py) applies them, transforming over whatever landed first, and broadcasts every
change to everyone. This is central-server OT in the Jupiter style (ADR-0005):

* **One request in flight.** A replica sends its next edit only after the core has acknowledged
  the previous one, so every request is based on a version that already contains all of its
  author's earlier edits. The core then only ever transforms a request over *other* clients'
  changes, and the replica's own transform of the same pair gives the same result (TP1). Edits
  made meanwhile wait in ``pending`` and are kept transformed; ``take_request()`` hands out the
  next one after an acknowledgement. The wait is one bus round trip (~0.2 ms measured, ADR-0005), far
  below typing speed, and the local text never waits.
* **Acknowledgement by origin and order.** A change from the core with this replica's ``origin``
  and kind ``"edit"`` is the answer to the request in flight (undo/redo changes have other kinds).
  Each replica needs its own origin string.
* Remote changes are transformed over the pending local edits (the change from the core wins
  ties: it landed first) and returned as the edits to apply to the local view.
* **A core restart costs no keystroke** (ADR-0020). Each request has an id of its own. When the
  core goes away (:meth:`go_offline`) the replica keeps taking local edits and sends nothing;
  the request that was in flight is resent under the same id (:attr:`sent`): the core answers
  "already applied" if it is in the recovered text, or refuses its old base
  (``buffer.stale_base``). :meth:`rebase` then takes the core's text and version and moves the
  edits still to send onto it; the view gets one edit — none at all when nothing was lost, so
  the cursor and the scroll stay where they were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from rio.protocol.errors import DocumentError
from rio.text.document import EDIT, Change
from rio.text.text import ChunkedText
from rio.text.transform import Edit, transform_edit


@dataclass(frozen=True, slots=True)
class Request:
    """What to send to the core: ``buffer.replace {start, end, text, base_version, origin}``."""

    start: int
    end: int
    text: str
    base_version: int
    origin: str
    id: str = ""      # the request id to send it under; a resend uses the same one


def _resync(message: str) -> DocumentError:
    return DocumentError("buffer.out_of_sync", message,
                       "Reload the document (buffer.text) and start a new replica.")


class Replica:
    """Local text + pending unacknowledged edits; see the module docstring."""

    def __init__(self, text: str, version: int, origin: str) -> None:
        self.buffer = ChunkedText(text)
        self.version = version
        self.origin = origin
        self._pending: list[Edit] = []
        self._in_flight = False
        #: the core's text at ``version``; None while it equals ``buffer`` (nothing pending yet)
        self._confirmed: ChunkedText | None = None
        self._sent: Request | None = None
        self._count = 0
        #: the core is away: local edits are kept, nothing is sent until :meth:`rebase`
        self.offline = False

    @property
    def text(self) -> str:
        return self.buffer.text()

    @property
    def pending(self) -> tuple[Edit, ...]:
        """Local edits the core has not acknowledged, oldest (the one in flight) first."""
        return tuple(self._pending)

    @property
    def in_flight(self) -> bool:
        return self._in_flight

    def local_edit(self, start: int, end: int, text: str) -> Request | None:
        """Apply a local edit now; returns the request to send, or None if it has to wait.

        A waiting edit is sent later through :meth:`take_request`. An edit that changes nothing
        is dropped.
        """
        if self._confirmed is None:
            self._confirmed = self.buffer.copy()   # once: from now on it follows the core
        self.buffer.replace(start, end, text)  # raises buffer.bad_range before any bookkeeping
        if start == end and not text:
            return None
        self._pending.append(Edit(start, end, text))
        return self.take_request()

    def take_request(self) -> Request | None:
        """The next pending edit to send, if none is in flight; call it after each change."""
        if self._in_flight or self.offline:
            return None
        # A waiting edit that remote changes reduced to nothing need not travel at all.
        while self._pending and self._pending[0].is_noop:
            self._pending.pop(0)
        if not self._pending:
            return None
        self._in_flight = True
        first = self._pending[0]
        self._count += 1
        self._sent = Request(first.start, first.end, first.text, self.version, self.origin,
                             f"{self.origin}#{self._count}")
        return self._sent

    @property
    def core_text(self) -> str:
        """The text as the core last confirmed it (``text`` without the pending edits)."""
        return (self.buffer if self._confirmed is None else self._confirmed).text()

    @property
    def sent(self) -> Request | None:
        """The request in flight, as it was sent (resend it under the same id)."""
        return self._sent if self._in_flight else None

    def go_offline(self) -> None:
        """The core went away (or this copy missed changes): keep editing, send nothing, and
        find out whether :attr:`sent` was applied before calling :meth:`rebase`."""
        self.offline = True

    def rebase(self, text: str, version: int, *, sent_applied: bool) -> list[Edit]:
        """Take the core's ``text`` at ``version`` (after a restart or a gap) and keep every
        local edit the core has not got: they stay pending, moved onto ``text``, and are sent
        from there. ``sent_applied``: the core's text already holds the request in flight (its
        resend was answered), or refused it for good; either way it is not sent again. Returns
        the edits that turn the view into the new local text (none when nothing was lost)."""
        pending = list(self._pending)
        base = (self.buffer if self._confirmed is None else self._confirmed).copy()
        if self._in_flight and sent_applied and pending:
            first = pending.pop(0)
            base.replace(first.start, first.end, first.text)
        landed = _difference(base.text(), text)
        moved: list[Edit] = []
        for mine in pending:
            moved.append(transform_edit(mine, landed))
            landed = transform_edit(landed, mine, wins_ties=True)
        if not landed.is_noop:
            self.buffer.replace(landed.start, landed.end, landed.text)
        self._confirmed = ChunkedText(text)
        self.version = version
        self._pending = moved
        self._in_flight = False
        self._sent = None
        self.offline = False
        return [] if landed.is_noop else [landed]

    def on_event(self, data: Mapping[str, Any]) -> list[Edit]:
        """:meth:`on_change` for a ``buffer.changed`` event's data, as it comes off the bus."""
        try:
            change = Change(int(data["version"]), int(data["start"]), int(data["end"]),
                            str(data["text"]), str(data.get("removed", "")), str(data["origin"]),
                            str(data.get("label", "")), str(data.get("kind", EDIT)))
        except (KeyError, TypeError, ValueError) as exc:
            raise _resync(f"A buffer.changed event was malformed ({exc!r}).") from exc
        return self.on_change(change)

    def on_change(self, change: Change) -> list[Edit]:
        """Take the core's next change; returns the edits to apply to the local view, in order."""
        if change.version != self.version + 1:
            raise _resync(f"Change {change.version} arrived after version {self.version}: "
                          f"a change was missed or repeated.")
        mine_acked = change.origin == self.origin and change.kind == EDIT and self._in_flight
        if mine_acked:
            mine = self._pending[0]
            if (mine.start, mine.end, mine.text) != (change.start, change.end, change.text):
                raise _resync(f"The core applied {change.start}..{change.end} where this copy "
                              f"expected {mine.start}..{mine.end}: the copies diverged.")
        # Checked above, nothing changed yet: a refused change leaves this copy as it was.
        self.version = change.version
        if self._confirmed is not None:
            self._confirmed.replace(change.start, change.end, change.text)
        if mine_acked:
            self._pending.pop(0)
            self._in_flight = False
            self._sent = None
            return []  # already applied locally
        remote = Edit(change.start, change.end, change.text)
        moved: list[Edit] = []
        for mine in self._pending:
            moved.append(transform_edit(mine, remote))
            remote = transform_edit(remote, mine, wins_ties=True)
        self._pending = moved
        if remote.is_noop:
            return []
        self.buffer.replace(remote.start, remote.end, remote.text)
        return [remote]

    def __repr__(self) -> str:
        return (f"Replica({self.origin!r}, version={self.version}, len={len(self.buffer)}, "
                f"pending={len(self._pending)}, in_flight={self._in_flight}, "
                f"offline={self.offline})")


def _difference(old: str, new: str) -> Edit:
    """The one replace that turns ``old`` into ``new`` (common start and end kept)."""
    limit = min(len(old), len(new))
    head = _common(lambda a, b: old[a:b] == new[a:b], limit)
    n, m = len(old), len(new)
    tail = _common(lambda a, b: old[n - b:n - a] == new[m - b:m - a], limit - head)
    return Edit(head, n - tail, new[head:m - tail])


def _common(same: Callable[[int, int], bool], limit: int) -> int:
    """How many leading positions agree, found block by block (slice compares run in C: a
    100 MB document is compared in milliseconds, not a Python loop per character)."""
    done, step = 0, 4096
    while done < limit:
        size = min(step, limit - done)
        if same(done, done + size):
            done += size
            step *= 2
        elif size == 1:
            return done
        else:
            step = max(1, size // 2)
    return done
