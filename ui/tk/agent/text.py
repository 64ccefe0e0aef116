"""Text helpers of the agent panel, display-free: light Markdown for streamed text, folded
command output and the colour class of a diff line (a tool's input on one line is both clients':
rio/protocol/tool_input.py).

:class:`MarkdownStream` cuts streamed text into finished lines styled as light Markdown
(headings, bullet and numbered lists, fenced code, inline code, bold) and the unfinished tail,
so the view draws each finished line once and only ever redraws the line still being written.
Spans carry tag names (``md_h1``…``md_pre``, ``md_code``, ``md_bold``, ``md_list``) that the
view styles (ui/tk/agent/view.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

#: run_command output on a tool card: its last lines, the earlier ones folded away.
SHOWN_OUTPUT_LINES = 6


# --- light Markdown ----------------------------------------------------------------------------

Span = tuple[str, tuple[str, ...]]
_INLINE = re.compile(r"(\*\*(?:`[^`\n]+`|[^*`\n])+\*\*|`[^`\n]+`|\*\*[^*\n]+\*\*)")
_HEADING = re.compile(r"^(#{1,3})\s+(.*)$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBER = re.compile(r"^(\s*)(\d{1,3}[.)])\s+(.*)$")


_CODE = re.compile(r"(`[^`\n]+`)")


def inline_spans(text: str, base: tuple[str, ...] = ()) -> list[Span]:
    """``a `b` **c**`` → plain, ``md_code`` and ``md_bold`` spans (markers dropped). Code
    inside bold (``**`name`**``) is ``md_code`` + ``md_bold_code``: its backticks go too."""
    out: list[Span] = []
    for piece in _INLINE.split(text):
        if not piece:
            continue
        if piece.startswith("`") and piece.endswith("`") and len(piece) > 2:
            out.append((piece[1:-1], base + ("md_code",)))
        elif piece.startswith("**") and piece.endswith("**") and len(piece) > 4:
            for inner in _CODE.split(piece[2:-2]):
                if inner.startswith("`") and inner.endswith("`") and len(inner) > 2:
                    out.append((inner[1:-1], base + ("md_code", "md_bold_code")))
                elif inner:
                    out.append((inner, base + ("md_bold",)))
        else:
            out.append((piece, base))
    return out


def markdown_line(line: str, in_code: bool) -> tuple[list[Span], bool]:
    """One finished line → its spans, and whether a fenced code block is open after it."""
    if line.lstrip().startswith("```"):
        return [], not in_code                     # the fence itself is not shown
    if in_code:
        return [(line, ("md_pre",))], True
    m = _HEADING.match(line)
    if m:
        return inline_spans(m.group(2), (f"md_h{len(m.group(1))}",)), False
    m = _BULLET.match(line)
    if m:
        indent = "  " * (len(m.group(1)) // 2)
        return [(f"{indent}  • ", ("md_list",))] + inline_spans(m.group(2), ("md_list",)), False
    m = _NUMBER.match(line)
    if m:
        indent = "  " * (len(m.group(1)) // 2)
        return [(f"{indent}  {m.group(2)} ", ("md_list",))] + \
            inline_spans(m.group(3), ("md_list",)), False
    return inline_spans(line), False


class MarkdownStream:
    """Streamed text → finished, styled lines and the unfinished tail, incrementally.

    :meth:`feed` returns ``(lines, tail)``: ``lines`` are the spans of each line the new text
    finished (each drawn once and never again), ``tail`` the raw text of the line still being
    written (drawn plain, replaced when it finishes). Only the current line is ever redrawn.
    """

    def __init__(self) -> None:
        self.tail = ""
        self.in_code = False

    def feed(self, text: str) -> tuple[list[list[Span]], str]:
        self.tail += text
        lines: list[list[Span]] = []
        while "\n" in self.tail:
            line, self.tail = self.tail.split("\n", 1)
            spans, self.in_code = markdown_line(line, self.in_code)
            if spans or not line.lstrip().startswith("```"):
                lines.append(spans)
        return lines, self.tail

    def tail_tags(self) -> tuple[str, ...]:
        return ("md_pre",) if self.in_code else ()


def render_markdown(text: str) -> list[list[Span]]:
    """A whole text at once (a message from the history): every line's spans."""
    stream = MarkdownStream()
    lines, tail = stream.feed(text)
    if tail:
        lines.append(markdown_line(tail, stream.in_code)[0])
    return lines


# --- tool cards --------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*```[\w+.-]*\s*$")


def output_rows(output: str) -> list[str]:
    """A tool's output as lines for its card: Markdown fences an agent wraps it in (claude's
    ```` ```console ````) left out, and a JSON object (an MCP tool's answer, such as
    ``{"applied": true, "message": "…"}``) as ``key: value`` lines."""
    text = output.strip("\n")
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        try:
            value = json.loads(stripped)
        except ValueError:
            value = None
        if isinstance(value, dict) and value:
            from ui.tk.agent.permission_model import value_text
            return [f"{k}: {value_text(v)}" for k, v in value.items()]
    return [row for row in text.splitlines() if not _FENCE.match(row)]


def fold_output(output: str, lines: int = SHOWN_OUTPUT_LINES) -> list[str]:
    """A command's output as the model got it: its last ``lines`` lines, the rest folded."""
    rows = output_rows(output.rstrip("\n"))
    if rows and (rows[0].startswith("exit code") or "(exit code" in rows[0]):
        rows = rows[1:]                     # the summary line says it already
    if not rows:
        return ["(no output)"]
    if len(rows) > lines:
        rows = [f"… {len(rows) - lines} earlier lines folded …"] + rows[-lines:]
    return rows


def diff_line_tag(line: str) -> str:
    """The colour class of one unified-diff line, as a classic diff viewer shows it."""
    if line.startswith(("+++", "---")):
        return "diff_file"
    if line.startswith("+"):
        return "diff_add"
    if line.startswith("-"):
        return "diff_del"
    if line.startswith("@@"):
        return "diff_hunk"
    return "diff_ctx"


_AT_WORD = re.compile(r"(?:^|\s)@([\w./-]*)$")


def at_prefix(before_cursor: str) -> str | None:
    """The ``@path`` being typed just before the cursor (``"see @src/a"`` → ``"src/a"``)."""
    m = _AT_WORD.search(before_cursor)
    return m.group(1) if m else None


def complete_paths(prefix: str, paths: list[str], limit: int = 8) -> list[str]:
    """Project paths for an ``@prefix``: a path starting with it first, then a file name
    starting with it, then any path containing it (case-insensitive), each group sorted."""
    p = prefix.lower()
    starts, names, inside = [], [], []
    for path in paths:
        low = path.lower()
        if low.startswith(p):
            starts.append(path)
        elif low.rsplit("/", 1)[-1].startswith(p):
            names.append(path)
        elif p in low:
            inside.append(path)
    return (sorted(starts) + sorted(names) + sorted(inside))[:limit]


_SLASH = re.compile(r"/([\w-]*)")


def slash_prefix(whole_before_cursor: str) -> str | None:
    """The ``/command`` being typed, when it is all the input holds so far (``"/he"`` →
    ``"he"``): an agent's slash commands only mean something at the start of a message."""
    m = _SLASH.fullmatch(whole_before_cursor)
    return m.group(1) if m else None


def complete_commands(prefix: str, commands: list[dict[str, Any]], limit: int = 8) -> list[str]:
    """``/name`` of the agent's commands that start with ``prefix``, in the agent's order."""
    return [f"/{c['name']}" for c in commands
            if str(c.get("name", "")).lower().startswith(prefix.lower())][:limit]
