"""``x-mcp-header`` (2026-07-28, SEP-2243), sans-IO: which ``tools/call`` arguments are mirrored
into ``Mcp-Param-*`` headers and as what text, for the client's HTTP transport and the small
server's check (see docs/explanation/protocol.md, "Extensions").
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["HEADER_TOKEN", "HEADER_TYPES", "argument_at", "header_map", "header_text"]

HEADER_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
HEADER_TYPES = ("string", "integer", "boolean")


def header_map(schema: Any) -> dict[tuple[str, ...], str]:
    """``{property path: header token}`` for the valid annotations in ``schema`` (an
    invalid one, or a token used twice, is left out)."""
    found: dict[tuple[str, ...], str] = {}
    stack: list[tuple[tuple[str, ...], Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        token = node.get("x-mcp-header")
        if (
            path
            and isinstance(token, str)
            and HEADER_TOKEN.match(token)
            and node.get("type") in HEADER_TYPES
            and token.lower() not in {t.lower() for t in found.values()}
        ):
            found[path] = token
        properties = node.get("properties")
        if isinstance(properties, dict):
            stack.extend(((*path, str(name)), sub) for name, sub in properties.items())
    return found


def argument_at(arguments: Any, path: tuple[str, ...]) -> Any:
    """The argument at ``path`` in a call's ``arguments``; None when it is not there."""
    value = arguments
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def header_text(value: Any) -> str | None:
    """The header text for an argument; None (no header) when absent, null or not a
    primitive."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int)):
        return str(value)
    return None
