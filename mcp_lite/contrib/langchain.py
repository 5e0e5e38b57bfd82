"""LangChain and LangGraph: ``langchain_tools(source)`` gives ``langchain_core`` ``BaseTool``
objects whose ``args_schema`` is the MCP ``inputSchema`` itself, with content-and-artifact
results (see docs/guides/agent-frameworks.md and docs/explanation/integrations.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from ._adapter import (
    AdaptedTool,
    Adapter,
    ModelError,
    ModelErrors,
    Source,
    media_of,
    require,
    structured_of,
)

require("langchain_core.tools", "langchain", "langchain-core")

from langchain_core.tools import BaseTool, ToolException  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

if TYPE_CHECKING:
    from ..protocol.types import CallToolResult

__all__ = ["McpLiteTool", "langchain_tools"]


class McpLiteTool(BaseTool):
    """One MCP tool as a LangChain tool; calls go back to the source under the name the
    tool was built with, whatever ``name`` is changed to."""

    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: Any = True
    _adapter: Adapter = PrivateAttr()
    _mcp_name: str = PrivateAttr()

    def _run(self, /, *args: Any, **arguments: Any) -> tuple[Any, Any]:
        try:
            result = self._adapter.call(self._mcp_name, arguments)
        except ModelError as exc:
            raise ToolException(exc.message) from None
        return _content_and_artifact(result)

    async def _arun(self, /, *args: Any, **arguments: Any) -> tuple[Any, Any]:
        try:
            result = await self._adapter.acall(self._mcp_name, arguments)
        except ModelError as exc:
            raise ToolException(exc.message) from None
        return _content_and_artifact(result)


def _content_and_artifact(result: CallToolResult) -> tuple[Any, Any]:
    structured = structured_of(result)
    artifact = None if structured is None else {"structured_content": structured}
    media = media_of(result)
    if not media:
        return result.text, artifact
    blocks: list[dict[str, Any]] = []
    for block in result.content:
        if block.text is not None:
            blocks.append({"type": "text", "text": block.text})
    for item in media:
        blocks.append({"type": item.kind, "base64": item.base64, "mime_type": item.mime_type})
    return blocks, artifact


def _tool(adapter: Adapter, adapted: AdaptedTool) -> McpLiteTool:
    metadata: dict[str, Any] = {"mcp_name": adapted.name}
    if adapted.spec is not None:
        metadata.update(
            mcp_server=adapted.spec.server,
            mcp_tool=adapted.spec.tool.tool_name,
            title=adapted.title,
            read_only=adapted.read_only,
            destructive=adapted.destructive,
        )
    tool = McpLiteTool(
        name=adapted.name,
        description=adapted.description,
        args_schema=adapted.schema,
        metadata=metadata,
    )
    tool._adapter = adapter
    tool._mcp_name = adapted.name
    return tool


def langchain_tools(
    source: Source,
    *,
    timeout: float | None = None,
    tools: Iterable[str] | None = None,
    model_errors: ModelErrors = "tool",
    resource_tools: bool = True,
) -> list[McpLiteTool]:
    """The tools of ``source`` (a ``Hub``, ``Client`` or ``ProcessHub``) as LangChain tools.

    Args:
        timeout: seconds per call (None: the source's configured totals).
        tools: keep only these: LLM-safe names, or rules (``mcp__server``,
            ``mcp__server__tool``); the Hub's deny rules apply on top.
        model_errors: ``"tool"``, ``"all"`` or ``"none"`` (see ``mcp_lite.contrib._adapter``).
        resource_tools: add the Hub's ``ListMcpResourcesTool`` and ``ReadMcpResourceTool``
            when a server has resources.

    Lists the tools now (which starts the servers: with a ``ProcessHub``, build the
    tools in the process that uses them).
    """
    adapter = Adapter(
        source,
        timeout=timeout,
        tools=tools,
        model_errors=model_errors,
        resource_tools=resource_tools,
    )
    return [_tool(adapter, adapted) for adapted in adapter.tools()]
