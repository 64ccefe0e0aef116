"""The agent's tools against a real core: confinement attacks on every read tool (``..``,
absolute paths, symlinks out, /dev/zero, a FIFO) are refused, and writes cannot escape."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Mapping

import pytest

from rio.agent.tools import MAX_RESULT_CHARS, Proposal, ToolOutcome, Tools
from tests.support import RioServer

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("outside")
    (folder / "secret.txt").write_text("TOP SECRET\n")
    return folder


@pytest.fixture(scope="module")
def server(tmp_path_factory, outside):
    base = tmp_path_factory.mktemp("tools")
    root = base / "proj"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    (root / "big.txt").write_text("line\n" * 40_000)
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("bee\n")
    os.symlink(outside, root / "link_dir")
    os.symlink(outside / "secret.txt", root / "link_file")
    os.mkfifo(root / "pipe")
    srv = RioServer(root, base).start()
    yield srv
    srv.stop()


class ConnPort:
    """BusPort over one test connection (calls are sequential in these tests)."""

    def __init__(self, server: RioServer):
        self.conn = server.connect("tools-test")

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any:
        return self.conn.call(op, dict(args), timeout=timeout)

    async def run(self, args: Mapping[str, Any], timeout: float) -> Mapping[str, Any]:
        raise AssertionError("not used here")


@pytest.fixture
def tools(server):
    port = ConnPort(server)
    yield Tools(port, "ctest", server.root)
    port.conn.close()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


ATTACKS = ["../outside.txt", "../../etc/passwd", "/etc/passwd", "link_file", "link_dir",
           "link_dir/secret.txt", "/dev/zero", "pipe", "sub/../../x", "/proc/self/environ"]


@pytest.mark.parametrize("path", ATTACKS)
def test_fs_read_refuses(tools: Tools, path: str) -> None:
    outcome = run(tools.read("fs_read", {"path": path}))
    assert not outcome.ok, outcome
    assert "TOP SECRET" not in outcome.content and "root:" not in outcome.content
    assert outcome.content.startswith("Error:") and "path." in outcome.content


@pytest.mark.parametrize("path", ["..", "../", "/", "/etc", "link_dir", "pipe", "/dev"])
def test_fs_list_refuses(tools: Tools, path: str) -> None:
    outcome = run(tools.read("fs_list", {"path": path}))
    assert not outcome.ok, outcome
    assert "secret.txt" not in outcome.content


def test_fs_list_inside_works_and_never_follows_links_out(tools: Tools) -> None:
    """A link out of the project is listed by name only: neither the kind nor the size of what
    it points at (``dir``/``file (11 bytes)`` would tell the agent about the outside)."""
    outcome = run(tools.read("fs_list", {"path": "."}))
    assert outcome.ok, outcome
    kinds = {line.split()[1]: line for line in outcome.content.splitlines()}
    assert kinds["a.py"] == "file a.py  (6 bytes)" and kinds["sub"] == "dir  sub"
    assert kinds["link_dir"] == "other link_dir", kinds
    assert kinds["link_file"] == "other link_file", kinds
    assert "secret.txt" not in outcome.content and "bytes" not in kinds["link_file"]


def test_fs_read_inside_is_capped_with_a_marker(tools: Tools) -> None:
    outcome = run(tools.read("fs_read", {"path": "big.txt"}))
    assert outcome.ok and outcome.truncated
    assert "[… truncated" in outcome.content and f"offset={MAX_RESULT_CHARS}" in outcome.content
    more = run(tools.read("fs_read", {"path": "big.txt", "offset": 199_990}))
    assert more.ok and not more.truncated and more.content == "line\n" * 2


@pytest.mark.parametrize("args", [{"buffer": "../../etc/passwd"}, {"buffer": "/dev/zero"},
                                  {"buffer": "b-nope"}])
def test_buffer_text_refuses_unknown_buffers(tools: Tools, args: dict) -> None:
    outcome = run(tools.read("buffer_text", args))
    assert not outcome.ok and "buffer.unknown_buffer" in outcome.content


def test_buffer_list_shows_only_open_buffers(tools: Tools, server: RioServer) -> None:
    info = server.call("buffer.open", {"path": "sub/b.txt"})
    try:
        outcome = run(tools.read("buffer_list", {}))
        assert outcome.ok and "sub/b.txt" in outcome.content
        text = run(tools.read("buffer_text", {"buffer": info["buffer"], "start": 1}))
        assert text.ok and text.content == "ee\n"
    finally:
        server.call("buffer.close", {"buffer": info["buffer"], "discard": True})


def test_fs_read_serves_the_unsaved_buffer_text(tools: Tools, server: RioServer) -> None:
    info = server.call("buffer.open", {"path": "a.py"})
    try:
        server.call("buffer.replace", {"buffer": info["buffer"], "start": 0, "end": 1,
                                       "text": "unsaved"})
        outcome = run(tools.read("fs_read", {"path": "a.py"}))
        assert outcome.ok and outcome.content == "unsaved = 1\n"
        assert "unsaved text" in outcome.summary
    finally:
        server.call("buffer.close", {"buffer": info["buffer"], "discard": True})


@pytest.mark.parametrize("path", ["../evil.txt", "/tmp/evil.txt", "link_dir/evil.txt",
                                  "link_file"])
def test_writes_cannot_escape_either(tools: Tools, outside: Path, path: str) -> None:
    prepared = run(tools.prepare("propose_create", {"path": path, "text": "evil\n"}))
    if isinstance(prepared, Proposal):  # not refused up front: applying must fail
        outcome = run(tools.apply(prepared))
        assert not outcome.ok, outcome
    else:
        assert isinstance(prepared, ToolOutcome) and not prepared.ok
    assert not (outside / "evil.txt").exists() and not Path("/tmp/evil.txt").exists()
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


@pytest.mark.parametrize("path", ["../outside.txt", "link_file", "/etc/hostname"])
def test_edit_proposals_on_outside_paths_are_refused(tools: Tools, path: str) -> None:
    prepared = run(tools.prepare("propose_edit", {"path": path, "old_text": "TOP",
                                                  "new_text": "x"}))
    assert isinstance(prepared, ToolOutcome) and not prepared.ok
