"""The real desktop under Xvfb, driven through its ui.* ops; assertions are on the CORE's state
(buffer.text, bytes on disk), not on what the widget claims."""

from __future__ import annotations

import os
import signal

import pytest

from tests.support import wait_for, wait_gone

pytestmark = [pytest.mark.slow, pytest.mark.gui]


@pytest.fixture
def project_files():
    """The project of tests/desktop/conftest.py's ``project`` and ``desktop``."""
    return {"hello.py": "def hello():\n    return 1\n"}


def _active(state):
    return next(t for t in state["tabs"] if t["active"])


@pytest.mark.timeout(90)
def test_type_undo_save_reach_the_core_and_the_disk(desktop, project):
    s = desktop.wait_active_ready()
    tab = _active(s)
    assert tab["name"] == "hello.py"
    bid = tab["buffer"]
    desktop.call("ui.key", {"keysym": "End", "state": "Control"})
    desktop.call("ui.type", {"text": "x = 2"})
    desktop.wait_text(bid, "def hello():\n    return 1\nx = 2")
    # Enter after a colon indents: the auto-indent ran in the UI and reached the core.
    desktop.call("ui.type", {"text": "\nif x:\nprint(x)"})
    desktop.wait_text(bid, "def hello():\n    return 1\nx = 2\nif x:\n    print(x)")
    s = desktop.wait_state(lambda s: _active(s)["dirty"])
    assert s["status"]["modified"] == "Modified"
    # Undo is the core's: it removes the last typing step, whatever the widget did.
    before = desktop.text(bid)
    desktop.call("ui.menu", {"path": "Edit/Undo"})
    assert wait_for(lambda: desktop.text(bid) != before, 10)
    undone = desktop.text(bid)
    desktop.call("ui.key", {"keysym": "y", "state": "Control"})   # redo by key
    desktop.wait_text(bid, before)
    assert undone != before
    desktop.call("ui.menu", {"path": "File/Save"})
    assert wait_for(lambda: (project / "hello.py").read_bytes() == before.encode() + b"\n"
                    or (project / "hello.py").read_bytes() == before.encode(), 10)
    desktop.wait_state(lambda s: not _active(s)["dirty"])


@pytest.mark.timeout(120)
def test_ui_crash_restarts_and_rebuilds_its_tabs_with_nothing_lost(desktop, project):
    tab = _active(desktop.wait_active_ready())
    bid = tab["buffer"]
    desktop.call("ui.type", {"text": "# unsaved\n"})
    desktop.wait_text(bid, "# unsaved\ndef hello():\n    return 1\n")
    old_pid = desktop.pids()["ui"]
    os.kill(old_pid, signal.SIGKILL)
    assert wait_for(lambda: desktop.pids().get("ui") not in (None, old_pid), 20)
    s = desktop.wait_active_ready(40)
    assert [t["buffer"] for t in s["tabs"]] == [bid]
    assert _active(s)["dirty"] is True
    desktop.call("ui.type", {"text": "more "})
    assert wait_for(lambda: "more " in desktop.text(bid), 10)
    assert desktop.text(bid).replace("more ", "", 1) == "# unsaved\ndef hello():\n    return 1\n"


@pytest.mark.timeout(150)
def test_core_kill_9_the_ui_resyncs_and_keeps_editing(desktop, project):
    tab = _active(desktop.wait_active_ready())
    bid = tab["buffer"]
    desktop.call("ui.type", {"text": "A"})
    desktop.wait_text(bid, "Adef hello():\n    return 1\n")
    # on disk, what the restarted core finds (not a guess at the flush interval)
    assert wait_for(lambda: desktop.journaled("Adef hello():\n    return 1\n"), 10)
    core = desktop.pids()["core"]
    os.kill(core, signal.SIGKILL)
    assert wait_for(lambda: desktop.pids().get("core") not in (None, core), 30)

    def resynced(s):
        t = _active(s)
        return t["ready"] and "restarted" in s["status"]["message"]
    s = desktop.wait_state(resynced, 40)
    bid2 = _active(s)["buffer"]
    assert desktop.text(bid2) == "Adef hello():\n    return 1\n"
    desktop.call("ui.type", {"text": "B"})
    desktop.wait_text(bid2, "ABdef hello():\n    return 1\n")


