"""``python -m ui.tk --instance NAME --root DIR [--open FILE]...``: the desktop process,
window first.

`rio [PATH]` runs :func:`main` in a fork of itself before its own supervisor exists
(actors/runtime/window_first.py); the supervisor restarts the window as this command. It draws the window — title, saved size — from
its command line alone, before the bus client (zmq) is imported and before the instance file
or the hub exist; then it runs the desktop (:func:`ui.tk.start.desktop.main`) into that window,
connecting to the instance's endpoints, which libzmq allows before the hub has bound. Nothing
is editable until the App has the core's answers, so nothing typed can be lost
(docs/adr/0026-start-path-and-long-line-keys.md, "b"). With ``--open FILE`` the first paint
also holds the top of that file, read from disk (ui/tk/start/first_screen.py, docs/adr/0043): what
the user waits for, a picture until the core's editor takes over; keys typed meanwhile are
kept and given to that editor.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ui.tk.start.early import early_window

if TYPE_CHECKING:   # imported when drawn, after the window is up
    import tkinter as tk

    from ui.tk.start.first_screen import FirstScreen


def said_drawn() -> None:
    """Tell `rio` the window is on screen (actors/runtime/window_first.py waits for this line before
    it starts the rest), then point stdout at /dev/null: nobody reads the pipe after that."""
    try:
        os.write(1, b"drawn\n")
    except OSError:
        pass
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ui.tk",
                                     description="Rio's desktop window, drawn first")
    parser.add_argument("--instance", required=True)
    parser.add_argument("--root", required=True, help="the project folder")
    parser.add_argument("--open", action="append", default=[], metavar="FILE")
    args = parser.parse_args(argv)
    drawn: list[FirstScreen | None] = []

    def first_screen(root: tk.Tk) -> None:
        # The file's first screen in the same first paint (ui/tk/start/first_screen.py)
        from ui.tk.start.first_screen import first_screen_for
        drawn.append(first_screen_for(root, args.root, list(args.open)))
    window = early_window(args.root, first_screen if args.open else None)
    if window is None:
        return 1
    said_drawn()
    from rio.config.instance import InstanceInfo, InstancePaths
    from ui.tk.start import desktop

    paths = InstancePaths.for_name(args.instance)
    info = InstanceInfo(args.instance, str(Path(args.root).resolve()), 0,
                        paths.requests_endpoint, paths.events_endpoint, 0.0)
    rest = ["--instance", args.instance]
    for path in args.open:
        rest += ["--open", path]
    return desktop.main(rest, window=window, info=info,
                        first_screen=drawn[0] if drawn else None)

