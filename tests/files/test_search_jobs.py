"""rio/files/search_jobs.py: Find in Files as the core runs it — the time-sliced job over the
workspace walk, and the pages ``fs.search`` / ``fs.search_more`` / ``fs.search_stop`` answer."""

from __future__ import annotations

import pytest

from rio.files.fs_ops import FsOps
from rio.files.search import SearchOptions
from rio.files.search_jobs import (
    IDLE_S,
    MAX_SEARCHES,
    PAGE_MAX_RESULTS,
    SearchJob,
    SearchPages,
    glob_filter,
    stream_pieces,
    summary_text,
)
from rio.protocol.errors import DocumentError, PathError, ProtocolError


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "p"
    (root / "src").mkdir(parents=True)
    (root / "node_modules").mkdir()
    (root / "src" / "a.py").write_text("def needle():\n    return 'needle'\n")
    (root / "src" / "b.txt").write_text("no match here\nNEEDLE upper\n")
    (root / "node_modules" / "x.js").write_text("needle ignored\n")
    (root / "blob.bin").write_bytes(b"needle\x00\x01")
    for i in range(30):
        (root / f"f{i:02}.txt").write_text(f"line\nneedle {i}\n")
    return root


def run_all(job: SearchJob) -> list:
    out = []
    while not job.done:
        out += job.step()
    return out


def test_search_finds_across_the_project_with_ignores(project):
    found = run_all(SearchJob.start(project, "needle"))
    paths = {m.path for m in found}
    assert "src/a.py" in paths and "src/b.txt" in paths and "f07.txt" in paths
    assert not any(p.startswith("node_modules") for p in paths) and "blob.bin" not in paths
    first = [m for m in found if m.path == "src/a.py"]
    assert [(m.line, m.col) for m in first] == [(1, 5), (2, 13)]


def test_options_globs_and_folder(project):
    job = SearchJob.start(project, "NEEDLE", SearchOptions(match_case=True), folder="src")
    assert [(m.path, m.line) for m in run_all(job)] == [("src/b.txt", 2)]
    job = SearchJob.start(project, "needle", globs=("*.py",))
    assert {m.path for m in run_all(job)} == {"src/a.py"}


def test_unsaved_text_overrides_the_file(project):
    job = SearchJob.start(project, "needle",
                          overrides=lambda rel: "needle typed\n" if rel == "f00.txt" else None)
    hits = [m for m in run_all(job) if m.path == "f00.txt"]
    assert [(m.line, m.line_text) for m in hits] == [(1, "needle typed")]


def test_steps_are_time_sliced(project):
    ticks = iter(range(10 ** 6))
    job = SearchJob.start(project, "needle")
    # A clock that jumps a whole budget per reading: every step returns after one result.
    first = job.step(budget_s=1, clock=lambda: next(ticks))
    assert len(first) == 1 and not job.done
    rest = run_all(job)
    assert len(first) + len(rest) == 33 and job.done
    assert "33 matches in 32 files" in job.summary()


def test_cancel_and_caps(project):
    job = SearchJob.start(project, "needle")
    job.step(budget_s=0)
    job.cancel()
    assert job.done and job.step() == [] and job.summary().startswith("Stopped")
    job = SearchJob.start(project, "needle", max_results=3)
    assert len(run_all(job)) == 3 and "limit" in job.summary()


def test_bad_pattern_and_folder_are_typed_errors(project):
    with pytest.raises(DocumentError):
        SearchJob.start(project, "(", SearchOptions(regex=True))
    with pytest.raises(PathError):
        SearchJob.start(project, "x", folder="../..")


def test_a_search_without_matches_still_gives_the_window_back(project):
    ticks = iter(range(10 ** 6))
    job = SearchJob.start(project, "no such text anywhere")
    steps = 0
    while not job.done:
        assert job.step(budget_s=1, clock=lambda: next(ticks)) == []
        steps += 1
    # One file per slice with a clock that expires at once: the loop came back every file.
    assert steps >= 30 and job.search.files_searched >= 30


