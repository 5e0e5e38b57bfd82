"""A minimal Django site that calls MCP tools through one process-wide ``mcp_lite.Hub``."""
