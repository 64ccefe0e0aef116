"""An ACP agent's permission question as the panel's card shows it — display-free, so it is
tested without a screen (tests/desktop/agent/test_agent_permission_model.py); the card itself is
:class:`ui.tk.agent.cards.PermissionCard`.

What the agent sends is made for programs: codex-acp 0.16 asks about an MCP tool with
``input`` like ``{"turn_id": "…", "server_name": "rio", "tool_name": "propose_edit",
"arguments": {…}}``, which the card used to show as ``turn_id=… server_name=rio`` — and offers
four options (``approved``, ``approved-for-session``, ``approved-always``, ``cancel``: codex-acp
0.16's, as captured) that overflowed a 300-px panel in one row. Here:

* :func:`summary` — one short line, the agent's title (cut), or what its tool kind does;
* :func:`input_lines` — the input as ``key: value`` lines: nested arguments flattened one level,
  long values cut with "…", internal ids (``turn_id``, ``call_id`` …) and empty values left out;
* :func:`button_rows` — the option buttons packed into rows that fit the card's width, so every
  option stays visible at any panel width;
* :func:`closed_decision` / :func:`settled_text` — what the card says once the question is
  answered, declined, timed out or closed ("Allowed once", "Declined", "Timed out" …), whichever
  comes first of the panel's own answer and ``agent.permission_closed``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

#: The title is cut here: a card is a few lines, not the agent's whole description.
SUMMARY_CHARS = 160
#: A value is shown up to this many characters (then "…"); the input up to MAX_LINES lines.
VALUE_CHARS = 80
MAX_LINES = 8
#: Keys whose dict holds the tool's own arguments: their entries are shown under their own
#: names (``path: a.py``), not ``arguments.path``.
ARGUMENT_KEYS = frozenset({"arguments", "args", "input", "params", "parameters", "raw_input",
                           "rawInput"})
#: Bookkeeping ids of the agent's own (codex sends ``turn_id``; call and session ids are
#: on every question): nothing a person decides on.
_INTERNAL_ID = re.compile(r"^(id|.+_id|.+Id|.+_ids)$")
#: What a tool kind does, when the agent gives no title.
KIND_WORDS = {"execute": "run a command", "edit": "edit a file", "read": "read a file",
              "delete": "delete a file", "move": "move a file", "search": "search",
              "fetch": "fetch from the web", "think": "think", "other": "use a tool"}
#: The card's last line per decision (``decision`` on the block; see :func:`settled_text`).
SETTLED = {
    "answering": "Answering…",
    "allow_once": "Allowed once",
    "allow_always": "Allowed always",
    "reject_once": "Rejected",
    "reject_always": "Rejected always",
    "answered": "Answered",
    "declined": "Declined",
    "timed_out": "Timed out: nobody answered, so Rio declined it",
    "gone": "Already closed (answered elsewhere, or the turn ended)",
    "closed": "Closed: the turn ended",
    "interrupted": "Closed: a new message interrupted it",
    "stopped": "Closed: the turn was stopped",
    "applied": "Answered; the tool ran",
    "not applied": "Answered; the tool did not run",
}


def cut(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs made one space), cut at ``limit`` with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def summary(data: Mapping[str, Any]) -> str:
    """The card's first line: the agent's title, else what its tool kind does."""
    title = data.get("title")
    if isinstance(title, str) and title.strip():
        return cut(title, SUMMARY_CHARS)
    kind = data.get("tool_kind") or data.get("kind")
    return f"May it {KIND_WORDS.get(str(kind), 'use a tool')}?"


def value_text(value: Any) -> str:
    """One value on one line: a command's argv as a shell would take it, text as is, the rest
    as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, Sequence) and value and all(isinstance(v, str) for v in value):
        return shlex.join(value)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    except (TypeError, ValueError):
        return repr(value)


def _shown(key: Any, value: Any) -> bool:
    return not _INTERNAL_ID.match(str(key)) and value not in (None, "", {}, [])


def input_lines(value: Any, *, limit: int = MAX_LINES, chars: int = VALUE_CHARS
                ) -> tuple[list[tuple[str, str]], int]:
    """The input as ``(key, value)`` lines, at most ``limit``, and how many more there were.

    A nested dict is flattened one level (``arguments.path`` → ``path`` for the tool's own
    arguments, ``options.force`` for any other), deeper ones shown as JSON; internal ids and
    empty values are left out; every value is cut at ``chars``."""
    if not isinstance(value, Mapping):
        return ([("input", cut(value_text(value), chars))], 0) if value not in (
            None, "", {}, []) else ([], 0)
    lines: list[tuple[str, str]] = []
    for key, item in value.items():
        if not _shown(key, item):
            continue
        if isinstance(item, Mapping):
            for inner, sub in item.items():
                if _shown(inner, sub):
                    name = str(inner) if key in ARGUMENT_KEYS else f"{key}.{inner}"
                    lines.append((name, cut(value_text(sub), chars)))
        else:
            lines.append((str(key), cut(value_text(item), chars)))
    return lines[:limit], max(0, len(lines) - limit)


def input_text(value: Any) -> str:
    """:func:`input_lines` as the card's text: one ``key: value`` per line."""
    lines, more = input_lines(value)
    rows = [f"{key}: {text}" for key, text in lines]
    if more:
        rows.append(f"… {more} more")
    return "\n".join(rows)


def button_rows(widths: Sequence[int], available: int, gap: int = 4) -> list[list[int]]:
    """The buttons (by index, in order) packed into rows no wider than ``available`` pixels:
    as many per row as fit, a button wider than a whole row alone on its own (it wraps its
    text). Every button is in exactly one row."""
    rows: list[list[int]] = []
    used = 0
    for i, width in enumerate(widths):
        if rows and used + gap + width <= available:
            rows[-1].append(i)
            used += gap + width
        else:
            rows.append([i])
            used = width
    return rows


def closed_decision(how: Any, kind: Any) -> str:
    """``agent.permission_closed {how, kind}`` → the block's decision."""
    if how == "answered":
        return str(kind) if kind in SETTLED else "answered"
    if how in ("declined", "timed_out"):
        return str(how)
    return "closed"


def settled_text(decision: str, options: Sequence[Mapping[str, Any]] = (),
                 reason: str = "") -> str:
    """The card's line once it stops asking: what was decided and, for an answer, the
    agent's own name of the option ("Allowed once: Yes, proceed.")."""
    text = SETTLED.get(decision, decision)
    name = next((str(o.get("name")) for o in options if o.get("kind") == decision
                 and o.get("name")), "")
    if name and name.lower() != text.lower():
        text += f": {cut(name, 60)}"
    text = text if text.endswith(("…", ".")) else text + "."
    return f"{text} {reason}" if reason else text
