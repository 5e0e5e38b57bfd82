"""``McpTool`` (one server's tool as an agent host sees it) and ``ToolSpec`` (a tool paired with
the name the model is offered), below both ``Client`` and the Hub; ``for_model`` is the one
place that decides which tools a model may see.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._accel import build_tool_name
from .apps import ToolUi
from .tool_formats import ToolFormat, shape_definition

if TYPE_CHECKING:
    from .tools import Tool

__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "TRUNCATED_SUFFIX",
    "McpTool",
    "ToolSpec",
    "for_model",
    "to_mcp_tool",
    "truncate_description",
]

MAX_DESCRIPTION_LENGTH = 2048
TRUNCATED_SUFFIX = "... [truncated]"
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class McpTool:
    """One tool of one server, ready for an agent.

    Attributes:
        name: ``mcp__<server>__<tool>``, normalized: what an LLM calls and permission rules
            match.
        server: the configured server name.
        tool_name: the tool's name on its server (what ``tools/call`` gets).
        description: at most 2048 characters, then ``... [truncated]``.
        input_schema: the tool's ``inputSchema``, unchanged.
        display_name: ``title`` (or ``annotations.title``), else ``tool_name``.
        read_only / concurrency_safe: ``annotations.readOnlyHint`` (default False).
        destructive: ``annotations.destructiveHint``; open_world: ``openWorldHint``.
        search_hint: ``_meta["anthropic/searchHint"]`` with whitespace collapsed, or None.
        always_load: ``_meta["anthropic/alwaysLoad"] is True``.
        tool: the full ``Tool`` as the server sent it.
    """

    name: str
    server: str
    tool_name: str
    description: str
    input_schema: dict[str, Any]
    display_name: str
    read_only: bool = False
    concurrency_safe: bool = False
    destructive: bool = False
    open_world: bool = False
    search_hint: str | None = None
    always_load: bool = False
    output_schema: dict[str, Any] | None = None
    tool: Tool | None = field(default=None, repr=False, compare=False)

    @property
    def ui(self) -> ToolUi | None:
        """MCP Apps: the tool's ``_meta.ui`` (``resource_uri``, ``visibility``), or None.
        No model-facing list holds a tool whose visibility leaves out ``"model"``."""
        return self.tool.ui if self.tool is not None else None

    def definition(
        self, format: ToolFormat = "anthropic", *, name: str | None = None
    ) -> dict[str, Any]:
        """This tool in the shape of an LLM API's tool list (see ``tool_definitions``);
        ``name`` replaces ``self.name`` (the Hub gives over-long names a shorter one)."""
        # a deep copy: the caller may edit it without touching the cached tool
        schema = copy.deepcopy(self.input_schema) if self.input_schema else {}
        schema.setdefault("type", "object")
        return shape_definition(name or self.name, self.description, schema, format)


def truncate_description(text: str | None) -> str:
    """``text`` cut at 2048 characters with ``... [truncated]`` appended; None gives ""."""
    text = text or ""
    if len(text) > MAX_DESCRIPTION_LENGTH:
        return text[:MAX_DESCRIPTION_LENGTH] + TRUNCATED_SUFFIX
    return text


def to_mcp_tool(server: str, tool: Tool) -> McpTool:
    """Map one ``Tool`` of ``server`` (see ``McpTool`` for each field)."""
    ann = tool.annotations
    read_only = bool(ann is not None and ann.read_only_hint)
    meta = tool.meta or {}
    hint = meta.get("anthropic/searchHint")
    search_hint = _WHITESPACE.sub(" ", hint).strip() or None if isinstance(hint, str) else None
    return McpTool(
        name=build_tool_name(server, tool.name),
        server=server,
        tool_name=tool.name,
        description=truncate_description(tool.description),
        input_schema=tool.input_schema,
        display_name=tool.display_name,
        read_only=read_only,
        concurrency_safe=read_only,
        destructive=bool(ann is not None and ann.destructive_hint),
        open_world=bool(ann is not None and ann.open_world_hint),
        search_hint=search_hint,
        always_load=meta.get("anthropic/alwaysLoad") is True,
        output_schema=tool.output_schema,
        tool=tool,
    )


@dataclass(frozen=True)
class ToolSpec:
    """One tool offered to a model (``hub.tool_specs()``, ``client.tool_specs()``).

    Attributes:
        name: the LLM-safe name the model sees (as ``tool_definitions`` gives it);
            ``call_tool`` takes it back.
        server: the server's name (the configured name for a Hub, ``client.name`` else).
        tool: the ``McpTool``: description, input and output schema, title, annotations.
    """

    name: str
    server: str
    tool: McpTool

    def definition(self, format: ToolFormat = "anthropic") -> dict[str, Any]:
        """This tool in an LLM API's shape, under ``name`` (see ``tool_definitions``)."""
        return self.tool.definition(format, name=self.name)


def for_model(tools: Iterable[McpTool]) -> list[McpTool]:
    """The tools a model may be offered, in order: the one filter every model-facing list
    (``tool_definitions``, ``tool_specs``, tool search, the contrib adapters) goes through:
    MCP Apps' tools whose ``_meta.ui.visibility`` leaves out ``"model"`` are not offered."""
    return [t for t in tools if (ui := t.ui) is None or "model" in ui.visibility]
