"""Replace and Replace All wait on the editor's own quiet queue (ui/tk/editor/model.py): a block
command still in flight lands first, and the replacement is made on the text as it is then.

A real EditorTab on the fake core of tests/editor_harness.py (the test decides when the core
answers), and a window reduced to the find dialog's seam (ui/tk/app/seams.py FindHost).
"""

from __future__ import annotations

import pytest

from rio.protocol.errors import RioError
from tests.editor_harness import open_editor
from ui.tk.find import dialog as find_dialog

pytestmark = [pytest.mark.gui, pytest.mark.timeout(60)]


class Window:
    """The find dialog's face of the window (FindHost), around one editor."""

    def __init__(self, root, editor):
        self.root = root
        self.editor = editor
        self.settings = {"theme": "classic"}
        self.messages: list[str] = []

    def active_editor(self):
        return self.editor

    def set_message(self, text: str) -> None:
        self.messages.append(text)

    def register_command(self, *args, **kwargs) -> None:
        pass


def applies(core) -> list[dict]:
    return [p for op, p in core.requests if op == "buffer.apply"]


def test_replace_all_waits_for_an_indent_in_flight_and_replaces_in_its_result(tk_root):
    ed, core = open_editor(tk_root, "beta\nbeta\n")
    ed.text.tag_add("sel", "1.0", "2.end")
    ed.block_indent(dedent=False)            # one buffer.apply, not answered yet
    assert len(applies(core)) == 1
    c = find_dialog.controller_for(Window(tk_root, ed))
    c.pattern, c.replacement = "beta", "B"
    assert c.replace_all() == 2
    assert len(applies(core)) == 1           # waits: the indent's change is not back
    core.pump()
    assert core.doc.text() == "    B\n    B\n"
    assert ed.text.get("1.0", "end-1c") == "    B\n    B\n"
    assert "Replaced 2" in c.message
    second = applies(core)[1]
    assert second["base_version"] == core.doc.version - 2   # made on the indented text


def test_replace_pressed_again_before_the_first_lands_replaces_the_next_match(tk_root):
    ed, core = open_editor(tk_root, "beta beta beta\n")
    c = find_dialog.controller_for(Window(tk_root, ed))
    c.pattern, c.replacement = "beta", "B"
    assert c.replace()                      # first press selects the match
    assert c.replace()                      # replaces it (in flight)
    assert c.replace()                      # again, before the core answered: waits
    assert len(applies(core)) == 1
    core.pump()
    # The second replacement is made once the first landed and the next match is selected.
    assert core.doc.text() == "B B beta\n"
    assert ed.text.get("1.0", "end-1c") == "B B beta\n"
    assert ed.selection() == (4, 8)         # and the one after is shown


def test_a_refused_replace_is_said_in_the_dialog_not_as_an_editor_error(tk_root):
    ed, core = open_editor(tk_root, "beta\n")
    window = Window(tk_root, ed)
    c = find_dialog.controller_for(window)
    c.pattern, c.replacement = "beta", "B"

    def refuse(op, params):
        raise RioError("buffer.stale_base", "The core restarted.", "Reload the document.")
    core._run, real = (lambda op, p: refuse(op, p) if op == "buffer.apply" else real(op, p)), \
        core._run
    assert c.replace_all() == 1
    core.pump()
    assert "core restarted" in c.message and not ed.app.errors
    assert ed.quiet_queue.batches == 0       # the refused batch does not hold later commands
