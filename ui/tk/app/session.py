"""What the desktop remembers between runs: layout, open documents, cursors, recent files.

Kept as ``ui-session.json`` in the project's state folder (``rio.config.instance.project_state_dir``),
so each project reopens as it was left. Display-free: the app turns widgets into a
:class:`Session` and back; this module only holds, merges and stores the records.

The same records drive the crash → restart path: the core still holds every open buffer, so a
restarted UI rebuilds its tabs from ``buffer.list`` and takes order, cursors and scroll
positions from the session (:func:`restore_plan`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from ui.tk.prefs.store import write_session

FILE_NAME = "ui-session.json"
MAX_RECENT = 10
VERSION = 1


@dataclass(frozen=True)
class DocState:
    """One tab: the core's buffer id (valid while the core lives), its path (valid forever)."""

    buffer: str | None
    path: str | None
    line: int = 1           # 1-based, like the status bar
    col: int = 0
    top: int = 1            # first visible line


@dataclass(frozen=True)
class Layout:
    geometry: str = "1100x720"
    tree_width: int = 220
    output_height: int = 160
    maximized: bool = False


@dataclass(frozen=True)
class Session:
    layout: Layout = field(default_factory=Layout)
    documents: tuple[DocState, ...] = ()
    active: int = 0
    recent: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: Recovered buffers the user was already told about (a UI restart must not repeat it).
    seen_recoveries: tuple[str, ...] = ()

    def with_recent(self, path: str) -> "Session":
        """``path`` moved to the front of the recent list (no duplicates, capped)."""
        rest = tuple(p for p in self.recent if p != path)
        return replace(self, recent=((path,) + rest)[:MAX_RECENT])

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "layout": asdict(self.layout),
                "documents": [asdict(d) for d in self.documents], "active": self.active,
                "recent": list(self.recent), "settings": dict(self.settings),
                "seen_recoveries": list(self.seen_recoveries)}

    @classmethod
    def from_json(cls, data: object) -> "Session":
        """Lenient: a field that is missing or of the wrong type falls back to its default, so
        an old or hand-edited file never stops the window from opening."""
        if not isinstance(data, Mapping):
            return cls()
        lay = _mapping(data.get("layout"))
        defaults = Layout()
        layout = Layout(**{k: _typed(lay.get(k), type(getattr(defaults, k)), getattr(defaults, k))
                           for k in asdict(defaults)})
        docs = []
        for d in data.get("documents") or ():
            if not isinstance(d, Mapping):
                continue
            docs.append(DocState(
                buffer=d.get("buffer") if isinstance(d.get("buffer"), str) else None,
                path=d.get("path") if isinstance(d.get("path"), str) else None,
                line=max(1, _typed(d.get("line"), int, 1)), col=max(0, _typed(d.get("col"), int, 0)),
                top=max(1, _typed(d.get("top"), int, 1))))
        recent = tuple(p for p in (data.get("recent") or ()) if isinstance(p, str))[:MAX_RECENT]
        settings = _mapping(data.get("settings"))
        active = _typed(data.get("active"), int, 0)
        seen = tuple(b for b in (data.get("seen_recoveries") or ()) if isinstance(b, str))
        return cls(layout, tuple(docs), active if 0 <= active < max(1, len(docs)) else 0,
                   recent, dict(settings), seen[-200:])


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _typed(value: Any, kind: type, default: Any) -> Any:
    if isinstance(value, bool) and kind is not bool:
        return default
    return value if isinstance(value, kind) else default


def load(folder: Path) -> Session:
    try:
        return Session.from_json(json.loads((folder / FILE_NAME).read_text("utf-8")))
    except (OSError, ValueError):
        return Session()


def save(folder: Path, session: Session) -> None:
    """Atomic write (temp file + rename, through the UI's one writer, ui/tk/prefs/store.py):
    a crash mid-write keeps the previous session."""
    write_session(folder / FILE_NAME, session.to_json())


@dataclass(frozen=True)
class TabPlan:
    """A tab to build at start: adopt the core's buffer, or open ``path`` afresh."""

    buffer: str | None
    path: str | None
    line: int = 1
    col: int = 0
    top: int = 1


def restore_plan(session: Session, core_buffers: Iterable[Mapping[str, Any]],
                 requested: Iterable[str] = ()) -> tuple[list[TabPlan], int]:
    """The tabs to build at start, in order, and which one is active.

    * Buffers the core holds (a UI restart, or recovered documents) are always shown: nothing
      the core has is hidden from the user.
    * Session documents the core no longer holds are reopened from their path (a fresh start).
      Untitled ones that are gone are dropped: their text went with the core.
    * Files asked for on the command line come last and the first of them becomes active.
    Order follows the session; cursors come from the session matched by buffer id, then path.
    """
    core = [dict(b) for b in core_buffers]
    by_id = {b["buffer"]: b for b in core}
    by_path = {b.get("path"): b for b in core if b.get("path")}
    plans: list[TabPlan] = []
    used: set[str] = set()
    seen_paths: set[str] = set()
    active_doc = session.documents[session.active] if session.documents else None
    active = 0
    for doc in session.documents:
        hit = by_id.get(doc.buffer or "") or (by_path.get(doc.path) if doc.path else None)
        if hit is not None and hit["buffer"] not in used:
            used.add(hit["buffer"])
            path = hit.get("path")
            plans.append(TabPlan(hit["buffer"], path, doc.line, doc.col, doc.top))
        elif hit is None and doc.path and doc.path not in seen_paths:
            plans.append(TabPlan(None, doc.path, doc.line, doc.col, doc.top))
        else:
            continue
        if plans[-1].path:
            seen_paths.add(plans[-1].path)
        if doc is active_doc:
            active = len(plans) - 1
    for b in core:
        if b["buffer"] not in used:
            used.add(b["buffer"])
            plans.append(TabPlan(b["buffer"], b.get("path")))
            if b.get("path"):
                seen_paths.add(b["path"])
    first_requested = None
    for path in requested:
        idx = next((i for i, p in enumerate(plans) if p.path == path), None)
        if idx is None:
            plans.append(TabPlan(None, path))
            idx = len(plans) - 1
        if first_requested is None:
            first_requested = idx
    if first_requested is not None:
        active = first_requested
    return plans, (active if plans else 0)
