"""The wire types as pydantic models, forward compatible (unknown fields kept, content blocks
one open model keyed by ``type``), snake_case with camelCase aliases; the light classes of
``results`` and ``tools`` are the exception (see docs/explanation/protocol.md).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from pydantic.alias_generators import to_camel

from ._light import WireObject
from ._model import ResourceContents, WireModel

# The tool-call result, its content blocks and the tools are light classes (no pydantic
# until a model feature is used); they are the public types, re-exported here.
from .results import CallToolResult, Content
from .tools import Tool, ToolAnnotations, validate_tools

__all__ = [
    "CallToolResult",
    "CompleteResult",
    "Completion",
    "Content",
    "GetPromptResult",
    "Implementation",
    "InitializeResult",
    "Params",
    "Progress",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceTemplate",
    "Tool",
    "ToolAnnotations",
    "dump",
    "validate_tools",
]


class Params(WireModel):
    """Request params handed to a handler: attribute access, unknown fields kept.

    ``params.requested_schema`` and ``params.requestedSchema`` both work for any field.
    """

    meta: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        extra = self.__pydantic_extra__ or {}
        camel = to_camel(name)
        if camel in extra:
            return extra[camel]
        if name in extra:
            return extra[name]
        raise AttributeError(name)


class Implementation(WireModel):
    name: str = ""
    version: str = ""
    title: str | None = None


class Resource(WireModel):
    uri: str
    name: str = ""
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None


class ResourceTemplate(WireModel):
    uri_template: str
    name: str = ""
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


class ReadResourceResult(WireModel):
    contents: list[ResourceContents] = Field(default_factory=list)
    meta: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        return "\n".join(item.text for item in self.contents if item.text is not None)


class PromptArgument(WireModel):
    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


class Prompt(WireModel):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None


class PromptMessage(WireModel):
    role: str
    content: Content


class GetPromptResult(WireModel):
    description: str | None = None
    messages: list[PromptMessage] = Field(default_factory=list)
    meta: dict[str, Any] | None = None


class Completion(WireModel):
    values: list[str] = Field(default_factory=list)
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(WireModel):
    completion: Completion = Field(default_factory=Completion)


class InitializeResult(WireModel):
    protocol_version: str
    capabilities: dict[str, Any] = Field(default_factory=dict)
    server_info: Implementation = Field(default_factory=Implementation)
    instructions: str | None = None


class Progress(WireModel):
    """One ``notifications/progress``: ``progress`` grows; ``total`` and ``message`` optional."""

    progress: float = 0.0
    total: float | None = None
    message: str | None = None


def dump(value: Any) -> Any:
    """A handler's return value as wire JSON: models dumped by alias, dicts as they are."""
    if isinstance(value, (BaseModel, WireObject)):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return value
