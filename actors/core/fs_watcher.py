"""The core's project watcher: files created, deleted or renamed on disk — by the user, another
program or an agent's own shell — become ``fs.changed`` events, so a project tree follows the
disk without a Refresh (ADR-0037).

One daemon thread, started after the core is ready (``Host.after_ready``: watchfiles and its
Rust extension load off the start path). It waits in watchfiles' ``RustNotify.watch`` (the GIL
released), hands each batch to :class:`rio.files.watch.ProjectWatch` and publishes what it
makes of it. Folders are watched non-recursively, so a new folder needs a new watcher: the
new one is armed before the old one is closed, and what the old one still holds is read
first, so no change falls between the two. It stops with the host (``stopping``).

A watcher that cannot start (no inotify instance left: fs.inotify.max_user_instances) or keeps
failing says so in the core's log once and ends: the tree's Refresh still works.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rio.files.watch import DEBOUNCE_MS, STEP_MS, Folded, ProjectWatch
from rio.files.workspace import Workspace

log = logging.getLogger("rio.fs_watcher")

Publish = Callable[[str, Mapping[str, Any]], None]

#: Re-arms in a row that may follow one batch (a folder made in a folder made meanwhile …)
#: before the watcher stops chasing and says ``more``.
_MAX_REARMS = 3
#: After a failed batch (watchfiles' error: a name that is not UTF-8 on disk), wait this long
#: before watching again, doubling up to _MAX_BACKOFF_S while failures follow each other.
_BACKOFF_S = 1.0
_MAX_BACKOFF_S = 30.0
#: Failures in a row, with no good batch between, after which the watcher gives up.
_MAX_FAILURES = 8


class ProjectWatcher:
    """Watch ``root`` and publish ``fs.changed`` until ``stopping`` is set."""

    def __init__(self, root: Path, publish: Publish, stopping: threading.Event) -> None:
        self.root = root
        self.publish = publish
        self.stopping = stopping
        self.thread: threading.Thread | None = None
        self.model: ProjectWatch | None = None
        #: set once the first watcher is armed (tests wait for it)
        self.armed = threading.Event()

    def start(self) -> threading.Thread:
        self.thread = threading.Thread(target=self.run, name="fs-watcher", daemon=True)
        self.thread.start()
        return self.thread

    def run(self) -> None:
        try:
            self._run()
        except Exception:  # a monitor thread: the tree's Refresh still works
            log.exception("the project watcher stopped; the project tree needs Refresh")

    def _run(self) -> None:
        from watchfiles._rust_notify import RustNotify  # off the start path (~20 ms, ~1 MB)

        def arm(paths: list[str]) -> Any:
            # ignore_permission_denied: a folder that vanished or cannot be read while the
            # watch is set up is skipped, not fatal.
            return RustNotify(paths, False, False, 0, False, True)

        model = self.model = ProjectWatch(Workspace(self.root))
        if model.capped:
            log.warning("the project has over %d folders: only the first are watched "
                        "(the project tree's Refresh shows the others)", model.max_dirs)
        notify = arm(model.paths())
        self.armed.set()
        failures, backoff = 0, _BACKOFF_S
        try:
            while not self.stopping.is_set():
                try:
                    raw = notify.watch(DEBOUNCE_MS, STEP_MS, 0, self.stopping)
                except RuntimeError as exc:   # WatchfilesRustInternalError; sticky once raised
                    failures += 1
                    if failures >= _MAX_FAILURES:
                        log.warning("the project watcher gives up after %d failures (%s); the "
                                    "project tree needs Refresh", failures, exc)
                        return
                    log.info("project watcher: %s; watching again in %.0f s", exc, backoff)
                    if self.stopping.wait(backoff):
                        return
                    backoff = min(backoff * 2, _MAX_BACKOFF_S)
                    notify.close()
                    folded = model.rescan()      # the failed batch is lost: list again
                    notify = arm(model.paths())
                    self._send(folded)
                    continue
                if not isinstance(raw, set):
                    continue   # "stop" ends the loop; "timeout"/"signal" do not happen here
                failures, backoff = 0, _BACKOFF_S
                folded = model.fold(raw)
                rearms = 0
                while folded.rearm:
                    folded.rearm = False
                    rearms += 1
                    if rearms > _MAX_REARMS:
                        folded.more = True
                        break
                    fresh = arm(model.paths())
                    try:   # what the old watcher caught before the new one was armed
                        left = notify.watch(DEBOUNCE_MS, STEP_MS, 1, None)
                    except RuntimeError:
                        left = None
                    notify.close()
                    notify = fresh
                    if isinstance(left, set):
                        folded = folded.merge(model.fold(left))
                    elif left is None:
                        folded = folded.merge(model.rescan())
                self._send(folded)
        finally:
            notify.close()

    def _send(self, folded: Folded) -> None:
        data = folded.event()
        if data is not None:
            self.publish("fs.changed", data)


def start(root: Path, publish: Publish, stopping: threading.Event) -> ProjectWatcher:
    """Start watching ``root`` on a thread of its own (``Host.after_ready``)."""
    watcher = ProjectWatcher(root, publish, stopping)
    watcher.start()
    return watcher
