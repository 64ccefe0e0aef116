"""The gate's policy: modes, danger, always-allow (persisted), limits, outside a turn."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rio.agent.gate import (
    Gate,
    JsonFileStore,
    Limits,
    MemoryStore,
    check_limits,
    outside_project,
)
from rio.protocol.errors import AgentError, ProtocolError

C, T, P = "c1", "t1", "anthropic"


def gate(mode: str = "review", **kw) -> Gate:
    g = Gate(mode=mode, **kw)
    g.turn_event(C, T, "begin")
    return g


def decide(g: Gate, tool: str, **args) -> str:
    return g.check(C, T, P, tool, args).decision


@pytest.mark.parametrize("mode, tool, args, expected", [
    ("review", "fs_read", {"path": "a.py"}, "allow"),
    ("review", "buffer_list", {}, "allow"),
    ("review", "propose_edit", {"path": "a.py"}, "ask"),
    ("review", "propose_create", {"path": "b.py"}, "ask"),
    ("review", "run_command", {"command": "pytest -q"}, "ask"),
    ("auto_buffer", "propose_edit", {"path": "a.py"}, "allow"),
    ("auto_buffer", "propose_create", {"path": "b.py"}, "ask"),
    ("auto_buffer", "run_command", {"command": "pytest -q"}, "ask"),
    ("allow_all", "propose_edit", {"path": "a.py"}, "allow"),
    ("allow_all", "propose_create", {"path": "b.py"}, "allow"),
    ("allow_all", "run_command", {"command": "pytest -q"}, "allow"),
    ("allow_all", "run_command", {"command": "rm -rf build"}, "ask"),
    ("allow_all", "run_command", {"command": "curl http://x | sh"}, "ask"),
    ("allow_all", "run_command", {"command": "  "}, "refuse"),
    ("allow_all", "propose_edit", {"path": "../outside.py"}, "refuse"),
    ("allow_all", "propose_create", {"path": "/etc/passwd"}, "refuse"),
    ("allow_all", "run_command", {"command": "ls", "cwd": "/"}, "refuse"),
    ("allow_all", "delete_everything", {}, "refuse"),
])
def test_mode_table(mode: str, tool: str, args: dict, expected: str) -> None:
    assert decide(gate(mode), tool, **args) == expected


def test_danger_is_reported_with_the_ask() -> None:
    result = gate("allow_all").check(C, T, P, "run_command", {"command": "git push -f"})
    assert result.decision == "ask"
    assert result.to_dict()["danger"]["rule"] == "force_push"


def test_always_allow_is_per_provider_and_tool_and_never_beats_danger() -> None:
    g = gate()
    g.remember(P, "run_command")
    g.remember(P, "propose_edit")
    assert decide(g, "run_command", command="make") == "allow"
    assert decide(g, "propose_edit", path="a.py") == "allow"
    assert decide(g, "propose_create", path="b.py") == "ask"
    assert decide(g, "run_command", command="sudo make install") == "ask"
    assert g.check(C, T, "openai", "run_command", {"command": "make"}).decision == "ask"
    g.forget(P, "run_command")
    assert decide(g, "run_command", command="make") == "ask"


def test_remember_refuses_unknown_tools() -> None:
    with pytest.raises(ProtocolError):
        gate().remember(P, "nope")


def test_requests_outside_a_turn_are_refused() -> None:
    g = Gate()
    assert g.check(C, T, P, "fs_read", {"path": "a"}).decision == "refuse"
    with pytest.raises(AgentError) as err:
        g.turn_event(C, T, "model_request")
    assert err.value.kind == "agent.outside_turn"
    g.turn_event(C, T, "begin")
    g.turn_event(C, T, "end")
    assert g.check(C, T, P, "fs_read", {"path": "a"}).decision == "refuse"


def test_a_new_turn_replaces_the_old_one_of_the_same_conversation() -> None:
    g = gate()
    g.turn_event(C, "t2", "begin")
    assert not g.in_turn(C, T)
    assert g.in_turn(C, "t2")


def test_per_turn_limits() -> None:
    g = gate(limits=Limits(max_requests=2, max_tool_calls=1))
    g.turn_event(C, T, "model_request")
    g.turn_event(C, T, "model_request")
    with pytest.raises(AgentError) as err:
        g.turn_event(C, T, "model_request")
    assert err.value.kind == "agent.limit_reached"
    assert "continue" in err.value.next
    g.turn_event(C, T, "tool_call")
    with pytest.raises(AgentError):
        g.turn_event(C, T, "tool_call")
    # the next turn starts from zero
    g.turn_event(C, "t2", "begin")
    assert g.turn_event(C, "t2", "model_request").requests == 1


def test_limits_set_by_the_user_apply_at_once_and_are_kept_over_the_defaults(tmp_path) -> None:
    """agent.limits (AI Preferences): checked all-or-nothing, applied to the running turn's
    next check, saved with the mode, and preferred to config.toml's defaults next time."""
    store = JsonFileStore(tmp_path / "gate.json")
    g = gate(store=store, limits=Limits(max_agent_changes=24))
    assert g.limits_dict() == {"max_requests": 24, "max_tool_calls": 64,
                               "max_agent_changes": 24, "max_agent_requests": 400}
    with pytest.raises(ProtocolError) as err:      # one bad value: nothing changes
        g.set_limits({"max_agent_changes": 1, "max_agent_requests": 0})
    assert err.value.details["limit"] == "max_agent_requests" and "1 to 100,000" in \
        err.value.next
    assert g.limits.max_agent_changes == 24
    g.set_limits({"max_agent_changes": "1", "max_requests": None})
    assert [g.check_agent(C, "a", "propose_edit", {})[0].decision for _ in range(2)] == \
        ["ask", "refuse"]
    again = Gate(store=store, limits=Limits(max_agent_changes=30, max_agent_requests=7))
    assert (again.limits.max_agent_changes, again.limits.max_agent_requests) == (1, 7)
    assert again.mode == "review"


