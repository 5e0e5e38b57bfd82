"""OpenAI Agents SDK: ``openai_agents_tools(source)`` gives ``agents.FunctionTool`` objects with
the MCP ``inputSchema`` as a non-strict ``params_json_schema`` (see
docs/guides/agent-frameworks.md and docs/explanation/integrations.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ._adapter import (
    AdaptedTool,
    Adapter,
    ModelError,
    ModelErrors,
    Source,
    media_of,
    require,
    texts_of,
)

require("agents", "openai-agents", "openai-agents")

from agents import FunctionTool, ToolOutputImage, ToolOutputText  # noqa: E402

if TYPE_CHECKING:
    from ..protocol.types import CallToolResult

__all__ = ["openai_agents_tools"]

NeedsApproval = bool | Callable[..., Any] | None


def openai_agents_tools(
    source: Source,
    *,
    timeout: float | None = None,
    tools: Iterable[str] | None = None,
    model_errors: ModelErrors = "tool",
    resource_tools: bool = True,
    needs_approval: NeedsApproval = None,
) -> list[FunctionTool]:
    """The tools of ``source`` (a ``Hub``, ``Client`` or ``ProcessHub``) as ``FunctionTool``s.

    Args:
        timeout: seconds per call (None: the source's configured totals).
        tools: keep only these: LLM-safe names, or rules (``mcp__server``,
            ``mcp__server__tool``); the Hub's deny rules apply on top.
        model_errors: ``"tool"``, ``"all"`` or ``"none"`` (see ``mcp_lite.contrib._adapter``).
        resource_tools: add the Hub's ``ListMcpResourcesTool`` and ``ReadMcpResourceTool``
            when a server has resources.
        needs_approval: the SDK's ``needs_approval`` for every tool (a bool or its
            callable); None: True for the tools whose ``destructiveHint`` is set.

    Lists the tools now (which starts the servers).
    """
    adapter = Adapter(
        source,
        timeout=timeout,
        tools=tools,
        model_errors=model_errors,
        resource_tools=resource_tools,
    )
    return [_tool(adapter, adapted, needs_approval) for adapted in adapter.tools()]


def _tool(adapter: Adapter, adapted: AdaptedTool, needs_approval: NeedsApproval) -> FunctionTool:
    name = adapted.name

    async def invoke(ctx: Any, arguments: str) -> Any:
        try:
            args = json.loads(arguments) if arguments else {}
        except ValueError as exc:
            return f"Error: the arguments are not valid JSON: {exc}"
        if not isinstance(args, dict):
            return "Error: the arguments must be a JSON object"
        try:
            result = await adapter.acall(name, args)
        except ModelError as exc:
            return f"Error: {exc.message}"
        return _output(result)

    schema = dict(adapted.schema)
    schema.setdefault("properties", {})
    approval = adapted.destructive if needs_approval is None else needs_approval
    return FunctionTool(
        name=name,
        description=adapted.description,
        params_json_schema=schema,
        on_invoke_tool=invoke,
        strict_json_schema=False,
        needs_approval=approval,
    )


def _output(result: CallToolResult) -> Any:
    images = [m for m in media_of(result) if m.kind == "image"]
    if not images:
        return result.text
    out: list[Any] = [ToolOutputText(text=t) for t in texts_of(result)]
    out.extend(ToolOutputImage(image_url=image.data_url) for image in images)
    return out
