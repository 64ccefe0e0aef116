"""The actors a host process can run, by the names supervisor.toml uses.

Each factory starts its actors inside a :class:`~actors.actor_registry.ActorHost` and returns the op prefixes it
serves. Importing this module registers them.
"""

from __future__ import annotations

import threading
from typing import Callable

from actors.bus_thread import RequestContext
from actors.actor_registry import ActorHost, actor_factory
from rio.instance import journal_dir


@actor_factory("documents")
def start_documents(host: ActorHost) -> dict[str, Callable[[RequestContext], None]]:
    from actors.documents import BufferRoutes, DocumentsActor, buffer_handler, flush_ticker
    from actors.workspace_actor import WorkspaceActor

    file_port = None
    if host.fault_injection:
        from actors.faults import SwitchableFilePort
        file_port = SwitchableFilePort.install(host)
    routes = BufferRoutes()
    ref = DocumentsActor.start(host.root, journal_dir(host.root), host.bus, routes,
                               file_port=file_port, process=host.name)
    ws = WorkspaceActor.start(host.root)
    from actors.runner_actor import RunnerActor
    runner = RunnerActor.start(host.root, host.bus)
    host.refs += [ref, ws, runner]
    host.ping_targets.append(ref)
    stop = threading.Event()
    threading.Thread(target=flush_ticker, args=(ref, 0.25, stop), daemon=True,
                     name="journal-flush").start()
    return {"buffer": buffer_handler(ref, routes), "fs": ws.tell, "run": runner.tell}


#: Actors whose factories live in their own modules, imported only by the processes that host
#: them: a restarted core does not pay for the agent session's imports (restart time is mostly
#: interpreter start-up plus imports; ADR-0013).
LAZY_FACTORIES = {
    "fake_agent": "actors.faults",                  # the fault harness's fake agent
    "conversations": "actors.conversations_actor",  # agent.* in the core
    "gate": "actors.gate_actor",                    # gate.* in the core
    "agent_session": "actors.agent_session",        # one process per conversation
}
