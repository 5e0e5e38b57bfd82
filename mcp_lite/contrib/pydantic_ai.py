"""pydantic-ai: ``McpLiteToolset(source)`` is a toolset for ``Agent(toolsets=[...])``, listing the
tools per run step and calling them in a worker thread (see docs/guides/agent-frameworks.md and
docs/explanation/integrations.md).
"""

from __future__ import annotations

import asyncio
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
    texts_of,
)

require("pydantic_ai", "pydantic-ai", "pydantic-ai")

import pydantic_core  # noqa: E402
from pydantic_ai import BinaryContent, BinaryImage, ModelRetry, RunContext, ToolFailed  # noqa: E402
from pydantic_ai.tools import ToolDefinition  # noqa: E402
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool  # noqa: E402

if TYPE_CHECKING:
    from ..protocol.types import CallToolResult

__all__ = ["McpLiteToolset"]

_ANY_ARGS = pydantic_core.SchemaValidator(
    pydantic_core.core_schema.dict_schema(
        pydantic_core.core_schema.str_schema(), pydantic_core.core_schema.any_schema()
    )
)


class McpLiteToolset(AbstractToolset[Any]):
    """The tools of ``source`` (a ``Hub``, ``Client`` or ``ProcessHub``) for pydantic-ai.

    Args:
        timeout: seconds per call (None: the source's configured totals).
        tools: keep only these: LLM-safe names, or rules (``mcp__server``,
            ``mcp__server__tool``); the Hub's deny rules apply on top.
        model_errors: ``"tool"``, ``"all"`` or ``"none"`` (see ``mcp_lite.contrib._adapter``).
        resource_tools: add the Hub's ``ListMcpResourcesTool`` and ``ReadMcpResourceTool``
            when a server has resources.
        tool_error_behavior: ``"retry"``, ``"failed"`` or ``"error"``, for an ``isError``
            result (as ``MCPToolset`` names it).
        max_retries: retries of a tool after ``ModelRetry`` (None: the agent's).
        id: the toolset's id (unique among an agent's toolsets).

    Lists nothing until a run asks (a ``ProcessHub`` starts its servers in the worker).
    """

    def __init__(
        self,
        source: Source,
        *,
        timeout: float | None = None,
        tools: Iterable[str] | None = None,
        model_errors: ModelErrors = "tool",
        resource_tools: bool = True,
        tool_error_behavior: Literal["retry", "failed", "error"] = "retry",
        max_retries: int | None = None,
        id: str | None = None,
    ) -> None:
        if tool_error_behavior not in ("retry", "failed", "error"):
            raise ValueError(
                "tool_error_behavior must be 'retry', 'failed' or 'error', "
                f"not {tool_error_behavior!r}"
            )
        self._adapter = Adapter(
            source,
            timeout=timeout,
            tools=tools,
            model_errors=model_errors,
            resource_tools=resource_tools,
        )
        self.tool_error_behavior = tool_error_behavior
        self.max_retries = max_retries
        self._id = id

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        listed = await asyncio.to_thread(self._adapter.tools)
        retries = self.max_retries if self.max_retries is not None else ctx.max_retries
        return {
            adapted.name: ToolsetTool(
                toolset=self,
                tool_def=_definition(adapted),
                max_retries=retries,
                args_validator=_ANY_ARGS,
            )
            for adapted in listed
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        try:
            result = await self._adapter.acall(name, tool_args)
        except ModelError as exc:
            if exc.kind == "tool":
                if self.tool_error_behavior == "error" and exc.result is not None:
                    exc.result.raise_for_error()
                if self.tool_error_behavior == "failed":
                    raise ToolFailed(exc.message) from None
                raise ModelRetry(exc.message) from None
            if exc.kind == "arguments":
                raise ModelRetry(exc.message) from None
            raise ToolFailed(exc.message) from None
        return _value(result)


def _definition(adapted: AdaptedTool) -> ToolDefinition:
    metadata: dict[str, Any] = {"mcp_name": adapted.name}
    if adapted.spec is not None:
        metadata.update(
            mcp_server=adapted.spec.server,
            mcp_tool=adapted.spec.tool.tool_name,
            title=adapted.title,
            read_only=adapted.read_only,
            destructive=adapted.destructive,
        )
    return ToolDefinition(
        name=adapted.name,
        description=adapted.description,
        parameters_json_schema=adapted.schema,
        metadata=metadata,
    )


def _value(result: CallToolResult) -> Any:
    media = media_of(result)
    if media:
        out: list[Any] = list(texts_of(result))
        for item in media:
            if item.kind == "image":
                out.append(BinaryImage(data=item.data, media_type=item.mime_type))
            else:
                out.append(BinaryContent(data=item.data, media_type=item.mime_type))
        return out
    structured = structured_of(result)
    return result.text if structured is None else structured
