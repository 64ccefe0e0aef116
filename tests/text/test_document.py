"""Document: versions, stale edits, undo/redo grouping and labels, merging a turn, dirty state."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rio.protocol.errors import DocumentError
from rio.text.document import Change, Document


class FakeClock:
    """The injected clock: tests move time by hand instead of sleeping."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


def type_text(doc: Document, at: int, text: str, origin: str = "user") -> int:
    for ch in text:
        doc.replace(at, at, ch, origin=origin)
        at += 1
    return at


def test_replace_returns_the_change_and_bumps_the_version():
    doc = Document("hello world")
    change = doc.replace(6, 11, "there", origin="ui")
    assert change == Change(1, 6, 11, "there", "world", "ui", "Replace")
    assert doc.version == 1 and doc.text() == "hello there"
    assert doc.slice(0, 5) == "hello" and len(doc) == 11
    assert doc.buffer.line_count == 1


def test_bad_range_is_refused_without_changing_anything():
    doc = Document("abc")
    with pytest.raises(DocumentError) as caught:
        doc.replace(2, 9, "x")
    assert caught.value.kind == "buffer.bad_range"
    assert doc.version == 0 and doc.text() == "abc"


def test_stale_edit_is_transformed_over_changes_since_its_version():
    doc = Document("hello world")
    doc.replace(0, 0, ">> ", origin="agent")           # v1, the UI has not seen it
    change = doc.replace(6, 11, "there", origin="ui", base_version=0)
    assert doc.text() == ">> hello there"
    assert (change.start, change.end, change.removed) == (9, 14, "world")


def test_too_old_base_version_is_stale(clock):
    doc = Document("", clock=clock, history_limit=3)
    for i in range(5):
        doc.replace(0, 0, str(i))
    with pytest.raises(DocumentError) as caught:
        doc.replace(0, 0, "x", base_version=1)
    assert caught.value.kind == "buffer.stale_version"
    assert "buffer.text" in caught.value.next
    doc.replace(0, 0, "x", base_version=2)  # within the kept history; landed inserts stay first
    assert doc.text() == "432x10"


def test_future_base_version_is_refused():
    doc = Document("abc")
    with pytest.raises(DocumentError) as caught:
        doc.replace(0, 0, "x", base_version=5)
    assert caught.value.kind == "buffer.bad_version"


def test_stale_range_is_checked_against_the_text_it_was_made_on():
    doc = Document("abcdef")
    doc.replace(0, 6, "")                                # v1: empty now
    change = doc.replace(2, 5, "X", base_version=0)      # valid on "abcdef"
    assert doc.text() == "X" and change.start == 0


def test_a_run_of_typing_across_words_is_one_undo_step(clock):
    doc = Document(clock=clock)
    type_text(doc, 0, "hello ")
    type_text(doc, 6, "world")
    assert doc.text() == "hello world"
    assert doc.undo_label == "Typing"
    undone = doc.undo()
    assert doc.text() == "" and len(undone) == 11
    assert all(c.kind == "undo" for c in undone)
    assert not doc.can_undo


def test_a_pause_ends_the_typing_step(clock):
    doc = Document(clock=clock)
    type_text(doc, 0, "ab")
    clock.advance(1.5)
    type_text(doc, 2, "cd")
    doc.undo()
    assert doc.text() == "ab"


def test_a_held_key_is_split_into_bounded_steps(clock):
    from rio.text.document import TYPING_RUN_LIMIT
    doc = Document(clock=clock)
    type_text(doc, 0, "a" * (TYPING_RUN_LIMIT + 5))
    doc.undo()
    assert doc.text() == "a" * TYPING_RUN_LIMIT


def test_a_cursor_jump_ends_the_typing_step(clock):
    doc = Document("xxxx", clock=clock)
    type_text(doc, 0, "ab")
    type_text(doc, 6, "cd")
    doc.undo()
    assert doc.text() == "abxxxx"


def test_another_origin_ends_the_typing_step(clock):
    doc = Document(clock=clock)
    type_text(doc, 0, "ab", origin="ui")
    doc.replace(2, 2, "c", origin="agent")
    type_text(doc, 3, "de", origin="ui")
    doc.undo()
    assert doc.text() == "abc"
    doc.undo()
    assert doc.text() == "ab"


def test_a_run_of_backspaces_across_words_is_one_undo_step(clock):
    doc = Document("hello world", clock=clock)
    for end in range(11, 3, -1):                          # backspace "world", " ", "lo"
        doc.replace(end - 1, end, "")
    assert doc.text() == "hel"
    assert doc.undo_label == "Delete"
    doc.undo()
    assert doc.text() == "hello world"


