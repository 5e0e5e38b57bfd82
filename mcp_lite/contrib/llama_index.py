"""LlamaIndex: ``llama_index_tools(source)`` gives ``FunctionTool`` objects for a
``FunctionAgent``, a ``ReActAgent`` or any workflow, showing the model the MCP ``inputSchema``
unchanged (see docs/guides/agent-frameworks.md and docs/explanation/integrations.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
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
)

require("llama_index.core.tools", "llama-index", "llama-index-core")

from llama_index.core.base.llms.types import AudioBlock, ImageBlock, TextBlock  # noqa: E402
from llama_index.core.tools import FunctionTool, ToolMetadata  # noqa: E402
from pydantic import BaseModel, ConfigDict  # noqa: E402

__all__ = ["llama_index_tools"]

MAX_DESCRIPTION = 1024  # what ToolMetadata.to_openai_tool accepts


class _AnyArguments(BaseModel):
    """The arguments as the model sent them: no field, no default, nothing checked here."""

    model_config = ConfigDict(extra="allow")


@dataclass
class _SchemaMetadata(ToolMetadata):
    """Metadata whose parameters are the MCP schema itself."""

    schema: dict[str, Any] = field(default_factory=dict)

    def get_parameters_dict(self) -> dict[str, Any]:
        return dict(self.schema)


def _tool(adapter: Adapter, adapted: AdaptedTool) -> FunctionTool:
    name = adapted.name

    def call(**arguments: Any) -> Any:
        try:
            return _output(adapter.call(name, arguments))
        except ModelError as exc:
            raise RuntimeError(exc.message) from None

    async def acall(**arguments: Any) -> Any:
        try:
            return _output(await adapter.acall(name, arguments))
        except ModelError as exc:
            raise RuntimeError(exc.message) from None

    description = adapted.description or adapted.title
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 3] + "..."
    metadata = _SchemaMetadata(
        description=description, name=name, fn_schema=_AnyArguments, schema=adapted.schema
    )
    return FunctionTool(fn=call, async_fn=acall, metadata=metadata)


def _output(result: Any) -> Any:
    media = media_of(result)
    if media:
        blocks: list[Any] = [TextBlock(text=b.text) for b in result.content if b.text is not None]
        for item in media:
            if item.kind == "image":
                blocks.append(ImageBlock(image=item.data, image_mimetype=item.mime_type))
            else:
                blocks.append(AudioBlock(audio=item.data, format=item.mime_type.split("/")[-1]))
        return blocks
    structured = structured_of(result)
    if structured is None:
        return result.text
    return structured if isinstance(structured, str) else json.dumps(structured)


def llama_index_tools(
    source: Source,
    *,
    timeout: float | None = None,
    tools: Iterable[str] | None = None,
    model_errors: ModelErrors = "tool",
    resource_tools: bool = True,
) -> list[FunctionTool]:
    """The tools of ``source`` (a ``Hub``, ``Client`` or ``ProcessHub``) as LlamaIndex tools.

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
