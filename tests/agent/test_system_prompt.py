"""The system prompt names Rio, the root, every tool, the mode and the user's addition."""

from __future__ import annotations

from pathlib import Path

from rio.agent.system_prompt import build_system_prompt
from rio.agent.tools import TOOL_SPECS


def test_prompt_says_where_the_model_is_and_what_it_may_do() -> None:
    text = build_system_prompt(Path("/home/u/proj"), TOOL_SPECS, mode="auto_buffer")
    assert "inside Rio" in text and "/home/u/proj" in text
    for spec in TOOL_SPECS:
        assert spec.name in text
    assert "apply at once" in text
    assert "user's own instructions" not in text


def test_users_addition_comes_last_and_marked() -> None:
    text = build_system_prompt(Path("/p"), TOOL_SPECS, addition="  Answer in French.  ")
    assert text.endswith("configuration):\nAnswer in French.")
