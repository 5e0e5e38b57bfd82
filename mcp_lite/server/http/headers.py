"""The 2026-07-28 request headers the small server checks against the body (SEP-2243):
``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and the ``Mcp-Param-*`` headers a
tool's ``x-mcp-header`` annotations call for (base64 sentinel values decoded first)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from email.message import Message
from typing import Any

from ...protocol import versions as pv
from ...protocol.param_headers import argument_at, header_map, header_text

__all__ = ["check_headers", "decode_header"]

_NAMED = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_HEADER_SAFE = re.compile(r"^[\x20-\x7e\t]*$")
_SENTINEL = re.compile(r"^=\?base64\?(.*)\?=$")


def decode_header(value: str) -> str | None:
    """A header value with the base64 sentinel undone; None when it is malformed."""
    m = _SENTINEL.match(value)
    if m is None:
        return value if _HEADER_SAFE.match(value) else None
    try:
        return base64.b64decode(m.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _same_int(text: str, value: int) -> bool:
    try:
        return float(text) == value
    except ValueError:
        return False


def check_headers(
    headers: Message, msg: dict[str, Any], tool_schema: Callable[[str], Any]
) -> str | None:
    """Why the 2026-07-28 request headers disagree with the body (HeaderMismatch), or None."""
    raw = msg.get("params")
    params: dict[str, Any] = raw if isinstance(raw, dict) else {}
    raw = params.get("_meta")
    meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
    got = headers.get("MCP-Protocol-Version")
    if got is None:
        return "the MCP-Protocol-Version header is missing"
    if got != meta.get(pv.META_PROTOCOL_VERSION):
        return f"MCP-Protocol-Version {got!r} does not match the body"
    method = msg.get("method")
    got = headers.get("Mcp-Method")
    if got is None:
        return "the Mcp-Method header is missing"
    if decode_header(got) != method:
        return f"Mcp-Method {got!r} does not match the body value {method!r}"
    key = _NAMED.get(str(method))
    if key is not None:
        got = headers.get("Mcp-Name")
        if got is None:
            return "the Mcp-Name header is missing"
        if decode_header(got) != params.get(key):
            return f"Mcp-Name {got!r} does not match the body value"
    if method == "tools/call" and isinstance(params.get("name"), str):
        return _check_params(headers, params, tool_schema)
    return None


def _check_params(
    headers: Message, params: dict[str, Any], tool_schema: Callable[[str], Any]
) -> str | None:
    args = params.get("arguments")
    for path, name in header_map(tool_schema(params["name"])).items():
        value = argument_at(args, path)
        want = header_text(value)
        got = headers.get(f"Mcp-Param-{name}")
        if want is None:
            continue  # null or absent: the header is not expected
        if got is None:
            return f"the Mcp-Param-{name} header is missing"
        decoded = decode_header(got)
        if decoded is None:
            return f"Mcp-Param-{name} holds invalid characters"
        if decoded != want and not (
            isinstance(value, int) and not isinstance(value, bool) and _same_int(decoded, value)
        ):
            return f"Mcp-Param-{name} does not match the body value"
    return None
