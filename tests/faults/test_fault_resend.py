"""`rio faults` stale_resend end to end: the core killed with an edit in flight, then the client
resends that request and an acknowledged one under their ids with their stale bases
(actors/faults/resend.py, ADR-0020)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.test_faults import assert_clean, faults, no_scratch_left, scenario_args

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def test_resends_across_a_core_restart_are_answered_never_applied_twice(tmp_path: Path) -> None:
    code, data, err = faults(tmp_path, "--runs", "2", *scenario_args(["stale_resend"]))
    assert code == 0 and data is not None, err
    assert_clean(data, ["stale_resend"], min_faults=2)
    assert {f["note"] for f in data["faults"]} == {""}
    assert all(f["recovered"] for f in data["faults"])
    no_scratch_left(data)