def test_forward_delete_joins(clock):
    doc = Document("abcdef", clock=clock)
    for _ in range(3):
        doc.replace(1, 2, "")
    assert doc.text() == "aef"
    doc.undo()
    assert doc.text() == "abcdef"


@pytest.mark.parametrize(("start", "end", "text", "label"), [
    (0, 0, "x", "Typing"), (0, 0, "xyz", "Paste"), (0, 1, "", "Delete"), (0, 2, "", "Delete"),
    (0, 1, "z", "Replace"),
])
def test_default_labels(start, end, text, label):
    doc = Document("ab")
    doc.replace(start, end, text)
    assert doc.undo_label == label


def test_given_label_is_one_step_of_its_own(clock):
    doc = Document(clock=clock)
    doc.replace(0, 0, "a")
    doc.replace(1, 1, "b", label="Complete")
    assert doc.undo_label == "Complete"
    doc.undo()
    assert doc.text() == "a" and doc.redo_label == "Complete"


def test_redo_reapplies_and_a_new_edit_clears_it(clock):
    doc = Document("abc", clock=clock)
    doc.replace(0, 3, "xyz")
    doc.undo()
    assert doc.can_redo and doc.text() == "abc"
    redone = doc.redo(origin="ui")
    assert doc.text() == "xyz" and [c.kind for c in redone] == ["redo"]
    assert redone[0].origin == "ui" and redone[0].version == 3
    doc.undo()
    doc.replace(0, 0, "new")
    assert not doc.can_redo and doc.redo_label is None


def test_nothing_to_undo_or_redo():
    doc = Document("abc")
    with pytest.raises(DocumentError) as caught:
        doc.undo()
    assert caught.value.kind == "buffer.nothing_to_undo"
    with pytest.raises(DocumentError) as caught:
        doc.redo()
    assert caught.value.kind == "buffer.nothing_to_redo"


def test_undo_and_redo_count_as_versions():
    doc = Document("abc")
    doc.replace(0, 1, "")
    doc.undo()
    doc.redo()
    assert doc.version == 3
    assert [c.version for c in doc.changes_since(0)] == [1, 2, 3]


def test_merge_since_makes_an_agent_turn_one_step(clock):
    doc = Document("def f():\n    pass\n", clock=clock)
    doc.replace(0, 0, "# user\n", origin="ui")
    start = doc.version
    doc.replace(0, 0, "import os\n", origin="agent")
    doc.replace(len(doc), len(doc), "x = 1\n", origin="agent")
    type_text(doc, 0, "zz", origin="ui")                   # typed during the turn
    assert doc.merge_since(start, "Agent: add import") == 3
    assert doc.undo_label == "Agent: add import"
    doc.undo()
    assert doc.text() == "# user\ndef f():\n    pass\n"
    doc.redo()
    assert doc.text().startswith("zzimport os\n# user\n")


def test_merge_since_with_nothing_new_merges_nothing():
    doc = Document("a")
    doc.replace(0, 0, "b")
    assert doc.merge_since(doc.version, "Agent: nothing") == 0
    assert doc.undo_label == "Typing"


def test_merged_step_does_not_absorb_later_typing(clock):
    doc = Document(clock=clock)
    type_text(doc, 0, "ab")
    doc.merge_since(0, "Agent: x")
    type_text(doc, 2, "c")
    doc.undo()
    assert doc.text() == "ab"


def test_apply_is_one_step_and_edits_are_concurrent():
    doc = Document("one two one")
    changes = doc.apply([(0, 3, "1"), (8, 11, "1")], origin="ui", label="Replace all")
    assert doc.text() == "1 two 1"
    assert [c.start for c in changes] == [0, 6]
    assert doc.undo_label == "Replace all"
    doc.undo()
    assert doc.text() == "one two one"


def test_stale_batch_is_transformed_edit_by_edit():
    doc = Document("one two one")
    doc.replace(0, 0, "[", origin="ui")                     # lands before the agent's batch
    doc.apply([(0, 3, "1"), (8, 11, "1")], origin="agent", base_version=0, label="Agent: x")
    assert doc.text() == "[1 two 1"
    doc.undo()
    assert doc.text() == "[one two one"


def test_batch_of_noops_makes_no_undo_step():
    doc = Document("abc")
    changes = doc.apply([(1, 1, ""), (2, 2, "")])
    assert len(changes) == 2 and doc.version == 2 and not doc.can_undo


def test_apply_takes_wire_lists_and_records():
    from rio.text.transform import Edit
    doc = Document("abc")
    doc.apply([[0, 1, "A"], Edit(2, 3, "C")])
    assert doc.text() == "AbC"
    with pytest.raises(DocumentError) as caught:
        doc.apply([[0, 1]])
    assert caught.value.kind == "buffer.bad_range"


