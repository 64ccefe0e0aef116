"""ui/tk/output/model.py: Find in Files driven page by page over the bus, file references,
terminal lines."""

from __future__ import annotations

from rio.protocol.errors import PathError, ProtocolError
from rio.protocol.frames import Reply
from ui.tk.output.model import CoreSearch, TerminalLines, parse_globs, resolve_ref


def test_parse_globs():
    assert parse_globs(" *.py, *.txt;Makefile ,") == ("*.py", "*.txt", "Makefile")


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


class FakeConn:
    """Answers fs.search* from a list of pages, one request at a time, when told to."""

    def __init__(self, pages: list[dict]):
        self.pages = pages
        self.sent: list[tuple[str, dict]] = []
        self.waiting: list = []

    def request(self, op, args=None, callback=None, *, timeout=10.0):
        self.sent.append((op, dict(args or {})))
        if callback is not None:
            self.waiting.append((op, callback))
        return str(len(self.sent))

    def answer(self) -> None:
        op, callback = self.waiting.pop(0)
        if op == "fs.search_stop":
            callback(Reply.success("x", {"stopped": True}))
        elif self.pages:
            callback(Reply.success("x", self.pages.pop(0)))
        else:       # asked past the last page: the core has forgotten the search
            callback(Reply.failure("x", ProtocolError("unknown_search", "No running search.",
                                                      "Start the search again.")))


def page(sid, matches, done, results):
    return {"search": sid, "done": done, "matches": [
        {"path": p, "line": ln, "col": 1, "text": "t", "start": 0, "end": 1} for p, ln in matches],
        "counts": {"results": results, "files_searched": results, "files_matched": results,
                   "files_skipped": 0, "skipped_paths": [], "truncated": False}}


def test_core_search_asks_page_after_page_in_order():
    conn = FakeConn([page("s1", [("a", 1)], False, 1), page("s1", [], False, 1),
                     page("s1", [("b", 2), ("c", 3)], True, 3)])
    shown, ended = [], []
    job = CoreSearch(conn, lambda ms: shown.extend((m.path, m.line) for m in ms),
                     lambda: ended.append(True))
    job.start("needle", folder="src", globs=("*.py",), overrides={"a": "x"})
    assert conn.sent[0] == ("fs.search", {"pattern": "needle", "regex": False,
                                          "match_case": False, "whole_word": False,
                                          "folder": "src", "globs": ["*.py"],
                                          "overrides": {"a": "x"}})
    conn.answer()          # the first page: two more asked at once (one ahead)
    assert [op for op, _ in conn.sent] == ["fs.search", "fs.search_more", "fs.search_more"]
    while conn.waiting:
        conn.answer()      # one more asked as each arrives, until the last page
    assert [op for op, _ in conn.sent].count("fs.search_more") == 3
    assert shown == [("a", 1), ("b", 2), ("c", 3)] and ended == [True] and job.done
    assert job.error is None     # the answer to the page asked past the end is ignored
    assert job.summary() == "3 matches in 3 files (3 searched)."


def test_core_search_stop_tells_the_core_and_shows_nothing_more():
    conn = FakeConn([page("s1", [("a", 1)], False, 1), page("s1", [("b", 2)], False, 2)])
    shown, ended = [], []
    job = CoreSearch(conn, lambda ms: shown.extend(m.path for m in ms), lambda: ended.append(1))
    job.start("needle")
    conn.answer()                 # first page shown, two fs.search_more in flight
    job.cancel()
    assert conn.sent[-1] == ("fs.search_stop", {"search": "s1"})
    while conn.waiting:
        conn.answer()             # the pages in flight (and the refusal after): dropped
    assert shown == ["a"] and ended == [] and job.summary().startswith("Stopped: 1 match")
    assert [op for op, _ in conn.sent] == ["fs.search", "fs.search_more", "fs.search_more",
                                           "fs.search_stop"]


def test_core_search_stopped_before_its_first_reply_stops_it_in_the_core():
    conn = FakeConn([page("s9", [("a", 1)], False, 1)])
    job = CoreSearch(conn, lambda ms: None, lambda: None)
    job.start("needle")
    job.cancel()
    conn.answer()
    assert conn.sent[-1] == ("fs.search_stop", {"search": "s9"})


def test_core_search_error_ends_it_with_the_error():
    conn = FakeConn([])
    ended = []
    job = CoreSearch(conn, lambda ms: None, lambda: ended.append(1))
    job.start("x", folder="../..")
    _op, callback = conn.waiting.pop()
    callback(Reply.failure("x", PathError("outside_root", "../.. is outside the project",
                                          "Use a folder inside the project.")))
    assert ended == [1] and job.done and job.error is not None
    assert job.error.kind == "path.outside_root"
