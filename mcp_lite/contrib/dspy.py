"""DSPy: ``dspy_tools(source)`` gives ``dspy.Tool`` objects for ``dspy.ReAct`` and friends, one
JSON Schema per argument, calls that block on the source with no event loop (see
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
    argument_schemas,
    require,
    structured_of,
)

require("dspy", "dspy", "dspy")

import dspy  # noqa: E402
from dspy.utils.callback import with_callbacks  # noqa: E402

__all__ = ["McpLiteDspyTool", "dspy_tools"]


class McpLiteDspyTool(dspy.Tool):  # type: ignore[misc]  # dspy.Tool is Any to mypy
    """One MCP tool as a ``dspy.Tool``; calls go back under the Hub's name."""

    def __init__(self, adapter: Adapter, adapted: AdaptedTool) -> None:
        required = set(adapted.schema.get("required") or ())
        args = argument_schemas(adapted.schema)
        for name, schema in args.items():
            if name not in required:
                schema.setdefault("default", None)
        mcp_name = adapted.name

        def call(**arguments: Any) -> Any:
            try:
                return _value(adapter.call(mcp_name, arguments))
            except ModelError as exc:
                return f"Error: {exc.message}"

        super().__init__(
            call,
            name=mcp_name,
            desc=adapted.description or adapted.title,
            args=args,
            arg_types={name: Any for name in args},
        )
        self._adapter = adapter
        self._mcp_name = mcp_name

    @with_callbacks  # type: ignore[untyped-decorator]  # dspy ships no type hints
    async def acall(self, **kwargs: Any) -> Any:
        arguments = self._validate_and_parse_args(**kwargs)
        try:
            return _value(await self._adapter.acall(self._mcp_name, arguments))
        except ModelError as exc:
            return f"Error: {exc.message}"


def _value(result: Any) -> Any:
    structured = structured_of(result)
    return result.text if structured is None else structured


def dspy_tools(
    source: Source,
    *,
    timeout: float | None = None,
    tools: Iterable[str] | None = None,
    model_errors: ModelErrors = "tool",
    resource_tools: bool = True,
) -> list[McpLiteDspyTool]:
    """The tools of ``source`` (a ``Hub``, ``Client`` or ``ProcessHub``) as ``dspy.Tool``s.

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
    return [McpLiteDspyTool(adapter, adapted) for adapted in adapter.tools()]
