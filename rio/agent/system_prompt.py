"""The system prompt: what the model is told about where it is and how its tools behave.

The model works better when it knows the rules before it meets them (a refused path, a
proposal that waits for review, a truncated read), so each rule the tools enforce is stated
here in one line. The user's ``system_prompt_addition`` from config.toml comes last, marked as
theirs, so it can refine but is never mistaken for Rio's own words.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rio.providers.base import ToolSpec

_MODE_WORDS = {
    "review": "every write and command is reviewed by the user before it applies",
    "auto_buffer": "edits to files apply at once as undoable buffer edits; new files and "
                   "commands are reviewed by the user first",
    "allow_all": "writes and commands run without review, except dangerous commands, which "
                 "always ask",
}


def build_system_prompt(root: Path, tools: Iterable[ToolSpec], *, mode: str = "review",
                        addition: str = "") -> str:
    names = ", ".join(t.name for t in tools)
    lines = [
        "You are the coding agent inside Rio, a lightweight text editor and development "
        "environment. You help the user with the project open in Rio.",
        f"The project root is {root}. Every path you use is relative to it; paths outside the "
        "project (absolute paths elsewhere, '..' escapes, symlinks that lead out) are refused.",
        f"Your tools: {names}.",
        "Rules of the tools:",
        "- fs_list, fs_read, buffer_list and buffer_text run at once. fs_read shows the text "
        "the user sees, including unsaved changes in an open editor buffer.",
        "- Long outputs are cut and end with an explicit '[… truncated …]' marker; read a "
        "smaller part rather than guessing what was cut.",
        "- propose_edit replaces old_text with new_text. Quote old_text exactly, with enough "
        "context to occur exactly once; it is located again when the user approves, so an "
        "edit whose text changed or occurs more than once is refused and you are told why.",
        "- propose_create creates a new file; it refuses a path that exists.",
        "- Approved edits land in the editor as unsaved, undoable changes; the user saves.",
        "- run_command runs a shell command in the project, in its own process group, with a "
        "timeout and capped output, without your API keys in its environment.",
        f"- Current approval mode: {_MODE_WORDS.get(mode, mode)}.",
        "- A rejected proposal is the user's decision: do not retry it unchanged; ask or "
        "adjust.",
        "Be concise. Say what you changed and why.",
    ]
    text = "\n".join(lines)
    if addition.strip():
        text += "\n\nThe user's own instructions (from their Rio configuration):\n" + \
            addition.strip()
    return text
