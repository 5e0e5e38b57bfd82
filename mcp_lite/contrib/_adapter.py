"""What every agent-framework adapter of ``mcp_lite.contrib`` shares, framework-free: the tool
list, the call (``source.call_tool`` with ``timeout`` and a ``cancel_event``), the async entry
point in a worker thread, the ``model_errors`` mapping of failures and the pieces of a result
(see docs/guides/agent-frameworks.md and docs/explanation/integrations.md).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import importlib
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Union

from ..client import Client
from ..errors import (
    ConfigError,
    McpError,
    PermissionDenied,
    RequestCancelled,
    RequestTimeout,
    RpcError,
)
from ..hub import Hub, ToolSpec
from ..hub._for_model.own_tools import RESOURCE_TOOLS
from ..hub._for_model.permissions import parse_rule, rules_match
from ._process import ProcessHub

if TYPE_CHECKING:
    from ..protocol.types import CallToolResult

__all__ = [
    "Adapter",
    "AdaptedTool",
    "Media",
    "ModelError",
    "ModelErrors",
    "Source",
    "argument_schemas",
    "media_of",
    "require",
    "structured_of",
    "texts_of",
]

ModelErrors = Literal["tool", "all", "none"]
Source = Union[Hub, Client, ProcessHub]  # noqa: UP007  # a runtime alias on Python 3.10
_MODEL_ERRORS = ("tool", "all", "none")


def require(module: str, extra: str, framework: str) -> ModuleType:
    """Import ``module`` of the framework, or raise ``ImportError`` naming the extra (a
    ``ModuleNotFoundError`` naming the missing module when that is the cause)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = (
            f"mcp_lite.contrib needs {framework} for this adapter: "
            f'pip install "mcp-lite-client[{extra}]" (could not import {module}: {exc})'
        )
        if isinstance(exc, ModuleNotFoundError):
            raise ModuleNotFoundError(message, name=exc.name) from exc
        raise ImportError(message, name=exc.name) from exc


class ModelError(Exception):
    """A failure the model is shown as text (``model_errors`` decides which).

    ``kind``: ``"tool"`` (an ``isError`` result, kept in ``result``), ``"arguments"`` (a
    JSON-RPC error, such as invalid arguments), ``"denied"`` (a permission refusal),
    ``"timeout"``, or ``"other"`` (any other ``McpError``, with ``model_errors="all"``).
    ``error``: the ``McpError``, if any.
    """

    def __init__(
        self,
        message: str,
        kind: str,
        error: McpError | None = None,
        result: CallToolResult | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.error = error
        self.result = result


@dataclass(frozen=True)
class AdaptedTool:
    """One tool as an adapter builds it.

    ``name`` is the LLM-safe name the model sees and the one the call goes back with;
    ``schema`` a copy of the tool's ``inputSchema`` with ``"type": "object"`` set when
    missing (nothing else changed); ``spec`` is None for the Hub's own resource tools.
    """

    name: str
    description: str
    schema: dict[str, Any]
    spec: ToolSpec | None = None

    @property
    def destructive(self) -> bool:
        return self.spec is not None and self.spec.tool.destructive

    @property
    def read_only(self) -> bool:
        return self.spec is None or self.spec.tool.read_only

    @property
    def title(self) -> str:
        return self.spec.tool.display_name if self.spec is not None else self.name

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self.spec.tool.output_schema if self.spec is not None else None


@dataclass(frozen=True)
class Media:
    """A binary block of a result: ``kind`` ``"image"`` or ``"audio"``, the decoded bytes."""

    kind: str
    data: bytes
    mime_type: str

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{self.base64}"


class Adapter:
    """The source and options given to one adapter call (see the module docstring).

    Raises:
        TypeError: ``source`` is not a ``Hub``, ``Client`` or ``ProcessHub``.
        ConfigError: an unknown ``model_errors`` or a malformed ``tools`` rule.
    """

    def __init__(
        self,
        source: Source,
        *,
        timeout: float | None = None,
        tools: Iterable[str] | None = None,
        model_errors: ModelErrors = "tool",
        resource_tools: bool = True,
    ) -> None:
        if not isinstance(source, (Hub, Client, ProcessHub)):
            raise TypeError(
                f"source must be a mcp_lite Hub, Client or ProcessHub, not {type(source).__name__}"
            )
        if model_errors not in _MODEL_ERRORS:
            raise ConfigError(f"model_errors must be 'tool', 'all' or 'none', not {model_errors!r}")
        if isinstance(tools, str):
            raise ConfigError("tools= takes a list of names or rules, not one string")
        self.source = source
        self.timeout = timeout
        self.model_errors = model_errors
        self.resource_tools = resource_tools
        self._names: frozenset[str] | None = None
        self._rules: list[tuple[str, str | None]] = []
        if tools is not None:
            names = frozenset(tools)
            self._names = names
            self._rules = [parse_rule(n) for n in names if n.startswith("mcp__")]

    def resolve(self) -> Hub | Client:
        """The Hub or Client to call now (a ``ProcessHub``'s Hub of this process)."""
        source = self.source
        return source.get() if isinstance(source, ProcessHub) else source

    # --- the tool list ------------------------------------------------------------------------

    def tools(self) -> list[AdaptedTool]:
        """Every tool the model is offered (``tool_specs()``), kept to ``tools=``, with the
        Hub's resource tools when ``resource_tools`` and a server has resources."""
        source = self.resolve()
        out = [
            AdaptedTool(spec.name, spec.tool.description, _schema(spec.tool.input_schema), spec)
            for spec in source.tool_specs(timeout=self.timeout)
            if self._keeps(spec)
        ]
        if self.resource_tools and isinstance(source, Hub):
            for d in source.tool_definitions("openai-responses", timeout=self.timeout):
                if d["name"] in RESOURCE_TOOLS and self._keeps_name(d["name"]):
                    out.append(AdaptedTool(d["name"], d["description"], d["parameters"]))
        return out

    def _keeps(self, spec: ToolSpec) -> bool:
        if self._names is None or spec.name in self._names:
            return True
        return rules_match(self._rules, spec.server, spec.tool.tool_name)

    def _keeps_name(self, name: str) -> bool:
        return self._names is None or name in self._names

    # --- calls ----------------------------------------------------------------------------------

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        cancel_event: threading.Event | None = None,
    ) -> CallToolResult:
        """``source.call_tool`` with the adapter's timeout, blocking in this thread.

        Raises:
            ModelError: what the model is to be shown (see ``model_errors``).
            McpError: what it is not (``ToolError`` for an ``isError`` result with
                ``model_errors="none"``).
        """
        source = self.resolve()
        try:
            result = source.call_tool(
                name, dict(arguments or {}), timeout=self.timeout, cancel_event=cancel_event
            )
        except McpError as exc:
            shown = self._shown(exc)
            if shown is None:
                raise
            raise ModelError(str(exc) or type(exc).__name__, shown, exc) from None
        if result.is_error:
            if self.model_errors == "none":
                result.raise_for_error()
            text = result.text or "the tool reported an error (no text)"
            raise ModelError(text, "tool", result=result)
        return result

    def _shown(self, exc: McpError) -> str | None:
        """The kind of error the model is shown, or None to raise it."""
        if self.model_errors == "none" or isinstance(exc, RequestCancelled):
            return None
        if isinstance(exc, PermissionDenied):
            return "denied"
        if isinstance(exc, RequestTimeout):
            return "timeout"
        if isinstance(exc, RpcError):
            return "arguments"
        return "other" if self.model_errors == "all" else None

    async def acall(self, name: str, arguments: Mapping[str, Any] | None) -> CallToolResult:
        """``call`` in a worker thread; when the awaiting task is cancelled (the framework's
        own timeout included), ``cancel_event`` is set: the server is told and the thread
        returns at once."""
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(self.call, name, arguments, cancel)
        except asyncio.CancelledError:
            cancel.set()
            raise


