"""What the shared Tk pieces use of the window that owns them, declared as Protocols.

The widgets room (ui/tk/widgets/) is used by every other room and uses none of them
(docs/architecture.md "Who may import what"), so a dialog or a tooltip cannot name the
desktop's ``App`` nor the agent panel's ``PanelApp``. It names the little it reads instead —
the theme, the window's root and fonts, the registry of open dialogs — and mypy checks at
each call that the window handed in (the App, the panel's view of it, a test's fake) has it.

Read-only members are properties, so a window whose attribute is a plain attribute (or a
narrower type) fits.
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from ui.tk.widgets.theme import Theme


class Themed(Protocol):
    """A window with a theme: what a tooltip reads (its colours)."""

    @property
    def theme(self) -> Theme: ...


@runtime_checkable
class CaptionOwner(Themed, Protocol):
    """What the drawn title bar of a dialog (shown when no window manager draws one) reads:
    the theme's title colours and the interface font. Checkable at run time, because
    :func:`ui.tk.app.dialog_bridge.caption` is also handed windows that have no theme (a
    dialog shown before the App is built, a test's bare window): they get no caption."""

    def ui_font_family(self) -> str: ...


class OpenDialog(Protocol):
    """An open dialog as ``ui.state`` lists it and ``ui.dialog_answer`` answers it
    (ui/tk/app/control.py): :class:`ui.tk.widgets.dialogs.Dialog`, or one of the app's own
    Toplevels through :class:`ui.tk.app.dialog_bridge.BridgedDialog`."""

    def describe(self) -> dict[str, Any]: ...
    def set_fields(self, fields: Mapping[str, Any]) -> None: ...
    def answer(self, button: str) -> None: ...


class DialogOwner(CaptionOwner, Protocol):
    """What a :class:`ui.tk.widgets.dialogs.Dialog` uses of its window: the root it opens
    over and the registry it keeps itself in while open (``app.dialogs``, by name)."""

    @property
    def root(self) -> tk.Tk: ...
    @property
    def dialogs(self) -> dict[str, OpenDialog]: ...


class TextWindowOwner(DialogOwner, Protocol):
    """What :func:`ui.tk.widgets.dialogs.text_window` uses besides: the editor's font, so the
    difference reads as the document does."""

    @property
    def editor_font(self) -> tkfont.Font: ...
