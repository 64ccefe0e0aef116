"""The agent side of the core and the agent session processes: conversations (:mod:`.conversations`),
the gate (:mod:`.gate`), discovery (:mod:`.discovery`), the MCP endpoint's actor (:mod:`.mcp`),
the session that owns a turn (:mod:`.session`, :mod:`.acp_session`, :mod:`.acp_process`,
:mod:`.turn_workers`)."""
