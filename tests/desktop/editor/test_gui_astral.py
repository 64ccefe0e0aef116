"""Emoji and other characters above U+FFFF in the real editor widget (Tk 8.6 counts them as two
columns, the core as one): what the window shows is what the core saves.

Edits go in the way keystrokes do — the widget's own ``insert``/``delete`` with the index
expressions Tk's Text bindings use — and the core's text is compared with the widget's.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.editor_harness import close_editor, open_editor, widget_text

pytestmark = [pytest.mark.gui, pytest.mark.timeout(120)]

EMOJI = "\U0001F600"       # 😀
PARTY = "\U0001F389"       # 🎉


def _settled(ed, core) -> str:
    core.pump()
    ed.update_idletasks()
    assert core.doc.text() == ed.replica.text == widget_text(ed)
    return core.doc.text()


# --- what Tk 8.6 does (the facts rio/text/utf16_columns.py is built on) ------------------------------

def test_tk_counts_an_emoji_as_two_columns_and_steps_over_it(tk_root):
    import tkinter as tk
    t = tk.Text(tk_root)
    t.insert("1.0", f"a{EMOJI}b")
    assert t.index("1.end") == "1.4"
    assert t.index("1.1+1c") == "1.3"          # char arithmetic steps over the pair
    assert t.get("1.1", "1.3") == EMOJI        # and get joins it
    t.destroy()


def test_the_offsets_part_maps_emoji_columns_around_a_plain_text(tk_root):
    """The editor's offset mapping is a part (ui/tk/editor/offsets.py) made from a Text, its
    door and a small document (ui/tk/editor/seams.py ``Document``), no tab: it maps Tk's
    UTF-16 columns to code points once it is told the text is not all ASCII (the flag it owns),
    and a Tk index inside a pair stands for the pair's start, or its end when rounding up."""
    import tkinter as tk
    from dataclasses import dataclass

    from rio.text.replica import Replica
    from ui.tk.editor.bigfile import LineWindow
    from ui.tk.editor.offsets import EditorOffsets
    from ui.tk.editor.text_redirect import TextRedirect

    @dataclass
    class Doc:
        replica: Replica | None
        window: LineWindow | None = None
        ready: bool = True

    text = f"top\na{EMOJI}b{PARTY}c"
    t = tk.Text(tk_root)
    t.insert("1.0", text)
    door = TextRedirect(t, live=lambda: False, insert=lambda i, c: None,
                        replace=lambda a, b, c: None, refused=lambda err: None)
    try:
        offsets = EditorOffsets(Doc(Replica(text, 1, "test")), door)
        assert offsets.offset("2.4") == 8        # ASCII so far: Tk's column taken as is
        offsets.maybe_astral = True
        assert [offsets.offset(f"2.{c}") for c in (0, 1, 3, 4, 6, 7)] == [4, 5, 6, 7, 8, 9]
        assert [offsets.index(o) for o in range(4, 10)] == ["2.0", "2.1", "2.3", "2.4",
                                                            "2.6", "2.7"]
        assert offsets.locate("2.2") == (5, "2.1")
        assert offsets.locate("2.2", round_up=True) == (6, "2.3")
        assert offsets.index_after("2.0", 3) == "2.4"
        assert offsets.context(7) == (text, 0)
    finally:
        door.remove()
        t.destroy()


# --- typing, Backspace, Delete, End next to emoji ------------------------------------------------

def test_typing_after_an_emoji_lands_after_it_in_the_core(editor):
    ed, core = editor(f"{EMOJI}\n")
    ed.text.mark_set("insert", "1.end")
    ed.text.insert("insert", "x")
    assert _settled(ed, core) == f"{EMOJI}x\n"
    assert ed.cursor() == (1, 2)


def test_backspace_after_an_emoji_deletes_the_emoji(editor):
    ed, core = editor(f"ab{EMOJI}c\n")
    ed.text.mark_set("insert", "1.4")          # after the emoji (Tk column 4)
    ed.text.delete("insert-1c")                # what <BackSpace> does
    assert _settled(ed, core) == "abc\n"
    ed.text.delete("insert-1c")
    assert _settled(ed, core) == "ac\n"


def test_backspace_key_after_an_emoji(editor, tk_root):
    ed, core = editor(f"a\u6f22{EMOJI}c\n")
    ed.text.focus_force()
    ed.text.mark_set("insert", "1.4")
    ed.text.event_generate("<KeyPress>", keysym="BackSpace")
    tk_root.update()
    assert _settled(ed, core) == "a\u6f22c\n"


def test_delete_before_an_emoji_deletes_the_whole_pair(editor):
    ed, core = editor(f"a{EMOJI}{PARTY}b")
    ed.text.mark_set("insert", "1.1")
    ed.text.delete("insert")                   # what <Delete> does
    assert _settled(ed, core) == f"a{PARTY}b"


def test_a_range_ending_inside_a_pair_takes_the_whole_pair(editor):
    ed, core = editor(f"a{EMOJI}b")
    ed.text.delete("1.0", "1.2")               # 1.2 is between the halves
    assert _settled(ed, core) == "b"


def test_typing_with_the_cursor_inside_a_pair_does_not_split_it(editor):
    ed, core = editor(f"a{EMOJI}b")
    ed.text.insert("1.2", "x")
    assert _settled(ed, core) == f"a{EMOJI}xb"