@pytest.mark.timeout(90)
def test_file_changed_on_disk_prompts_and_reload_takes_the_disk_text(desktop, project):
    tab = _active(desktop.wait_active_ready())
    bid = tab["buffer"]
    before = (project / "hello.py").stat().st_mtime_ns
    (project / "hello.py").write_text("changed outside\n")
    # a later mtime, so the change is seen whatever the clock's grain (no waiting a second)
    os.utime(project / "hello.py", ns=(before + 2_000_000_000, before + 2_000_000_000))
    s = desktop.wait_state(lambda s: any(d["name"] == "conflict" for d in s["dialogs_open"]))
    conflict = next(d for d in s["dialogs_open"] if d["name"] == "conflict")
    assert conflict["buttons"] == ["Reload", "Keep Mine", "Show Difference"]
    desktop.call("ui.dialog_answer", {"name": "conflict", "button": "Reload"})
    desktop.wait_text(bid, "changed outside\n")
    desktop.call("ui.type", {"text": "Z"})
    desktop.wait_text(bid, "Zchanged outside\n")


@pytest.mark.timeout(90)
def test_close_with_unsaved_changes_prompts_and_dont_save_discards(desktop, project):
    tab = _active(desktop.wait_active_ready())
    desktop.call("ui.type", {"text": "junk"})
    desktop.wait_state(lambda s: _active(s)["dirty"])
    desktop.call("ui.key", {"keysym": "w", "state": "Control"})
    s = desktop.wait_state(lambda s: any(d["name"] == "unsaved" for d in s["dialogs_open"]))
    desktop.call("ui.dialog_answer", {"name": "unsaved", "button": "Cancel"})
    s = desktop.wait_state(lambda s: not s["dialogs_open"])
    assert [t["buffer"] for t in s["tabs"]] == [tab["buffer"]]
    desktop.call("ui.menu", {"path": "File/Close"})
    desktop.wait_state(lambda s: any(d["name"] == "unsaved" for d in s["dialogs_open"]))
    desktop.call("ui.dialog_answer", {"name": "unsaved", "button": "Don't Save"})
    desktop.wait_state(lambda s: not s["tabs"])
    assert desktop.call("buffer.list") == []
    assert (project / "hello.py").read_text() == "def hello():\n    return 1\n"


@pytest.mark.timeout(90)
def test_save_as_with_encoding_and_line_endings(desktop, project):
    desktop.wait_active_ready()
    desktop.call("ui.dialog", {"name": "save_as"})
    desktop.call("ui.dialog_answer", {"name": "save_as", "button": "Save",
                                      "fields": {"path": "copy.py", "encoding": "utf-16-le",
                                                 "newline": "crlf"}})
    assert wait_for(lambda: (project / "copy.py").exists(), 10)
    want = "def hello():\r\n    return 1\r\n".encode("utf-16-le")
    # UTF-16 is written with its byte-order mark (the core's choice), then the text.
    assert wait_for(lambda: (project / "copy.py").read_bytes().removeprefix(b"\xff\xfe")
                    == want, 10)
    s = desktop.wait_state(lambda s: _active(s)["name"] == "copy.py")
    assert s["status"]["newline"] == "CRLF"


@pytest.mark.timeout(90)
def test_quit_ends_the_whole_desktop_app_and_leaves_nothing(desktop):
    desktop.wait_active_ready()
    tree = desktop.tree()
    assert len(tree) >= 3          # supervisor, core, ui
    desktop.call("ui.quit", {})
    # Closing the window ends the app: the supervisor exits 0 and takes every process with it.
    assert desktop.proc.wait(30) == 0
    assert not wait_gone(tree, 15)
    assert not (desktop.runtime / "instance.json").exists()


