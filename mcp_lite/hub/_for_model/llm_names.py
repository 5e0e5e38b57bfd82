"""Tool names an LLM API accepts: at most 64 characters of ``[a-zA-Z0-9_-]``, unique in a list.
``llm_names`` gives every tool of a list such a name, stable across processes, and the Hub maps them
back in ``Hub.call_tool`` (see docs/explanation/inside-the-hub.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..._accel import normalize_name
from ...protocol.tool_formats import MAX_NAME_LENGTH, fits, shorten, suffixed

if TYPE_CHECKING:
    from .tools import McpTool

__all__ = ["MAX_NAME_LENGTH", "fits", "llm_names", "shorten"]


def _key(tool: McpTool) -> str:
    return f"{tool.server}\x00{tool.tool_name}"


def llm_names(tools: Sequence[McpTool], reserved: Iterable[str] = ()) -> list[str]:
    """One accepted, unique name per tool, in the order of ``tools`` (see the module doc).

    ``reserved`` names (the Hub's own tools) are never given to an MCP tool.
    """
    taken = set(reserved)
    wanted = [shorten(t.name, _key(t)) for t in tools]

    def rank(i: int) -> tuple[str, bool, str, str]:
        tool = tools[i]
        renamed = normalize_name(tool.tool_name) != tool.tool_name
        return wanted[i], renamed, tool.server, tool.tool_name

    names = [""] * len(tools)
    for i in sorted(range(len(tools)), key=rank):
        name = wanted[i]
        salt = 0
        while name in taken:  # a clash: suffix a hash of this tool's own identity
            salt += 1
            key = _key(tools[i]) if salt == 1 else f"{_key(tools[i])}\x00{salt}"
            name = suffixed(wanted[i], key)
        taken.add(name)
        names[i] = name
    return names
