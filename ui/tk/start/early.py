"""The desktop's main window, drawn before anything else of the desktop exists (ADR-0026 b):
used by ``python -m ui.tk --root DIR`` (started by `rio`), by ``python -m ui.tk`` under the
supervisor and on a remote instance. Imports only tkinter here; the session file's reader when
drawing."""

from __future__ import annotations

import sys
import tkinter as tk
from collections.abc import Callable
from pathlib import Path

#: How long the window waits for its instance's hub: the supervisor is starting beside it (its
#: imports, then the hub), which a loaded machine can make slow.
EARLY_CONNECT_S = 30.0


def early_window(project_root: str,
                 draw: Callable[[tk.Tk], object] | None = None) -> tk.Tk | None:
    """The main window, mapped at once with its title and saved size (the App fills it in
    later); None, with the reason on stderr, when no window can be opened. ``draw``: what
    else the first paint holds (ui/tk/start/first.py: the file's first screen), called before the
    window is mapped, so that the window appears with it."""
    try:
        root = tk.Tk(className="Rio")
    except tk.TclError as exc:
        print(f"rio ui: cannot open a window: {exc}\n  Is DISPLAY set? `rio serve` runs "
              "without a window.", file=sys.stderr)
        return None
    root.title(f"Rio — {Path(project_root).name}")
    try:
        from rio.config.instance import project_state_dir
        from ui.tk.app import session
        root.geometry(session.load(project_state_dir(Path(project_root))).layout.geometry)
    except Exception:  # noqa: BLE001 -- a bad session file: the App reports it; default size
        root.geometry("1100x720")
    # Closing it before the App is built would leave nothing to build into; the App
    # installs the real handler (save, ask about unsaved work) a moment later.
    root.protocol("WM_DELETE_WINDOW", lambda: None)
    if draw is not None:
        draw(root)
    root.update()          # mapped and drawn now: the user sees the window
    return root
