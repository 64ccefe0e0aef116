"""The actors a host process can start, and the face of the host they are started in.

A factory is registered under an actor's name with :func:`actor_factory`; the host process
(:mod:`actors.runtime.host`) looks the name up, calls the factory with itself, and serves the op
prefixes the factory returns. Factories see the host only through :class:`ActorHost`, so the
modules that define actors never import the host (no import circle between them).
"""

from __future__ import annotations

import argparse
import importlib
import threading
from pathlib import Path
from typing import Any, Callable, Protocol

import pykka

from actors.bus.service import BusThread, RequestContext

# The ping an actor answers is liveness's (defined there, beside what answers it); it is part
# of the face an actor module sees, so it is named here too (``as``: re-exported).
from actors.runtime.liveness import Liveness
from actors.runtime.liveness import Ping as Ping
from actors.runtime.liveness import answer_ping as answer_ping

Handler = Callable[[RequestContext], None]


class ActorHost(Protocol):
    """What a factory may use of the process that hosts its actors."""

    args: argparse.Namespace
    name: str
    root: Path
    bus: BusThread
    stopping: threading.Event
    refs: list[pykka.ActorRef[Any]]          # the actors of every kind it started
    ping_targets: list[pykka.ActorRef[Any]]
    fault_injection: bool
    #: the threads and actors the process's ping answer watches (actors/runtime/liveness.py): a
    #: factory stamps its serving threads and names the actors the process cannot do without
    liveness: Liveness
    #: run on a thread of their own once the process is ready (registered on the bus): what
    #: can load after the start, out of the way of "ready" (imports a first request needs)
    after_ready: list[Callable[[], object]]


Factory = Callable[[ActorHost], dict[str, Handler]]

#: actor name → function(host) that starts it and returns {prefix: handler}; filled as the
#: modules of :data:`ACTOR_MODULES` are imported.
ACTOR_FACTORIES: dict[str, Factory] = {}

#: The one list of Rio's actors: each name (as supervisor.toml uses it) → the module that
#: registers its factory. A host imports only the modules of the actors it runs, so a restarted
#: core does not pay for the agent session's imports (restart time is mostly interpreter
#: start-up plus imports; ADR-0013).
ACTOR_MODULES: dict[str, str] = {
    "documents": "actors.runtime.factories",                # buffer.*: open documents and journals
    "workspace": "actors.runtime.factories",                # fs.*: the project's files, confined
    "runner": "actors.runtime.factories",                   # run.*: project commands
    "conversations": "actors.agent.conversations_actor",  # agent.* in the core
    "gate": "actors.agent.gate_actor",                    # gate.* in the core
    "agents": "actors.agent.discovery_actor",                # agents.*: installed ACP agents
    "mcp": "actors.agent.mcp_endpoint",             # mcp.*: Rio's MCP endpoint (its own process)
    "agent_session": "actors.agent.session",        # one process per conversation
    "fake_agent": "actors.faults.injection",                  # the fault harness's stand-in agent
}
#: Not started by a host: the desktop window is its own process (``python -m ui.tk``).
OTHER_PROCESSES = ("ui",)
#: Started only when something asks for them (``system.spawn``), so they may have no process.
ON_DEMAND = ("fake_agent",)


def known_actors() -> tuple[str, ...]:
    """Every name supervisor.toml may place (the supervisor checks the file against it)."""
    return tuple(ACTOR_MODULES) + OTHER_PROCESSES


def factory_for(name: str) -> Factory | None:
    """The factory of actor ``name``, importing its module on first use; None if unknown."""
    if name not in ACTOR_FACTORIES and name in ACTOR_MODULES:
        importlib.import_module(ACTOR_MODULES[name])
    return ACTOR_FACTORIES.get(name)


def actor_factory(name: str) -> Callable[[Factory], Factory]:
    def register(fn: Factory) -> Factory:
        ACTOR_FACTORIES[name] = fn
        return fn
    return register


