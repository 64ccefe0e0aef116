"""Typed faces of the few Tk calls the type stubs leave unannotated.

typeshed declares ``ttk.Notebook.select/tabs/index/tab``, ``Listbox.curselection`` and
``Misc._root`` without types (or not at all), so under mypy's strict flags every call of them
is an error. The desktop calls them through these functions instead: the one ``type: ignore``
for each sits here, with what the call really returns, and the callers stay typed.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk


def selected_tab(nb: ttk.Notebook) -> str:
    """The path name of the selected tab's widget; "" when the notebook has none."""
    return str(nb.select())  # type: ignore[no-untyped-call]  # typeshed: select() unannotated


def select_tab(nb: ttk.Notebook, tab: tk.Misc | str | int) -> None:
    nb.select(tab)  # type: ignore[no-untyped-call]  # typeshed: select() unannotated


def tab_ids(nb: ttk.Notebook) -> tuple[str, ...]:
    """The path names of the tabs' widgets, in order."""
    return tuple(str(t) for t in nb.tabs())  # type: ignore[no-untyped-call]  # unannotated


def tab_index(nb: ttk.Notebook, tab: tk.Misc | str | int) -> int:
    """The position of ``tab`` ("current", "end", "@x,y", a widget or its name)."""
    return int(nb.index(tab))  # type: ignore[no-untyped-call]  # typeshed: index() unannotated


def set_tab(nb: ttk.Notebook, tab: tk.Misc | str | int, **options: object) -> None:
    """Configure a tab (``text=``, ``image=``, ``state=`` …)."""
    nb.tab(tab, **options)  # type: ignore[no-untyped-call]  # typeshed: tab() unannotated


def listbox_selection(lb: tk.Listbox) -> tuple[int, ...]:
    """The indices of the selected rows."""
    return tuple(int(i) for i in lb.curselection())  # type: ignore[no-untyped-call]  # unannotated


def tk_root(widget: tk.Misc) -> tk.Tk:
    """The Tk instance that owns ``widget``'s interpreter (one per window of the app)."""
    root: tk.Tk = widget._root()  # type: ignore[attr-defined]  # typeshed omits Misc._root
    return root


def default_root(what: str | None = None) -> tk.Tk:
    """tkinter's default root (the first ``tk.Tk()``); tkinter raises RuntimeError (naming
    ``what``) when there is none yet."""
    root: tk.Tk = tk._get_default_root(what)  # type: ignore[attr-defined]  # not in typeshed
    return root
