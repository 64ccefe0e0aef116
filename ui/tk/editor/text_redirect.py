"""Every edit of a Tk Text passes one door: IDLE's redirector trick.

The widget's Tcl command (``.!frame.text``) is renamed to ``<name>_orig`` and a Python command
takes its name, so whatever edits the widget — typing through the Text class bindings, paste,
cut, our own commands — calls :meth:`TextRedirect._dispatch`. While the owner is live,
``insert``, ``delete`` and ``replace`` go to its handlers (ui/tk/editor/tab.py applies them to the
widget, the replica and the core); every other subcommand, and edits while it is not live, go to
the original command. The owner changes the widget itself through :attr:`orig_name` (changes
from elsewhere must not come back through the door).
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable
from typing import Any

from rio.protocol.errors import RioError

_EDITS = frozenset(("insert", "delete", "replace"))


class TextRedirect:
    def __init__(self, widget: tk.Text, *, live: Callable[[], bool],
                 insert: Callable[[str, str], None],
                 replace: Callable[[str, str | None, str], None],
                 refused: Callable[[RioError], None]):
        """``insert(index, chars)``; ``replace(first, last, chars)`` (``last`` None: one
        character, as Tk's ``delete`` takes it); ``refused(err)`` when a handler raises a
        RioError (the replica refused a local edit). Tk errors are swallowed, as Tk's own
        bindings expect of a Text command."""
        self.widget = widget
        self.name = str(widget)
        self.orig_name = self.name + "_orig"
        self._live, self._insert, self._replace, self._refused = live, insert, replace, refused
        widget.tk.call("rename", self.name, self.orig_name)
        widget.tk.createcommand(self.name, self._dispatch)

    def orig(self, *args: Any) -> Any:
        """Call the widget's original command: a change nobody else hears of."""
        return self.widget.tk.call(self.orig_name, *args)

    def remove(self) -> None:
        """Give the widget its own command back (before it is destroyed)."""
        try:
            self.widget.tk.deletecommand(self.name)
            self.widget.tk.call("rename", self.orig_name, self.name)
        except tk.TclError:
            pass

    def _dispatch(self, op: str, *args: Any) -> Any:
        try:
            if op in _EDITS and self._live():
                if op == "insert":
                    self._insert(args[0], "".join(args[1::2]))
                elif op == "delete":
                    self._replace(args[0], args[1] if len(args) > 1 else None, "")
                else:
                    self._replace(args[0], args[1], "".join(args[2::2]))
                return ""
            return self.widget.tk.call((self.orig_name, op) + args)
        except tk.TclError:
            return ""
        except RioError as err:
            self._refused(err)
            return ""
