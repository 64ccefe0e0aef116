"""The editor's display-free rules (ui/tk/editor/model.py), without Tk: where the cursor goes
when a remote change lands, and the queue of what waits for the editor to be quiet."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ui.tk.editor.model import QuietQueue, cursor_after


@st.composite
def change_and_cursor(draw):
    text = draw(st.text(alphabet="ab\n", max_size=30))
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, len(text)))
    new = draw(st.text(alphabet="XY", max_size=10))
    cursor = draw(st.integers(0, len(text)))
    return text, start, end, new, cursor


@given(change_and_cursor())
def test_the_cursor_stays_on_the_text_it_was_on(case):
    text, start, end, new, cursor = case
    after = text[:start] + new + text[end:]
    got = cursor_after(cursor, start, end, len(new), undoing=False)
    assert 0 <= got <= len(after)
    if cursor < start:
        assert got == cursor                                  # before the change: unmoved
    elif cursor > end:
        assert after[got:] == text[cursor:]                   # after it: moves with its text
    else:
        assert start <= got <= start + len(new)              # inside: within the new block
        assert got - start == min(cursor - start, len(new))


def test_undo_puts_the_cursor_after_what_it_restored():
    assert cursor_after(0, 10, 12, 5, undoing=True) == 15
    assert cursor_after(40, 10, 12, 0, undoing=True) == 10


def test_an_insert_at_the_cursor_leaves_the_cursor_before_it():
    # Tk would push the cursor past a remote insert at its position; the user's place is kept.
    assert cursor_after(5, 5, 5, 3, undoing=False) == 5


def test_what_waits_for_quiet_runs_once_nothing_is_in_flight():
    q = QuietQueue()
    ran: list[str] = []
    assert q.when_quiet(lambda: ran.append("now"), busy=False)   # quiet: run at once
    assert not q.when_quiet(lambda: ran.append("save"), busy=True)
    assert q.take_quiet(busy=True) == []                        # keys still in flight
    q.batch_sent()
    assert not q.when_quiet(lambda: ran.append("undo"), busy=False)   # a batch not back yet
    assert q.take_quiet(busy=False) == []
    q.batch_done()
    for fn in q.take_quiet(busy=False):
        fn()
    assert ran == ["save", "undo"]                               # in the order they asked
    assert q.take_quiet(busy=False) == []                        # each runs once


def test_actions_at_a_version_run_when_the_replica_reaches_it_in_order():
    q = QuietQueue()
    ran: list[int] = []
    for v in (7, 5, 9):
        q.at_version(v, lambda v=v: ran.append(v))
    for fn in q.due(6):
        fn()
    assert ran == [5]
    for fn in q.due(9):
        fn()
    assert ran == [5, 7, 9] and q.due(100) == []


def test_a_reload_hands_back_what_waited_and_forgets_batches_and_versions():
    q = QuietQueue()
    q.batch_sent()
    q.at_version(3, lambda: None)
    waiting = []
    q.when_quiet(lambda: waiting.append(1), busy=True)
    assert len(q.reset()) == 1
    assert q.batches == 0 and q.due(10) == [] and q.quiet(busy=False)
    q.batch_done()                                               # a late reply never goes below 0
    assert q.batches == 0