@pytest.mark.timeout(180)
def test_big_file_shows_a_window_of_lines_and_typing_reaches_the_core(desktop, project):
    desktop.wait_active_ready()
    line = "line {:07d} the quick brown fox jumps over\n"
    with open(project / "big.txt", "w") as fh:      # 20.9 MB, 475 k lines
        for i in range(475_000):
            fh.write(line.format(i))
    size = (project / "big.txt").stat().st_size
    assert size > 20_000_000
    reply = desktop.call("ui.open", {"path": "big.txt"}, timeout=90)
    bid = reply["buffer"]
    s = desktop.wait_active_ready(90)
    tab = _active(s)
    assert tab["big"] is True and tab["name"] == "big.txt"
    desktop.call("ui.type", {"text": "HEAD "})
    assert wait_for(lambda: desktop.call("buffer.lines", {"buffer": bid, "first": 0, "last": 1})
                    ["lines"] == ["HEAD line 0000000 the quick brown fox jumps over"], 15)
    # Jump to a line far outside the first window, type there, and check the core's line.
    desktop.call("ui.open", {"path": "big.txt", "line": 400_001, "col": 1})
    s = desktop.wait_state(lambda s: s["cursor"] and s["cursor"]["line"] == 400_001)
    desktop.call("ui.type", {"text": "X"})
    assert wait_for(lambda: desktop.call("buffer.lines", {"buffer": bid, "first": 400_000,
                                                          "last": 400_001})["lines"]
                    == ["Xline 0400000 the quick brown fox jumps over"], 15)
    info = desktop.call("buffer.info", {"buffer": bid})
    assert info["length"] == size + len("HEAD X")


@pytest.mark.timeout(120)
def test_a_very_long_line_is_split_for_display_and_edits_land_right(desktop, project):
    desktop.wait_active_ready()
    (project / "long.txt").write_text("ab" * 50_000 + "\nsecond\n")
    bid = desktop.call("ui.open", {"path": "long.txt", "line": 1, "col": 9_001})["buffer"]
    s = desktop.wait_active_ready()
    assert _active(s)["big"] is True
    assert s["cursor"] == {"line": 1, "col": 9_000}
    desktop.call("ui.type", {"text": "!"})
    text = desktop.wait_text(bid, "ab" * 4_500 + "!" + "ab" * 45_500 + "\nsecond\n")
    assert len(text) == 100_009


@pytest.mark.timeout(90)
def test_the_window_ends_with_its_supervisor(desktop):
    desktop.wait_active_ready()
    import psutil
    ui = psutil.Process(desktop.pids()["ui"])
    tree = desktop.tree()
    desktop.kill9()
    assert wait_for(lambda: not ui.is_running() or ui.status() == psutil.STATUS_ZOMBIE, 15)
    for p in tree:
        try:
            p.kill()
        except psutil.Error:
            pass
    desktop.proc = None


@pytest.mark.timeout(120)
def test_tree_message_and_menu_marks_follow_the_window(desktop, project):
    (project / "src").mkdir()
    (project / "src" / "deep.txt").write_text("deep\n")
    desktop.wait_active_ready()
    # The menus are rebuilt once the plug-ins are in (just after the first draw): wait for it.
    desktop.wait_state(lambda s: "View/Classic Theme" in s["menu_marks"]
                       and "View/Dark Theme" not in s["menu_marks"])
    desktop.call("ui.menu", {"path": "View/Dark Theme"})
    s = desktop.wait_state(lambda s: s["theme"] == "dark")
    assert "View/Dark Theme" in s["menu_marks"]
    assert "View/Classic Theme" not in s["menu_marks"]
    desktop.call("ui.menu", {"path": "View/Word Wrap"})
    desktop.wait_state(lambda s: "View/Word Wrap" in s["menu_marks"])
    # The project tree selects the active tab's file, opening its folder.
    desktop.wait_state(lambda s: s["tree_selection"] == "hello.py")
    desktop.call("ui.open", {"path": "src/deep.txt"})
    desktop.wait_state(lambda s: s["tree_selection"] == "src/deep.txt")
    # A status message belongs to the tab it was about.
    desktop.call("ui.key", {"keysym": "equal", "state": "Control"})   # zoom: "Zoom: N pt"
    desktop.wait_state(lambda s: s["status"]["message"].startswith("Zoom"))
    desktop.call("ui.key", {"keysym": "Tab", "state": "Control"})     # back to hello.py
    desktop.wait_state(lambda s: _active(s)["name"] == "hello.py"
                       and s["tree_selection"] == "hello.py"
                       and s["status"]["message"] == "Ready")


@pytest.mark.timeout(90)
def test_ui_dialog_opens_run_commands(desktop):
    desktop.wait_active_ready()
    desktop.call("ui.dialog", {"name": "run_commands"})
    desktop.wait_state(lambda s: any(d["name"] == "run_commands" for d in s["dialogs_open"]))
    desktop.call("ui.dialog_answer", {"name": "run_commands", "button": "OK",
                                      "fields": {"run": "python hello.py"}})
    desktop.wait_state(lambda s: not any(d["name"] == "run_commands"
                                         for d in s["dialogs_open"]))
