"""The Hub: many MCP servers configured the way Claude Code configures them (DESIGN §6).
``mcp_lite.hub.config`` reads and validates the configuration (scopes, precedence, trust); the
runtime connects the servers it describes."""

from __future__ import annotations

from ._for_model.results import ToolEvent
from ._for_model.tools import McpPrompt, McpResource, McpTool, ToolSpec
from ._runtime.server_status import Backoff, ServerStatus
from .hub import Hub, ServerSnapshot

__all__ = [
    "Backoff",
    "Hub",
    "McpPrompt",
    "McpResource",
    "McpTool",
    "ServerSnapshot",
    "ServerStatus",
    "ToolEvent",
    "ToolSpec",
]
