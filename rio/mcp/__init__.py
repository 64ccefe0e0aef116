"""Rio's MCP endpoint: the stdio server an agent starts (:mod:`.server`, run by ``rio mcp``), how a
session names it to the agent (:mod:`.entry`) and the tools it offers (:mod:`.tools`)."""
