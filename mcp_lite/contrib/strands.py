"""strands-agents: ``strands_tools(source)`` gives ``AgentTool`` objects for ``Agent(tools=...)``,
each with the MCP ``inputSchema`` unchanged, the call in a worker thread (see
docs/guides/agent-frameworks.md and docs/explanation/integrations.md).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable
from typing import Any

from ._adapter import (
    AdaptedTool,
    Adapter,
    ModelError,
    ModelErrors,
    Source,
    media_of,
    require,
    structured_of,
    texts_of,
)

require("strands.types.tools", "strands", "strands-agents")

from strands.types._events import ToolResultEvent  # noqa: E402
from strands.types.tools import AgentTool  # noqa: E402

__all__ = ["McpLiteStrandsTool", "strands_tools"]


class McpLiteStrandsTool(AgentTool):  # type: ignore[misc]  # strands is untyped to mypy here
    """One MCP tool as a strands ``AgentTool``; calls go back under the Hub's name."""

    def __init__(self, adapter: Adapter, adapted: AdaptedTool) -> None:
        super().__init__()
        self._adapter = adapter
        self._mcp_name = adapted.name
        self._spec = {
            "name": adapted.name,
            "description": adapted.description or adapted.title,
            "inputSchema": {"json": adapted.schema},
        }

    @property
    def tool_name(self) -> str:
        return self._mcp_name

    @property
    def tool_spec(self) -> Any:
        return self._spec

    @property
    def tool_type(self) -> str:
        return "mcp"

    async def stream(
        self, tool_use: Any, invocation_state: dict[str, Any], **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        use_id = tool_use.get("toolUseId", "")
        arguments = tool_use.get("input") or {}
        try:
            result = await self._adapter.acall(self._mcp_name, arguments)
        except ModelError as exc:
            content = [{"text": exc.message}]
            yield ToolResultEvent({"toolUseId": use_id, "status": "error", "content": content})
            return
        yield ToolResultEvent(
            {"toolUseId": use_id, "status": "success", "content": _content(result)}
        )


def _content(result: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"text": text} for text in texts_of(result)]
    structured = structured_of(result)
    if structured is not None:
        out.append({"json": structured})
    for item in media_of(result):
        if item.kind == "image":
            kind = item.mime_type.split("/")[-1]
            out.append({"image": {"format": kind, "source": {"bytes": item.data}}})
    return out


def strands_tools(
    source: Source,
    *,
    timeout: float | None = None,
    tools: Iterable[str] | None = None,
    model_errors: ModelErrors = "tool",
    resource_tools: bool = True,
) -> list[McpLiteStrandsTool]:
    """The tools of ``source`` (a ``Hub``, ``Client`` or ``ProcessHub``) as strands tools.

    Args:
        timeout: seconds per call (None: the source's configured totals).
        tools: keep only these: LLM-safe names, or rules (``mcp__server``,
            ``mcp__server__tool``); the Hub's deny rules apply on top.
        model_errors: ``"tool"``, ``"all"`` or ``"none"`` (see ``mcp_lite.contrib._adapter``).
        resource_tools: add the Hub's ``ListMcpResourcesTool`` and ``ReadMcpResourceTool``
            when a server has resources.

    Lists the tools now (which starts the servers).
    """
    adapter = Adapter(
        source,
        timeout=timeout,
        tools=tools,
        model_errors=model_errors,
        resource_tools=resource_tools,
    )
    return [McpLiteStrandsTool(adapter, adapted) for adapted in adapter.tools()]
