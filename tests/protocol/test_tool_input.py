"""rio/protocol/tool_input.py: a tool call's input on one line, the same in both clients."""

from __future__ import annotations

from rio.protocol.tool_input import VALUE_CHARS, short_input


def test_a_map_is_key_value_pairs_on_one_line():
    assert short_input({"path": "a.py", "text": "x\ny" * 50}).startswith("path=a.py text=x y")
    assert short_input({"cmd": ["ls", "-l"], "n": 3}) == 'cmd=["ls", "-l"] n=3'
    assert short_input({"path": "é.py"}) == "path=é.py"   # not \u00e9


def test_a_long_value_is_cut_so_the_next_key_still_shows():
    line = short_input({"text": "z" * 100, "path": "b.py"}, limit=200)
    assert line == f"text={'z' * VALUE_CHARS}… path=b.py"


def test_the_whole_line_is_cut_at_the_limit():
    line = short_input({f"k{i}": "v" * 30 for i in range(10)})
    assert len(line) == 80 and line.endswith("…")
    assert short_input("z" * 500, limit=60) == "z" * 59 + "…"
    assert short_input("a  b\n c") == "a b c"                 # not a map: its text, one line
    assert short_input("short", limit=80) == "short"


def test_any_msgpack_value_is_shown_not_raised():
    """An agent's input is any msgpack value: bytes are not JSON, and are shown all the same."""
    assert short_input({"blob": b"\x00\x01"}).startswith("blob=")
    assert short_input(None) == "None"


def test_both_clients_show_a_call_with_this_one():
    import ui.term.chat as chat
    import ui.tk.agent.text as agent_text
    import ui.tk.agent.view as agent_view
    assert chat.short_input is short_input and agent_view.short_input is short_input
    assert not hasattr(agent_text, "short_input")
