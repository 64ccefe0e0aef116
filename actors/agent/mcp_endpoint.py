"""The ``mcp`` process: Rio's MCP endpoint for every ACP agent of the instance (ADR-0034).

One supervised process (supervisor.toml ``[process.mcp]``, ``per = "demand"``: started by the
first ACP conversation that needs it, never on an idle desktop) serves Rio's tools with the
``mcp`` SDK over Streamable HTTP on 127.0.0.1 (rio/mcp/http_app.py), and the stdio fallback's
calls on ``/rio/stdio`` of the same server. Either way a call is checked against its
conversation's token and forwarded to the conversation's session process, whose running turn serves it
(``session.mcp_call``): the endpoint holds no turn state.

* **The address survives a restart.** The port is kept in ``<runtime>/mcp-endpoint.json``
  (0600); a restarted endpoint binds it again, so an agent mid-session reconnects to the same
  URL (all three real agents re-initialize and go on). Only when another program took the port
  meanwhile does it pick a new one.
* **Threads.** uvicorn runs the app on an asyncio loop in a thread of its own; that loop talks
  to the hub through its own link (:class:`~actors.bus.async_client.AsyncLink`). The host's bus
  thread serves ``mcp.address``.
  The supervisor's liveness ping is answered *through the HTTP loop*, so a hung loop is
  restarted.
* **Tokens end with their agent.** When a conversation's session process ends (crashed,
  stopped, gave up), its token file is removed unless the restarted process has written a
  fresh one since.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

import pykka

from actors.bus.service import BusThread, OpTable, RequestContext
from actors.runtime.actor_registry import ActorHost, Ping, actor_factory, answer_ping
from rio.protocol.errors import BusError, RioError
from rio.protocol.frames import thaw

log = logging.getLogger("rio.mcp")

#: The port file's name in the instance's runtime folder.
PORT_FILE = "mcp-endpoint.json"
#: How long the factory waits for uvicorn to listen before the process gives up.
START_TIMEOUT_S = 15.0


def runtime_folder(host: ActorHost) -> Path:
    """The instance's runtime folder (0700): where the bus sockets are."""
    requests = str(getattr(host.args, "requests", ""))
    if requests.startswith("ipc://"):
        return Path(requests[len("ipc://"):]).parent
    from rio.config.instance import InstancePaths
    return InstancePaths.for_name(str(host.args.instance)).runtime


