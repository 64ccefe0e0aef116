"""``agents.*`` in the core: which ACP agents this machine has (logic in rio/acp/discovery.py).

Discovery looks at the core's environment — the one Rio was started with, as for the agents
it will start — and asks the found agents their version, all at once under one timeout, in
this actor's thread (never the bus thread). Versions are kept for :data:`CACHE_S` so a UI
that lists agents often does not start probes each time; ``refresh`` asks again.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pykka

from actors.bus.service import OpTable, RequestContext
from actors.runtime.actor_registry import ActorHost, actor_factory
from rio.acp import discovery, registry
from rio.agent.config import config_dir

CACHE_S = 60.0


class AgentsActor(pykka.ThreadingActor):
    handles: OpTable[AgentsActor] = OpTable()

    def __init__(self, root: Path | None = None) -> None:
        super().__init__()
        self.root = root or Path.cwd()   # the project (an agent starts in it)
        self._cached: tuple[float, Any, list[dict[str, Any]]] | None = None
        self._registry = registry.RegistryView()

    def on_receive(self, message: Any) -> Any:
        match message:
            case RequestContext():
                self.handles.serve(self, message)
        return None

    @handles("agents.list")
    def list_op(self, ctx: RequestContext) -> Any:
        rows = self.list(bool(ctx.args.get("refresh")))
        return {"agents": rows, "registry": self._registry.to_dict()}

    @handles("agents.logout")
    def logout_op(self, ctx: RequestContext) -> Any:
        """Sign agent ``agent`` out (rio/acp/logout.py): started on its own in this actor's
        thread, as the version probes are, and stopped again."""
        import asyncio

        from actors.agent.acp_process import ProcessControlPort
        from rio.acp.logout import sign_out
        return asyncio.run(sign_out(str(ctx.args["agent"]), self.root, os.environ,
                                    config_dir(), ProcessControlPort()))

    def list(self, refresh: bool) -> list[dict[str, Any]]:
        now = time.monotonic()
        # config.toml is read every time (cheap): an agent added there shows at once
        config = discovery.load_agents_config(config_dir())
        cached = self._cached
        if not refresh and cached is not None and now - cached[0] < CACHE_S \
                and cached[1] == config:
            return cached[2]
        # the public registry extends the list (cached on disk; never required)
        self._registry = registry.load(os.environ)
        infos = discovery.discover(os.environ, discovery.RealHost(),
                                   discovery.run_version_probes, config,
                                   extra=self._registry.agents)
        rows = [i.to_dict() for i in infos]
        self._cached = (now, config, rows)
        return rows


@actor_factory("agents")
def start_agents(host: ActorHost) -> dict[str, Any]:
    """agents.*: the installed ACP agents, their versions and sign-in hints."""
    ref = AgentsActor.start(host.root)
    host.refs.append(ref)
    return {"agents": ref.tell}
