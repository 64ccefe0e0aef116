"""Pacing `rio faults` inside each process's restart budget (rio/faults/pacing.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rio.faults.pacing import Budget, Pacer, plan_line, refusal


def test_the_default_budget_allows_four_quick_faults_then_waits_for_the_window():
    budget = Budget(max_restarts=5, window_s=60.0)
    pacer = Pacer()
    now = 100.0
    for _ in range(4):
        assert pacer.wait_before("core", budget, now) == 0.0
        pacer.record("core", now)
        now += 1.0
    # A fifth in the window would leave no restart for a real failure.
    assert abs(pacer.wait_before("core", budget, now) - (100.0 + 60.0 - now)) < 0.1
    assert pacer.wait_before("fake:x", budget, now) == 0.0       # per process


def test_restarts_someone_else_caused_count_too():
    budget = Budget(max_restarts=3, window_s=30.0, used=2)
    assert Pacer().wait_before("core", budget, 5.0) == 30.0


@settings(max_examples=200, deadline=None)
@given(max_restarts=st.integers(1, 8), window=st.floats(1, 120),
       gaps=st.lists(st.floats(0, 30), min_size=1, max_size=40))
@pytest.mark.slow
def test_paced_faults_never_exceed_the_budget_in_any_window(max_restarts, window, gaps):
    budget = Budget(max_restarts, window)
    pacer = Pacer()
    now = 0.0
    for gap in gaps:
        now += gap
        now += pacer.wait_before("p", budget, now)
        pacer.record("p", now)
    times = pacer.faults["p"]
    allowed = budget.allowed(pacer.margin)
    for t in times:
        inside = [u for u in times if t - window < u <= t]
        assert len(inside) <= allowed


def test_the_plan_says_the_budget_and_the_waiting():
    line = plan_line({"core": Budget(5, 60.0), "fake:a": None}, faults_each=10)
    assert "10 kill/hang fault(s) per process" in line
    assert "core: 5 restarts in 60 s, 4 faults per window" in line
    assert "at least 120 s" in line and "fake:a: no budget reported" in line
    assert "no pacing needed" in plan_line({"core": Budget(5, 60.0)}, faults_each=2)


def test_a_process_never_restarted_is_named():
    assert "core" in refusal({"core": Budget(5, 60.0, policy="never")})
    assert refusal({"core": Budget(5, 60.0)}) is None
