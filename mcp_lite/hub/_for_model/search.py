"""Tool search: rank a pool of ``McpTool`` against a free-text query, for deferred loading
(``Hub.tool_definitions(deferred=True)``) and ``Hub.search_tools``. No index, no dependency; the
scoring is in docs/explanation/inside-the-hub.md."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tools import McpTool

__all__ = ["rank_tools", "words"]

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words(text: str | None) -> set[str]:
    """The lower-cased words of ``text`` (``getUserID_v2`` gives get, user, id, v, 2)."""
    return {w.lower() for w in _WORD.findall(text or "")}


def _score(tool: McpTool, query: str, terms: Sequence[str]) -> int:
    own = tool.tool_name.lower()
    score = 100 if query in (own, tool.name.lower()) else 0
    name_words = words(tool.tool_name)
    hint = (tool.search_hint or "").lower()
    hint_words = words(tool.search_hint)
    title_words = words(tool.display_name) if tool.display_name != tool.tool_name else set()
    description = tool.description.lower()
    description_words = words(tool.description)
    server = tool.server.lower()
    for term in terms:
        partial = len(term) >= 3  # "in" inside "internal" says nothing
        if term in name_words:
            score += 10
        elif partial and term in own:
            score += 5
        if term in hint_words:
            score += 6
        elif partial and term in hint:
            score += 1
        if term in title_words:
            score += 5
        if term == server:
            score += 3
        if term in description_words:
            score += 2
        elif partial and term in description:
            score += 1
    return score


def _select(
    tools: Sequence[McpTool], wanted: Iterable[str], aliases: dict[str, str]
) -> list[McpTool]:
    out: list[McpTool] = []
    for raw in wanted:
        name = raw.strip()
        for tool in tools:
            if name in (tool.name, tool.tool_name, aliases.get(tool.name)) and tool not in out:
                out.append(tool)
                break
    return out


def rank_tools(
    tools: Sequence[McpTool],
    query: str,
    limit: int = 10,
    *,
    aliases: dict[str, str] | None = None,
) -> list[McpTool]:
    """The tools matching ``query``, best first, at most ``limit`` (see the module doc).

    ``aliases`` maps qualified names to the names an LLM saw, for ``select:``.
    """
    if limit <= 0:
        return []
    text = query.strip()
    if text.lower().startswith("select:"):
        return _select(tools, text[7:].split(","), aliases or {})[:limit]
    lowered = text.lower()
    terms = [w.lower() for w in _WORD.findall(text)]
    scored = [(s, t) for t in tools if (s := _score(t, lowered, terms)) > 0]
    scored.sort(key=lambda item: (-item[0], item[1].name))
    return [t for _, t in scored[:limit]]
