"""The Hub's own tools for a model, beside the servers' tools (as Claude Code offers them):
``ListMcpResourcesTool``, ``ReadMcpResourceTool`` and, in deferred mode, ``ToolSearch``. This module
only builds definitions and results; the Hub runs them (``Hub.call_tool``); see
docs/explanation/inside-the-hub.md."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...protocol.tool_formats import ToolFormat, shape_definition
from ...protocol.types import CallToolResult
from .tools import McpTool

if TYPE_CHECKING:
    from ...protocol.types import ReadResourceResult
    from .tools import McpResource

__all__ = [
    "LIST_RESOURCES",
    "READ_RESOURCE",
    "RESOURCE_TOOLS",
    "TOOL_SEARCH",
    "refusal",
    "resource_list_result",
    "resource_permission",
    "resource_read_result",
    "resource_tool_definitions",
    "search_result",
    "search_tool_definition",
]

LIST_RESOURCES = "ListMcpResourcesTool"
READ_RESOURCE = "ReadMcpResourceTool"
TOOL_SEARCH = "ToolSearch"
RESOURCE_TOOLS = (LIST_RESOURCES, READ_RESOURCE)
DEFAULT_SEARCH_RESULTS = 5
MAX_SEARCH_RESULTS = 50


def resource_tool_definitions(format: ToolFormat) -> list[dict[str, Any]]:
    """The list-resources and read-resource tools in ``format``."""
    listing = {
        "type": "object",
        "properties": {
            "server": {
                "type": "string",
                "description": "Only this MCP server's resources (default: every server).",
            }
        },
    }
    reading = {
        "type": "object",
        "properties": {
            "server": {"type": "string", "description": "The MCP server that has the resource."},
            "uri": {"type": "string", "description": "The resource URI to read."},
        },
        "required": ["server", "uri"],
    }
    return [
        shape_definition(
            LIST_RESOURCES,
            "List the resources the connected MCP servers make available: uri, name, "
            "mimeType, description and the server each belongs to.",
            listing,
            format,
        ),
        shape_definition(
            READ_RESOURCE,
            "Read one resource of an MCP server by its URI (see ListMcpResourcesTool).",
            reading,
            format,
        ),
    ]


def resource_permission(name: str, server: str) -> McpTool:
    """What the permission layer is shown when the own tool ``name`` reaches ``server``: an
    ``McpTool`` named with the bare own-tool name (no server's tool is named without the
    ``mcp__`` prefix, so none can pose as it), whose ``server`` is the server reached."""
    return McpTool(
        name=name,
        server=server,
        tool_name=name,
        description=f"{name} on MCP server {server!r}",
        input_schema={"type": "object"},
        display_name=name,
        read_only=True,
        concurrency_safe=True,
    )


def search_tool_definition(format: ToolFormat, deferred: int) -> dict[str, Any]:
    """The search tool, saying how many tools it can find."""
    schema = {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": (
                    "Keywords describing the capability needed, or 'select:name1,name2' to "
                    "load tools by exact name."
                ),
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SEARCH_RESULTS,
                "description": f"How many tools to return (default {DEFAULT_SEARCH_RESULTS}).",
            },
        },
        "required": ["query"],
    }
    description = (
        f"Search {deferred} more MCP tools that are available but not loaded yet. The "
        "matching tools become callable on your next turn; call this before concluding "
        "that no tool can do something."
    )
    return shape_definition(TOOL_SEARCH, description, schema, format)


def search_result(definitions: Sequence[dict[str, Any]], names: Sequence[str]) -> CallToolResult:
    """What the search tool returns: the names as text for the model, and the full
    definitions in ``structuredContent["tools"]`` for the host to add to the next turn."""
    if names:
        plural = "s" if len(names) != 1 else ""
        text = f"Found {len(names)} tool{plural}, loaded for your next turn: " + ", ".join(names)
    else:
        text = "No tool matched; try other keywords."
    return CallToolResult.model_validate(
        {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"tools": list(definitions)},
        }
    )


def resource_list_result(
    resources: Sequence[McpResource], refused: Sequence[str] = ()
) -> CallToolResult:
    """The resources as a JSON array (text for the model, structured for the host); the
    servers whose listing the permissions ``refused`` are named in a note."""
    items = [
        {
            k: v
            for k, v in (
                ("uri", r.uri),
                ("name", r.name),
                ("mimeType", r.mime_type),
                ("description", r.description),
                ("server", r.server),
            )
            if v is not None
        }
        for r in resources
    ]
    text = json.dumps(items, ensure_ascii=False) if items else "No resources found."
    content = [{"type": "text", "text": text}]
    if refused:
        names = ", ".join(repr(s) for s in refused)
        content.append({"type": "text", "text": f"[not listed, permission refused: {names}]"})
    return CallToolResult.model_validate(
        {"content": content, "structuredContent": {"resources": items}}
    )


def resource_read_result(read: ReadResourceResult) -> CallToolResult:
    """The contents as tool content: text as text, blobs as embedded resources (which the
    Hub then writes to files like any binary tool output)."""
    blocks: list[dict[str, Any]] = []
    for item in read.contents:
        if item.text is not None:
            blocks.append({"type": "text", "text": item.text})
        elif item.blob is not None:
            blocks.append({"type": "resource", "resource": item.to_wire()})
    return CallToolResult.model_validate({"content": blocks})


def refusal(text: str) -> CallToolResult:
    """An ``isError`` result the model can read (a bad argument, an unknown server)."""
    return CallToolResult.model_validate(
        {"content": [{"type": "text", "text": text}], "isError": True}
    )
