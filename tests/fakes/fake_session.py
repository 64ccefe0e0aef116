"""A fake agent session for tests: plays the process "agent:<conversation>" on the bus.

The core's conversations actor sends it ``session.*`` like the real session
(actors/agents/session.py); each test decides how a turn goes with ``on_turn(fake, ctx)``, so the
core and the terminal client are tested without the agent loop or a model.
"""

from __future__ import annotations

import threading
from typing import Callable

from actors.bus.client import Endpoints
from actors.bus.service import BusThread, RequestContext
from rio.protocol import ops

# The session.* specs belong to the session's block of rio/protocol/ops.py; the fake validates its
# requests with them, so make sure the ones it serves exist in this process.
if "session.turn" not in ops.REGISTRY:  # pragma: no cover -- before that block landed
    _C = ops.Arg("conversation", str)
    ops.define("session.turn", "", _C, ops.Arg("turn", str), ops.Arg("text", str),
               ops.Arg("messages", list), ops.Arg("provider", str, False, None),
               ops.Arg("endpoint", str, False, None), ops.Arg("model", str, False, None))
    ops.define("session.approve", "", _C, ops.Arg("turn", str), ops.Arg("proposal", (str, int)),
               ops.Arg("decision", str))
    ops.define("session.stop", "", _C, ops.Arg("turn", str, False, None))


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


class FakeSession:
    """Plays ``agent:<conversation>``: ``on_turn(ctx)`` decides how each turn goes."""

    def __init__(self, info: dict, conversation: str,
                 on_turn: Callable[["FakeSession", RequestContext], None],
                 on_stop: Callable[["FakeSession", RequestContext], None] | None = None,
                 on_approve: Callable[["FakeSession", dict], None] | None = None):
        self.turns: list[dict] = []
        self.approvals: list[dict] = []
        self.stops: list[dict] = []
        #: (op, client identity) of every approval and stop this process answered: the
        #: client's own agent.approve/agent.stop come here straight (the hub routes them)
        self.answered: list[tuple[str, bytes]] = []
        self.conversation = conversation
        self.pending: list[RequestContext] = []
        self.on_turn = on_turn
        self.on_stop = on_stop
        self.on_approve = on_approve
        self.bus = BusThread(Endpoints(info["requests"], info["events"]),
                             name=f"agent:{conversation}",
                             handlers={"session": self._serve, "agent": self._serve})
        self.bus.start()
        #: turns with a proposal out (published through self.bus.publish), which a new
        #: message interrupts — the real session knows its pending proposals the same way
        self.proposed: set[str] = set()
        publish = self.bus.publish

        def recording(topic: str, data: dict) -> None:
            if topic == "agent.propose":
                self.proposed.add(str(data.get("turn")))
            publish(topic, data)
        self.bus.publish = recording  # type: ignore[method-assign]

    def _serve(self, ctx: RequestContext) -> None:
        if ctx.op == "session.turn":
            self.turns.append(dict(ctx.args))
            self.on_turn(self, ctx)
        elif ctx.op in ("session.approve", "agent.approve"):
            self.answered.append((ctx.op, ctx.client))
            self.approvals.append({"conversation": self.conversation, **ctx.args})
            ctx.reply({"applied": ctx.args["decision"] != "reject"})
            if self.on_approve is not None:
                self.on_approve(self, dict(self.approvals[-1]))
        elif ctx.op == "session.interrupt":
            # Like the real session: a turn with a proposal out is interrupted; the new
            # message's session.turn follows. Otherwise the core answers agent.busy.
            turn = str(ctx.args.get("turn"))
            ctx.reply({"interrupted": turn in self.proposed, "running": bool(self.pending)})
            self.proposed.discard(turn)
        elif ctx.op == "agent.stop" and not self.pending and self.on_stop is None:
            # Like the real session: no turn here, so the core answers (it may hold one).
            threading.Thread(target=self._stop_via_core, args=(ctx,), daemon=True).start()
        elif ctx.op in ("session.stop", "agent.stop"):
            self.answered.append((ctx.op, ctx.client))
            turn = ctx.args.get("turn") or (self.pending[0].args["turn"] if self.pending
                                            else None)
            self.stops.append({"conversation": self.conversation, "turn": turn})
            if self.on_stop is not None:
                self.on_stop(self, ctx)
            else:
                ctx.reply({"stopped": True, "turn": turn})
                for held in self.pending:
                    held.reply({"status": "stopped", "messages": [], "buffers": []})
                self.pending.clear()

    def _stop_via_core(self, ctx: RequestContext) -> None:
        try:
            ctx.reply(self.bus.call("agent.stop", {"conversation": self.conversation}))
        except Exception as exc:  # noqa: BLE001 -- the request is answered either way
            ctx.fail(exc)

    def stop(self) -> None:
        self.bus.stop()
