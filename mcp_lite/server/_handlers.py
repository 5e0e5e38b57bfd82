"""A decorated function inspected once, at registration: its signature as a pydantic
model (``_Signature``: a tool's ``inputSchema``, a prompt's ``arguments``), its
description, and ``call_handler``, which runs it (sync or async)."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any

import pydantic
from pydantic.json_schema import GenerateJsonSchema

__all__ = ["call_handler"]


class _NoFieldTitles(GenerateJsonSchema):
    """Schemas without the ``"title": "A"`` pydantic adds to every field: noise for an LLM."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _json_schema(adapter: pydantic.TypeAdapter[Any]) -> dict[str, Any]:
    return adapter.json_schema(schema_generator=_NoFieldTitles)


@dataclasses.dataclass(frozen=True)
class _Signature:
    """A function's parameters as a pydantic model.

    Fields are named ``p0, p1 …`` with the parameter name as alias, so a parameter may be
    called ``json``, ``schema`` or ``model_x`` without clashing with ``BaseModel``.
    """

    model: type[pydantic.BaseModel]
    params: tuple[str, ...]
    context_param: str | None
    return_annotation: Any

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments; raises ``pydantic.ValidationError``. Extras are ignored."""
        obj = self.model.model_validate(arguments)
        return {name: getattr(obj, f"p{i}") for i, name in enumerate(self.params)}

    def input_schema(self) -> dict[str, Any]:
        schema = self.model.model_json_schema(by_alias=True, schema_generator=_NoFieldTitles)
        schema.pop("title", None)
        schema.setdefault("properties", {})
        if not self.params:
            schema["additionalProperties"] = False
        return schema


def _is_context(ann: Any, context_type: type) -> bool:
    """``Context``, ``Context | None`` or ``Annotated[Context, ...]``."""
    if typing.get_origin(ann) is typing.Annotated:
        ann = typing.get_args(ann)[0]
    if isinstance(ann, type):
        return issubclass(ann, context_type)
    return any(isinstance(a, type) and issubclass(a, context_type) for a in typing.get_args(ann))


def _analyze(fn: Callable[..., Any], model_name: str, context_type: type) -> _Signature:
    """Inspect ``fn``; raise ``TypeError`` when its annotations cannot be resolved."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise TypeError(
            f"cannot resolve the type hints of {fn!r} ({exc}); define the types it uses at "
            "module level"
        ) from exc
    fields: dict[str, Any] = {}
    params: list[str] = []
    context_param: str | None = None
    for name, param in inspect.signature(fn).parameters.items():
        ann = hints.get(name, Any)
        if _is_context(ann, context_type):
            context_param = name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{fn!r}: *args and **kwargs are not supported in MCP handlers")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"{fn!r}: positional-only parameter {name!r} is not supported")
        default = ... if param.default is param.empty else param.default
        fields[f"p{len(params)}"] = (ann, pydantic.Field(default, alias=name))
        params.append(name)
    model = pydantic.create_model(
        model_name,
        __config__=pydantic.ConfigDict(extra="ignore", arbitrary_types_allowed=True),
        **fields,
    )
    return _Signature(
        model, tuple(params), context_param, hints.get("return", inspect.Signature.empty)
    )


def call_handler(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call ``fn`` (a plain or ``async`` function) with ``kwargs`` and return its value."""
    result = fn(**kwargs)
    if inspect.iscoroutine(result):
        return asyncio.run(result)
    return result


def _describe(fn: Callable[..., Any], description: str | None) -> str | None:
    return description if description is not None else inspect.getdoc(fn)
