"""Document: the text of one open file, its versions and its undo history.

Every applied change bumps ``version`` by one, undo and redo included, and is returned as a
:class:`Change` the actor broadcasts. An edit made on an older version (a client that had not yet
seen the latest changes) is transformed over the changes since (rio/text/transform.py, ADR-0005).

Undo is one linear history for the whole document, whoever made the edits: the UI's Ctrl+Z
undoes an agent's turn too, which is the point of merging a turn into one step "Agent: <message>".
A linear history is also what keeps undo exact: the top step is always the latest thing that
happened to the text, so its recorded offsets are still valid when it is undone.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from itertools import islice
from typing import Any, Callable, Sequence

from rio.protocol.errors import DocumentError
from rio.text.text import ChunkedText
from rio.text.transform import Edit, RangeEdit, transform_edit

#: Typing joins one undo step until a pause longer than this (seconds, by the injected clock).
TYPING_PAUSE = 1.0
#: A typing run longer than this starts a new step (holding a key down never reaches a word
#: boundary, and joining copies the step's change tuple).
TYPING_RUN_LIMIT = 200
#: How many past changes are kept to transform stale edits; older base versions are refused.
HISTORY_LIMIT = 100_000
#: How many undo steps are kept; the oldest are forgotten first.
UNDO_LIMIT = 10_000
#: How much text the undo history may hold, in characters (inserted + removed text of every
#: step, redo steps included); the oldest steps are forgotten first and the newest step is always
#: kept. The log of recent changes (for stale edits) has the same bound. Without it 400
#: paste/delete pairs of 1 MB grew a core to 881 MB. config.toml ``[editor] undo_mb`` sets it.
UNDO_TEXT_LIMIT = 64 * 1024 * 1024

EDIT, UNDO, REDO = "edit", "undo", "redo"


@dataclass(frozen=True, slots=True)
class Change:
    """One change as applied: ``[start, end)`` of the text before it was replaced by ``text``.

    ``version`` is the document's version after the change. ``kind`` is ``"edit"`` for a change a
    client asked for, ``"undo"``/``"redo"`` for the steps of an undo or redo; a replica uses it to
    tell the acknowledgement of its own request from an undo it asked for.
    """

    version: int
    start: int
    end: int
    text: str
    removed: str
    origin: str
    label: str
    kind: str = EDIT

    @property
    def is_noop(self) -> bool:
        return self.start == self.end and not self.text


@dataclass(frozen=True, slots=True)
class _Step:
    """One undo step: changes in the order they were applied."""

    id: int                   # names the text state right after this step (for `dirty`)
    label: str
    origin: str
    changes: tuple[Change, ...]
    applied_at: int           # version when the step was last applied (pushed, joined or redone)
    typing: str | None        # "type" / "erase" while a typing run may still join this step
    last_time: float


def _weight(change: Change) -> int:
    return len(change.text) + len(change.removed)


def _step_weight(step: _Step) -> int:
    return sum(len(c.text) + len(c.removed) for c in step.changes)


@dataclass(slots=True)
class _Savepoint:
    """What :meth:`Document.atomic` needs to put the document back as it was.

    An op changes the undo and redo stacks only at their tops (plus the oldest undo steps it
    evicts), so the tops, the lengths and the evicted items are enough: no copy of the history.
    """

    version: int
    undo_len: int
    undo_top: _Step | None
    redo: list[_Step]
    redo_len: int
    redo_top: _Step | None
    next_state: int
    base_state: int
    group_open: bool
    undo_chars: int
    log_chars: int
    applied: list[Change] = field(default_factory=list)
    undo_evicted: list[_Step] = field(default_factory=list)
    log_evicted: list[Change] = field(default_factory=list)


def _typing_kind(start: int, end: int, text: str) -> str | None:
    if start == end and len(text) == 1:
        return "type"
    if end - start == 1 and not text:
        return "erase"
    return None


def _default_label(start: int, end: int, text: str) -> str:
    kind = _typing_kind(start, end, text)
    if kind == "type":
        return "Typing"
    if not text:
        return "Delete"
    if start == end:
        return "Paste"
    return "Replace"


def _stale(message: str) -> DocumentError:
    return DocumentError("buffer.stale_version", message,
                       "Reload the document (buffer.text) and redo the edit.")


class Document:
    """Text + versions + undo/redo; see the module docstring."""

    def __init__(self, text: str | ChunkedText = "", *,
                 clock: Callable[[], float] = time.monotonic,
                 version: int = 0, history_limit: int = HISTORY_LIMIT,
                 undo_limit: int = UNDO_LIMIT, undo_text_limit: int = UNDO_TEXT_LIMIT) -> None:
        # a ChunkedText is taken as it is (a file decoded straight into chunks)
        self.buffer = text if isinstance(text, ChunkedText) else ChunkedText(text)
        self.version = version
        self._clock = clock
        self._log: deque[Change] = deque()
        self._history_limit = history_limit
        self._undo: list[_Step] = []
        self._redo: list[_Step] = []
        self._undo_limit = undo_limit
        self._text_limit = undo_text_limit
        self._undo_chars = 0      # text held by the undo and redo steps
        self._log_chars = 0       # text held by the change log
        self._savepoint: _Savepoint | None = None
        self._next_state = 1
        self._base_state = 0      # the state with every remembered step undone
        self._saved_state: int | None = 0
        self._group_open = False  # may the next keystroke join the top step?

    # --- reading ------------------------------------------------------------------------------

    def text(self) -> str:
        return self.buffer.text()

    def slice(self, start: int, end: int) -> str:
        return self.buffer.slice(start, end)

    def __len__(self) -> int:
        return len(self.buffer)

    def changes_since(self, version: int) -> list[Change]:
        """The changes after ``version``, oldest first (stale_version if no longer kept)."""
        if not isinstance(version, int) or version > self.version:
            raise DocumentError("buffer.bad_version",
                              f"Version {version!r} is not one this document has had "
                              f"(it is at {self.version}).",
                              "Use the version from the last buffer.changed or buffer.text.")
        count = self.version - version
        if count > len(self._log):
            raise _stale(f"Version {version} is too old: only the last {len(self._log)} "
                         f"changes are kept.")
        if count == 0:
            return []
        return list(islice(reversed(self._log), count))[::-1]

    # --- editing ------------------------------------------------------------------------------

    def replace(self, start: int, end: int, text: str, *, origin: str = "user",
                base_version: int | None = None, label: str | None = None) -> Change:
        """Replace ``[start, end)`` of the text at ``base_version`` (default: now) with ``text``.

        Always returns a Change and bumps the version, even when transforming left nothing to do
        (a no-op change), so a client can count the acknowledgements of its requests.
        """
        return self.apply([(start, end, text)], origin=origin, base_version=base_version,
                          label=label)[0]

    def apply(self, edits: Sequence[tuple[Any, ...] | list[Any] | RangeEdit], *, origin: str = "user",
              base_version: int | None = None, label: str | None = None) -> list[Change]:
        """Several edits made on the same version, applied as ONE undo step.

        The edits are treated as concurrent: each is transformed over the changes since
        ``base_version`` and over the earlier edits of the list (so their order only matters on
        ties, where the earlier one stays first). Replace-all and an agent's batch use this.
        """
        # Triples arrive as lists from msgpack, or as Edit/Change records from Python callers.
        plain = [tuple(e) if isinstance(e, (tuple, list)) else (e.start, e.end, e.text)
                 for e in edits]
        if any(len(e) != 3 for e in plain):
            raise DocumentError("buffer.bad_range", "Each edit must be [start, end, text].",
                              "Send edits as [start, end, text] triples.")
        if not plain:
            return []
        landed = self.changes_since(self.version if base_version is None else base_version)
        base_length = len(self.buffer) - sum(len(c.text) - (c.end - c.start) for c in landed)
        for start, end, text in plain:
            if (not isinstance(start, int) or not isinstance(end, int)
                    or not isinstance(text, str) or not 0 <= start <= end <= base_length):
                raise DocumentError("buffer.bad_range",
                                  f"The range {start!r}..{end!r} is outside the document "
                                  f"(0..{base_length} at the version it was made on).",
                                  "Ask for the document's text and version, then edit again.")
        if len(plain) == 1 and not landed:
            start, end, text = plain[0]
            return [self._edit(start, end, text, origin, label)]
        applied: list[Change] = []
        for start, end, text in plain:
            moved = Edit(start, end, text)
            for change in landed:
                moved = transform_edit(moved, change)
            for change in applied:
                moved = transform_edit(moved, change)
            applied.append(self._apply(moved.start, moved.end, moved.text, origin,
                                       label or _default_label(moved.start, moved.end,
                                                               moved.text), EDIT))
        if len(applied) == 1:
            self._record_single(applied[0], label)
        else:
            real = tuple(c for c in applied if not c.is_noop)
            if real:
                self._push(_Step(self._new_state(), label or "Replace", origin, real,
                                 self.version, None, self._clock()))
        return applied

    def _edit(self, start: int, end: int, text: str, origin: str, label: str | None) -> Change:
        change = self._apply(start, end, text, origin, label or _default_label(start, end, text),
                             EDIT)
        self._record_single(change, label)
        return change

    def _record_single(self, change: Change, label: str | None) -> None:
        """Put one applied edit into the undo history: join the typing run or start a step."""
        if change.is_noop:
            return
        now = self._clock()
        kind = None if label else _typing_kind(change.start, change.end, change.text)
        top = self._undo[-1] if self._undo else None
        if kind and top and self._joins(top, change, kind, now):
            self._undo[-1] = dc_replace(top, changes=top.changes + (change,),
                                        applied_at=self.version, last_time=now)
            self._clear_redo()
            self._undo_chars += _weight(change)
            self._trim_undo()
            return
        self._push(_Step(self._new_state(), change.label, change.origin, (change,),
                         self.version, kind, now))
        self._group_open = kind is not None

    def _joins(self, top: _Step, change: Change, kind: str, now: float) -> bool:
        if not self._group_open or top.typing != kind or top.origin != change.origin:
            return False
        if now - top.last_time > TYPING_PAUSE or len(top.changes) >= TYPING_RUN_LIMIT:
            return False
        # A run of typing is one step until a pause or a cursor move (not adjacent), across
        # words: what the user guide promises and what users expect of Ctrl+Z.
        last = top.changes[-1]
        if kind == "type":
            return change.start == last.start + 1
        # backspace deletes the character before the last one; Delete the one after
        return change.end == last.start or change.start == last.start

    def _apply(self, start: int, end: int, text: str, origin: str, label: str,
               kind: str) -> Change:
        removed = self.buffer.replace(start, end, text)
        self.version += 1
        change = Change(self.version, start, end, text, removed, origin, label, kind)
        self._log.append(change)
        self._log_chars += _weight(change)
        while len(self._log) > 1 and (len(self._log) > self._history_limit
                                      or self._log_chars > self._text_limit):
            old = self._log.popleft()
            self._log_chars -= _weight(old)
            if self._savepoint is not None:
                self._savepoint.log_evicted.append(old)
        if self._savepoint is not None:
            self._savepoint.applied.append(change)
        return change

    def _new_state(self) -> int:
        state = self._next_state
        self._next_state += 1
        return state

    def _push(self, step: _Step) -> None:
        self._undo.append(step)
        self._clear_redo()
        self._undo_chars += _step_weight(step)
        self._trim_undo()

    def _clear_redo(self) -> None:
        # A new list, not clear(): a savepoint may hold the old one to put it back.
        if self._redo:
            self._undo_chars -= sum(_step_weight(s) for s in self._redo)
            self._redo = []

    def _trim_undo(self) -> None:
        """Forget the oldest steps past the step count or the text bound (never the newest)."""
        while self._undo and (len(self._undo) > self._undo_limit
                              or (self._undo_chars > self._text_limit and len(self._undo) > 1)):
            dropped = self._undo.pop(0)
            self._base_state = dropped.id
            self._undo_chars -= _step_weight(dropped)
            if self._savepoint is not None:
                self._savepoint.undo_evicted.append(dropped)

    @property
    def undo_chars(self) -> int:
        """Characters of text the undo and redo history holds (bounded by ``undo_text_limit``)."""
        return self._undo_chars

    # --- all or nothing -----------------------------------------------------------------------

    def atomic(self) -> "_Atomic":
        """``with doc.atomic():`` everything inside happens entirely, or (on an exception) not
        at all.

        The buffer uses it to apply an edit, journal it, and take the edit back if the journal
        cannot be written: an edit is acknowledged only once it is journaled (ADR-0006).
        It covers what edits do (replace, apply, undo, redo); ``merge_since`` is not journaled
        and is not taken back. (A class, not @contextmanager: it runs on every keystroke.)
        """
        return _Atomic(self)

    def _begin(self) -> bool:
        if self._savepoint is not None:   # nested: part of the outer one
            return False
        undo, redo = self._undo, self._redo
        self._savepoint = _Savepoint(self.version, len(undo), undo[-1] if undo else None, redo,
                                     len(redo), redo[-1] if redo else None, self._next_state,
                                     self._base_state, self._group_open, self._undo_chars,
                                     self._log_chars)
        return True

    def _rollback(self, sp: _Savepoint) -> None:
        for change in reversed(sp.applied):
            self.buffer.replace(change.start, change.start + len(change.text), change.removed)
        applied = {id(c) for c in sp.applied}
        while self._log and id(self._log[-1]) in applied:
            self._log.pop()
        for change in reversed(sp.log_evicted):
            if id(change) not in applied:
                self._log.appendleft(change)
        self._undo[0:0] = sp.undo_evicted
        del self._undo[max(sp.undo_len - 1, 0):]
        if sp.undo_top is not None:
            self._undo.append(sp.undo_top)
        self._redo = sp.redo
        del self._redo[max(sp.redo_len - 1, 0):]
        if sp.redo_top is not None:
            self._redo.append(sp.redo_top)
        self.version = sp.version
        self._next_state, self._base_state = sp.next_state, sp.base_state
        self._group_open = sp.group_open
        self._undo_chars, self._log_chars = sp.undo_chars, sp.log_chars

    # --- undo ---------------------------------------------------------------------------------

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    @property
    def undo_label(self) -> str | None:
        return self._undo[-1].label if self._undo else None

    @property
    def redo_label(self) -> str | None:
        return self._redo[-1].label if self._redo else None

    def undo(self, origin: str = "user") -> list[Change]:
        if not self._undo:
            raise DocumentError("buffer.nothing_to_undo", "There is nothing to undo.",
                              "Make an edit first.")
        step = self._undo.pop()
        self._group_open = False
        changes = [self._apply(c.start, c.start + len(c.text), c.removed, origin, step.label, UNDO)
                   for c in reversed(step.changes)]
        self._redo.append(step)
        return changes

    def redo(self, origin: str = "user") -> list[Change]:
        if not self._redo:
            raise DocumentError("buffer.nothing_to_redo", "There is nothing to redo.",
                              "Undo something first.")
        step = self._redo.pop()
        self._group_open = False
        changes = [self._apply(c.start, c.end, c.text, origin, step.label, REDO)
                   for c in step.changes]
        again = dc_replace(step, changes=tuple(changes), applied_at=self.version, typing=None)
        self._undo.append(again)
        self._undo_chars += _step_weight(again) - _step_weight(step)
        return changes

    def merge_since(self, version: int, label: str) -> int:
        """Merge every undo step applied after ``version`` into one step called ``label``.

        The rule is "all steps since": an agent's turn becomes one step even if the user typed
        during it, because the turn's edits and the user's interleave in one linear history and
        cannot be undone apart exactly. A step that was still growing at ``version`` counts as
        applied after it. Returns how many steps were merged (0: nothing happened since).
        """
        if not isinstance(version, int) or not 0 <= version <= self.version:
            raise DocumentError("buffer.bad_version",
                              f"Version {version!r} is not one this document has had.",
                              "Use a version from buffer.changed or buffer.text.")
        count = 0
        while count < len(self._undo) and self._undo[-1 - count].applied_at > version:
            count += 1
        self._group_open = False
        if count == 0:
            return 0
        steps = self._undo[-count:]
        del self._undo[-count:]
        # The merged step ends in the same text state as its last step, so it keeps that id.
        self._undo.append(_Step(steps[-1].id, label, steps[0].origin,
                                tuple(c for s in steps for c in s.changes),
                                steps[-1].applied_at, None, steps[-1].last_time))
        return count

    # --- saved state --------------------------------------------------------------------------

    def _state(self) -> int:
        return self._undo[-1].id if self._undo else self._base_state

    def mark_saved(self) -> None:
        """The text now is what is on disk. Closes the typing run so the saved state stays put."""
        self._saved_state = self._state()
        self._group_open = False

    @property
    def dirty(self) -> bool:
        return self._state() != self._saved_state

    def __repr__(self) -> str:
        return (f"Document(version={self.version}, len={len(self.buffer)}, "
                f"undo={len(self._undo)}, redo={len(self._redo)}, dirty={self.dirty})")



class _Atomic:
    """The context manager of :meth:`Document.atomic`."""

    __slots__ = ("doc", "outer")

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.outer = False

    def __enter__(self) -> None:
        self.outer = self.doc._begin()

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if not self.outer:
            return
        sp = self.doc._savepoint
        self.doc._savepoint = None
        if kind is not None and sp is not None:
            self.doc._rollback(sp)