def test_dirty_follows_the_saved_state(clock):
    doc = Document("abc", clock=clock)
    assert not doc.dirty
    type_text(doc, 3, "de")
    assert doc.dirty
    doc.mark_saved()
    assert not doc.dirty
    type_text(doc, 5, "f")                                 # saved state closed the run
    assert doc.dirty
    doc.undo()
    assert not doc.dirty
    doc.undo()
    assert doc.dirty and doc.text() == "abc"
    doc.redo()
    assert not doc.dirty
    doc.undo()
    doc.replace(0, 0, "z")                                 # the saved state is now unreachable
    assert doc.dirty
    doc.undo()
    assert doc.dirty
    doc.mark_saved()
    assert not doc.dirty


def test_merging_across_the_save_point_keeps_it_only_if_it_is_the_end(clock):
    doc = Document(clock=clock)
    doc.replace(0, 0, "a", label="one")
    doc.replace(1, 1, "b", label="two")
    doc.mark_saved()
    doc.merge_since(0, "both")
    assert not doc.dirty                                   # same text state as saved
    doc.replace(2, 2, "c", label="three")
    doc.mark_saved()
    doc.replace(3, 3, "d", label="four")
    doc.merge_since(2, "three and four")
    doc.undo()
    assert doc.dirty                                       # "abc" alone is no longer a step


def test_undo_limit_forgets_the_oldest_steps():
    doc = Document(undo_limit=2)
    for i, label in enumerate(["a", "b", "c"]):
        doc.replace(i, i, label, label=label)
    doc.undo()
    doc.undo()
    assert not doc.can_undo and doc.text() == "a"
    assert doc.dirty                                       # the empty saved text is unreachable


def test_noop_edit_still_gets_a_version_but_no_undo_step():
    doc = Document("abc")
    change = doc.replace(1, 1, "")
    assert change.is_noop and change.version == 1
    assert not doc.can_undo and not doc.dirty


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 5), st.text("ab \n", max_size=3),
                          st.booleans(), st.floats(0, 2)), max_size=25))
@settings(max_examples=200, deadline=None)
@pytest.mark.slow
def test_undo_everything_restores_the_start_and_redo_everything_returns(ops):
    clock = FakeClock()
    doc = Document("start\ntext", clock=clock)
    for at, length, text, other_origin, pause in ops:
        at = min(at, len(doc))
        clock.advance(pause)
        doc.replace(at, min(at + length, len(doc)), text,
                    origin="agent" if other_origin else "ui")
    final = doc.text()
    while doc.can_undo:
        doc.undo()
    assert doc.text() == "start\ntext"
    assert not doc.dirty
    while doc.can_redo:
        doc.redo()
    assert doc.text() == final


OPS = st.lists(st.one_of(
    st.tuples(st.just("edit"), st.integers(0, 30), st.integers(0, 4),
              st.text("ab \n😀", max_size=3), st.sampled_from(["ui", "agent"]), st.floats(0, 1.5)),
    st.tuples(st.just("undo")), st.tuples(st.just("redo")), st.tuples(st.just("save")),
    st.tuples(st.just("merge"), st.integers(0, 5)),
), max_size=40)


@given(OPS)
@settings(max_examples=300, deadline=None)
@pytest.mark.slow
def test_random_interleaving_keeps_undo_redo_and_dirty_exact(ops):
    clock = FakeClock()
    doc = Document("seed\ntext", clock=clock)
    saved_text = doc.text()
    for op in ops:
        before, version = doc.text(), doc.version
        if op[0] == "edit":
            _, at, length, text, origin, pause = op
            clock.advance(pause)
            at = min(at, len(doc))
            doc.replace(at, min(at + length, len(doc)), text, origin=origin)
            assert doc.version == version + 1
        elif op[0] == "undo" and doc.can_undo:
            changes = doc.undo()
            assert doc.version == version + len(changes)
            doc.redo()
            assert doc.text() == before                  # undo then redo is the identity
            doc.undo()
        elif op[0] == "redo" and doc.can_redo:
            doc.redo()
            doc.undo()
            assert doc.text() == before                  # and redo then undo too
            doc.redo()
        elif op[0] == "save":
            doc.mark_saved()
            saved_text = doc.text()
        elif op[0] == "merge":
            doc.merge_since(max(0, doc.version - op[1]), "Agent: turn")
            assert doc.text() == before
        if not doc.dirty:
            assert doc.text() == saved_text              # clean always means "as saved"
    while doc.can_undo:
        doc.undo()
    assert doc.text() == "seed\ntext"


