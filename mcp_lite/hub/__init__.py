"""The Hub: many MCP servers configured the way Claude Code configures them (DESIGN §6).

``mcp_lite.hub.config`` reads and validates the configuration (scopes, precedence, trust);
the runtime connects the servers it describes.
"""

from __future__ import annotations

from ._connections import Backoff, ServerStatus
from .hub import Hub, ServerSnapshot
from .results import ToolEvent
from .tools import McpPrompt, McpResource, McpTool, ToolSpec

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
