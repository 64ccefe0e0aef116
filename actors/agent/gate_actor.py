"""``gate.*`` in the core: the approval gate (policy in :mod:`rio.agent.gate`) as an actor.

Every agent session asks this one gate, so the mode and the "always allow" memory are the
same for every conversation, and the per-turn counters live outside the session processes —
a session killed mid-turn cannot reset its own limits by coming back.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

import pykka

from actors.bus.service import OpTable, RequestContext
from actors.runtime.actor_registry import ActorHost, actor_factory
from rio.agent.gate import Gate, JsonFileStore, Limits
from rio.protocol.errors import ConfigError

log = logging.getLogger("rio.agent.gate")

GATE_FILE = "agent-gate.json"


class GateActor(pykka.ThreadingActor):
    handles: OpTable[GateActor] = OpTable()

    def __init__(self, gate: Gate):
        super().__init__()
        self.gate = gate

    def on_receive(self, message: Any) -> Any:
        match message:
            case RequestContext():
                self.handles.serve(self, message)
        return None

    @handles("gate.check")
    def check(self, ctx: RequestContext) -> Any:
        args = ctx.args
        return self.gate.check(args["conversation"], args["turn"], args["provider"],
                               args["tool"], args["args"] or {}).to_dict()

    @handles("gate.agent_check")
    def agent_check(self, ctx: RequestContext) -> Any:
        args = ctx.args
        decision, turn = self.gate.check_agent(args["conversation"], args["agent"],
                                               args["tool"], args["args"] or {})
        return {**decision.to_dict(), "turn": turn}

    @handles("gate.turn")
    def turn(self, ctx: RequestContext) -> Any:
        args = ctx.args
        count = self.gate.turn_event(args["conversation"], args["turn"], args["event"])
        # The mode comes with the answer so a session learns it without another round trip.
        return {"ok": True, "requests": count.requests, "tool_calls": count.tool_calls,
                "mode": self.gate.mode}

    @handles("gate.remember")
    def remember(self, ctx: RequestContext) -> Any:
        self.gate.remember(ctx.args["provider"], ctx.args["tool"])
        return {"ok": True}

    @handles("gate.forget")
    def forget(self, ctx: RequestContext) -> Any:
        self.gate.forget(ctx.args["provider"], ctx.args["tool"])
        return {"ok": True}

    @handles("gate.mode")
    def mode(self, ctx: RequestContext) -> Any:
        if ctx.args["mode"] is not None:
            self.gate.set_mode(ctx.args["mode"])
        return {"mode": self.gate.mode}

    @handles("gate.limits")
    def limits(self, ctx: RequestContext) -> Any:
        changes = {k: v for k, v in ctx.args.items() if v is not None}
        if changes:
            self.gate.set_limits(changes)
        return self.gate.limits_dict()

    @handles("gate.status")
    def status(self, ctx: RequestContext) -> Any:
        gate = self.gate
        return {"mode": gate.mode, "always": [list(p) for p in gate.always_allowed()],
                "limits": gate.limits_dict()}


def build_gate(root: Path) -> Gate:
    """The gate for ``root``: defaults from config.toml's [agent], memory from the state folder."""
    from rio.agent.config import AgentConfig, load_agent_config
    from rio.config.instance import project_state_dir
    try:
        config = load_agent_config()
    except ConfigError as err:  # a bad config must not leave the core without a gate
        log.warning("agent config unreadable, gate uses defaults: %s", err)
        config = AgentConfig()
    return Gate(mode=config.mode,
                limits=Limits(config.max_requests_per_turn, config.max_tool_calls_per_turn,
                              config.max_agent_changes_per_turn,
                              config.max_agent_requests_per_turn),
                store=JsonFileStore(project_state_dir(root) / GATE_FILE), root=root)


@actor_factory("gate")
def start_gate(host: ActorHost) -> dict[str, Callable[[RequestContext], None]]:
    ref = GateActor.start(build_gate(host.root))
    host.refs.append(ref)
    return {"gate": ref.tell}
