"""The features installed into the window after its first paint: the find dialog, the output
pane (Find in Files, Run), the Project menu's run commands, the project tree and the agent panel.

Each is a module with an ``install(app)`` that registers its commands and fills its slot of
the window (ui/tk/app/main_window.py: ``output_pane_slot``, ``tree_slot``, the status bar's agent cell).
They come after the first paint because their imports take ~0.1–0.25 s and the editor is usable
first. Each is optional: a missing or broken one costs only its own feature, never the window.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

log = logging.getLogger("rio.ui")


def _attempt(what: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except ImportError:
        return None
    except Exception:  # a plug-in's bug must not stop the editor
        log.exception("could not install %s", what)
        return None


def install_plugins(app: Any) -> None:
    """Install every feature into ``app`` (in this order: the run commands need the output
    pane). Sets ``app.output_pane`` and ``app.agent_panel`` (None when missing); the tree and
    the run commands set ``app.project_tree`` and ``app.run_controller`` themselves."""
    def find() -> Any:
        from ui.tk.find import dialog as find_dialog
        return find_dialog.install(app)

    def output() -> Any:
        from ui.tk.output import pane as output_pane
        return output_pane.install(app)

    def project() -> Any:
        from ui.tk.project import commands as project_commands
        return project_commands.install(app, app.output_pane)

    def tree() -> Any:
        from ui.tk.project import tree as project_tree
        app.remove_tree_placeholder()
        return project_tree.install(app)

    def agent() -> Any:
        from ui.tk.agent import panel as agent_panel
        return agent_panel.install(app)

    _attempt("find dialog", find)
    app.output_pane = _attempt("output pane", output)
    if app.output_pane is not None:
        _attempt("run commands", project)
    _attempt("project tree", tree)
    app.agent_panel = _attempt("agent panel", agent)
