"""External coding agents over the Agent Client Protocol (ACP).

* :mod:`rio.acp.discovery` — which agents are installed, their versions, whether they look
  signed in (``rio agents``, ``agents.list``);
* :mod:`rio.acp.client` — :class:`~rio.acp.client.AcpClient`, Rio's side of ACP over an
  agent's stdio (the SDK ``agent-client-protocol`` does the wire); the agent's requests are
  answered in :mod:`rio.acp.handlers`, its stdio read in :mod:`rio.acp.wire`, its session
  updates turned into events in :mod:`rio.acp.updates`;
* :mod:`rio.acp.port` — the callback interface the client reports through (the same
  ``agent.*`` events as the API providers) and the process port it spawns agents through;
* :mod:`rio.acp.auth` — "Authentication required" turned into a sign-in-needed state;
* :mod:`rio.acp.protocol_log` — the bounded per-conversation protocol log.

Design and wiring: docs/adr/0023-acp-client-and-no-agent-terminals.md; user guide: docs/agent-chat.md.
"""
