"""The tool pool: MCP tools, resources and prompts as an agent host sees them, with
``tool_definitions`` turning it into what an LLM API accepts and ``Catalog`` caching each server's
lists (see docs/explanation/inside-the-hub.md)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..._accel import LruCache, build_tool_name
from ...protocol.tool_formats import ToolFormat, check_format, shape_definition
from ...protocol.tool_specs import (
    MAX_DESCRIPTION_LENGTH,
    McpTool,
    ToolSpec,
    to_mcp_tool,
    truncate_description,
)

if TYPE_CHECKING:
    from ...protocol.types import Prompt, PromptArgument, Resource

__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "Catalog",
    "McpPrompt",
    "McpResource",
    "McpTool",
    "ToolFormat",
    "ToolSpec",
    "check_format",
    "shape_definition",
    "tool_definitions",
    "to_mcp_prompt",
    "to_mcp_resource",
    "to_mcp_tool",
]

DEFAULT_FETCH_CACHE_SIZE = 100
Kind = Literal["tools", "resources", "prompts"]
KINDS: tuple[Kind, ...] = ("tools", "resources", "prompts")


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