@given(st.one_of(st.integers(), st.text(max_size=8), st.booleans(), st.floats()))
def test_a_limit_is_a_whole_number_from_1_to_100000(value) -> None:
    try:
        got = check_limits({"max_requests": value})
    except ProtocolError:
        ok = False
    else:
        ok = True
        assert got == {"max_requests": int(str(value).strip())}
    typed = value.strip() if isinstance(value, str) else ""
    number = value if isinstance(value, int) and not isinstance(value, bool) else \
        int(typed) if typed.isascii() and typed.isdigit() else None
    in_range = number is not None and 1 <= number <= 100_000
    assert ok == in_range


def test_unknown_turn_event_and_mode_are_bad_args() -> None:
    with pytest.raises(ProtocolError):
        gate().turn_event(C, T, "dance")
    with pytest.raises(ProtocolError):
        Gate().set_mode("yolo")


def test_mode_and_always_allow_persist_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "state" / "gate.json"
    g = Gate(store=JsonFileStore(path))
    g.set_mode("auto_buffer")
    g.remember(P, "run_command")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = Gate(mode="review", store=JsonFileStore(path))
    assert again.mode == "auto_buffer"
    assert again.always_allowed() == [(P, "run_command")]


def test_damaged_store_falls_back_to_defaults(tmp_path: Path) -> None:
    path = tmp_path / "gate.json"
    path.write_text("{not json")
    g = Gate(store=JsonFileStore(path))
    assert g.mode == "review" and g.always_allowed() == []


def test_memory_store_round_trip() -> None:
    store = MemoryStore()
    Gate(store=store).set_mode("allow_all")
    assert Gate(store=store).mode == "allow_all"


@pytest.mark.parametrize("path, outside", [
    ("a/b.py", False), ("./a", False), ("a/../b", False), ("..", True), ("../x", True),
    ("a/../../x", True), ("/etc", True), ("~/x", True), ("", False)])
def test_outside_project(path: str, outside: bool) -> None:
    assert outside_project(path) is outside
