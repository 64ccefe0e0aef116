"""The ops the hub's own process answers on the hub's thread: the hub's ``bus.*`` and the
supervisor's ``system.*`` — in the one dispatch style of every actor (ADR-0029).

The owner's class holds an :class:`~rio.protocol.op_table.OpTable` and marks each method with
the op it serves::

    class Hub:
        handles: OpTable[Hub] = OpTable()

        @handles("bus.stats")
        def stats_op(self, req: LocalRequest) -> dict: ...

A method takes the :class:`LocalRequest` (its arguments already checked against
rio/protocol/ops.py) and returns the result; or :data:`DEFERRED` when it answers later, from
another thread, with :meth:`actors.bus.hub.Hub.reply_later` (``system.spawn``: once the new
process is ready, actors/runtime/spawn_waits.py); or a :class:`~rio.protocol.frames.Reply` it built
itself (spawn_waits answers a process already ready at once). :func:`answer` turns the outcome
into the reply: a :class:`RioError` as it is, anything else logged with its traceback and sent
as ``internal.unexpected``, an op without a method as :func:`rio.protocol.ops.unknown_op`. These
run on the hub's thread, which serves every request of the instance: no op may end it, and no
method may wait.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping, TypeVar

from rio.protocol import ops
from rio.protocol.errors import InternalError, RioError
from rio.protocol.frames import Reply, Request
from rio.protocol.op_table import OpTable

log = logging.getLogger("rio.hub")

Owner = TypeVar("Owner")


class Deferred:
    """What a method returns for a request it answers later, from another thread, with
    :meth:`actors.bus.hub.Hub.reply_later` (the hub's thread never waits)."""

    def __repr__(self) -> str:
        return "DEFERRED"


DEFERRED = Deferred()


@dataclass(frozen=True)
class LocalRequest:
    """One request the hub's process serves: who sent it, the request, its checked arguments."""
    sender: bytes
    request: Request
    args: Mapping[str, Any]

    @property
    def op(self) -> str:
        return self.request.op


def answer(table: OpTable[Owner], owner: Owner, sender: bytes,
           request: Request) -> Reply | Deferred:
    """Serve ``request`` with ``owner``'s method from ``table``: the reply, or
    :data:`DEFERRED` (see the module docstring). Never raises."""
    try:
        args = ops.validate(request)
        result = table.call(owner, request.op, LocalRequest(sender, request, args))
    except Exception as exc:  # on the hub's thread: a failure is its answer
        if not isinstance(exc, RioError):
            log.error("%s failed", request.op, exc_info=exc)
            exc = InternalError("internal.unexpected", f"{type(exc).__name__}: {exc}")
        return Reply.failure(request.id, exc)
    if isinstance(result, (Deferred, Reply)):
        return result
    return Reply.success(request.id, result)