@pytest.mark.slow
def test_files_over_8_mb_are_searched_streamed(tmp_path):
    from rio.files.search_jobs import SEARCH_MAX_FILE_BYTES
    line = "2026-11-30 12:00:00 INFO request served needle=yes \u00e9\n"
    count = SEARCH_MAX_FILE_BYTES // len(line.encode()) + 1000
    (tmp_path / "big.log").write_text(line * count)
    (tmp_path / "small.txt").write_text("needle\n")
    (tmp_path / "dump.txt").write_bytes(b"\x00" * (SEARCH_MAX_FILE_BYTES + 10))
    job = SearchJob.start(tmp_path, "needle", max_results=count + 10)
    found = run_all(job)
    big = [m for m in found if m.path == "big.log"]
    assert len(big) == count
    assert (big[-1].line, big[-1].col) == (count, line.index("needle") + 1)
    assert big[-1].start == (count - 1) * len(line) + line.index("needle")
    summary = job.summary()
    assert summary.startswith(f"{count + 1} matches in 2 files (2 searched")
    assert "1 skipped as binary or unreadable: dump.txt" in summary


def test_streamed_pieces_give_the_same_matches_as_a_whole_read(tmp_path, monkeypatch):
    from rio.files.find_in_files import ProjectSearch
    text = "".join(f"row {i} {'needle' if i % 3 else ''} \U0001F600\r\n" for i in range(500))
    path = tmp_path / "x.txt"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    pieces = list(stream_pieces(path, piece_bytes=97))
    assert len(pieces) > 10 and "".join(pieces) == text
    assert all(p.endswith("\n") for p in pieces[:-1])
    whole = list(ProjectSearch("needle").run(["x.txt"], lambda _p: text))
    streamed = [m for m in ProjectSearch("needle").run_pieces("x.txt", pieces) if m]
    assert streamed == whole and len(whole) == 333



def test_filter_globs():
    paths = ["a.py", "src/b.py", "c.txt", "Makefile"]
    assert list(glob_filter(paths, ("*.py",))) == ["a.py", "src/b.py"]
    assert list(glob_filter(paths, ())) == paths


def all_pages(ops: FsOps, **args) -> tuple[list[dict], list[dict]]:
    """Every page of one fs.search, asked for one after another as a client does."""
    page = ops.handle("fs.search", {"pattern": "needle", **args})
    pages = [page]
    while not page["done"]:
        page = ops.handle("fs.search_more", {"search": page["search"]})
        pages.append(page)
    return [m for p in pages for m in p["matches"]], pages


def test_pages_give_the_same_results_in_the_same_order_as_the_job(project):
    found, pages = all_pages(FsOps(project))
    whole = run_all(SearchJob.start(project, "needle"))
    assert [(m["path"], m["line"], m["col"], m["text"], m["start"], m["end"]) for m in found] \
        == [(m.path, m.line, m.col, m.line_text, m.start, m.end) for m in whole]
    last = pages[-1]["counts"]
    assert summary_text(last) == "33 matches in 32 files (32 searched)."
    assert summary_text({**last, "files_skipped": 4, "skipped_paths": ["a", "b", "c"]}, True) \
        == "Stopped: 33 matches in 32 files (32 searched; 4 skipped as binary or unreadable: " \
           "a, b, c, …)."


def test_a_page_holds_at_most_the_page_cap(tmp_path):
    (tmp_path / "many.txt").write_text("needle\n" * (PAGE_MAX_RESULTS * 3))
    found, pages = all_pages(FsOps(tmp_path))
    assert len(found) == PAGE_MAX_RESULTS * 3
    assert len(pages) >= 3 and all(len(p["matches"]) <= PAGE_MAX_RESULTS for p in pages)


def test_overrides_folder_globs_and_options_reach_the_search(project):
    ops = FsOps(project)
    found, _ = all_pages(ops, overrides={"f00.txt": "typed needle\n"}, folder=".",
                         globs=["f0*.txt"])
    assert [(m["path"], m["line"], m["text"]) for m in found][:2] == [
        ("f00.txt", 1, "typed needle"), ("f01.txt", 2, "needle 1")]
    found, _ = all_pages(ops, pattern="NEEDLE", match_case=True, folder="src")
    assert [(m["path"], m["line"]) for m in found] == [("src/b.txt", 2)]


def test_stop_ends_the_search_and_a_later_page_is_refused(project):
    ops = FsOps(project)
    ticks = iter(range(10 ** 6))
    ops.searches.clock = lambda: next(ticks)   # every reading spends a whole page's budget
    page = ops.handle("fs.search", {"pattern": "needle"})
    sid = page["search"]
    assert not page["done"] and len(ops.searches) == 1
    assert ops.handle("fs.search_stop", {"search": sid}) == {"search": sid, "stopped": True}
    with pytest.raises(ProtocolError) as err:
        ops.handle("fs.search_more", {"search": sid})
    assert err.value.kind == "protocol.unknown_search" and err.value.next
    assert ops.handle("fs.search_stop", {"search": sid})["stopped"] is False