def _schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of an ``inputSchema``, ``"type": "object"`` set when missing."""
    out = copy.deepcopy(dict(schema)) if schema else {}
    out.setdefault("type", "object")
    return out


def media_of(result: CallToolResult) -> list[Media]:
    """The image and audio blocks of ``result``, decoded (invalid base64 is left out)."""
    out: list[Media] = []
    for block in result.content:
        if block.type in ("image", "audio") and block.data:
            try:
                raw = base64.b64decode(block.data, validate=False)
            except (binascii.Error, ValueError):
                continue
            default = "image/png" if block.type == "image" else "audio/wav"
            out.append(Media(block.type, raw, block.mime_type or default))
    return out


def texts_of(result: CallToolResult) -> list[str]:
    """The text of every block that has one (text blocks, and the Hub's notes)."""
    return [block.text for block in result.content if block.text is not None]


def structured_of(result: CallToolResult) -> Any:
    """The structured result (``result.data``), ``{"result": x}`` unwrapped to ``x`` (how a
    server wraps a value that is not an object)."""
    data = result.data
    if isinstance(data, dict) and len(data) == 1 and "result" in data:
        return data["result"]
    return data


def argument_schemas(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each property's schema (a copy) for frameworks that take one schema per argument, a
    top-level ``$ref`` into the schema's own ``$defs`` replaced by what it names (the
    ``$defs`` are not sent with them, so the reference would dangle)."""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    out: dict[str, dict[str, Any]] = {}
    for name, prop in (schema.get("properties") or {}).items():
        out[name] = _inlined(prop, defs) if isinstance(prop, dict) else {}
    return out


def _inlined(prop: dict[str, Any], defs: Any) -> dict[str, Any]:
    """``prop`` with a top-level ``$ref`` into ``defs`` replaced by what it names."""
    ref = prop.get("$ref")
    if isinstance(ref, str) and isinstance(defs, dict):
        target = defs.get(ref.rsplit("/", 1)[-1]) if ref.startswith("#/") else None
        if isinstance(target, dict):
            return {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    return dict(prop)
