"""A Stop that a session's hung loop does not answer in time is handed to the core.

The hub routes the client's ``agent.stop`` straight to the conversation's session process
(ADR-0027), whose bus thread hands it to the asyncio loop that owns the turn. A loop that hangs
(a blocking call, a bug) would leave the Stop unanswered until the supervisor finds the hang by
its missed pings (about 3–4 s) and kills the process — and then the Stop's answer is the error
``bus.actor_dead``. So :func:`watch_stop` gives every ``agent.stop`` a deadline, on a timer
thread of its own: not answered by the loop within :data:`STOP_DEADLINE_S`, it is sent on to
the core as the session's own ``agent.stop`` (the hub routes a session's own request to the
core, rio/protocol/routing.py), and the core's answer is the client's: the core's store ends
the conversation's running turn ``stopped`` at once, keeping the text streamed so far
(``{stopped: true, turn}``). The hung process stays the supervisor's to restart.

The loop may still wake and serve the Stop after that: it then cancels its turn without a
second answer (``actors/agent/session.py``), and the store takes its late end for the same
turn (ADR-0034).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from actors.bus.service import RequestContext
from rio.protocol.errors import RioError

log = logging.getLogger("rio.agent.session")

#: How long the session's loop has to answer a client's Stop before the core is asked.
STOP_DEADLINE_S = 1.5
#: The core answers agent.stop at once; this bounds the wait for it.
CORE_STOP_TIMEOUT_S = 5.0


def watch_stop(ctx: RequestContext, call: Callable[..., Any], conversation: str, *,
               deadline_s: float | None = None) -> threading.Timer:
    """Start the deadline of one ``agent.stop`` (:data:`STOP_DEADLINE_S` unless given);
    ``call`` is a bus call usable from any thread (``BusThread.call``). Returns the (daemon)
    timer."""
    deadline_s = STOP_DEADLINE_S if deadline_s is None else deadline_s
    def expire() -> None:
        if ctx.answered:
            return
        log.warning("agent.stop for %s not answered by the session's loop in %.1f s: the "
                    "core answers it", conversation, deadline_s)
        try:
            result = call("agent.stop", {"conversation": conversation},
                          timeout=CORE_STOP_TIMEOUT_S)
        except RioError as err:
            if not ctx.answered:
                ctx.fail(err)
            return
        if not ctx.answered:   # the loop may have woken meanwhile: one answer only
            ctx.reply(result)

    timer = threading.Timer(deadline_s, expire)
    timer.name = "rio-agent-stop-watch"
    timer.daemon = True
    timer.start()
    return timer
