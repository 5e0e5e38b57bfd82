"""smolagents: ``smolagents_tools(source)`` gives ``smolagents.Tool`` objects for a
``ToolCallingAgent`` or a ``CodeAgent``, each argument's schema copied into ``inputs`` under an
identifier-safe tool name (see docs/guides/agent-frameworks.md and
docs/explanation/integrations.md).
"""

from __future__ import annotations

import keyword
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

require("smolagents", "smolagents", "smolagents")

from smolagents import Tool  # noqa: E402

__all__ = ["McpLiteSmolTool", "smolagents_tools"]

_TYPES = frozenset({"string", "boolean", "integer", "number", "array", "object", "null"})


class McpLiteSmolTool(Tool):  # type: ignore[misc]  # Tool is Any to mypy (no type hints)
    """One MCP tool as a smolagents ``Tool``."""

    skip_forward_signature_validation = True

    def __init__(self, adapter: Adapter, adapted: AdaptedTool, name: str) -> None:
        self.name = name
        self.description = adapted.description or adapted.title
        self.inputs = _inputs(adapted.schema)
        self.output_type = "any"
        self._adapter = adapter
        self._mcp_name = adapted.name
        super().__init__()

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        # ``self`` positional-only: a tool argument named "self" is a keyword like any other.
        if "sanitize_inputs_outputs" not in self.inputs:
            kwargs.pop("sanitize_inputs_outputs", None)  # smolagents' own flag: nothing to do
        if len(args) == 1 and not kwargs and isinstance(args[0], dict):
            kwargs = args[0]
        elif args:
            raise TypeError(f"{self.name} takes keyword arguments only")
        return self.forward(**kwargs)

    def forward(self, /, **arguments: Any) -> Any:
        try:
            result = self._adapter.call(self._mcp_name, arguments)
        except ModelError as exc:
            raise RuntimeError(exc.message) from None
        structured = structured_of(result)
        return result.text if structured is None else structured


def _inputs(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    required = set(schema.get("required") or ())
    out: dict[str, dict[str, Any]] = {}
    for name, entry in argument_schemas(schema).items():
        kind = entry.get("type")
        known = (isinstance(kind, str) and kind in _TYPES) or (
            isinstance(kind, list) and kind and all(k in _TYPES for k in kind)
        )
        if not known:
            entry["type"] = "any"
        entry.setdefault("description", name)
        if name not in required:
            entry["nullable"] = True
        out[name] = entry
    return out


def _identifier(name: str, taken: set[str]) -> str:
    """``name`` as a Python identifier (``-`` to ``_``), unique among ``taken``."""
    base = name.replace("-", "_")
    if not base.isidentifier() or keyword.iskeyword(base):
        base = f"tool_{base}"
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}_{n}"
    taken.add(candidate)
    return candidate


def smolagents_tools(
    source: Source,
    *,
    timeout: float | None = None,
    tools: Iterable[str] | None = None,
    model_errors: ModelErrors = "tool",
    resource_tools: bool = True,
) -> list[McpLiteSmolTool]:
    """The tools of ``source`` (a ``Hub``, ``Client`` or ``ProcessHub``) as smolagents tools.

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
    taken: set[str] = set()
    listed = adapter.tools()
    return [McpLiteSmolTool(adapter, a, _identifier(a.name, taken)) for a in listed]
