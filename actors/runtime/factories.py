"""The core's own actors (documents, workspace, runner), by the names supervisor.toml uses.

Each factory starts its actor inside an :class:`~actors.runtime.actor_registry.ActorHost` and returns
the op prefixes it serves. Importing this module registers them.
"""

from __future__ import annotations

from actors.runtime.actor_registry import ActorHost, Handler, actor_factory
from rio.config.instance import journal_dir


@actor_factory("documents")
def start_documents(host: ActorHost) -> dict[str, Handler]:
    """buffer.*: the open documents (strands on a few workers), their journals and the one
    ticker that fsyncs them (actors/core/documents_actor.py)."""
    from actors.core.documents_actor import (
        BUFFER_WORKERS,
        BufferRoutes,
        DocumentsActor,
        Ticker,
        buffer_handler,
    )
    from actors.runtime.strands import StrandPool

    file_port = journal_store = None
    if host.fault_injection:
        from actors.faults.injection import SwitchableFilePort, SwitchableJournalStore
        file_port = SwitchableFilePort.install(host)
        journal_store = SwitchableJournalStore.install(host, journal_dir(host.root))
    routes = BufferRoutes()
    pool = StrandPool("buffers", BUFFER_WORKERS, liveness=host.liveness,
                      on_thread_start=host.bus.join_shared_link)
    ticker = Ticker(routes).start()
    ref = DocumentsActor.start(host.root, journal_dir(host.root), host.bus, routes,
                               file_port=file_port, journal_store=journal_store,
                               process=host.name, pool=pool, ticker=ticker,
                               stamp=host.liveness.stamp("documents registry"))
    host.refs.append(ref)
    host.liveness.watch_actor("documents", ref)

    def sweep() -> None:      # save temp files a killed save left in the project
        from rio.files.temp_sweep import sweep_project
        sweep_project(host.root, stopping=host.stopping)
    host.after_ready.append(sweep)
    return {"buffer": buffer_handler(ref, routes)}


@actor_factory("workspace")
def start_workspace(host: ActorHost) -> dict[str, Handler]:
    """fs.*: listing, reading and searching the project's files, confined to its root; and
    ``fs.changed`` when files are made or deleted on disk (actors/core/fs_watcher.py, started once
    the process is ready: the watcher library loads off the start path)."""
    from actors.core.workspace_actor import WorkspaceActor
    ws = WorkspaceActor.start(host.root)
    host.refs.append(ws)

    def watch() -> None:
        from actors.core import fs_watcher
        fs_watcher.start(host.root, host.bus.publish, host.stopping)
    host.after_ready.append(watch)
    return {"fs": ws.tell}


@actor_factory("runner")
def start_runner(host: ActorHost) -> dict[str, Handler]:
    """run.*: the project's commands, their output streamed as events."""
    from actors.core.runner_actor import RunnerActor
    runner = RunnerActor.start(host.root, host.bus)
    host.refs.append(runner)
    return {"run": runner.tell}
