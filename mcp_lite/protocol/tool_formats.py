"""Tool definitions in the shapes LLM APIs accept (``"anthropic"``, ``"openai"``,
``"openai-responses"``) and tool names they accept (``shorten``: at most 64 characters, stable
across processes), as pure functions shared by ``Client`` and the Hub.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .._accel import normalize_name

__all__ = [
    "FORMATS",
    "MAX_NAME_LENGTH",
    "ToolFormat",
    "check_format",
    "fits",
    "safe_names",
    "shape_definition",
    "shorten",
    "suffixed",
]

ToolFormat = Literal["anthropic", "openai", "openai-responses"]
"""The tool-list shapes ``tool_definitions`` can produce."""
FORMATS: tuple[ToolFormat, ...] = ("anthropic", "openai", "openai-responses")

MAX_NAME_LENGTH = 64
_DIGITS = 8
_HEAD = 30
_TAIL = MAX_NAME_LENGTH - _DIGITS - 1 - _HEAD


def check_format(format: object) -> ToolFormat:
    """``format`` when it is a known tool-list shape.

    Raises:
        ValueError: anything else.
    """
    if format in FORMATS:
        return format
    raise ValueError(
        f"unknown tool definition format {format!r}; use 'anthropic' or 'openai' "
        "(Chat Completions), or 'openai-responses' (Responses API)"
    )


def shape_definition(
    name: str, description: str, schema: dict[str, Any], format: ToolFormat
) -> dict[str, Any]:
    """One tool definition in ``format`` (see the module doc).

    Raises:
        ValueError: an unknown ``format``.
    """
    kind = check_format(format)
    if kind == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    if kind == "openai-responses":
        return {"type": "function", "name": name, "description": description, "parameters": schema}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
    }


def fits(name: str) -> bool:
    """True when an LLM API accepts ``name`` as a tool name."""
    return 0 < len(name) <= MAX_NAME_LENGTH and normalize_name(name) == name


def _digest(key: str) -> str:
    import hashlib  # only for a name that must be shortened: not at import time (~5 ms)

    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGITS]


def suffixed(name: str, key: str) -> str:
    """``name`` (its first 30 and last 25 characters when longer) + ``_`` + 8 hex digits of
    the SHA-256 of ``key``: the same in every process and after restarts."""
    if len(name) > _HEAD + _TAIL:
        name = name[:_HEAD] + name[-_TAIL:]
    return f"{name}_{_digest(key)}"


def shorten(name: str, key: str) -> str:
    """``name`` normalized, and cut to 64 characters with a hash of ``key`` when longer."""
    name = normalize_name(name) or "tool"
    return name if len(name) <= MAX_NAME_LENGTH else suffixed(name, key)


def safe_names(names: Sequence[str]) -> list[str]:
    """One accepted, unique name per tool name of one server, in order: a name that fits is
    kept; another is normalized (and shortened); a clash gets a hash of the tool's own name.
    Among tools sharing a name, the one that needed no change keeps it."""
    wanted = [shorten(name, name) for name in names]
    taken: set[str] = set()
    out = [""] * len(names)
    for i in sorted(range(len(names)), key=lambda i: (wanted[i], wanted[i] != names[i], names[i])):
        name, salt = wanted[i], 0
        while name in taken:
            salt += 1
            name = suffixed(wanted[i], names[i] if salt == 1 else f"{names[i]}\x00{salt}")
        taken.add(name)
        out[i] = name
    return out
