"""ui/tk/output_model.py: the time-sliced Find in Files job, file references, terminal lines."""

from __future__ import annotations

import pytest

from rio.files.search import SearchOptions
from rio.protocol.errors import DocumentError, PathError
from ui.tk.output_model import SearchJob, TerminalLines, glob_filter, parse_globs, resolve_ref


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
    job = SearchJob.start(project, "needle", globs=parse_globs("*.py"))
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


def test_parse_and_filter_globs():
    assert parse_globs(" *.py, *.txt;Makefile ,") == ("*.py", "*.txt", "Makefile")
    paths = ["a.py", "src/b.py", "c.txt", "Makefile"]
    assert list(glob_filter(paths, ("*.py",))) == ["a.py", "src/b.py"]
    assert list(glob_filter(paths, ())) == paths


def test_resolve_ref(tmp_path):
    root = tmp_path / "r"
    (root / "src").mkdir(parents=True)
    (root / "src" / "m.c").write_text("")
    assert resolve_ref("src/m.c", root) == "src/m.c"
    assert resolve_ref("m.c", root, cwd="src") == "src/m.c"
    assert resolve_ref(str(root / "src" / "m.c"), root) == "src/m.c"
    assert resolve_ref("../src/m.c", root, cwd="src") == "src/m.c"
    assert resolve_ref("/usr/lib/python3/x.py", root) is None
    assert resolve_ref("src/missing.c", root) is None
    assert resolve_ref("../../etc/passwd", root, cwd="src") is None


def test_terminal_lines_handle_cr_progress_and_split_crlf():
    t = TerminalLines()
    assert t.feed("a\r\nb") == [("text", "a\nb")]
    assert t.feed("10%\r20%\r") == [("text", "10%"), ("cr", ""), ("text", "20%")]
    assert t.feed("\ndone\n") == [("text", "\ndone\n")]   # the held \r was half of \r\n
    assert t.feed("x\r") == [("text", "x")]
    assert t.feed("y") == [("cr", ""), ("text", "y")]


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
    from ui.tk.output_model import SEARCH_MAX_FILE_BYTES
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
    from ui.tk import output_model
    text = "".join(f"row {i} {'needle' if i % 3 else ''} \U0001F600\r\n" for i in range(500))
    path = tmp_path / "x.txt"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    pieces = list(output_model.stream_pieces(path, piece_bytes=97))
    assert len(pieces) > 10 and "".join(pieces) == text
    assert all(p.endswith("\n") for p in pieces[:-1])
    whole = list(ProjectSearch("needle").run(["x.txt"], lambda _p: text))
    streamed = [m for m in ProjectSearch("needle").run_pieces("x.txt", pieces) if m]
    assert streamed == whole and len(whole) == 333
