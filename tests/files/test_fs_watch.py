"""The project watcher (issue 18, point 9; ADR-0037): files made, deleted and renamed on disk
under tmp_path become ``fs.changed`` events — from the model (rio/files/watch.py) on real
folders, from the watcher thread (actors/core/fs_watcher.py) with the real watchfiles, and from a
real ``rio serve``'s core. The tree following them in the real window is
tests/desktop/project/test_gui_project_tree.py's."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rio.files.watch import ADDED, DELETED, MAX_FOLDERS, MODIFIED, Folded, ProjectWatch
from rio.files.workspace import Workspace
from rio.protocol.events import check_event
from tests.support import wait_for


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / ".git" / "info").mkdir(parents=True)
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / ".venv").mkdir()
    (root / "build").mkdir()
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    return root


# --- the model, on real folders -------------------------------------------------------------

def test_the_watched_folders_leave_the_ignored_ones_out(project: Path) -> None:
    model = ProjectWatch(Workspace(project))
    assert list(model.dirs) == [".", "src", "src/deep"]          # breadth first
    assert model.ignored == {".git", "node_modules", ".venv", "build"}
    assert str(project / ".git" / "info") in model.paths()     # for info/exclude
    assert not model.capped


def test_a_symlinked_folder_is_not_followed_and_the_cap_holds(project: Path) -> None:
    (project / "link").symlink_to(project / "src")
    for i in range(5):
        (project / f"d{i}").mkdir()
    model = ProjectWatch(Workspace(project), max_dirs=4)
    assert "link" not in model.dirs and len(model.dirs) == 4 and model.capped


def test_a_batch_names_the_folders_whose_entries_changed(project: Path) -> None:
    model = ProjectWatch(Workspace(project))
    (project / "new.txt").write_text("")
    (project / "src" / "deep" / "b.py").write_text("")
    (project / "src" / "a.py").write_text("changed")          # contents: not an entry change
    (project / "debug.log").write_text("")                    # ignored by .gitignore
    folded = model.fold({(ADDED, str(project / "new.txt")),
                         (ADDED, str(project / "src" / "deep" / "b.py")),
                         (MODIFIED, str(project / "src" / "a.py")),
                         (ADDED, str(project / "debug.log")),
                         (ADDED, str(project / "node_modules" / "x.js")),
                         (ADDED, "/elsewhere/file")})
    assert folded == Folded({".", "src/deep"}, more=False, rearm=False)
    assert folded.event() == {"folders": [".", "src/deep"], "more": False}
    check_event("fs.changed", folded.event())
    assert model.fold({(MODIFIED, str(project / "src" / "a.py"))}).event() is None


def test_a_new_folder_is_watched_and_named_a_deleted_one_forgotten(project: Path) -> None:
    model = ProjectWatch(Workspace(project))
    (project / "pkg" / "sub").mkdir(parents=True)
    (project / "pkg" / "node_modules").mkdir()
    folded = model.fold({(ADDED, str(project / "pkg"))})
    assert folded.rearm and folded.folders == {".", "pkg"}
    assert {"pkg", "pkg/sub"} <= set(model.dirs) and "pkg/node_modules" in model.ignored
    assert str(project / "pkg" / "sub") in model.paths()
    shutil.rmtree(project / "pkg")
    folded = model.fold({(DELETED, str(project / "pkg"))})
    assert folded == Folded({"."}, more=False, rearm=False)  # the kernel dropped its watches
    assert "pkg" not in model.dirs and "pkg/sub" not in model.dirs


def test_a_folder_deleted_and_made_again_in_one_batch_is_watched_again(project: Path) -> None:
    model = ProjectWatch(Workspace(project))
    shutil.rmtree(project / "src" / "deep")
    (project / "src" / "deep").mkdir()
    path = str(project / "src" / "deep")
    folded = model.fold({(DELETED, path), (ADDED, path)})
    assert folded.rearm and "src/deep" in model.dirs


def test_new_ignore_rules_walk_again_and_say_more(project: Path) -> None:
    model = ProjectWatch(Workspace(project))
    (project / ".gitignore").write_text("*.log\nsrc/\n")
    folded = model.fold({(MODIFIED, str(project / ".gitignore"))})
    assert folded.more and folded.rearm and "src" not in model.dirs and "src" in model.ignored
    (project / ".git" / "info" / "exclude").write_text("build/\n")
    (project / ".gitignore").write_text("")
    assert model.fold({(ADDED, str(project / ".git" / "info" / "exclude"))}).more


def test_a_storm_is_not_looked_at_path_by_path(project: Path) -> None:
    model = ProjectWatch(Workspace(project))
    storm = {(ADDED, str(project / "src" / f"f{i}.py")) for i in range(3000)}
    assert model.fold(storm) == Folded(set(), more=True, rearm=False)
    many = Folded({f"d{i}" for i in range(MAX_FOLDERS + 5)})
    event = many.event()
    assert event is not None and len(event["folders"]) == MAX_FOLDERS and event["more"]


# --- the watcher thread, with the real watchfiles -------------------------------------------

class Seen:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, topic: str, data: Any) -> None:
        check_event(topic, data)
        with self.lock:
            self.events.append(dict(data))

    def folders(self) -> set[str]:
        with self.lock:
            return {f for e in self.events for f in e["folders"]}

    def wait(self, predicate: Any, timeout: float = 10.0) -> bool:
        return bool(wait_for(predicate, timeout))

    def clear(self) -> None:
        with self.lock:
            self.events.clear()


@pytest.fixture
def watching(project: Path) -> Any:
    from actors.core.fs_watcher import ProjectWatcher
    seen = Seen()
    stopping = threading.Event()
    watcher = ProjectWatcher(project, seen, stopping)
    thread = watcher.start()
    assert watcher.armed.wait(10), "the watcher never armed"
    try:
        yield seen, watcher
    finally:
        stopping.set()
        thread.join(5)
        assert not thread.is_alive(), "the watcher did not stop with its host"


@pytest.mark.timeout(60)
def test_files_made_and_deleted_on_disk_are_published(watching: Any, project: Path) -> None:
    seen, _ = watching
    (project / "made.txt").write_text("x")
    assert seen.wait(lambda: "." in seen.folders())
    seen.clear()
    (project / "src" / "deep" / "b.py").write_text("x")
    assert seen.wait(lambda: "src/deep" in seen.folders())
    seen.clear()
    (project / "src" / "a.py").unlink()
    assert seen.wait(lambda: "src" in seen.folders())
    seen.clear()
    os.rename(project / "made.txt", project / "src" / "moved.txt")
    assert seen.wait(lambda: {".", "src"} <= seen.folders())


@pytest.mark.timeout(60)
def test_a_new_folder_is_followed_into(watching: Any, project: Path) -> None:
    seen, watcher = watching
    (project / "pkg" / "sub").mkdir(parents=True)
    assert seen.wait(lambda: "pkg" in seen.folders())
    assert seen.wait(lambda: "pkg/sub" in watcher.model.dirs)
    seen.clear()
    (project / "pkg" / "sub" / "late.py").write_text("")    # after the new watcher armed
    assert seen.wait(lambda: "pkg/sub" in seen.folders())


@pytest.mark.timeout(60)
def test_ignored_paths_and_contents_publish_nothing(watching: Any, project: Path) -> None:
    seen, _ = watching
    (project / "debug.log").write_text("x")
    (project / "node_modules" / "pkg" / "index.js").write_text("x")
    (project / "build" / "out.o").write_text("x")
    (project / ".git" / "HEAD").write_text("ref\n")
    with open(project / ".gitignore", "a") as f:    # then a change that is published …
        f.write("")
    (project / "marker.txt").write_text("")
    assert seen.wait(lambda: "." in seen.folders())
    time.sleep(0.3)   # a negative check: nothing else may come in this window
    assert seen.folders() == {"."}, seen.events


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_storm_of_changes_is_coalesced(watching: Any, project: Path) -> None:
    seen, _ = watching
    start = time.monotonic()
    for i in range(2500):
        (project / "src" / f"gen{i}.py").write_text("")
    took = time.monotonic() - start
    # Named, or (a batch of over 2,000 raw changes) "list again all you show".
    assert seen.wait(lambda: "src" in seen.folders() or any(e["more"] for e in seen.events))
    time.sleep(0.6)   # let the last batch end
    # One batch per 400 ms at most (the debounce), plus the last one.
    assert len(seen.events) <= took / 0.4 + 2, (len(seen.events), took)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_name_that_is_not_utf8_does_not_stop_the_watcher(watching: Any,
                                                           project: Path) -> None:
    seen, _ = watching
    with open(os.path.join(os.fsencode(project), b"bad\xff.txt"), "w"):
        pass
    assert seen.wait(lambda: any(e["more"] for e in seen.events), 15)
    seen.clear()
    (project / "after.txt").write_text("")
    assert seen.wait(lambda: "." in seen.folders(), 15)


# --- a real instance --------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_real_core_publishes_fs_changed(tmp_path: Path, project: Path) -> None:
    from rio.protocol.frames import thaw
    from tests.support import RioServer
    server = RioServer(project, tmp_path).start()
    try:
        conn = server.connect("fs-watch", subscribe=("fs.",))
        got: list[dict[str, Any]] = []
        conn.subscribe("fs.", lambda e: got.append(thaw(e.data)))
        conn.wait_live()
        # The watcher arms after the core is ready: make files until one is seen.
        deadline = time.monotonic() + 20
        n = 0
        while not got and time.monotonic() < deadline:
            (project / "src" / f"agent{n}.py").write_text("")
            n += 1
            conn.wait_for(lambda: bool(got), 0.5)
        assert got and got[0] == {"folders": ["src"], "more": False}
        got.clear()
        shutil.rmtree(project / "src" / "deep")
        assert conn.wait_for(lambda: any("src" in e["folders"] for e in got), 10)
        conn.close()
    finally:
        server.stop()
