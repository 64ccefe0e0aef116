"""The actors a host process can start, and the face of the host they are started in.

A factory is registered under an actor's name with :func:`actor_factory`; the host process
(:mod:`actors.host`) looks the name up, calls the factory with itself, and serves the op
prefixes the factory returns. Factories see the host only through :class:`ActorHost`, so the
modules that define actors never import the host (no import circle between them).
"""

from __future__ import annotations

import argparse
import os
import threading
from pathlib import Path
from typing import Any, Callable, Protocol

import pykka

from actors.bus_thread import BusThread, RequestContext

Handler = Callable[[RequestContext], None]


class ActorHost(Protocol):
    """What a factory may use of the process that hosts its actors."""

    args: argparse.Namespace
    name: str
    root: Path
    bus: BusThread
    stopping: threading.Event
    refs: list[pykka.ActorRef]
    ping_targets: list[pykka.ActorRef]
    fault_injection: bool


Factory = Callable[[ActorHost], dict[str, Handler]]

#: actor name → function(host) that starts it and returns {prefix: handler}
ACTOR_FACTORIES: dict[str, Factory] = {}


def actor_factory(name: str) -> Callable[[Factory], Factory]:
    def register(fn: Factory) -> Factory:
        ACTOR_FACTORIES[name] = fn
        return fn
    return register


def answer_ping(message: Any, process: str) -> bool:
    """For actors that are ping targets: handle ``("ping", ctx)``; True when it was one."""
    if isinstance(message, tuple) and len(message) == 2 and message[0] == "ping":
        message[1].reply({"process": process, "pid": os.getpid()})
        return True
    return False
