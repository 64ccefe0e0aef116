"""The editor's display-free rules: where the cursor goes when a remote change lands, and what
waits for the editor to be quiet. Used by :class:`ui.tk.editor.tab.EditorTab`; no Tk here, so the
rules are tested without a display (tests/desktop/editor/test_editor_model.py).

*Quiet* means the core has applied everything this editor sent: no local edit in flight (the
replica's ``pending``) and no ``buffer.apply`` batch whose change has not come back yet. Save,
undo, block indent and the find dialog's Replace all wait for it, so offsets computed from the
editor's text are the core's offsets and a save holds every key typed before it.
"""

from __future__ import annotations

from collections.abc import Callable

Action = Callable[[], None]


def cursor_after(cursor: int, start: int, end: int, new_length: int, undoing: bool) -> int:
    """The cursor's offset after ``[start, end)`` became ``new_length`` characters.

    Undo and redo put the cursor after what they restored (where the change happened). Any
    other change keeps the cursor on the text it was on: before the change it stays; after it,
    it moves with the text; inside a replaced block it keeps its distance from the block's start,
    at most to the block's new end (Tk would push it past an insert or drop it to the start).
    """
    if undoing:
        return start + new_length
    if start <= cursor <= end:
        return start + min(cursor - start, new_length)
    if cursor > end:
        return cursor + new_length - (end - start)
    return cursor


class QuietQueue:
    """What waits for quiet, and what waits for the replica to reach a version.

    ``busy`` arguments say whether the replica has local edits in flight (or no text yet); the
    queue adds the batches it was told of. Callers run the actions it hands back.
    """

    def __init__(self) -> None:
        self._waiting: list[Action] = []
        self._at_version: list[tuple[int, Action]] = []
        self.batches = 0                 # buffer.apply requests whose change is not back yet

    def quiet(self, busy: bool) -> bool:
        return not busy and not self.batches

    def when_quiet(self, fn: Action, busy: bool) -> bool:
        """Queue ``fn`` unless quiet now; True when the caller should run it at once."""
        if self.quiet(busy):
            return True
        self._waiting.append(fn)
        return False

    def take_quiet(self, busy: bool) -> list[Action]:
        """The actions to run now that the editor may be quiet (none if it is not)."""
        if not self.quiet(busy):
            return []
        waiting, self._waiting = self._waiting, []
        return waiting

    def batch_sent(self) -> None:
        self.batches += 1

    def batch_done(self) -> None:
        self.batches = max(0, self.batches - 1)

    def at_version(self, version: int, fn: Action) -> None:
        """Run ``fn`` (via :meth:`due`) once the replica's version reaches ``version``."""
        self._at_version.append((version, fn))

    def due(self, version: int) -> list[Action]:
        """The actions whose version the replica has reached, in the order they were queued."""
        due = [fn for v, fn in self._at_version if v <= version]
        self._at_version = [(v, fn) for v, fn in self._at_version if v > version]
        return due

    def reset(self) -> list[Action]:
        """A fresh text was loaded: batches and versions start over; returns what waited for
        quiet (the text is live and quiet now)."""
        waiting, self._waiting = self._waiting, []
        self.batches, self._at_version = 0, []
        return waiting
