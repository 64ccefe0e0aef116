"""A fake agent session for tests: plays the process "agent:<conversation>" on the bus.

The core's conversations actor forwards a message to it as ``session.send``, as to the real
session (actors/agent/session.py). The fake does what the real one does around a turn — asks
the core's store to record the message (``conversation.begin_turn``), answers ``{turn}``, and
records the end (``conversation.end_turn``) when the test says so — and each test decides how
a turn goes with ``on_turn(fake, turn)``, so the core and the terminal client are tested
without the agent loop or a model.
"""

from __future__ import annotations

import threading
from typing import Callable

from actors.bus.client import Endpoints
from actors.bus.service import BusThread, RequestContext
from rio.protocol.errors import AgentError


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


class FakeTurn:
    """One turn the fake took: ``args`` is what the store gave (turn, messages, provider …)
    plus the text; :meth:`reply` records its end like the real session."""

    def __init__(self, fake: "FakeSession", began: dict, text: str):
        self.fake = fake
        self.args = {**began, "text": text, "conversation": fake.conversation}
        self.ended = False

    def reply(self, result: dict) -> None:
        """The turn's end (status, messages, buffers, error …), recorded by the core."""
        if self.ended:
            return
        self.ended = True
        if self in self.fake.pending:
            self.fake.pending.remove(self)
        args = {"conversation": self.fake.conversation, "turn": self.args["turn"],
                **{k: v for k, v in result.items() if v is not None}}
        args.setdefault("messages", [])
        self.fake.bus.call("conversation.end_turn", args, timeout=10)


class FakeSession:
    """Plays ``agent:<conversation>``: ``on_turn(fake, turn)`` decides how each turn goes."""

    def __init__(self, info: dict, conversation: str,
                 on_turn: Callable[["FakeSession", FakeTurn], None],
                 on_stop: Callable[["FakeSession", RequestContext], None] | None = None,
                 on_approve: Callable[["FakeSession", dict], None] | None = None,
                 pending_events: Callable[["FakeSession"], list[dict]] | None = None):
        self.turns: list[dict] = []
        self.approvals: list[dict] = []
        self.stops: list[dict] = []
        #: (op, client identity) of every approval and stop this process answered: the
        #: client's own agent.approve/agent.stop come here straight (the hub routes them)
        self.answered: list[tuple[str, bytes]] = []
        self.conversation = conversation
        #: turns taken and not ended yet (the test ends them with FakeTurn.reply)
        self.pending: list[FakeTurn] = []
        self.on_turn = on_turn
        self.on_stop = on_stop
        self.on_approve = on_approve
        self.pending_events = pending_events
        #: turns with a proposal out (published through self.bus.publish), which a new
        #: message interrupts — the real session knows its pending proposals the same way
        self.proposed: set[str] = set()
        self.bus = BusThread(Endpoints(info["requests"], info["events"]),
                             name=f"agent:{conversation}",
                             handlers={"session": self._serve, "agent": self._serve})
        self.bus.start()
        publish = self.bus.publish

        def recording(topic: str, data: dict) -> None:
            if topic == "agent.propose":
                self.proposed.add(str(data.get("turn")))
            publish(topic, data)
        self.bus.publish = recording  # type: ignore[method-assign]

    def _serve(self, ctx: RequestContext) -> None:
        if ctx.op == "session.send":
            threading.Thread(target=self._send, args=(ctx,), daemon=True).start()
        elif ctx.op == "agent.approve":
            self.answered.append((ctx.op, ctx.client))
            self.approvals.append({"conversation": self.conversation, **ctx.args})
            ctx.reply({"applied": ctx.args["decision"] != "reject"})
            if self.on_approve is not None:
                self.on_approve(self, dict(self.approvals[-1]))
        elif ctx.op == "agent.stop":
            self.answered.append((ctx.op, ctx.client))
            turn = self.pending[0].args["turn"] if self.pending else None
            self.stops.append({"conversation": self.conversation, "turn": turn})
            if self.on_stop is not None:
                self.on_stop(self, ctx)
                return
            ctx.reply({"stopped": bool(self.pending), "turn": turn} if self.pending
                      else {"stopped": False})
            for held in list(self.pending):
                threading.Thread(target=held.reply, args=(
                    {"status": "stopped", "messages": [], "error": {
                        "kind": "agent.stopped", "message": "You stopped the turn.",
                        "next": "Send a message to carry on."}},), daemon=True).start()
        elif ctx.op == "session.pending":
            events = self.pending_events(self) if self.pending_events is not None else []
            ctx.reply({"turn": self.pending[0].args["turn"] if self.pending else None,
                       "events": events})
        elif ctx.op == "session.status":
            ctx.reply({"conversation": self.conversation,
                       "turn": self.pending[0].args["turn"] if self.pending else None,
                       "pending": []})
        else:
            ctx.fail(AgentError("unknown_turn", f"the fake does not serve {ctx.op}"))

    def _send(self, ctx: RequestContext) -> None:
        """Like the real session: busy while a turn runs, unless one of its proposals waits
        (then that turn ends first, interrupted); else the message is recorded, then run."""
        try:
            if self.pending:
                old = self.pending[-1]
                if old.args["turn"] not in self.proposed:
                    ctx.fail(AgentError("busy", "The agent is still working on the last "
                                        "message.", "Wait, or Stop the turn."))
                    return
                self.proposed.discard(old.args["turn"])
                self.interrupt(old)
            text = ctx.args["text"]
            began = self.bus.call("conversation.begin_turn", {
                "conversation": self.conversation, "text": text}, timeout=10)
            ctx.reply({"turn": began["turn"], "conversation": self.conversation})
            turn = FakeTurn(self, dict(began), text)
            self.turns.append(turn.args)
            self.pending.append(turn)
            self.on_turn(self, turn)
        except Exception as exc:  # noqa: BLE001 -- the request is answered either way
            if not ctx.answered:
                ctx.fail(exc)

    def interrupt(self, old: FakeTurn) -> None:
        """A new message while a proposal of ``old`` waits: it ends as interrupted (tests may
        replace this to end it with messages of their own)."""
        old.reply({"status": "stopped", "messages": [], "error": {
            "kind": "agent.interrupted", "message": "A new message interrupted this turn.",
            "next": "The agent carries on with the new message."}})

    def died(self) -> None:
        """The process is gone (kill -9): what the supervisor publishes, then nothing more."""
        self.bus.publish("system.process", {"name": f"agent:{self.conversation}",
                                            "event": "exited", "pid": None, "restarts": 0,
                                            "state": "restarting", "reason": "killed"})
        # Same thread, same link: once this is answered, the hub has published the event.
        self.bus.call("system.ping", {}, timeout=5)
        self.bus.stop()

    def stop(self) -> None:
        self.bus.stop()
