"""How ``rio mcp`` (the stdio fallback) reaches Rio's MCP endpoint: HTTP to 127.0.0.1.

``rio mcp`` runs as the agent's child — in the agent's box where there is one (ADR-0038), which
shows it neither the bus's sockets nor ``instance.json`` nor a token file. So it is no bus
client: each of its calls is one ``POST <endpoint>/rio/stdio`` to the endpoint process, the
conversation's bearer token in the ``Authorization`` header, the same way the agents that
speak MCP over HTTP reach the same process (rio/mcp/http_app.py serves both). The token comes
from the ``mcpServers`` entry's ``env`` (``RIO_MCP_TOKEN``): the agent hands it to this process
alone, as it hands an HTTP agent's header to its own client.

:class:`HttpConnection` has the face of a bus connection that the call pool expects
(actors/bus/call_pool.py: ``call(op, args, timeout)``, ``close()``): one keep-alive HTTP
connection per worker thread, the standard library's ``http.client`` (no SDK on this start
path: ADR-0025). ``op`` is ``mcp.call`` or ``mcp.cancel``; their ``token`` argument goes into
the header, never the body.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from rio.protocol.errors import AuthError, BusError, RioError, error_from_wire

#: The endpoint's route for the stdio fallback's calls.
STDIO_PATH = "/rio/stdio"
#: The variable the ``mcpServers`` entry hands the token in.
TOKEN_ENV = "RIO_MCP_TOKEN"


def stdio_url(endpoint_url: str) -> str:
    """The stdio route beside the endpoint's MCP route (``http://127.0.0.1:P/mcp``)."""
    parts = urlsplit(endpoint_url)
    return f"{parts.scheme}://{parts.netloc}{STDIO_PATH}"


class HttpConnection:
    """One worker's connection to the endpoint (see the module docstring)."""

    def __init__(self, url: str, token: str, connect_timeout: float = 10.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise BusError("unreachable", f"{url!r} is not an http:// address of Rio's MCP "
                           "endpoint.", "Start the agent from Rio: it names the endpoint.")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.path = parts.path or STDIO_PATH
        self.netloc = parts.netloc
        self.token = token
        self.connect_timeout = connect_timeout
        self._conn: http.client.HTTPConnection | None = None

    def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any:
        """``op`` with ``args`` (its ``token`` goes in the header); the result, or the
        endpoint's RioError raised here. A broken keep-alive connection is made again once."""
        body = json.dumps({"op": op, "args": {k: v for k, v in args.items() if k != "token"}},
                          ensure_ascii=False).encode("utf-8")
        headers = {"Authorization": f"Bearer {args.get('token') or self.token}",
                   "Content-Type": "application/json", "Host": self.netloc}
        for attempt in (1, 2):
            conn = self._connection(timeout)
            try:
                conn.request("POST", self.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                break
            except (ConnectionError, http.client.HTTPException, socket.timeout, OSError) as exc:
                self.close()
                if attempt == 2 or isinstance(exc, (socket.timeout, TimeoutError)):
                    raise BusError("unreachable", f"Rio's MCP endpoint did not answer "
                                   f"({type(exc).__name__}: {exc}).",
                                   "Rio restarts it; try again in a moment.") from None
        return _answer(response.status, data)

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self.host, self.port,
                                                    timeout=self.connect_timeout)
            self._conn.connect()
        if self._conn.sock is not None:
            self._conn.sock.settimeout(timeout)
        return self._conn

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def _answer(status: int, data: bytes) -> Any:
    try:
        wire = json.loads(data.decode("utf-8")) if data else None
    except ValueError:
        wire = None
    if status == 401:
        raise AuthError("bad_token", "Rio's MCP endpoint refused this process's token (missing, "
                        "wrong, or the conversation's agent ended).",
                        "Rio's tools work only for an agent Rio started; start a new turn in "
                        "the conversation.")
    if isinstance(wire, dict) and isinstance(wire.get("error"), dict):
        err: RioError = error_from_wire(wire["error"])
        raise err
    if status != 200 or not isinstance(wire, dict) or "result" not in wire:
        raise BusError("unreachable", f"Rio's MCP endpoint answered HTTP {status} without a "
                       "result.", "Check the mcp process's log (`rio status` names it).")
    return wire["result"]
