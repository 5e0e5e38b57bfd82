"""The pydantic models behind the light classes ``CallToolResult``, ``Content``, ``Tool`` and
``ToolAnnotations``, with the same names and fields, loaded on the first use of a pydantic
feature (see docs/explanation/protocol.md, "Light objects").
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, PrivateAttr

from ._model import ResourceContents, WireModel
from .apps import ToolUi, tool_ui

__all__ = ["CallToolResult", "Content", "Tool", "ToolAnnotations"]


class Content(WireModel):
    """One content block: ``text``, ``image``, ``audio``, ``resource_link``, ``resource`` or newer.

    Fields present depend on ``type``: ``text``; ``data`` + ``mime_type`` (base64, image and
    audio); ``uri``/``name`` (resource_link); ``resource`` (embedded ``ResourceContents``).
    """

    type: str
    text: str | None = None
    data: str | None = None
    mime_type: str | None = None
    uri: str | None = None
    name: str | None = None
    resource: ResourceContents | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


class CallToolResult(WireModel):
    """The result of ``tools/call``.

    ``text`` joins the text blocks; ``structured_content`` is the JSON value when the tool
    declared an ``outputSchema``; ``is_error`` is the tool's own failure flag.
    """

    content: list[Content] = Field(default_factory=list)
    structured_content: Any = None
    is_error: bool = False
    meta: dict[str, Any] | None = None
    # ``data`` of a text-only structured result: compared by ``==`` like the other fields
    _text_json: Any = PrivateAttr(default=None)


class ToolAnnotations(WireModel):
    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Tool(WireModel):
    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None

    @property
    def ui(self) -> ToolUi | None:
        """MCP Apps: the tool's ``_meta.ui`` (see ``mcp_lite.Tool.ui``)."""
        return tool_ui(self.meta)