def test_end_then_typing_edits_the_same_line(editor):
    ed, core = editor(f"one {EMOJI}{EMOJI}\ntwo\nthree\n")
    ed.text.mark_set("insert", "1.0 lineend")  # what <End> does
    ed.text.insert("insert", "!")
    assert _settled(ed, core) == f"one {EMOJI}{EMOJI}!\ntwo\nthree\n"
    assert ed.cursor() == (1, 7)


def test_goto_a_column_after_emoji(editor):
    ed, _core = editor(f"{EMOJI}{EMOJI}abc\n")
    ed.goto(1, 3)
    assert str(ed.orig("index", "insert")) == "1.5"
    assert ed.cursor() == (1, 3)


# --- changes from the core (agents, undo) ------------------------------------------------------

def test_a_remote_edit_after_an_emoji_lands_in_the_right_place(editor):
    ed, core = editor(f"{EMOJI} x {PARTY} y\n")
    core.remote(6, 7, "Y")                     # the y: code point 6, Tk column 8
    core.remote(0, 3, "")                      # "😀 x" removed: a range holding an emoji
    assert _settled(ed, core) == f" {PARTY} Y\n"


def test_an_agent_inserting_emoji_on_another_line(editor):
    ed, core = editor(f"{EMOJI}a\nb\n")
    core.remote(2, 2, f"{PARTY}{PARTY}")
    core.remote(4, 5, "")                      # the newline after them
    assert _settled(ed, core) == f"{EMOJI}a{PARTY}{PARTY}b\n"


# --- highlighting on an emoji line --------------------------------------------------------------

def test_highlighting_does_not_shift_on_an_emoji_line(editor):
    ed, _core = editor(f"s = '{EMOJI}{EMOJI}' + name  # note\n", name="x.py")
    ed.decor.highlight_visible()
    comment = [str(i) for i in ed.orig("tag", "ranges", "syn.comment")]
    string = [str(i) for i in ed.orig("tag", "ranges", "syn.string")]
    assert ed.orig("get", *comment) == "# note"
    assert ed.orig("get", *string) == f"'{EMOJI}{EMOJI}'"


# --- the big-file window -----------------------------------------------------------------------

def test_big_file_window_maps_emoji_columns(editor, monkeypatch):
    from ui.tk.editor import bigfile
    monkeypatch.setattr(bigfile, "BIG_CHARS", 100)
    text = "".join(f"{i} {EMOJI} row\n" for i in range(200))
    ed, core = editor(text)
    assert ed.window is not None
    ed.goto(50, 0)
    ed.text.mark_set("insert", "insert lineend")
    ed.text.insert("insert", "!")
    ed.text.delete("insert linestart+4c")      # the character after the emoji: the space
    expected = text.replace(f"\n49 {EMOJI} row\n", f"\n49 {EMOJI}row!\n")
    assert _settled(ed, core) == expected


# --- the convergence property through the real widget -----------------------------------------

CHARS = st.sampled_from(["a", "b", " ", "\n", "\r\n", EMOJI, PARTY, "e\u0301", "\u6f22",
                         "\U0001F44D\U0001F3FD", "\u200d"])
ACTIONS = st.lists(st.one_of(
    st.tuples(st.just("type"), CHARS),
    st.tuples(st.just("backspace"), st.just("")),
    st.tuples(st.just("delete"), st.just("")),
    st.tuples(st.just("move"), st.integers(0, 400)),       # as a click: never inside a pair
    st.tuples(st.just("left"), st.just("")),
    st.tuples(st.just("right"), st.just("")),
    st.tuples(st.just("select_delete"), st.integers(0, 400)),
    st.tuples(st.just("remote"), st.tuples(st.integers(0, 400), st.integers(0, 3), CHARS)),
    st.tuples(st.just("pump"), st.integers(0, 3)),
), max_size=30)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(initial=st.lists(CHARS, max_size=12).map("".join), actions=ACTIONS)
def test_core_and_widget_converge_with_emoji_marks_and_crlf(tk_root, initial, actions):
    ed, core = open_editor(tk_root, initial)
    try:
        for kind, arg in actions:
            if kind == "type":
                ed.text.insert("insert", arg)
            elif kind == "backspace":
                if ed.text.compare("insert", "!=", "1.0"):
                    ed.text.delete("insert-1c")
            elif kind == "delete":
                ed.text.delete("insert")
            elif kind == "move":
                line = arg % int(ed.text.index("end-1c").split(".")[0]) + 1
                # Tk's own char arithmetic, like clicks and arrow keys, never stops inside a
                # pair; a mark set there by hand splits the pair in Tk itself.
                ed.text.mark_set("insert", f"{line}.0 + {arg % 7} chars")
            elif kind == "left":
                ed.text.mark_set("insert", "insert-1c")
            elif kind == "right":
                ed.text.mark_set("insert", "insert+1c")
            elif kind == "select_delete":
                ed.text.delete("insert", f"1.0+{arg % 9}c")
            elif kind == "remote":
                at, length, chars = arg
                size = len(core.doc)
                start = at % (size + 1)
                core.remote(start, min(size, start + length), chars)
            elif kind == "pump":
                core.pump(arg)
            ed.update_idletasks()
        _settled(ed, core)
    finally:
        close_editor(ed)
