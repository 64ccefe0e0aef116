"""``python -m ui.tk --instance NAME [--open FILE]...``: the desktop process.
``python -m ui.tk --connect tcp://HOST:PORT [--server-key KEY] [--open FILE]...`` (what
``rio --connect`` runs): the same desktop on a remote headless instance, over CURVE.

Started (and restarted after a crash) by the supervisor in desktop mode. It connects to the
instance's bus, serves the ``ui.*`` ops, rebuilds its tabs from the core and the saved session,
and runs Tk's loop. Exit code 0 means the user quit; anything else is a crash the supervisor
answers with a restart.

Under the supervisor the window comes first (as IDLE's does): Tk is started and the window
mapped, at its saved size and with its title, before the bus connection, the App's imports
and the core's first answers; the rest fills in behind it (docs/adr/0026-start-path-and-long-
line-keys.md). Started by hand, it must first ask the bus whether the instance already has a
window (one window per instance), so there the connection still comes first.

On a remote instance the desktop does everything over the bus as it does locally (it never
reads the project's files itself: ``fs.*``); it serves no ``ui.*`` ops (a remote client may
not register a service) and File → Open Folder says why it is not offered.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import tkinter as tk
from pathlib import Path
from typing import TYPE_CHECKING

from actors.bus.client import connect, connect_remote, end_with_supervisor
from rio.config.instance import InstanceInfo, find_instance, project_state_dir
from rio.protocol.errors import RioError
from ui.tk.start.early import EARLY_CONNECT_S, early_window

if TYPE_CHECKING:   # the window is imported after Tk is up (below)
    from actors.bus.client import BusConnection
    from ui.tk.app.bus_pump import BusPump
    from ui.tk.app.main_window import App
    from ui.tk.start.first_screen import FirstScreen


def main(argv: list[str] | None = None, *, window: tk.Tk | None = None,
         info: InstanceInfo | None = None, first_screen: FirstScreen | None = None) -> int:
    """The desktop. ``window`` and ``info``: the window already drawn and the instance it
    belongs to, when started as ``python -m ui.tk --root DIR`` (ui/tk/start/first.py); ``first_screen``:
    the file's first screen drawn in it (ui/tk/start/first_screen.py). Then the App is built into
    that window first and drawn — menus, panes, the first screen moved into the editor's
    place — and only then is the hub waited for: the rest of the window comes while the
    supervisor and the core start."""
    parser = argparse.ArgumentParser(prog="python -m ui.tk", description="Rio's desktop window")
    parser.add_argument("--instance", default=os.environ.get("RIO_INSTANCE"))
    parser.add_argument("--open", action="append", default=[], metavar="FILE")
    parser.add_argument("--connect", metavar="tcp://HOST:PORT",
                        help="a remote instance (`rio serve --listen`) instead of a local one")
    parser.add_argument("--server-key", help="the remote server's public key (`rio keys`)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("RIO_LOG_LEVEL", "WARNING"),
                        format="%(asctime)s ui[%(process)d] %(name)s: %(message)s")
    if args.connect:
        return remote_main(args.connect, args.server_key, args.open)
    supervised = end_with_supervisor()
    root: tk.Tk | None = window
    if window is not None and info is not None and supervised:
        return _window_first(window, info, args.open, first_screen)
    try:
        info = info or find_instance(args.instance)
        if supervised and root is None:
            root = early_window(info.root)
            if root is None:
                return 1
        conn = connect(info, name="ui", timeout=10 if window is None else EARLY_CONNECT_S)
    except RioError as err:
        print(f"rio ui: {err.message}\n  ({err.kind}) {err.next}", file=sys.stderr)
        if root is not None:
            root.destroy()
        return 1
    if not supervised and _handed_to_open_window(conn, args.open):
        conn.close()
        return 0
    if root is None:
        root = early_window(info.root)
        if root is None:
            conn.close()
            return 1
    # Imported after Tk is up: nothing here needs to run before the first window exists.
    from ui.tk.app.main_window import App

    app = App(root, conn, project_root=info.root, instance=info.name,
              state_dir=project_state_dir(Path(info.root)), first_screen=first_screen)
    return _run(app, root, conn, args.open)


def _window_first(root: tk.Tk, info: InstanceInfo, files: list[str],
                  first_screen: FirstScreen | None) -> int:
    """``python -m ui.tk --root DIR``'s desktop (its window drawn already): the App built and drawn
    on a connection that is not up yet (libzmq connects before the hub has bound), then the
    wait for the hub, then the rest as usual."""
    from actors.bus.client import BusConnection, Endpoints
    from ui.tk.app.main_window import App
    key = info.server_key              # as connect() does
    conn = BusConnection(Endpoints(info.requests, info.events, key.encode() if key else None),
                         name="ui")
    app = App(root, conn, project_root=info.root, instance=info.name,
              state_dir=project_state_dir(Path(info.root)), first_screen=first_screen)
    pump = first_screen.pump if first_screen is not None else root.update_idletasks
    pump()                       # the menus, panes and the first screen in its place, now
    deadline = time.monotonic() + EARLY_CONNECT_S
    while not conn.wait_live(0.05) and time.monotonic() < deadline:
        pump()
    if not conn.live:
        conn.close()
        print(f"rio ui: the Rio instance at {info.requests} did not answer within "
              f"{EARLY_CONNECT_S:g} s.", file=sys.stderr)
        root.destroy()
        return 1
    return _run(app, root, conn, files)


def _run(app: App, root: tk.Tk, conn: BusConnection, files: list[str]) -> int:
    from ui.tk.app.bus_pump import BusPump
    from ui.tk.app.control import ControlServer
    control = ControlServer(app)
    pump = BusPump(root, conn)
    control.register()
    app.start([str(Path(p).resolve()) for p in files])
    return _loop(app, root, conn, pump, unregister=True)


def _loop(app: App, root: tk.Tk, conn: BusConnection, pump: BusPump, *,
          unregister: bool) -> int:
    """Tk's loop until the user quits; then the session saved, the ``ui.*`` service given up
    (``unregister``: a local window serves it), the connection closed, the window gone."""
    pump.start()
    root.mainloop()
    pump.stop()
    app.save_session()
    if unregister:
        try:
            conn.call("bus.unregister", {}, timeout=2)
        except RioError:
            pass
    conn.close()
    try:
        root.destroy()
    except tk.TclError:
        pass
    return app.exit_code


def remote_main(address: str, server_key: str | None, files: list[str]) -> int:
    """The desktop on a remote instance: connect over CURVE, ask the instance for its project,
    then run as a local window does (without the ``ui.*`` control service)."""
    try:
        conn = connect_remote(address, server_key, name="ui", timeout=10)
    except RioError as err:
        print(f"rio: {err.kind}: {err.message} — {err.next}", file=sys.stderr)
        return 2
    try:
        status = conn.call("system.status", {}, timeout=10)
    except RioError as err:
        conn.close()
        print(f"rio: {err.kind}: {err.message} — {err.next}", file=sys.stderr)
        return 2
    project = str(status["root"])
    root = early_window(project)
    if root is None:
        conn.close()
        return 1
    from ui.tk.app.bus_pump import BusPump
    from ui.tk.app.main_window import App

    # Its session (tabs, layout) is kept apart from a local project of the same path.
    app = App(root, conn, project_root=project, instance=str(status["instance"]),
              state_dir=project_state_dir(Path(f"{address}{project}")), remote=address)
    pump = BusPump(root, conn)
    app.start(list(files))
    return _loop(app, root, conn, pump, unregister=False)


def _handed_to_open_window(conn: BusConnection, files: list[str]) -> bool:
    """One window per instance: when the instance already has a window, a second ``rio``
    raises it and opens the files there, as '90s editors did, instead of attaching a
    second window that would take the ``ui.*`` route from the first."""
    try:
        conn.call("ui.raise", {}, timeout=3)
    except RioError:
        return False   # no window (headless instance), or one that does not answer
    for path in files:
        try:
            conn.call("ui.open", {"path": str(Path(path).resolve())}, timeout=30)
        except RioError as err:
            print(f"rio: could not open {path}: {err.message}\n  ({err.kind}) {err.next}",
                  file=sys.stderr)
    print("Rio already has a window on this folder: raised it"
          + (f" and opened {len(files)} file(s) there." if files else "."), flush=True)
    return True