def test_a_finished_search_is_forgotten(project):
    ops = FsOps(project)
    _found, pages = all_pages(ops)
    assert pages[-1]["done"] and len(ops.searches) == 0


def test_searches_nobody_asks_about_are_dropped(project):
    now = [0.0]

    def clock() -> float:
        now[0] += 0.01       # each reading spends a third of a page's budget
        return now[0]
    pages = SearchPages(project, clock=clock)
    ids = [pages.start({"pattern": "needle"})["search"] for _ in range(MAX_SEARCHES + 2)]
    assert [i for i in ids if i in pages._jobs] == ids[2:]    # the oldest went first
    now[0] += IDLE_S
    pages.start({"pattern": "needle"})
    assert not any(i in pages._jobs for i in ids)


def test_errors_are_typed(project):
    ops = FsOps(project)
    with pytest.raises(DocumentError):
        ops.handle("fs.search", {"pattern": "(", "regex": True})
    with pytest.raises(PathError):
        ops.handle("fs.search", {"pattern": "x", "folder": "../.."})


def test_walk_lists_the_project_files_in_order_with_the_cap(project):
    ops = FsOps(project)
    listed = ops.handle("fs.walk", {"path": ".", "max_files": 5000})
    assert listed["truncated"] is False
    assert "src/a.py" in listed["files"] and not any(
        p.startswith("node_modules") for p in listed["files"]) and "blob.bin" not in listed["files"]
    capped = ops.handle("fs.walk", {"path": ".", "max_files": 3})
    assert capped == {"files": listed["files"][:3], "truncated": True}
    with pytest.raises(PathError):
        ops.handle("fs.walk", {"path": "../..", "max_files": 3})


def test_a_regex_that_backtracks_without_end_is_refused_and_other_threads_run(tmp_path):
    """fs.search runs the client's regex in the core, for any client (a remote observer
    too). Python's re holds the GIL for the whole of one match, so ``(a|aa)+$`` over a long run
    of "a" froze every thread of the core — its bus thread stopped answering pings and the
    supervisor killed it as hung, and five such searches used up its restart budget. The
    search now gives up after MATCH_TIMEOUT_S with buffer.bad_pattern, and other threads keep
    running meanwhile."""
    import threading
    import time

    from rio.files.search import MATCH_TIMEOUT_S
    (tmp_path / "a.txt").write_text("a" * 60 + "b\n")
    (tmp_path / "ok.txt").write_text("x = 1\n")
    pages = SearchPages(tmp_path)
    assert pages.start({"pattern": r"x\s*=", "regex": True})["counts"]["results"] == 1
    ticks = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)
    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    started = time.monotonic()
    try:
        with pytest.raises(DocumentError) as info:
            page = pages.start({"pattern": "(a|aa)+$", "regex": True})
            while not page["done"]:
                page = pages.page(page["search"])
    finally:
        done.set()
        ticker.join(5)
    took = time.monotonic() - started
    assert info.value.kind == "buffer.bad_pattern"
    assert "a.txt" in info.value.message and "backtrack" in info.value.message
    assert "Simplify" in info.value.next
    assert took < MATCH_TIMEOUT_S + 5
    # the other thread ran all along: no gap of more than half the time limit
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert len(ticks) > 10 and max(gaps) < MATCH_TIMEOUT_S / 2, max(gaps)
    assert len(pages) == 0           # the failed search is gone, nothing left running


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_backtracking_search_does_not_cost_the_core_a_restart(tmp_path):
    """Against a real instance: the search is refused as a bad pattern, the core answered its
    pings meanwhile (no restart) and serves the next request."""
    from tests.support import RioServer
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("a" * 60 + "b\n")
    srv = RioServer(root, tmp_path).start()
    try:
        with pytest.raises(DocumentError) as info:
            srv.call("fs.search", {"pattern": "(a|aa)+$", "regex": True}, timeout=30)
        assert info.value.kind == "buffer.bad_pattern"
        core = next(p for p in srv.call("system.status")["processes"] if p["name"] == "core")
        assert core["restarts"] == 0 and core["ready"], core
        assert srv.call("fs.read", {"path": "a.txt"})["text"].startswith("aaa")
    finally:
        srv.stop()
