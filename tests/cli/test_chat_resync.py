"""`rio chat` across a core restart (ADR-0020): it says so, keeps what is unsaved while the
core is away, and explains an /undo the recovery made impossible."""

from __future__ import annotations

from types import SimpleNamespace

from rio.protocol.errors import BusError
from tests.cli.test_chat_cli import ScriptedConn, scripted_client
from ui.term.chat import TurnResult


def test_a_recovery_during_a_turn_is_reported_once():
    client, out, _ = scripted_client(ScriptedConn())
    client.inbox(SimpleNamespace(topic="buffer.recovered", data={
        "buffers": [{"buffer": "b1", "path": "notes.txt"}], "failures": [], "count": 1}))
    client._render(TurnResult(turn="t1"))
    assert "Rio's core restarted; unsaved changes were recovered: notes.txt." in out.getvalue()
    client._render(TurnResult(turn="t1"))
    assert out.getvalue().count("restarted") == 1


def test_unsaved_buffers_are_kept_while_the_core_is_away():
    def away(_):
        raise BusError("no_route", "Nothing serves buffer.* ops right now.")
    client, out, _ = scripted_client(ScriptedConn({"buffer.info": away}))
    client.unsaved["b1"] = "notes.txt"
    client._refresh_unsaved()
    assert client.unsaved == {"b1": "notes.txt"}


def test_undo_after_a_recovery_says_why_it_cannot():
    conn = ScriptedConn({"buffer.info": {"path": "notes.txt", "dirty": True, "recovered": True,
                                         "undo_label": "Recovered unsaved changes"}})
    client, out, _ = scripted_client(conn)
    client.last_turn_buffers = ["b1"]
    client.undo_last_turn()
    assert "not undone in notes.txt: the core restarted since" in out.getvalue()
    assert "buffer.undo" not in conn.ops()
