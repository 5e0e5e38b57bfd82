"""How ``mcp_lite.Server`` turns plain Python functions into MCP tools, resources and prompts.

One concept: the *registered handler*. A decorated function is inspected once, at
registration time: its signature becomes a pydantic model (the tool's ``inputSchema``, the
prompt's ``arguments``), its return annotation may become an ``outputSchema``, and its
docstring the description. At call time the same objects validate arguments and turn the
function's return value into the wire shape (``CallToolResult``, resource ``contents``,
prompt ``messages``). Nothing here does I/O or knows about connections or protocol eras.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import dataclasses
import inspect
import json
import logging
import re
import threading
import typing
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import pydantic
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import to_jsonable_python

from ..errors import InternalError, InvalidParams, RpcError
from ..protocol.results import CallToolResult
from ..protocol.skills import SKILLS_EXTENSION
from ._skills import SkillSet
from ._tasks import TASKS_EXTENSION, TaskStore

__all__ = [
    "PromptSpec",
    "Registry",
    "ResourceSpec",
    "TemplateSpec",
    "ToolSpec",
    "build_resource",
    "call_handler",
    "content_blocks",
    "prompt_messages",
    "resource_contents",
]

log = logging.getLogger("mcp_lite.server")

# Content block types a tool may return as-is (a dict, or a list of such dicts).
_CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})
# Return annotations that never produce an ``outputSchema`` (see ``ToolSpec``).
_UNSTRUCTURED = (inspect.Signature.empty, None, type(None), Any, str)


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


# --- tools -------------------------------------------------------------------------------


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


# --- resources ---------------------------------------------------------------------------

_TEMPLATE_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def resource_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """The ``contents`` of a ``ReadResourceResult`` for a resource function's return value.

    ``str`` is text (default ``text/plain``); ``bytes`` is a base64 ``blob`` (default
    ``application/octet-stream``); a dict with a ``"contents"`` list, or a list of content
    dicts, is used as is; anything else is JSON text (``application/json``).
    """
    if isinstance(value, dict) and isinstance(value.get("contents"), list):
        return list(value["contents"])
    if isinstance(value, list) and all(isinstance(v, dict) and "uri" in v for v in value):
        return list(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        blob = base64.b64encode(bytes(value)).decode("ascii")
        return [{"uri": uri, "mimeType": mime_type or "application/octet-stream", "blob": blob}]
    if isinstance(value, str):
        return [{"uri": uri, "mimeType": mime_type or "text/plain", "text": value}]
    text = json.dumps(to_jsonable_python(value, fallback=str), ensure_ascii=False)
    return [{"uri": uri, "mimeType": mime_type or "application/json", "text": text}]


@dataclasses.dataclass(frozen=True)
class ResourceSpec:
    """A resource with a fixed URI. The function takes no arguments (except a ``Context``)."""

    fn: Callable[..., Any]
    uri: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    signature: _Signature

    def definition(self) -> dict[str, Any]:
        return _described({"uri": self.uri, "name": self.name}, self)


@dataclasses.dataclass(frozen=True)
class TemplateSpec:
    """A resource URI template (RFC 6570 level 1: ``{var}`` only).

    A variable matches one non-empty path segment (no ``/``, ``?`` or ``#``), which is
    percent-decoded and passed to the function as a keyword argument of the same name.
    """

    fn: Callable[..., Any]
    uri_template: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    signature: _Signature
    pattern: re.Pattern[str]

    @staticmethod
    def compile(uri_template: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
        parts: list[str] = []
        names: list[str] = []
        pos = 0
        for m in _TEMPLATE_VAR.finditer(uri_template):
            parts.append(re.escape(uri_template[pos : m.start()]))
            parts.append(f"(?P<{m.group(1)}>[^/?#]+)")
            names.append(m.group(1))
            pos = m.end()
        parts.append(re.escape(uri_template[pos:]))
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate variable in URI template {uri_template!r}")
        return re.compile("".join(parts) + r"\Z"), tuple(names)

    def match(self, uri: str) -> dict[str, str] | None:
        m = self.pattern.match(uri)
        if m is None:
            return None
        return {k: unquote(v) for k, v in m.groupdict().items()}

    def definition(self) -> dict[str, Any]:
        return _described({"uriTemplate": self.uri_template, "name": self.name}, self)


def _described(out: dict[str, Any], spec: ResourceSpec | TemplateSpec) -> dict[str, Any]:
    """Add the optional ``title``, ``description`` and ``mimeType`` of a resource listing."""
    if spec.title is not None:
        out["title"] = spec.title
    if spec.description:
        out["description"] = spec.description
    if spec.mime_type:
        out["mimeType"] = spec.mime_type
    return out


def build_resource(
    fn: Callable[..., Any],
    context_type: type,
    uri: str,
    name: str | None,
    title: str | None,
    description: str | None,
    mime_type: str | None,
) -> ResourceSpec | TemplateSpec:
    """A ``ResourceSpec`` for a plain URI, a ``TemplateSpec`` when it contains ``{var}``."""
    res_name = name or fn.__name__
    sig = _analyze(fn, f"{res_name}Variables", context_type)
    desc = _describe(fn, description)
    if "{" not in uri:
        if sig.model.model_fields and any(f.is_required() for f in sig.model.model_fields.values()):
            raise TypeError(f"resource {uri!r}: a fixed-URI resource function takes no arguments")
        return ResourceSpec(fn, uri, res_name, title, desc, mime_type, sig)
    pattern, names = TemplateSpec.compile(uri)
    missing = set(sig.params) - set(names)
    required = {
        sig.params[i] for i, f in enumerate(sig.model.model_fields.values()) if f.is_required()
    }
    if missing & required or set(names) - set(sig.params):
        raise TypeError(
            f"resource template {uri!r}: variables {sorted(names)} must match the function's "
            f"parameters {sorted(sig.params)}"
        )
    return TemplateSpec(fn, uri, res_name, title, desc, mime_type, sig, pattern)


# --- prompts -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PromptSpec:
    """A registered prompt: its arguments are the function's parameters (sent as strings,
    validated and converted by pydantic)."""

    fn: Callable[..., Any]
    name: str
    title: str | None
    description: str | None
    signature: _Signature

    @classmethod
    def build(
        cls,
        fn: Callable[..., Any],
        context_type: type,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> PromptSpec:
        prompt_name = name or fn.__name__
        sig = _analyze(fn, f"{prompt_name}Arguments", context_type)
        return cls(fn, prompt_name, title, _describe(fn, description), sig)

    def required_arguments(self) -> list[str]:
        fields = list(self.signature.model.model_fields.values())
        return [p for p, f in zip(self.signature.params, fields, strict=False) if f.is_required()]

    def definition(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        args = []
        fields = list(self.signature.model.model_fields.values())
        for param, field in zip(self.signature.params, fields, strict=False):
            arg: dict[str, Any] = {"name": param, "required": field.is_required()}
            if field.description:
                arg["description"] = field.description
            args.append(arg)
        out["arguments"] = args
        return out


def prompt_messages(value: Any) -> list[dict[str, Any]]:
    """``PromptMessage`` dicts for a prompt function's return value.

    A ``str`` is one user message. A list may mix strings (user messages) and
    ``{"role", "content"}`` dicts whose ``content`` is a string (made a text block) or a
    content block. Raises ``ValueError`` for anything else.
    """
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ValueError(
            f"a prompt must return a str or a list of messages, not {type(value).__name__}"
        )
    messages = []
    for item in items:
        if isinstance(item, str):
            item = {"role": "user", "content": item}
        if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
            raise ValueError(f"invalid prompt message: {item!r}"[:300])
        content = item.get("content")
        if isinstance(content, str):
            content = {"type": "text", "text": content}
        if not isinstance(content, dict):
            raise ValueError(f"invalid prompt message content: {content!r}"[:300])
        messages.append({**item, "content": content})
    return messages


# --- the registry: what a server offers, and the feature methods over it ---------------------


class Registry:
    """Everything a server has registered, and the era-neutral feature methods over it.

    Each method takes the request ``params`` and returns the result dict; protocol errors
    are raised as ``RpcError``s. ``ctx`` is the handler ``Context`` (injected only into
    functions that declare one). Thread-safe: the tables are copied under a lock before use.
    """

    def __init__(self, page_size: int | None) -> None:
        self.page_size = page_size
        self.tools: dict[str, ToolSpec] = {}
        self.resources: dict[str, ResourceSpec] = {}
        self.templates: dict[str, TemplateSpec] = {}
        self.prompts: dict[str, PromptSpec] = {}
        self.completion: Callable[..., Any] | None = None
        self.skills = SkillSet()
        self.tasks = TaskStore()
        self.lock = threading.Lock()
        self.extensions: dict[str, dict[str, Any]] = {}  # Server(extensions=), as given

    def capabilities(self) -> dict[str, Any]:
        """``ServerCapabilities``: one entry per kind that has something registered."""
        caps: dict[str, Any] = {}
        if self.tools:
            caps["tools"] = {"listChanged": True}
        if self.resources or self.templates:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self.prompts:
            caps["prompts"] = {"listChanged": True}
        caps["logging"] = {}
        caps["completions"] = {}
        extensions: dict[str, Any] = dict(self.extensions)
        if self.skills:
            extensions[SKILLS_EXTENSION] = {}
            caps.setdefault("resources", {"subscribe": True, "listChanged": True})
        if any(t.task_support for t in self.tools.values()):
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
            extensions[TASKS_EXTENSION] = {}
        if extensions:
            caps["extensions"] = extensions
        return caps

    def task_support(self, name: Any) -> str | None:
        with self.lock:
            spec = self.tools.get(name) if isinstance(name, str) else None
        return spec.task_support if spec is not None else None

    def _page(
        self, kind: str, items: list[dict[str, Any]], params: dict[str, Any]
    ) -> dict[str, Any]:
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            try:
                k, _, off = (
                    base64.urlsafe_b64decode(str(cursor).encode("ascii")).decode().partition(":")
                )
                start = int(off)
                if k != kind or start < 0:
                    raise ValueError(cursor)
            except ValueError:
                raise InvalidParams(f"Invalid cursor: {cursor!r}"[:200]) from None
        if self.page_size is None:
            return {kind: items[start:]}
        end = start + self.page_size
        out: dict[str, Any] = {kind: items[start:end]}
        if end < len(items):
            out["nextCursor"] = base64.urlsafe_b64encode(f"{kind}:{end}".encode()).decode("ascii")
        return out

    def _listing(
        self, kind: str, registry: dict[str, Any], params: dict[str, Any]
    ) -> dict[str, Any]:
        """One page of ``registry``'s definitions under ``kind``."""
        with self.lock:
            specs = list(registry.values())
        return self._page(kind, [s.definition() for s in specs], params)

    def list_tools(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._listing("tools", self.tools, params)

    def list_resources(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._listing("resources", self.resources, params)

    def list_templates(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._listing("resourceTemplates", self.templates, params)

    def list_prompts(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._listing("prompts", self.prompts, params)

    def call_tool(self, params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        """``tools/call``. Bad arguments and tool exceptions give ``isError`` results; an
        ``RpcError`` raised by the tool (and any ``BaseException``) propagates."""
        name = params.get("name")
        with self.lock:
            spec = self.tools.get(name) if isinstance(name, str) else None
        if spec is None:
            raise InvalidParams(f"Unknown tool: {name!r}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise InvalidParams("tools/call: arguments must be an object")
        try:
            kwargs = spec.signature.validate(arguments)
        except pydantic.ValidationError as exc:
            return _error_result(f"Invalid arguments for tool {spec.name}: {exc}")
        if spec.signature.context_param:
            kwargs[spec.signature.context_param] = ctx
        try:
            return spec.result(call_handler(spec.fn, kwargs))
        except RpcError:
            raise
        except Exception as exc:
            log.info("tool %s failed", spec.name, exc_info=True)
            return _error_result(str(exc) or type(exc).__name__)

    def read_resource(
        self, params: dict[str, Any], ctx: Any, not_found: type[RpcError]
    ) -> dict[str, Any]:
        """``resources/read``; an unknown URI raises ``not_found`` (the code differs by era)."""
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise InvalidParams("resources/read: uri must be a string")
        with self.lock:
            static = self.resources.get(uri)
            templates = list(self.templates.values())
        spec: ResourceSpec | TemplateSpec | None = static
        kwargs: dict[str, Any] = {}
        if spec is None:
            for tpl in templates:
                found = tpl.match(uri)
                if found is not None:
                    spec, kwargs = tpl, dict(found)
                    break
        if spec is None:
            raise not_found(f"Resource not found: {uri}", data={"uri": uri})
        if kwargs:
            try:
                kwargs = spec.signature.validate(kwargs)
            except pydantic.ValidationError as exc:
                raise InvalidParams(f"invalid URI {uri}: {exc}") from exc
        if spec.signature.context_param:
            kwargs[spec.signature.context_param] = ctx
        value = _run_or_internal(spec.fn, kwargs, f"resource {uri}")
        return {"contents": resource_contents(uri, value, spec.mime_type)}

    def get_prompt(self, params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        name = params.get("name")
        with self.lock:
            spec = self.prompts.get(name) if isinstance(name, str) else None
        if spec is None:
            raise InvalidParams(f"Unknown prompt: {name!r}")
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise InvalidParams("prompts/get: arguments must be an object")
        missing = [a for a in spec.required_arguments() if a not in arguments]
        if missing:
            raise InvalidParams(f"prompt {spec.name}: missing required arguments {missing}")
        try:
            kwargs = spec.signature.validate(arguments)
        except pydantic.ValidationError as exc:
            raise InvalidParams(f"invalid arguments for prompt {spec.name}: {exc}") from exc
        if spec.signature.context_param:
            kwargs[spec.signature.context_param] = ctx
        value = _run_or_internal(spec.fn, kwargs, f"prompt {spec.name}")
        try:
            messages = prompt_messages(value)
        except ValueError as exc:
            raise InternalError(str(exc)) from exc
        out: dict[str, Any] = {"messages": messages}
        if spec.description:
            out["description"] = spec.description
        return out

    def complete(self, params: dict[str, Any]) -> dict[str, Any]:
        ref, argument = params.get("ref"), params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise InvalidParams("completion/complete: ref and argument must be objects")
        values: list[str] = []
        if self.completion is not None:
            context = params.get("context")
            found = _run_or_internal(
                self.completion,
                {"ref": ref, "argument": argument, "context": context},
                "completion",
            )
            values = [str(v) for v in (found or [])]
        return {
            "completion": {
                "values": values[:100],
                "total": len(values),
                "hasMore": len(values) > 100,
            }
        }


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _run_or_internal(fn: Callable[..., Any], kwargs: dict[str, Any], what: str) -> Any:
    """Run a resource/prompt/completion function: ``RpcError``s pass, others become -32603."""
    try:
        return call_handler(fn, kwargs)
    except RpcError:
        raise
    except Exception as exc:
        log.warning("%s failed", what, exc_info=True)
        raise InternalError(f"{what} failed: {exc}") from exc
