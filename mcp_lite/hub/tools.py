"""The tool pool: MCP tools, resources and prompts as an agent host sees them.

Every server's ``tools/list`` entry becomes an ``McpTool`` named ``mcp__<server>__<tool>``
(both parts normalized to ``[a-zA-Z0-9_-]``), with its description cut at 2048 characters,
its ``inputSchema`` kept as is and its annotations mapped to plain flags. Resources carry
their server; prompts become commands named like tools. ``tool_definitions`` turns the pool
into what an LLM API accepts (the shapes are ``protocol.tool_formats``', shared with
``Client.tool_definitions``).

``Catalog`` holds the per-server lists in LRU caches (``MCP_FETCH_CACHE_SIZE``, default 100)
and forgets a server's lists when its connection closes or the server says a list changed.
"""

from __future__ import annotations

import copy
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .._accel import LruCache, build_tool_name
from ..protocol.apps import ToolUi
from ..protocol.tool_formats import ToolFormat, check_format, shape_definition

if TYPE_CHECKING:
    from ..protocol.types import Prompt, PromptArgument, Resource, Tool

__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "Catalog",
    "McpPrompt",
    "McpResource",
    "McpTool",
    "ToolFormat",
    "check_format",
    "shape_definition",
    "tool_definitions",
    "to_mcp_prompt",
    "to_mcp_resource",
    "to_mcp_tool",
]

MAX_DESCRIPTION_LENGTH = 2048
TRUNCATED_SUFFIX = "... [truncated]"
DEFAULT_FETCH_CACHE_SIZE = 100
Kind = Literal["tools", "resources", "prompts"]
KINDS: tuple[Kind, ...] = ("tools", "resources", "prompts")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class McpTool:
    """One tool of one server, ready for an agent.

    Attributes:
        name: ``mcp__<server>__<tool>``, normalized: what an LLM calls and permission rules
            match.
        server: the configured server name.
        tool_name: the tool's name on its server (what ``tools/call`` gets).
        description: at most 2048 characters, then ``... [truncated]``.
        input_schema: the tool's ``inputSchema``, unchanged.
        display_name: ``title`` (or ``annotations.title``), else ``tool_name``.
        read_only / concurrency_safe: ``annotations.readOnlyHint`` (default False).
        destructive: ``annotations.destructiveHint``; open_world: ``openWorldHint``.
        search_hint: ``_meta["anthropic/searchHint"]`` with whitespace collapsed, or None.
        always_load: ``_meta["anthropic/alwaysLoad"] is True``.
        tool: the full ``Tool`` as the server sent it.
    """

    name: str
    server: str
    tool_name: str
    description: str
    input_schema: dict[str, Any]
    display_name: str
    read_only: bool = False
    concurrency_safe: bool = False
    destructive: bool = False
    open_world: bool = False
    search_hint: str | None = None
    always_load: bool = False
    output_schema: dict[str, Any] | None = None
    tool: Tool | None = field(default=None, repr=False, compare=False)

    def definition(
        self, format: ToolFormat = "anthropic", *, name: str | None = None
    ) -> dict[str, Any]:
        """This tool in the shape of an LLM API's tool list (see ``tool_definitions``);
        ``name`` replaces ``self.name`` (the Hub gives over-long names a shorter one)."""
        # a deep copy: the caller may edit it without touching the cached tool
        schema = copy.deepcopy(self.input_schema) if self.input_schema else {}
        schema.setdefault("type", "object")
        return shape_definition(name or self.name, self.description, schema, format)

    @property
    def ui(self) -> ToolUi | None:
        """MCP Apps: the tool's ``_meta.ui`` (``resource_uri``, ``visibility``), or None.
        The Hub's pool never holds a tool whose visibility leaves out ``"model"``."""
        return self.tool.ui if self.tool is not None else None


@dataclass(frozen=True)
class McpResource:
    """One resource of one server: ``server`` plus the ``Resource`` fields that matter."""

    server: str
    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None
    resource: Resource | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class McpPrompt:
    """A prompt as a command: ``name`` is ``mcp__<server>__<prompt>``."""

    name: str
    server: str
    prompt_name: str
    description: str
    arguments: tuple[PromptArgument, ...] = ()
    prompt: Prompt | None = field(default=None, repr=False, compare=False)


def truncate_description(text: str | None) -> str:
    """``text`` cut at 2048 characters with ``... [truncated]`` appended; None gives ""."""
    text = text or ""
    if len(text) > MAX_DESCRIPTION_LENGTH:
        return text[:MAX_DESCRIPTION_LENGTH] + TRUNCATED_SUFFIX
    return text