def bind_loopback(port_file: Path) -> socket.socket:
    """A listening socket on 127.0.0.1: the port of the last run when it is free, else a new
    one (written to ``port_file``, 0600)."""
    wanted = 0
    try:
        wanted = int(json.loads(port_file.read_text())["port"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", wanted))
    except OSError as exc:
        log.warning("port %d of the last run is taken (%s): a new one", wanted, exc)
        sock.bind(("127.0.0.1", 0))
    # Accepted connections inherit it: uvicorn serving a socket it was given leaves Nagle on,
    # and Nagle with the client's delayed ACK held every answer ~40 ms (measured: a tool call
    # 44 ms p50 → 1.5 ms on a bare SDK server served the same way).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.listen(128)
    port = sock.getsockname()[1]
    if port != wanted:
        tmp = port_file.with_name(f".{port_file.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({"port": port}, fh)
        os.replace(tmp, port_file)
    return sock


class _LoopPort:
    """:class:`rio.mcp.http_app.SessionPort` on the HTTP loop: its own link to the hub."""

    def __init__(self, bus: BusThread) -> None:
        self.bus = bus
        self._link: Any = None
        self._told: set[asyncio.Task[Any]] = set()

    def link(self) -> Any:
        if self._link is None:
            from actors.bus.async_client import AsyncLink
            self._link = AsyncLink(self.bus)
        return self._link

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any:
        return await self.link().call(op, args, timeout=timeout)

    def tell(self, op: str, args: Mapping[str, Any]) -> None:
        async def send() -> None:
            try:
                await self.link().call(op, args, timeout=5.0)
            except RioError as err:
                log.info("%s: %s", op, err.kind)
        task = asyncio.get_running_loop().create_task(send())
        self._told.add(task)
        task.add_done_callback(self._told.discard)


class HttpEndpoint:
    """uvicorn serving the app on a thread's asyncio loop."""

    def __init__(self, root: Path, bus: BusThread, sock: socket.socket) -> None:
        self.root = root
        self.sock = sock
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.bus_port = _LoopPort(bus)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.server: Any = None
        self.started = threading.Event()
        self.failed: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="rio-mcp-http", daemon=True)

    def start(self) -> HttpEndpoint:
        self.thread.start()
        if not self.started.wait(START_TIMEOUT_S) or self.failed is not None:
            raise BusError("spawn_failed", f"Rio's MCP endpoint did not start: "
                           f"{self.failed or 'no answer in time'}",
                           "Check the mcp process's log (`rio status` names it).")
        return self

    def _run(self) -> None:
        import uvicorn

        from rio.mcp.http_app import build_app
        try:
            loop = self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            app = build_app(self.root, self.bus_port, self.url)
            config = uvicorn.Config(app, log_level="warning", access_log=False,
                                    lifespan="on", timeout_graceful_shutdown=1)
            self.server = uvicorn.Server(config)
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # told to start(); the process ends
            self.failed = exc
            log.exception("the MCP endpoint failed")
            self.started.set()

    async def _serve(self) -> None:
        task = asyncio.get_running_loop().create_task(self.server.serve(sockets=[self.sock]))
        while not self.server.started and not task.done():
            await asyncio.sleep(0.005)
        self.started.set()
        await task

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        self.thread.join(3)


class EndpointKeeper(pykka.ThreadingActor):
    """The process's face to the supervisor: its ping is answered through the HTTP loop."""

    def __init__(self, endpoint: HttpEndpoint, process: str) -> None:
        super().__init__()
        self.endpoint = endpoint
        self.process = process

    def on_receive(self, message: Any) -> Any:
        match message:
            case Ping():
                loop = self.endpoint.loop
                if loop is not None and loop.is_running():
                    loop.call_soon_threadsafe(answer_ping, message, self.process)
        return None

    def on_stop(self) -> None:
        self.endpoint.stop()


class EndpointService:
    """``mcp.*`` on the bus: the address. (The stdio fallback's calls come over HTTP too, on
    ``/rio/stdio``: ``rio mcp`` runs in the agent's box, where there is no bus, ADR-0038.)"""

    handles: OpTable[EndpointService] = OpTable()

    def __init__(self, bus: BusThread, root: Path, endpoint: HttpEndpoint) -> None:
        self.bus = bus
        self.root = root
        self.endpoint = endpoint

    def handle(self, ctx: RequestContext) -> None:
        self.handles.serve(self, ctx)

    @handles("mcp.address")
    def address_op(self, ctx: RequestContext) -> Any:
        return {"url": self.endpoint.url, "port": self.endpoint.port}

    def on_process_event(self, event: Any) -> None:
        """A conversation's session process ended (crashed, stopped, gave up): its agent is
        gone with it, so its token is removed — unless the restarted process has written a
        fresh one since."""
        from rio.mcp.entry import end_if_older
        data = thaw(event.data)
        name = str(data.get("name") or "")
        if not name.startswith("agent:") or data.get("event") not in (
                "exited", "stopped", "gave_up"):
            return
        try:
            if end_if_older(name.split(":", 1)[1], self.root, time.time()):
                log.info("%s ended: its MCP token was removed", name)
        except RioError:
            pass    # not a conversation id: no token of ours


@actor_factory("mcp")
def start_mcp(host: ActorHost) -> dict[str, Callable[[RequestContext], None]]:
    folder = runtime_folder(host)
    endpoint = HttpEndpoint(host.root, host.bus, bind_loopback(folder / PORT_FILE)).start()
    keeper = EndpointKeeper.start(endpoint, host.name)
    host.refs.append(keeper)
    host.ping_targets.append(keeper)
    service = EndpointService(host.bus, host.root, endpoint)
    host.bus.subscribe("system.process", service.on_process_event)
    log.info("Rio's MCP endpoint listens on %s", endpoint.url)
    return {"mcp": service.handle}
