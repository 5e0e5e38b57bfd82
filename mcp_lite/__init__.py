"""mcp_lite: a synchronous, thread-based client for the Model Context Protocol: plain blocking
calls, safe to share between threads and across ``fork()``, never hanging. ``import mcp_lite``
stays cheap: the client, the wire types (pydantic) and the transports load when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors
from ._accel import USE_EXTENSIONS, build_tool_name, normalize_name, parse_tool_name
from ._version import __version__
from .errors import (
    AuthRequired,
    ConfigError,
    ConnectError,
    ConnectionClosed,
    McpError,
    MessageTooLarge,
    PermissionDenied,
    ProtocolError,
    RequestCancelled,
    RequestTimeout,
    RpcError,
    ToolError,
    TransportError,
)

if TYPE_CHECKING:
    from ._http.retry import Retry
    from .client import Client, connect
    from .gateway import Gateway
    from .hub import Hub, McpTool, ServerStatus
    from .protocol.apps import ToolUi
    from .protocol.results import CallToolResult
    from .protocol.types import (
        GetPromptResult,
        Params,
        Progress,
        Prompt,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        Tool,
    )
    from .server import Context, Server
    from .skills import LoadedSkill, Skill

__all__ = [
    "USE_EXTENSIONS",
    "AuthRequired",
    "CallToolResult",
    "Client",
    "ConfigError",
    "ConnectError",
    "ConnectionClosed",
    "Context",
    "Gateway",
    "GetPromptResult",
    "Hub",
    "LoadedSkill",
    "McpError",
    "McpTool",
    "MessageTooLarge",
    "Params",
    "PermissionDenied",
    "Progress",
    "Prompt",
    "ProtocolError",
    "ReadResourceResult",
    "RequestCancelled",
    "RequestTimeout",
    "Resource",
    "Retry",
    "ResourceTemplate",
    "RpcError",
    "Server",
    "ServerStatus",
    "Skill",
    "Tool",
    "ToolError",
    "ToolUi",
    "TransportError",
    "__version__",
    "build_tool_name",
    "connect",
    "errors",
    "normalize_name",
    "parse_tool_name",
]

_LAZY = {
    "Client": "client",
    "connect": "client",
    "Server": "server",
    "Hub": "hub",
    "Gateway": "gateway",
    "McpTool": "hub",
    "ServerStatus": "hub",
    "Context": "server",
    "CallToolResult": "protocol.results",
    "GetPromptResult": "protocol.types",
    "Params": "protocol.types",
    "Progress": "protocol.types",
    "Prompt": "protocol.types",
    "ReadResourceResult": "protocol.types",
    "Resource": "protocol.types",
    "ResourceTemplate": "protocol.types",
    "Tool": "protocol.tools",
    "ToolUi": "protocol.apps",
    "Skill": "skills",
    "LoadedSkill": "skills",
    "Retry": "_http.retry",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_lite' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
