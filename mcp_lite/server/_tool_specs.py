"""``ToolSpec``: a registered tool, its output schema from the return annotation,
and ``content_blocks``, which turns what the function returns into a
``CallToolResult``'s content."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
from collections.abc import Callable
from typing import Any

import pydantic
from pydantic_core import to_jsonable_python

from ..protocol.results import CallToolResult
from ._handlers import _analyze, _describe, _json_schema, _Signature

__all__ = ["ToolSpec", "content_blocks"]


# Content block types a tool may return as-is (a dict, or a list of such dicts).
_CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})


# Return annotations that never produce an ``outputSchema`` (see ``ToolSpec``).
_UNSTRUCTURED = (inspect.Signature.empty, None, type(None), Any, str)


@dataclasses.dataclass(frozen=True)
class _Output:
    schema: dict[str, Any]
    adapter: pydantic.TypeAdapter[Any]
    wrapped: bool


def _output_for(annotation: Any) -> _Output | None:
    if any(annotation is u for u in _UNSTRUCTURED):
        return None
    try:
        adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(annotation)
        schema = _json_schema(adapter)
    except Exception:  # an arbitrary class pydantic cannot describe: unstructured output
        return None
    if schema.get("type") == "object":
        return _Output(schema, adapter, wrapped=False)
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if defs:
        wrapped["$defs"] = defs
    return _Output(wrapped, adapter, wrapped=True)


@dataclasses.dataclass(frozen=True)
class ToolSpec:
    """A registered tool.

    ``outputSchema`` comes from the return annotation:

    - none, ``None``, ``Any`` or ``str``: no ``outputSchema``; the value becomes content
      (``str`` as text, ``None`` as no content, anything else as JSON text);
    - an object type (pydantic model, ``TypedDict``, dataclass, ``dict[...]``): that
      object's schema, and ``structuredContent`` is the value itself;
    - anything else (``int``, ``list[int]``, ``X | None`` …): wrapped as
      ``{"result": value}`` — the convention of the official Python SDK.

    A returned dict holding a ``"content"`` list, or a ``CallToolResult``, is taken as a
    complete result.
    """

    fn: Callable[..., Any]
    name: str
    description: str | None
    title: str | None
    annotations: dict[str, Any] | None
    signature: _Signature
    output: _Output | None
    # published verbatim when given (any JSON Schema); arguments are still validated
    # against the function's signature
    input_schema: dict[str, Any] | None = None
    # execution.taskSupport: None (not published: forbidden), "optional" or "required"
    task_support: str | None = None
    # the tool's _meta, published verbatim (MCP Apps' "ui", "anthropic/..." hints)
    meta: dict[str, Any] | None = None

    @classmethod
    def build(
        cls,
        fn: Callable[..., Any],
        context_type: type,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        annotations: dict[str, Any] | None = None,
        input_schema: dict[str, Any] | None = None,
        task_support: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> ToolSpec:
        if task_support not in (None, "forbidden", "optional", "required"):
            raise ValueError(f"task_support must be 'optional' or 'required', not {task_support!r}")
        tool_name = name or fn.__name__
        sig = _analyze(fn, f"{tool_name}Arguments", context_type)
        return cls(
            fn,
            tool_name,
            _describe(fn, description),
            title,
            annotations,
            sig,
            _output_for(sig.return_annotation),
            copy.deepcopy(input_schema) if input_schema is not None else None,
            task_support if task_support != "forbidden" else None,
            copy.deepcopy(meta) if meta else None,
        )

    def definition(self) -> dict[str, Any]:
        """The ``Tool`` object for ``tools/list``."""
        out: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        out["inputSchema"] = (
            copy.deepcopy(self.input_schema)
            if self.input_schema is not None
            else self.signature.input_schema()
        )
        if self.output is not None:
            out["outputSchema"] = self.output.schema
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        if self.task_support is not None:
            out["execution"] = {"taskSupport": self.task_support}
        if self.meta:
            out["_meta"] = copy.deepcopy(self.meta)
        return out

    def result(self, value: Any) -> dict[str, Any]:
        """The ``CallToolResult`` for a return value; raises ``ValueError`` on a bad output."""
        if isinstance(value, dict) and isinstance(value.get("content"), list):
            return value
        if isinstance(value, CallToolResult):  # a client's result, passed on (a proxy tool)
            return value.to_wire()
        if self.output is None:
            return {"content": content_blocks(value), "isError": False}
        try:
            data = self.output.adapter.dump_python(
                self.output.adapter.validate_python(value), mode="json"
            )
        except pydantic.ValidationError as exc:
            raise ValueError(
                f"tool {self.name!r} returned a value that does not match its "
                f"return annotation: {exc}"
            ) from exc
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        return {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"result": data} if self.output.wrapped else data,
            "isError": False,
        }


def _is_block(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in _CONTENT_TYPES


def content_blocks(value: Any) -> list[dict[str, Any]]:
    """Content blocks for an unstructured value.

    ``None`` gives no blocks; a content-block dict (``{"type": "text", ...}``, ``"image"``
    …) or a list of them is used as is; a ``str`` is one text block; anything else is
    serialized to JSON text (pydantic models, dataclasses, datetimes included; objects
    JSON cannot express fall back to ``str()``).
    """
    if value is None:
        return []
    if _is_block(value):
        return [value]
    if isinstance(value, list) and value and all(_is_block(v) for v in value):
        return list(value)
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    data = to_jsonable_python(value, fallback=str)
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return [{"type": "text", "text": text}]
