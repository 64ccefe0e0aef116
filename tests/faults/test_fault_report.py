"""The verdicts of `rio faults` without processes: lost and duplicated edits, orphans, corrupt
files, the summaries, the table and the JSON."""

from __future__ import annotations

import json

from rio.faults.report import (
    FaultResult,
    ProcInfo,
    Report,
    count_edits,
    disk_verdict,
    orphans,
    render_table,
    summarize,
)


def test_count_edits_finds_lost_and_duplicated_tokens() -> None:
    text = "<a>\n<b>\n<b>\nplain\n"
    assert count_edits(text, ["<a>"]) == (0, 0)
    assert count_edits(text, ["<a>", "<b>", "<c>"]) == (1, 1)
    assert count_edits("", []) == (0, 0)


def test_disk_verdict_is_byte_exact() -> None:
    assert disk_verdict(b"old", [b"old", b"new"])
    assert disk_verdict(None, [None, b"new"])          # a file never saved may be absent
    assert not disk_verdict(b"ne", [b"old", b"new"])   # half written
    assert not disk_verdict(b"old\n", [b"old"])


SUP = ("h", "S")   # the running supervisor's chain: spawned by a harness "h", own cookie "S"


def judge(procs, live=frozenset({"c1"}), dead=frozenset(), known=None, chain=SUP, pid=10):
    return [p.pid for p in orphans(procs, supervisor_pid=pid, supervisor_chain=chain,
                                   live_children=set(live), dead_cookies=set(dead),
                                   known_children=known)]


def test_processes_of_live_children_are_not_orphans() -> None:
    procs = [ProcInfo(10, SUP), ProcInfo(11, SUP + ("c1",)), ProcInfo(12, SUP + ("c1", "x"))]
    assert judge(procs) == []


def test_processes_whose_owner_is_gone_are_orphans() -> None:
    procs = [ProcInfo(11, SUP + ("c1",)), ProcInfo(13, SUP + ("c2", "x"))]
    assert judge(procs) == [13]


def test_anything_carrying_a_dead_supervisors_cookie_is_an_orphan() -> None:
    procs = [ProcInfo(20, ("h", "OLD", "c9")), ProcInfo(21, ("h", "OLD"))]
    assert judge(procs, dead={"OLD"}) == [20, 21]
    assert judge(procs, dead={"OLD"}, pid=None, chain=()) == [20, 21]  # supervisor gone too


def test_other_peoples_processes_are_not_judged() -> None:
    procs = [ProcInfo(30, ("someone-else",)), ProcInfo(31, ("h", "T", "c1"))]
    assert judge(procs) == []


def test_a_supervisor_without_a_cookie_judges_only_known_children() -> None:
    procs = [ProcInfo(40, ("c1",)), ProcInfo(41, ("c2", "x")), ProcInfo(42, ("stranger",))]
    assert judge(procs, chain=(), known={"c1", "c2"}) == [41]


def result(**kw) -> FaultResult:
    base = dict(scenario="kill", fault="kill -9", target="core", recovered=True, recover_s=0.5)
    return FaultResult(**(base | kw))


def test_summaries_and_the_verdict() -> None:
    good = summarize("kill", 2, [result(recover_s=0.2), result(recover_s=0.6),
                                 result(recover_s=0.4)])
    assert (good.faults, good.recovered, good.median_s, good.worst_s) == (3, 3, 0.4, 0.6)
    assert good.ok
    for broken in (result(lost=1), result(duplicated=1), result(orphans=2), result(corrupt=1),
                   result(recovered=False, recover_s=None)):
        assert broken.broken
        assert not summarize("kill", 1, [broken]).ok
    skipped = summarize("supervisor", 0, [], "only own instance")
    assert skipped.ok and skipped.faults == 0
    report = Report("x", 7, (good, skipped), ())
    assert report.ok
    assert not Report("x", 7, (good,), (), shutdown_orphans=1).ok


def test_the_table_and_the_json() -> None:
    bad = summarize("save", 1, [result(scenario="save", corrupt=1)])
    report = Report("inst", 42, (summarize("kill", 1, [result()]), bad),
                    (result(), result(scenario="save", corrupt=1)))
    table = render_table(report)
    assert table.splitlines()[0].split() == ["scenario", "runs", "faults", "recovered",
                                             "median", "s", "worst", "s", "lost", "orphans",
                                             "corrupt"]
    assert "INVARIANT BROKEN" in table
    data = json.loads(report.to_json())
    assert data["ok"] is False and data["seed"] == 42
    assert data["totals"] == {"faults": 2, "recovered": 2, "lost": 0, "duplicated": 0,
                              "orphans": 0, "corrupt": 1}
    assert [s["ok"] for s in data["scenarios"]] == [True, False]
    assert len(data["faults"]) == 2
