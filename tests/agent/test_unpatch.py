"""Taking a unified diff back (the panel's Revert on files an agent changed behind Rio's back)."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from rio.agent.proposals import unified_diff
from rio.agent.unpatch import text_before

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "d d", "é"]), max_size=12)


def text(lines: list[str], end: bool) -> str:
    return "\n".join(lines) + ("\n" if end and lines else "")


@settings(max_examples=300)
@given(LINES, st.booleans(), LINES, st.booleans())
def test_the_text_before_any_change_comes_back(a, a_end, b, b_end):
    before, after = text(a, a_end), text(b, b_end)
    diff = unified_diff("f.txt", before, after)
    if before == after:
        assert text_before(diff, after) is None      # no diff: nothing to take back
    else:
        assert text_before(diff, after) == before


def test_a_file_changed_again_since_or_a_cut_diff_is_refused():
    before, after = "one\ntwo\nthree\n", "one\n2\nthree\n"
    diff = unified_diff("f.txt", before, after)
    assert text_before(diff, after) == before
    assert text_before(diff, "one\n2\nTHREE\n") is None
    assert text_before(diff, "") is None
    assert text_before(diff + "\n[… 120 more characters]\n", after) is None
    assert text_before("not a diff\n", after) is None


# Lines end at "\n" only: a form feed, "\x1c", NEL or U+2028 inside a line is text, not a line
# end (str.splitlines took them as ends, so such a file's diff could not be taken back).
ODD = st.text(alphabet=st.sampled_from(list("ab \n\x0c\x0b\x1c\x85\u2028é\U0001F600")),
              max_size=24)


@settings(max_examples=300)
@given(ODD, ODD)
def test_only_newlines_end_lines_in_a_diff_and_its_inverse(before, after):
    diff = unified_diff("f.py", before, after)
    if before != after:
        assert text_before(diff, after) == before


def _revert_on_disk(tmp_path, before: bytes, after: bytes) -> tuple[str | None, str]:
    """What Revert works out for a file the agent rewrote from ``before`` to ``after``: the
    diff of agent.changed_files taken back from the text fs.read gives (the panel's path)."""
    from rio.agent import disk_changes
    from rio.files.files import decode_bytes
    from rio.files.fs_ops import FsOps
    path = tmp_path / "f.txt"
    path.write_bytes(before)
    snap = disk_changes.take(tmp_path)
    path.write_bytes(after)
    st_ = path.stat()
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns + 10_000_000))
    entry = disk_changes.changes(snap)["files"][0]
    now = FsOps(tmp_path).read("f.txt", 1_000_000)["text"]
    return text_before(entry.get("diff") or "", now), decode_bytes(before)[0]


def test_a_crlf_file_the_agent_changed_can_be_reverted(tmp_path):
    got, want = _revert_on_disk(tmp_path, b"one\r\ntwo\r\nthree\r\n", b"one\r\n2\r\nthree\r\n")
    assert got == want == "one\ntwo\nthree\n"


def test_a_file_with_a_form_feed_or_latin1_text_can_be_reverted(tmp_path):
    got, want = _revert_on_disk(tmp_path, b"a\n\x0c\nb\nc\n", b"a\n\x0c\nB\nc\n")
    assert got == want
    got, want = _revert_on_disk(tmp_path, b"caf\xe9\nb\n", b"caf\xe9\nB\n")
    assert got == want == "caf\xe9\nb\n"


def test_revert_of_a_created_or_deleted_file_is_refused_naming_what_to_do():
    """ui.agent revert on a row without Revert says why for that row, not a generic refusal."""
    from types import SimpleNamespace

    from rio.protocol.errors import RioError
    from ui.tk.agent import changed as agent_changed
    from ui.tk.agent.model import Block
    block = Block("note", data={"changed_files": [
        {"path": "new.txt", "change": "created", "diff": "+x\n"},
        {"path": "gone.txt", "change": "deleted", "diff": "-x\n"},
        {"path": "big.txt", "change": "modified", "note": "no diff: the file is large"}]})
    panel = SimpleNamespace(model=SimpleNamespace(shown=SimpleNamespace(blocks=[block])))
    said = {}
    for path in ("new.txt", "gone.txt", "big.txt"):
        agent_changed.ChangedFiles(panel).revert(path, lambda r, p=path: said.__setitem__(p, r))
    assert all(isinstance(r, RioError) for r in said.values())
    assert "created by the agent" in said["new.txt"].message
    assert "Delete it yourself" in said["new.txt"].message
    assert "deleted by the agent" in said["gone.txt"].message
    assert "the file is large" in said["big.txt"].message
