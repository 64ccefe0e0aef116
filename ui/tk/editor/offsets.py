"""Where a Tk index is in the document, and back: the editor's one seam for it (ADR-0022).

A part of :class:`ui.tk.editor.tab.EditorTab` (``tab.offsets``). Tk 8.6 columns count UTF-16
units (an emoji is two), the core's offsets count code points; a big document's widget holds
only a window of rows (ui/tk/editor/bigfile.py). :meth:`EditorOffsets.offset` and
:meth:`EditorOffsets.index` convert with rio/text/utf16_columns.py and the window, and nothing
else may turn a Tk index into an offset. A document that has held only ASCII since it loaded
skips the column lookup: the part owns that flag (:attr:`EditorOffsets.maybe_astral`).
"""

from __future__ import annotations

from rio.text.utf16_columns import IDENTITY, LineColumns, columns, utf16_length
from ui.tk.editor.seams import Document
from ui.tk.editor.text_redirect import TextRedirect

NEWLINE = "\n"


class EditorOffsets:
    """Tk index ↔ document offset for one tab's Text (see the module docstring)."""

    def __init__(self, doc: Document, door: TextRedirect):
        self.doc = doc
        self.door = door
        #: any non-ASCII text since loading (ADR-0022); the tab sets it as text arrives
        self.maybe_astral = False

    def norm(self, index: str) -> str:
        """A Tk index as ``line.col``, never past the last character."""
        idx = str(self.door.orig("index", index))
        if self.door.orig("compare", idx, ">", "end-1c"):
            return str(self.door.orig("index", "end-1c"))
        return idx

    def row_text(self, row: int) -> str:
        """The text of widget row ``row`` (0-based), from the replica (they are in step)."""
        replica, window = self.doc.replica, self.doc.window
        assert replica is not None
        buf = replica.buffer
        if window is not None:
            rows = window.rows
            if not rows:
                return ""
            i = max(0, min(row, len(rows) - 1))
            start = rows.start_at(i)
            return buf.slice(start, start + rows.length[i])
        return buf.line_text(max(0, min(row, buf.line_count - 1)))

    def columns(self, row: int) -> LineColumns:
        """The column mapping of widget row ``row`` (0-based). A document that has held only
        ASCII since it loaded skips the lookup: most code never pays for emoji."""
        if not self.maybe_astral:
            return IDENTITY
        return columns(self.row_text(row))

    def locate(self, index: str, round_up: bool = False) -> tuple[int, str]:
        """Document offset of a Tk index, and the Tk index it stands for. Tk columns count
        UTF-16 units (rio/text/utf16_columns.py); one inside an emoji's pair is moved before the
        pair, or after it with ``round_up``, so an edit never splits a pair."""
        idx = self.norm(index)
        line, col = map(int, idx.split("."))
        cols = self.columns(line - 1)
        cp = cols.to_codepoint(col, round_up)
        if not cols.identity and cols.inside_pair(col):
            idx = f"{line}.{cols.to_utf16(cp)}"
        window = self.doc.window
        if window is not None:
            return window.offset_at(line - 1, cp), idx
        replica = self.doc.replica
        assert replica is not None
        return replica.buffer.line_start(line - 1) + cp, idx

    def offset(self, index: str) -> int:
        return self.locate(index)[0]

    def index(self, offset: int) -> str | None:
        """The Tk index of a document offset; None when a big file's window does not hold it."""
        window = self.doc.window
        if window is not None:
            pos = window.position_of(offset)
            if pos is None:
                return None
            return f"{pos[0] + 1}.{self.columns(pos[0]).to_utf16(pos[1])}"
        replica = self.doc.replica
        assert replica is not None
        line, col = replica.buffer.offset_to_position(offset)
        return f"{line + 1}.{self.columns(line).to_utf16(col)}"

    def index_after(self, sidx: str, count: int) -> str:
        """The Tk index ``count`` code points after ``sidx`` in the widget's text. Tk's own
        ``+Nc`` miscounts a pair that a mark splits, so the columns are counted here."""
        if not self.maybe_astral:
            return str(self.door.orig("index", f"{sidx}+{count}c"))
        got = str(self.door.orig("get", sidx, f"{sidx}+{count}c"))
        if len(got) < count:
            got = str(self.door.orig("get", sidx, f"{sidx}+{2 * count}c"))
        gone = got[:count]
        line, col = map(int, sidx.split("."))
        nl = gone.rfind("\n")
        if nl < 0:
            return f"{line}.{col + utf16_length(gone)}"
        return f"{line + gone.count(NEWLINE)}.{utf16_length(gone[nl + 1:])}"

    def context(self, around: int, radius: int = 20_000) -> tuple[str, int]:
        """Text near an offset (for the edit commands and bracket matching) and that text's
        start offset: the whole text when it is small, never a big file's whole text."""
        replica = self.doc.replica
        assert replica is not None
        buf = replica.buffer
        if self.doc.window is None and len(buf) <= 2 * radius:
            return buf.text(), 0
        lo = buf.line_start(buf.offset_to_position(max(0, around - radius))[0])
        hi = min(len(buf), around + radius)
        return buf.slice(lo, hi), lo
