"""The window's side of the core: start-up, the ``buffer.*`` and ``system.process`` events.

At start the tabs are rebuilt from what the core holds and from the session (a UI restart loses
nothing; ui/tk/app/session.py ``restore_plan``), once the core answers. Then the core's events reach
the tabs: changes, saves, closes and conflicts of documents, documents recovered from their
journals, journals that cannot be written (and are again), and the core stopping and coming
back (every editor resyncs, ADR-0020). The window (ui/tk/app/main_window.py) owns one :class:`CoreEvents`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rio.protocol.errors import BusError, RioError
from rio.protocol.frames import Event, thaw
from ui.tk.app import session as session_mod
from ui.tk.app.seams import CoreEventsHost
from ui.tk.widgets.dialogs import Dialog
from ui.tk.widgets.tk_calls import select_tab

if TYPE_CHECKING:
    from actors.bus.client import BusConnection
    from ui.tk.editor.tab import EditorTab


def call_when_up(conn: BusConnection, op: str, wait_s: float = 60.0,
                 pump: Callable[[], object] | None = None) -> Any:
    """A start-up call that waits for the core: the supervisor starts the window and the
    core together, so the first ``buffer.*`` may find nobody serving it yet. Then it waits
    on the bus for the supervisor's ``system.process`` event saying the core is ready (no
    sleep), and asks again — at least every 0.5 s, in case the event came first. ``pump``:
    called every 50 ms meanwhile (the first screen keeps drawing and taking keys)."""
    deadline = time.monotonic() + wait_s
    core_up: list[Event] = []

    def on_process(event: Event) -> None:
        if event.data.get("name") == "core" and event.data.get("event") == "ready":
            core_up.append(event)

    conn.subscribe("system.process", on_process)
    try:
        while True:
            core_up.clear()
            try:
                return conn.call(op, {}, timeout=5)
            except BusError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise
                if pump is None:
                    conn.wait_for(lambda: core_up, min(0.5, remaining))
                    continue
                until = time.monotonic() + min(0.5, remaining)
                while not core_up and time.monotonic() < until:
                    pump()
                    conn.wait_for(lambda: core_up, 0.05)
    finally:
        conn.unsubscribe("system.process", on_process)


class CoreEvents:
    def __init__(self, app: CoreEventsHost[EditorTab]):
        self.app = app
        self._core_down = False      # a stop of the core was seen: its next "ready" resyncs
        #: the restarted core's buffer.recovered was said for open tabs ("kept"): its "ready"
        #: does not say it over (the two come in either order)
        self._said_kept = False

    def start(self, requested: Sequence[str] = ()) -> None:
        """Rebuild the tabs from the core (a UI restart loses nothing) and the session."""
        app = self.app
        app.conn.subscribe("buffer.", self._on_buffer_event)
        app.conn.subscribe("system.process", self._on_process)
        app.conn.on_gap = lambda topic, expected, got: app.resync_all()
        screen = app.first_screen
        pump = screen.pump if screen is not None else None
        buffers = list(call_when_up(app.conn, "buffer.list", pump=pump))
        try:
            recovered = call_when_up(app.conn, "buffer.recover", pump=pump)
        except RioError:
            recovered = {"buffers": [], "count": 0}
        by_id = {b["buffer"]: b for b in buffers}
        plans, active = session_mod.restore_plan(app.session, buffers, requested)
        asked = set(requested)
        built: list[EditorTab | None] = [None] * len(plans)

        def select_active() -> None:
            target = built[active] if active < len(built) else None
            if target is not None:
                select_tab(app.notebook, target)
                app.focus_editor(target)

        for i, plan in enumerate(plans):
            cursor = (plan.line, plan.col, plan.top)
            if plan.buffer and plan.buffer in by_id:
                built[i] = app.add_tab(by_id[plan.buffer], select=False, cursor=cursor)
            elif plan.path:
                def opened(summary: dict[str, Any], i: int = i,
                           cursor: tuple[int, int, int] = cursor) -> None:
                    built[i] = app.add_tab(summary, select=False, cursor=cursor)
                    if i == active:
                        select_active()

                def missing(err: RioError, path: str = plan.path) -> None:
                    # A file named on the command line is opened, not reopened.
                    verb = "open" if path in asked else "reopen"
                    if app.first_screen is not None and app.first_screen.wants({"path": path}):
                        app.first_screen_done(None)
                    app.set_message(f"Could not {verb} {path}: {err.message} {err.next}")
                app._request("buffer.open", {"path": plan.path}, opened, missing)
        select_active()
        self._recovered_notice(recovered)
        app.save_session()

    def _recovered_notice(self, report: dict[str, Any], *, live: bool = False) -> None:
        """Say which unsaved documents came back from their journals. ``live``: the core
        restarted under this window (``buffer.recovered``), and a document open in one of its
        tabs never left the screen — the editor kept and resent what was typed (ADR-0020) — so
        it is said in the status bar only: a dialog would take the keyboard from the user
        typing in it (a Space they meant for the text pressed its OK). The dialog is for
        documents the user has not seen come back: at the window's start, or not open here."""
        app = self.app
        ids = [b["buffer"] for b in report.get("buffers") or ()]
        new = [i for i in ids if i not in app.session.seen_recoveries]
        failures = report.get("failures") or ()
        if not new and not failures:
            return
        app.session = dataclasses.replace(
            app.session, seen_recoveries=(app.session.seen_recoveries + tuple(new))[-200:])
        if live and not failures:
            kept = [i for i in new if i in app.editors]
            if kept:
                self._said_kept = True
                app.set_message(f"The core restarted; what you typed in {len(kept)} open "
                                f"document{'s' if len(kept) != 1 else ''} was kept (unsaved).")
            new = [i for i in new if i not in kept]
            if not new:
                return
        names = [b.get("name") or b["buffer"] for b in report.get("buffers") or ()
                 if b["buffer"] in new]
        n = len(new)
        msg = f"Recovered {n} unsaved document{'s' if n != 1 else ''}"
        if failures:
            msg += f"; {len(failures)} journal{'s' if len(failures) != 1 else ''} damaged"
        app.set_message(msg + ".")
        detail = ""
        if names:
            detail = ("Rio stopped unexpectedly last time. Your unsaved changes were brought "
                      "back and are open in tabs: " + ", ".join(names) + ". Save them to keep "
                      "them.")
        for failure in failures:
            # Each says what could not be replayed, which document, and where the damaged
            # journal was kept (file.journal_damaged), with what to do next.
            detail += f"\n\n{failure.get('message', '')} {failure.get('next', '')}".rstrip()
        Dialog(app, "recovered", "Rio", msg, ["OK"], lambda b, v: None,
               detail=detail.strip(), icon="warning" if failures else "info")

    def _on_buffer_event(self, event: Event) -> None:
        app = self.app
        data = thaw(event.data)
        ed = app.editors.get(data.get("buffer", ""))
        topic = event.topic
        if topic == "buffer.changed":
            if ed is not None:
                ed.on_changed(data)
        elif topic == "buffer.saved" and ed is not None:
            ed.update_summary(data)
        elif topic == "buffer.closed" and ed is not None:
            app.remove_tab(ed)
        elif topic == "buffer.conflict" and ed is not None:
            app.conflict_prompt(ed)
        elif topic == "buffer.recovered":
            self._recovered_notice(data, live=True)
        elif topic == "buffer.journal_failed":
            self._journal_failed(data, ed)
        elif topic == "buffer.journal_restored":
            self._journal_restored(data, ed)

    def _journal_failed(self, data: dict[str, Any], ed: EditorTab | None) -> None:
        """A document whose edits can no longer be journaled is named, with what to do: until
        the journal is written again its edits are refused rather than left unprotected."""
        app = self.app
        name = data.get("name") or (ed.summary.get("name") if ed else None) or data["buffer"]
        app.unprotected[data["buffer"]] = str(name)
        app.set_message(f"{name} is not protected: {data.get('message', '')}")
        Dialog(app, "journal_failed", "Rio", f"{name}: edits cannot be journaled",
               ["OK"], lambda b, v: None,
               detail=f"{data.get('message', '')}\n\n{data.get('next', '')}".strip(),
               icon="error")

    def _journal_restored(self, data: dict[str, Any], ed: EditorTab | None) -> None:
        app = self.app
        name = app.unprotected.pop(data["buffer"], None) or data.get("name") or data["buffer"]
        app.set_message(f"{name} is journaled again: edits are protected.")

    def _on_process(self, event: Event) -> None:
        app = self.app
        data = thaw(event.data)
        if data.get("name") != "core":
            return
        what = data.get("event")
        if what in ("exited", "hung"):
            self._core_down = True
            self._said_kept = False
            app.set_message("The core stopped; Rio is restarting it…")
        elif what == "ready" and self._core_down:
            # Only after a stop we saw: the first "ready" of a fresh start changes nothing.
            self._core_down = False
            if not self._said_kept:
                app.set_message("The core restarted; documents were reloaded from it.")
            app.resync_all()
        elif what == "gave_up":
            app.set_message("The core keeps failing; see `rio status`. Unsaved work is in "
                            "the journal.")
