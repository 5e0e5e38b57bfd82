"""``Registry``: the tools, resources and prompts of one ``Server``, registered from
plain Python functions (each inspected once, at registration) and run at call time with
their arguments validated and their results in the wire shape. No I/O, no connections,
no protocol eras."""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Callable
from typing import Any

import pydantic

from ..errors import InternalError, InvalidParams, RpcError
from ..protocol.skills import SKILLS_EXTENSION
from ._handlers import call_handler
from ._prompt_specs import PromptSpec, prompt_messages
from ._resource_specs import ResourceSpec, TemplateSpec, resource_contents
from ._skills import SkillSet
from ._tasks import TASKS_EXTENSION, TaskStore
from ._tool_specs import ToolSpec

__all__ = ["Registry"]

log = logging.getLogger("mcp_lite.server")


# --- tools -------------------------------------------------------------------------------


# --- resources ---------------------------------------------------------------------------


# --- prompts -----------------------------------------------------------------------------


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
