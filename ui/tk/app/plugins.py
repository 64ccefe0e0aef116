"""The features installed into the window after its first paint: the find dialog, the output
pane (Find in Files, Run), the Project menu's run commands, the project tree and the agent panel.

Each is a module with an ``install(app)`` that registers its commands and fills its slot of
the window (ui/tk/app/main_window.py: ``output_pane_slot``, ``tree_slot``, the status bar's agent cell).
They come after the first paint because their imports take ~0.1–0.25 s and the editor is usable
first. Each is optional: a missing or broken one costs only its own feature, never the window.

Each installer here takes the window as the narrow face its room declares (``FindHost``,
``OutputHost``, ``RunHost``, ``TreeHost`` in ui/tk/app/seams.py, ``PanelApp`` in
ui/tk/agent/seams.py) and returns what it made, or None: the window keeps it
(``App._install_plugins``), so no room sets attributes on the window behind mypy's back.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, TypeVar

from ui.tk.app.seams import FindHost, OutputHost, RunHost, RunOutput, TreeHost

if TYPE_CHECKING:    # imported when installed (after the first paint), named for mypy only
    from ui.tk.agent.panel import AgentPanel
    from ui.tk.agent.seams import PanelApp
    from ui.tk.find.dialog import FindController
    from ui.tk.output.pane import OutputPane
    from ui.tk.project.commands import RunController
    from ui.tk.project.tree import ProjectTree

log = logging.getLogger("rio.ui")

T = TypeVar("T")


def _attempt(what: str, fn: Callable[[], T]) -> T | None:
    try:
        return fn()
    except ImportError:
        return None
    except Exception:  # a plug-in's bug must not stop the editor
        log.exception("could not install %s", what)
        return None


def install_find(app: FindHost) -> FindController | None:
    """Search → Find, Replace, Go to Line (ui/tk/find/dialog.py)."""
    def find() -> FindController:
        from ui.tk.find import dialog as find_dialog
        return find_dialog.install(app)
    return _attempt("find dialog", find)


def install_output(app: OutputHost) -> OutputPane | None:
    """The output pane in ``app.output_pane_slot`` (ui/tk/output/pane.py)."""
    def output() -> OutputPane:
        from ui.tk.output import pane as output_pane
        return output_pane.install(app)
    return _attempt("output pane", output)


def install_run_commands(app: RunHost, pane: RunOutput) -> RunController | None:
    """The Project menu's Run, Build, Stop (ui/tk/project/commands.py): they need the pane."""
    def project() -> RunController:
        from ui.tk.project import commands as project_commands
        return project_commands.install(app, pane)
    return _attempt("run commands", project)


def install_tree(app: TreeHost, clear_slot: Callable[[], object]) -> ProjectTree | None:
    """The project tree in ``app.tree_slot`` (ui/tk/project/tree.py); ``clear_slot`` takes the
    slot's placeholder away once the tree's module is there."""
    def tree() -> ProjectTree:
        from ui.tk.project import tree as project_tree
        clear_slot()
        return project_tree.install(app)
    return _attempt("project tree", tree)


def install_agent(app: PanelApp) -> AgentPanel | None:
    """The agent panel (ui/tk/agent/panel.py)."""
    def agent() -> AgentPanel:
        from ui.tk.agent import panel as agent_panel
        return agent_panel.install(app)
    return _attempt("agent panel", agent)
