"""The 2026-07-28 ``x-mcp-header`` on the HTTP side: header-safe values (``=?base64?...?=`` when
not printable ASCII), the ``Mcp-Param-*`` headers of one call, and the per-tool maps learned from
``tools/list`` answers (the schema rules live in ``protocol/param_headers.py``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from .._accel import decode_message
from ..protocol.param_headers import argument_at, header_map, header_text

__all__ = ["encode_header_value", "learn_param_headers", "param_header_map", "param_headers"]

_HEADER_SAFE = re.compile(r"^[\x20-\x7e]*$")
_SENTINEL = re.compile(r"^=\?base64\?.*\?=$")


def encode_header_value(value: str) -> str:
    """A header-safe value: as is when printable ASCII without surrounding spaces, else
    (and when it happens to look like the sentinel) ``=?base64?<utf-8 base64>?=``."""
    if _HEADER_SAFE.match(value) and value == value.strip() and not _SENTINEL.match(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


# --- x-mcp-header (2026-07-28, checklist §8.6): see protocol/param_headers.py -------------

param_header_map = header_map


def param_headers(mapping: Mapping[tuple[str, ...], str], arguments: Any) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers for one call's ``arguments``."""
    headers: dict[str, str] = {}
    for path, token in mapping.items():
        text = header_text(argument_at(arguments, path))
        if text is not None:  # absent, null, or not a primitive: no header
            headers[f"Mcp-Param-{token}"] = encode_header_value(text)
    return headers


def learn_param_headers(data: bytes, maps: dict[Any, dict[tuple[str, ...], str]]) -> None:
    """Update ``maps`` (tool name -> ``param_header_map``) from one ``tools/list`` answer."""
    try:
        tools = decode_message(data).get("result", {}).get("tools", [])
        for tool in tools:
            mapping = param_header_map(tool.get("inputSchema"))
            if mapping:
                maps[tool.get("name")] = mapping
            else:
                maps.pop(tool.get("name"), None)
    except (ValueError, AttributeError, TypeError):
        pass  # a malformed answer: the session reports it
