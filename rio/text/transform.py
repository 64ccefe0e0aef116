"""Operational transform for single-range replaces (ADR-0005).

Rio's edits are all one shape: replace ``[start, end)`` of the text with ``text``. When two
clients edit the same version concurrently, the core document applies one first and transforms
the other so that it still means what its author meant. The same function, with the tie-break
flipped, lets a replica transform the core's change over its own unacknowledged edits, and the
pair satisfies the convergence property (TP1)::

    apply(apply(S, a), transform_edit(b, a))
        == apply(apply(S, b), transform_edit(a, b, wins_ties=True))

which ``tests/text/test_transform.py`` checks on random texts and edits.

The merged outcome of two concurrent edits ``a`` (landed first) and ``b``:

* Ranges apart: both apply where they were meant to.
* Ranges overlap or touch at a point: every character either edit deleted is deleted, and both
  inserted texts survive, side by side where the ranges met, ordered by where they started. On a
  tie (same start) a pure insertion goes before a replacement of a range (it is outside that
  range); otherwise the change that already landed stays first.
* So a stale edit is clipped to the part of its range that still exists. The one case a single
  range cannot express by clipping -- the stale edit's range reaches past the landed change on
  both sides -- is expressed by replacing the whole span and writing the landed text back in
  its place: nothing anyone typed is lost, and nothing is deleted twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class RangeEdit(Protocol):
    """Anything with a replaced range and an inserted text (an :class:`Edit` or a ``Change``)."""

    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def text(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace ``[start, end)`` (code points) with ``text``."""

    start: int
    end: int
    text: str

    @property
    def is_noop(self) -> bool:
        return self.start == self.end and not self.text


def apply_to_str(text: str, edit: RangeEdit) -> str:
    """The edit applied to a plain string (for tests and small texts)."""
    return text[:edit.start] + edit.text + text[edit.end:]


def _against_goes_first(edit: RangeEdit, against: RangeEdit, wins_ties: bool) -> bool:
    if against.start != edit.start:
        return against.start < edit.start
    edit_inserts = edit.start == edit.end
    against_inserts = against.start == against.end
    if edit_inserts != against_inserts:
        # An insertion at the start of a replaced range lies outside that range: it goes first.
        return against_inserts
    return not wins_ties


def transform_edit(edit: RangeEdit, against: RangeEdit, *, wins_ties: bool = False) -> Edit:
    """``edit``, made on the same text as ``against``, rewritten to apply after ``against``.

    ``wins_ties`` says which of the two landed first: the default (False) is the core's view
    (``against`` is already in the document, so it stays first on a tie); a replica passes True
    when it moves a change from the core over its own pending edit.
    """
    s, e, t = edit.start, edit.end, edit.text
    a_s, a_e, a_t = against.start, against.end, against.text
    delta = len(a_t) - (a_e - a_s)
    # Apart: `against` lies wholly before the edit (it may end where the edit starts) ...
    if a_e < s or (a_e == s and a_s < s):
        return Edit(s + delta, e + delta, t)
    # ... or wholly after it.
    if e < a_s or (e == a_s and s < e):
        return Edit(s, e, t)
    # They overlap or meet at one point: the span [low, high) is deleted by one or the other.
    high = max(e, a_e)
    if _against_goes_first(edit, against, wins_ties):
        # The landed text stays in front; the edit takes what is left of its range after it.
        return Edit(a_s + len(a_t), high + delta, t)
    if e <= a_e:
        # The edit goes in front and its range ends inside the landed one: clip at its start.
        return Edit(s, a_s, t)
    # The edit's range reaches past the landed change on both sides: replace the whole span and
    # keep the landed text, after the edit's own.
    return Edit(s, high + delta, t + a_t)


def transform_through(edit: RangeEdit, changes: "list[RangeEdit] | tuple[RangeEdit, ...]",
                      *, wins_ties: bool = False) -> Edit:
    """``edit`` transformed over a sequence of changes applied one after another."""
    current = Edit(edit.start, edit.end, edit.text)
    for change in changes:
        current = transform_edit(current, change, wins_ties=wins_ties)
    return current
