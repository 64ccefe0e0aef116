"""What each part of an editor tab uses of the tab, declared as Protocols.

An :class:`~ui.tk.editor.tab.EditorTab` is built of parts (ui/tk/editor/offsets.py, decor.py,
keyboard.py, resync.py, row_window.py), each a small class that owns its own state. What never
changes while the tab lives — its Text, the Text's one door, the other parts — a part is given
when it is made. What the tab replaces as it loads and resyncs (the replica, a big file's window
of rows, whether it is live), and the few tab actions a part calls back, it reads through the
narrow face declared here: so a part says exactly what it relies on, mypy checks that the tab
provides it, and a part can be made in a test around something that is not a whole tab.
(The window-facing seams, ``EditorHost`` and the find dialog's ``SearchableEditor``, are in
ui/tk/app/seams.py.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rio.protocol.errors import RioError
    from rio.text.edit_commands import TextEdit
    from rio.text.replica import Replica
    from ui.tk.editor.bigfile import LineWindow


class Document(Protocol):
    """The tab's document state as its parts read it: the tab alone replaces these."""

    @property
    def replica(self) -> Replica | None: ...      # None until the text is loaded
    @property
    def window(self) -> LineWindow | None: ...    # a big file's window of rows, else None
    @property
    def ready(self) -> bool: ...                   # loaded and editable


class ResyncTab(Document, Protocol):
    """What offline editing and rebase (ui/tk/editor/resync.py) call back on the tab."""

    @property
    def buffer_id(self) -> str: ...               # changes when the core reopens the file

    def apply_remote(self, start: int, end: int, chars: str, cursor: int) -> None: ...
    def run_at_version(self) -> None: ...
    def flush(self) -> None: ...
    def mark_changed(self) -> None: ...


class TypingTab(Document, Protocol):
    """What typing and the block commands (ui/tk/editor/keyboard.py) use of the tab."""

    @property
    def summary(self) -> dict[str, Any]: ...

    def selection(self) -> tuple[int, int] | None: ...
    def apply_batch(self, make: Callable[[], list[TextEdit]], label: str,
                    reselect: bool = False,
                    on_done: Callable[[dict[str, Any]], None] | None = None,
                    on_error: Callable[[RioError], None] | None = None) -> None: ...


class RowsTab(Document, Protocol):
    """What a big file's scrolling (ui/tk/editor/row_window.py) uses of the tab."""

    def top_line(self) -> int: ...
    def see_insert(self) -> None: ...
