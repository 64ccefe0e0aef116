"""The desktop group's fixtures.

``desktop`` is the real desktop (a ``rio`` with its window, under the session's Xvfb) on a
project of its own: a module says what the project holds with a ``project_files`` fixture of
its own — ``{name: text}``, the first file opened in the window — and asks for ``project``
(the folder) and ``desktop``. A module that needs another shape defines ``desktop`` itself.

``editor`` is a real editor widget on ``tk_root`` against the in-process core of
tests/editor_harness.py, no processes: ``editor(text, name, **settings)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.desktop_support import RioDesktop

if TYPE_CHECKING:   # Tk is imported by the tests that draw, not by the display-free ones
    import tkinter as tk

    from tests.editor_harness import FakeCore
    from ui.tk.editor.tab import EditorTab


@pytest.fixture
def project_files() -> dict[str, str]:
    """What ``project`` holds; modules override it (an empty project by default)."""
    return {}


@pytest.fixture
def project(tmp_path: Path, project_files: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    for name, text in project_files.items():
        (root / name).write_text(text)
    return root


@pytest.fixture
def desktop(project: Path, project_files: dict[str, str], tmp_path: Path,
            display: str) -> Iterator[RioDesktop]:
    """The desktop on ``project``, its first file open; stopped (every process of it) after."""
    first = tuple(str(project / name) for name in list(project_files)[:1])
    d = RioDesktop(project, tmp_path / "base", display, files=first)
    d.start()
    yield d
    d.stop()


@pytest.fixture
def editor(tk_root: tk.Tk) -> Iterator[Callable[..., tuple[EditorTab, FakeCore]]]:
    """``editor(text, name="notes.txt", **settings)``: a live editor tab and its core; every
    tab made is closed while the Tk root lives."""
    from tests.editor_harness import close_editor, open_editor
    opened: list[EditorTab] = []

    def make(text: str, name: str = "notes.txt", **settings: Any) -> tuple[EditorTab, FakeCore]:
        ed, core = open_editor(tk_root, text, name, settings or None)
        opened.append(ed)
        return ed, core
    yield make
    for ed in opened:
        close_editor(ed)
