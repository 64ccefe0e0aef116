"""Where a Tk index is in the document, and back: the editor's one seam for it (ADR-0022).

A mixin of :class:`ui.tk.editor.tab.EditorTab`. Tk 8.6 columns count UTF-16 units (an emoji is
two), the core's offsets count code points; a big document's widget holds only a window of rows
(ui/tk/editor/bigfile.py). :meth:`EditorOffsets.offset` and :meth:`EditorOffsets.index` convert with
rio/text/utf16_columns.py and the window, and nothing else may turn a Tk index into an offset.
A document that has held only ASCII since it loaded skips the column lookup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rio.text.utf16_columns import IDENTITY, LineColumns, columns, utf16_length

if TYPE_CHECKING:
    from rio.text.replica import Replica
    from ui.tk.editor.bigfile import LineWindow

NEWLINE = "\n"


class EditorOffsets:
    """Tk index ↔ document offset (mixed into EditorTab)."""

    # Provided by EditorTab:
    replica: Replica | None
    window: LineWindow | None
    _maybe_astral: bool

    def _norm(self, index: str) -> str:
        idx = self.orig("index", index)
        if self.orig("compare", idx, ">", "end-1c"):
            return self.orig("index", "end-1c")
        return idx

    def _row_text(self, row: int) -> str:
        """The text of widget row ``row`` (0-based), from the replica (they are in step)."""
        assert self.replica is not None
        buf = self.replica.buffer
        if self.window is not None:
            rows = self.window.rows
            if not rows:
                return ""
            i = max(0, min(row, len(rows) - 1))
            start = rows.start_at(i)
            return buf.slice(start, start + rows.length[i])
        return buf.line_text(max(0, min(row, buf.line_count - 1)))

    def _columns(self, row: int) -> LineColumns:
        """The column mapping of widget row ``row`` (0-based). A document that has held only
        ASCII since it loaded skips the lookup: most code never pays for emoji."""
        if not self._maybe_astral:
            return IDENTITY
        return columns(self._row_text(row))

    def _locate(self, index: str, round_up: bool = False) -> tuple[int, str]:
        """Document offset of a Tk index, and the Tk index it stands for. Tk columns count
        UTF-16 units (rio/text/utf16_columns.py); one inside an emoji's pair is moved before the
        pair, or after it with ``round_up``, so an edit never splits a pair."""
        idx = str(self._norm(index))
        line, col = map(int, idx.split("."))
        cols = self._columns(line - 1)
        cp = cols.to_codepoint(col, round_up)
        if not cols.identity and cols.inside_pair(col):
            idx = f"{line}.{cols.to_utf16(cp)}"
        if self.window is not None:
            return self.window.offset_at(line - 1, cp), idx
        assert self.replica is not None
        return self.replica.buffer.line_start(line - 1) + cp, idx

    def offset(self, index: str) -> int:
        return self._locate(index)[0]

    def index(self, offset: int) -> str | None:
        if self.window is not None:
            pos = self.window.position_of(offset)
            if pos is None:
                return None
            return f"{pos[0] + 1}.{self._columns(pos[0]).to_utf16(pos[1])}"
        assert self.replica is not None
        line, col = self.replica.buffer.offset_to_position(offset)
        return f"{line + 1}.{self._columns(line).to_utf16(col)}"

    def _index_after(self, sidx: str, count: int) -> str:
        """The Tk index ``count`` code points after ``sidx`` in the widget's text. Tk's own
        ``+Nc`` miscounts a pair that a mark splits, so the columns are counted here."""
        if not self._maybe_astral:
            return str(self.orig("index", f"{sidx}+{count}c"))
        got = str(self.orig("get", sidx, f"{sidx}+{count}c"))
        if len(got) < count:
            got = str(self.orig("get", sidx, f"{sidx}+{2 * count}c"))
        gone = got[:count]
        line, col = map(int, sidx.split("."))
        nl = gone.rfind("\n")
        if nl < 0:
            return f"{line}.{col + utf16_length(gone)}"
        return f"{line + gone.count(NEWLINE)}.{utf16_length(gone[nl + 1:])}"