# --- bounded undo text, all-or-nothing ops (Rio issue 8) ---------------------------------------


def test_undo_history_is_bounded_by_its_text():
    """400 paste/delete pairs of 1 MB grew a core to 881 MB: the history now holds at most the
    bound (plus the newest step), whatever the number of steps."""
    import tracemalloc
    limit = 4 * 1024 * 1024
    doc = Document("start", undo_text_limit=limit)
    block = "x" * (256 * 1024)
    tracemalloc.start()
    try:
        for _ in range(200):                      # 100 MB of text through the history
            doc.replace(0, 0, block + "!")        # a new string each time, as a paste is
            doc.replace(0, len(block) + 1, "")
        current, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert doc.text() == "start"
    assert doc.undo_chars <= limit
    assert current < 3 * limit                    # was > 100 MB
    undone = 0
    while doc.can_undo:
        doc.undo()
        undone += 1
    assert 2 <= undone < 400 and doc.text() in ("start", block + "!start")


def test_the_newest_step_is_kept_even_past_the_bound():
    doc = Document("", undo_text_limit=10)
    doc.replace(0, 0, "small", label="one")
    doc.replace(0, 0, "a much longer paste", label="two")
    assert doc.undo_label == "two" and doc.undo_chars > 10
    doc.undo()
    assert doc.text() == "small" and not doc.can_undo     # "one" was forgotten


def test_the_change_log_for_stale_edits_is_bounded_too():
    doc = Document("", undo_text_limit=100)
    for _ in range(50):
        doc.replace(0, 0, "0123456789")
    with pytest.raises(DocumentError) as caught:
        doc.changes_since(0)
    assert caught.value.kind == "buffer.stale_version"
    assert len(doc.changes_since(doc.version - 3)) == 3


ATOMIC_OPS = st.lists(st.tuples(st.sampled_from(["type", "paste", "delete", "undo", "redo",
                                                "merge"]),
                                st.integers(0, 30), st.booleans(), st.floats(0, 2)),
                      max_size=40)


def run_op(doc: Document, op, clock) -> None:
    kind, at, _, pause = op
    clock.advance(pause)
    at = min(at, len(doc))
    if kind == "type":
        doc.replace(at, at, "w")
    elif kind == "paste":
        doc.replace(at, at, "pasted\n" * 3)
    elif kind == "delete":
        doc.replace(at, min(at + 4, len(doc)), "")
    elif kind == "undo" and doc.can_undo:
        doc.undo()
    elif kind == "redo" and doc.can_redo:
        doc.redo()
    elif kind == "merge":
        doc.merge_since(max(doc.version - 3, 0), "merged")


def observable(doc: Document) -> tuple:
    """Everything a client can see, including the whole undo and redo history."""
    log = []
    for back in range(1, 6):
        try:
            log.append([(c.start, c.end, c.text) for c in doc.changes_since(doc.version - back)])
        except DocumentError as err:          # older than the log keeps (or than version 0)
            log.append(err.kind)
    state = [doc.text(), doc.version, doc.dirty, doc.undo_label, doc.redo_label, doc.undo_chars,
             log]
    trail = []
    while doc.can_undo:
        doc.undo()
        trail.append((doc.text(), doc.dirty))
    while doc.can_redo:
        doc.redo()
        trail.append((doc.text(), doc.dirty))
    return tuple(state), tuple(trail)


@given(ATOMIC_OPS)
@settings(max_examples=300, deadline=None)
@pytest.mark.slow
def test_an_op_that_fails_inside_atomic_leaves_no_trace(ops):
    """Twin documents get the same ops; in one, some ops are followed by a failure inside
    ``atomic()`` (the journal could not take them), and the other never sees those ops. Both
    must look the same in every way, undo and redo history included."""
    class JournalFull(Exception):
        pass

    clock_a, clock_b = FakeClock(), FakeClock()
    a = Document("some\ntext", clock=clock_a, undo_limit=6, undo_text_limit=60)
    b = Document("some\ntext", clock=clock_b, undo_limit=6, undo_text_limit=60)
    a.mark_saved()
    b.mark_saved()
    for i, op in enumerate(ops):
        fails = op[2] and op[0] != "merge"    # merge_since is never journaled (not atomic)
        if fails:
            with pytest.raises(JournalFull), a.atomic():
                run_op(a, op, clock_a)
                raise JournalFull
            clock_b.advance(op[3])
        else:
            with a.atomic():
                run_op(a, op, clock_a)
            run_op(b, op, clock_b)
        if i % 7 == 3:
            a.mark_saved()
            b.mark_saved()
    assert observable(a) == observable(b)
