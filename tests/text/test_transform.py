"""transform_edit: the convergence property (TP1) on random edits, and the documented rules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rio.text.transform import Edit, apply_to_str, transform_edit, transform_through


@st.composite
def text_and_edits(draw, count=2):
    text = draw(st.text("abc\n", max_size=12))
    edits = []
    for _ in range(count):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, len(text)))
        edits.append(Edit(start, end, draw(st.text("XYZ", max_size=3))))
    return text, edits


@given(text_and_edits())
@settings(max_examples=2000, deadline=None)
@pytest.mark.slow
def test_tp1_both_orders_converge(case):
    text, (a, b) = case
    # `a` landed first; the core moves `b` over it, a replica holding `b` moves `a` over `b`.
    core = apply_to_str(apply_to_str(text, a), transform_edit(b, a))
    replica = apply_to_str(apply_to_str(text, b), transform_edit(a, b, wins_ties=True))
    assert core == replica


@given(text_and_edits())
@settings(max_examples=500, deadline=None)
@pytest.mark.slow
def test_nothing_typed_is_lost_and_only_deleted_text_goes(case):
    text, (a, b) = case
    a, b = Edit(a.start, a.end, "<"), Edit(b.start, b.end, ">")
    merged = apply_to_str(apply_to_str(text, a), transform_edit(b, a))
    assert merged.count("<") == 1 and merged.count(">") == 1
    # Characters outside both ranges survive, in order.
    kept = [c for i, c in enumerate(text)
            if not (a.start <= i < a.end) and not (b.start <= i < b.end)]
    assert [c for c in merged if c not in "<>"] == kept


@given(text_and_edits(count=1))
def test_transform_against_a_noop_changes_nothing(case):
    _, (edit,) = case
    noop = Edit(edit.start, edit.start, "")
    assert transform_edit(edit, noop) == edit


def test_edit_after_a_change_shifts():
    assert transform_edit(Edit(10, 12, "x"), Edit(2, 4, "abcd")) == Edit(12, 14, "x")


def test_edit_before_a_change_stays():
    assert transform_edit(Edit(0, 2, "x"), Edit(5, 6, "")) == Edit(0, 2, "x")


def test_same_insertion_point_landed_change_stays_first():
    text = "ab"
    landed, stale = Edit(1, 1, "L"), Edit(1, 1, "S")
    assert apply_to_str(apply_to_str(text, landed), transform_edit(stale, landed)) == "aLSb"


def test_insertion_at_start_of_replaced_range_goes_before_it():
    text = "hello world"
    landed = Edit(6, 11, "there")
    assert apply_to_str(apply_to_str(text, landed),
                        transform_edit(Edit(6, 6, "big "), landed)) == "hello big there"


def test_overlapping_deletes_are_clipped_to_what_survives():
    text = "0123456789"
    landed = Edit(2, 6, "")          # "016789"
    stale = Edit(4, 8, "")           # wants 4..8 gone: only 6, 7 are left of it
    moved = transform_edit(stale, landed)
    assert moved == Edit(2, 4, "")
    assert apply_to_str(apply_to_str(text, landed), moved) == "0189"


def test_edit_inside_a_replaced_range_lands_after_the_replacement():
    text = "0123456789"
    landed = Edit(2, 8, "AB")
    moved = transform_edit(Edit(4, 5, "x"), landed)
    assert apply_to_str(apply_to_str(text, landed), moved) == "01ABx89"


def test_enclosing_stale_edit_keeps_the_landed_text():
    text = "0123456789"
    landed = Edit(4, 4, "NEW")       # someone typed inside the range ...
    stale = Edit(2, 8, "")           # ... another deleted without seeing it
    moved = transform_edit(stale, landed)
    assert apply_to_str(apply_to_str(text, landed), moved) == "01NEW89"


@given(text_and_edits(count=4))
@settings(max_examples=500, deadline=None)
@pytest.mark.slow
def test_transform_through_equals_stepwise(case):
    text, edits = case
    first, rest = edits[0], edits[1:]
    # Make `rest` a sequence: each applies after the previous one.
    sequence, current = [], text
    for e in rest:
        e = Edit(min(e.start, len(current)), min(e.end, len(current)), e.text)
        sequence.append(e)
        current = apply_to_str(current, e)
    stepwise = first
    for change in sequence:
        stepwise = transform_edit(stepwise, change)
    assert transform_through(first, sequence) == stepwise
    result = transform_through(first, sequence)
    assert 0 <= result.start <= result.end <= len(current)
