"""Haystack: ``haystack_tools(source)`` gives ``haystack.tools.Tool`` objects for an ``Agent`` or
a ``ToolInvoker``, each with the MCP ``inputSchema`` unchanged as its ``parameters`` (see
docs/guides/agent-frameworks.md and docs/explanation/integrations.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._adapter import (
    AdaptedTool,
    Adapter,
    ModelError,
    ModelErrors,
    Source,
    require,
    structured_of,
)

require("haystack.tools.tool", "haystack", "haystack-ai")

from haystack.tools.tool import Tool  # noqa: E402

__all__ = ["haystack_tools"]


def _tool(adapter: Adapter, adapted: AdaptedTool) -> Tool:
    name = adapted.name

    def call(**arguments: Any) -> Any:
        try:
            return _value(adapter.call(name, arguments))
        except ModelError as exc:
            raise RuntimeError(exc.message) from None

    async def acall(**arguments: Any) -> Any:
        try:
            return _value(await adapter.acall(name, arguments))
        except ModelError as exc:
            raise RuntimeError(exc.message) from None

    return Tool(
        name=name,
        description=adapted.description or adapted.title,
        parameters=adapted.schema,
        function=call,
        async_function=acall,
    )


def _value(result: Any) -> Any:
    structured = structured_of(result)
    return result.text if structured is None else structured


def haystack_tools(
    source: Source,
    *,
    timeout: float | None = None,
    tools: Iterable[str] | None = None,
    model_errors: ModelErrors = "tool",
    resource_tools: bool = True,
) -> list[Tool]:
    """The tools of ``source`` (a ``Hub``, ``Client`` or ``ProcessHub``) as Haystack tools.

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
    return [_tool(adapter, adapted) for adapted in adapter.tools()]
