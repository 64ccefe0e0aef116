"""`rio faults` journal scenarios end to end: a full journal disk, a torn record in a journal,
kill -9 of the core while it recovers a 4 MB unsaved buffer (actors/faults/journal_scenarios.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.test_faults import assert_clean, faults, no_scratch_left, scenario_args

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def test_the_journal_scenarios_keep_every_invariant(tmp_path: Path) -> None:
    names = ["journal_full", "journal_damage", "recovery_kill"]
    code, data, err = faults(tmp_path, "--runs", "2", *scenario_args(names))
    assert code == 0 and data is not None, err
    assert_clean(data, names, min_faults=6)
    assert {f["note"] for f in data["faults"]} == {""}
    no_scratch_left(data)


def test_the_scale_scenario_brings_back_thousands_of_buffers(tmp_path: Path) -> None:
    """4,000 unsaved buffers and a kill -9 of the core: all back, the core answering
    (ADR-0040; before, ~3,300 made a core that could not start again)."""
    code, data, err = faults(tmp_path, "--runs", "1", *scenario_args(["scale"]))
    assert code == 0 and data is not None, (err, data and data.get("faults"))
    totals = data["totals"]
    assert data["ok"] is True and totals["faults"] == totals["recovered"] == 1
    assert totals["lost"] == totals["duplicated"] == totals["orphans"] == totals["corrupt"] == 0
    assert data["shutdown_orphans"] == 0
    assert [f["fault"] for f in data["faults"]] == ["kill -9 with 4000 buffers"]
    assert {f["note"] for f in data["faults"]} == {""}
    no_scratch_left(data)
