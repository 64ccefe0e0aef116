"""Session state: stored atomically, read leniently, and turned into tabs at start."""

import json

from ui.tk.app.session import (
    MAX_RECENT,
    DocState,
    Layout,
    Session,
    TabPlan,
    load,
    restore_plan,
    save,
)


def test_round_trip(tmp_path):
    s = Session(Layout("900x600+10+10", 180, 140), (DocState("b1", "/p/a.py", 12, 4, 3),
                                                    DocState(None, "/p/b.txt")),
                active=1, recent=("/p/a.py",), settings={"theme": "dark"})
    save(tmp_path, s)
    assert load(tmp_path) == s


def test_missing_or_broken_file_gives_defaults(tmp_path):
    assert load(tmp_path) == Session()
    (tmp_path / "ui-session.json").write_text("{not json")
    assert load(tmp_path) == Session()
    (tmp_path / "ui-session.json").write_text(json.dumps(
        {"layout": {"tree_width": "wide", "output_height": 99}, "documents": [7, {"line": -3}],
         "active": 5, "recent": ["/x", 3]}))
    s = load(tmp_path)
    assert s.layout.tree_width == Layout().tree_width and s.layout.output_height == 99
    assert s.documents == (DocState(None, None, 1, 0, 1),)
    assert s.active == 0 and s.recent == ("/x",)


def test_recent_moves_to_front_without_duplicates_and_is_capped():
    s = Session()
    for i in range(MAX_RECENT + 3):
        s = s.with_recent(f"/f{i}")
    s = s.with_recent("/f5")
    assert s.recent[0] == "/f5"
    assert len(s.recent) == MAX_RECENT and len(set(s.recent)) == MAX_RECENT


def _buf(bid, path=None):
    return {"buffer": bid, "path": path}


def test_ui_restart_adopts_core_buffers_with_session_cursors_and_order():
    s = Session(documents=(DocState("b2", "/p/two", 7, 2, 5), DocState("b1", "/p/one", 3, 1)),
                active=1)
    plans, active = restore_plan(s, [_buf("b1", "/p/one"), _buf("b2", "/p/two"), _buf("b3")])
    assert plans == [TabPlan("b2", "/p/two", 7, 2, 5), TabPlan("b1", "/p/one", 3, 1),
                     TabPlan("b3", None)]
    assert active == 1


def test_fresh_start_reopens_paths_and_drops_vanished_untitled():
    s = Session(documents=(DocState("old", "/p/a", 4, 0), DocState("gone", None),
                           DocState("old2", "/p/a")))
    plans, active = restore_plan(s, [])
    assert plans == [TabPlan(None, "/p/a", 4, 0)]
    assert active == 0


def test_core_buffer_matched_by_path_when_ids_changed():
    s = Session(documents=(DocState("old", "/p/a", 9, 1),))
    plans, _ = restore_plan(s, [_buf("new", "/p/a")])
    assert plans == [TabPlan("new", "/p/a", 9, 1)]


def test_requested_files_are_appended_once_and_become_active():
    s = Session(documents=(DocState(None, "/p/a"),))
    plans, active = restore_plan(s, [], requested=["/p/b", "/p/a"])
    assert [p.path for p in plans] == ["/p/a", "/p/b"]
    assert active == 1
