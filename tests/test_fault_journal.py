"""`rio faults` journal scenarios end to end: a full journal disk, a torn record in a journal,
kill -9 of the core while it recovers a 4 MB unsaved buffer (actors/faults/journal.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_faults import assert_clean, faults, no_scratch_left, scenario_args

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def test_the_journal_scenarios_keep_every_invariant(tmp_path: Path) -> None:
    names = ["journal_full", "journal_damage", "recovery_kill"]
    code, data, err = faults(tmp_path, "--runs", "2", *scenario_args(names))
    assert code == 0 and data is not None, err
    assert_clean(data, names, min_faults=6)
    assert {f["note"] for f in data["faults"]} == {""}
    no_scratch_left(data)
