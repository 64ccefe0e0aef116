"""What the status bar's cells say of an editor (ui/tk/app/status_bar.py editor_cells), without Tk."""

from __future__ import annotations

from ui.tk.app.status_bar import editor_cells


def test_a_clean_document_in_insert_mode():
    cells = editor_cells(3, 0, 0, {"format": {"encoding": "latin-1", "newline": "\r\n"}}, False)
    assert cells == {"position": "Ln 3, Col 1", "selection": "", "encoding": "LATIN-1",
                     "newline": "CRLF", "mode": "INS", "modified": ""}


def test_a_selection_overwrite_and_unsaved_changes_show():
    cells = editor_cells(1, 4, 12, {"dirty": True}, True)
    assert cells["position"] == "Ln 1, Col 5"       # columns are shown from 1
    assert cells["selection"] == "Sel 12" and cells["mode"] == "OVR"
    assert cells["modified"] == "Modified" and cells["encoding"] == "UTF-8"