def to_mcp_tool(server: str, tool: Tool) -> McpTool:
    """Map one ``Tool`` of ``server`` (see ``McpTool`` for each field)."""
    ann = tool.annotations
    read_only = bool(ann is not None and ann.read_only_hint)
    meta = tool.meta or {}
    hint = meta.get("anthropic/searchHint")
    search_hint = _WHITESPACE.sub(" ", hint).strip() or None if isinstance(hint, str) else None
    return McpTool(
        name=build_tool_name(server, tool.name),
        server=server,
        tool_name=tool.name,
        description=truncate_description(tool.description),
        input_schema=tool.input_schema,
        display_name=tool.display_name,
        read_only=read_only,
        concurrency_safe=read_only,
        destructive=bool(ann is not None and ann.destructive_hint),
        open_world=bool(ann is not None and ann.open_world_hint),
        search_hint=search_hint,
        always_load=meta.get("anthropic/alwaysLoad") is True,
        output_schema=tool.output_schema,
        tool=tool,
    )


def to_mcp_resource(server: str, resource: Resource) -> McpResource:
    return McpResource(
        server=server,
        uri=resource.uri,
        name=resource.name,
        description=resource.description,
        mime_type=resource.mime_type,
        resource=resource,
    )


def to_mcp_prompt(server: str, prompt: Prompt) -> McpPrompt:
    return McpPrompt(
        name=build_tool_name(server, prompt.name),
        server=server,
        prompt_name=prompt.name,
        description=truncate_description(prompt.description),
        arguments=tuple(prompt.arguments or ()),
        prompt=prompt,
    )


def tool_definitions(
    tools: Iterable[McpTool], format: ToolFormat = "anthropic", names: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The tools as an LLM API wants them (see ``shape_definition``); ``names``, when given,
    replaces each tool's name (in order).

    Raises:
        ValueError: an unknown ``format``.
    """
    check_format(format)
    tools = list(tools)
    if names is None:
        return [tool.definition(format) for tool in tools]
    return [tool.definition(format, name=n) for tool, n in zip(tools, names, strict=True)]


def fetch_cache_size(environ: dict[str, str] | None = None) -> int:
    """``MCP_FETCH_CACHE_SIZE`` when it is a positive integer, else 100."""
    raw = (environ if environ is not None else os.environ).get("MCP_FETCH_CACHE_SIZE", "")
    try:
        size = int(raw)
    except ValueError:
        return DEFAULT_FETCH_CACHE_SIZE
    return size if size > 0 else DEFAULT_FETCH_CACHE_SIZE


class Catalog:
    """Per-server lists of tools, resources and prompts, each kind in its own LRU cache.

    ``get(kind, server, fetch)`` returns the cached list or calls ``fetch()`` and stores what
    it returns. ``invalidate(server, kind=None)`` forgets one kind or all three. A fetch that
    raced with an invalidation is returned to its caller but not stored (a generation number
    per server and kind tells), so a ``list_changed`` is never lost.
    """

    def __init__(self, maxsize: int | None = None) -> None:
        size = fetch_cache_size() if maxsize is None else maxsize
        self._caches: dict[str, LruCache] = {kind: LruCache(size) for kind in KINDS}
        self._generations: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def get(self, kind: Kind, server: str, fetch: Callable[[], Sequence[Any]]) -> list[Any]:
        cache = self._caches[kind]
        hit = cache.get(server)
        if hit is not None:
            return list(hit)
        with self._lock:
            generation = self._generations.get((kind, server), 0)
        items = list(fetch())
        with self._lock:
            if self._generations.get((kind, server), 0) == generation:
                cache.put(server, tuple(items))
        return items

    def cached(self, kind: Kind, server: str) -> list[Any] | None:
        """The cached list, or None when it is not cached (no fetch)."""
        hit = self._caches[kind].get(server)
        return None if hit is None else list(hit)

    def peek(self, kind: Kind, server: str) -> tuple[Any, ...] | None:
        """The cached list itself (no copy: never to be changed), or None. A list fetched
        anew is another tuple, so its identity tells whether what was built on it is stale."""
        hit: tuple[Any, ...] | None = self._caches[kind].get(server)
        return hit

    def invalidate(self, server: str, kind: Kind | None = None) -> None:
        with self._lock:
            for k in (kind,) if kind is not None else KINDS:
                self._generations[(k, server)] = self._generations.get((k, server), 0) + 1
                self._caches[k].delete(server)
