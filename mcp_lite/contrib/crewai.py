"""CrewAI: ``crewai_tools(source)`` gives ``crewai.tools.BaseTool`` objects for an ``Agent``, with
``args_schema`` built by CrewAI's own converter and the ``None`` of omitted optionals dropped
(see docs/guides/agent-frameworks.md and docs/explanation/integrations.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ._adapter import (
    AdaptedTool,
    Adapter,
    ModelError,
    ModelErrors,
    Source,
    argument_schemas,
    require,
    structured_of,
)

require("crewai.tools", "crewai", "crewai")

from crewai.tools import BaseTool  # noqa: E402
from crewai.utilities.pydantic_schema_utils import create_model_from_schema  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

__all__ = ["McpLiteCrewTool", "crewai_tools"]


class McpLiteCrewTool(BaseTool):  # type: ignore[misc]  # crewai is untyped to mypy here
    """One MCP tool as a CrewAI tool; calls go back under the Hub's name."""

    _adapter: Adapter = PrivateAttr()
    _mcp_name: str = PrivateAttr()
    _droppable: frozenset[str] = PrivateAttr()

    def _run(self, /, **arguments: Any) -> Any:
        sent = {k: v for k, v in arguments.items() if not (v is None and k in self._droppable)}
        try:
            result = self._adapter.call(self._mcp_name, sent)
        except ModelError as exc:
            return f"Error: {exc.message}"
        structured = structured_of(result)
        if structured is None:
            return result.text
        return structured if isinstance(structured, str) else json.dumps(structured)


def _allows_null(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    options = schema.get("anyOf") or schema.get("oneOf") or ()
    return any(isinstance(o, dict) and _allows_null(o) for o in options)


def _tool(adapter: Adapter, adapted: AdaptedTool, index: int) -> McpLiteCrewTool:
    required = set(adapted.schema.get("required") or ())
    droppable = frozenset(
        name
        for name, schema in argument_schemas(adapted.schema).items()
        if name not in required and not _allows_null(schema)
    )
    args_schema = create_model_from_schema(adapted.schema, model_name=f"McpArgs{index}")
    tool = McpLiteCrewTool(
        name=adapted.name,
        description=adapted.description or adapted.title,
        args_schema=args_schema,
    )
    tool._adapter = adapter
    tool._mcp_name = adapted.name
    tool._droppable = droppable
    return tool


def crewai_tools(
    source: Source,
    *,
    timeout: float | None = None,
    tools: Iterable[str] | None = None,
    model_errors: ModelErrors = "tool",
    resource_tools: bool = True,
) -> list[McpLiteCrewTool]:
    """The tools of ``source`` (a ``Hub``, ``Client`` or ``ProcessHub``) as CrewAI tools.

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
    return [_tool(adapter, adapted, i) for i, adapted in enumerate(adapter.tools())]
