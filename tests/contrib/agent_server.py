"""The stdio MCP server the agent-framework adapter tests drive (``python agent_server.py``).

Tools: ``add``; ``picture`` (text and a PNG image block); ``boom`` (an ``isError`` result);
``slow(seconds)``, which appends ``started <n>`` to the file named by ``AGENT_MARKS`` and,
when the client cancels it, ``cancelled <n>``, so a test waits for those lines instead of
sleeping; ``clash(config, run_manager, self)`` (argument names frameworks use themselves);
``search`` with a hand-written schema that echoes what it received; ``wipe`` (destructive);
``secret`` (for deny rules); ``refused`` (for a permission handler).
"""

from __future__ import annotations

import base64
import json
import os
import threading
from typing import Any

from mcp_lite import Server
from mcp_lite.server import Context

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {"mode": {"type": "string", "enum": ["fast", "deep"]}},
    "properties": {
        "query": {"type": "string", "minLength": 1, "description": "What to look for"},
        "mode": {"$ref": "#/$defs/mode"},
        "limit": {"type": "integer", "minimum": 1},
    },
    "required": ["query"],
    "additionalProperties": False,
}

server = Server("agent")
_ABSENT = "<absent>"
_count = 0
_lock = threading.Lock()


def _mark(line: str) -> None:
    path = os.environ.get("AGENT_MARKS")
    if path:
        with _lock, open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


@server.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def picture():  # type: ignore[no-untyped-def]
    """A one-pixel picture."""
    return {
        "content": [
            {"type": "text", "text": "a red dot"},
            {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
        ]
    }


@server.tool()
def boom() -> str:
    """Always fails."""
    raise ValueError("the boom tool exploded")


@server.tool()
def slow(seconds: float, ctx: Context) -> str:
    """Wait ``seconds`` unless cancelled."""
    global _count
    with _lock:
        _count += 1
        n = _count
    _mark(f"started {n}")
    if ctx.cancelled.wait(seconds):
        _mark(f"cancelled {n}")
        return "cancelled"
    return "slept"


@server.tool(
    input_schema={
        "type": "object",
        "properties": {
            "config": {"type": "string"},
            "run_manager": {"type": "string"},
            "self": {"type": "string"},
        },
        "required": ["config", "run_manager", "self"],
    }
)
def clash(config: str, run_manager: str, self: str) -> str:
    """Echo the arguments named like framework parameters."""
    return json.dumps({"config": config, "run_manager": run_manager, "self": self}, sort_keys=True)


@server.tool(input_schema=SEARCH_SCHEMA)
def search(query: str, mode: Any = _ABSENT, limit: Any = _ABSENT) -> str:
    """Echo exactly the arguments received (a ``None`` the client sent shows as null)."""
    got = {"query": query, "mode": mode, "limit": limit}
    return json.dumps({k: v for k, v in got.items() if v is not _ABSENT}, sort_keys=True)


@server.tool(annotations={"destructiveHint": True})
def wipe() -> str:
    """Wipe everything."""
    return "wiped"


@server.tool()
def secret() -> str:
    """Never offered (denied)."""
    return "secret"


@server.tool()
def refused() -> str:
    """Refused by the permission handler."""
    return "should not run"


if __name__ == "__main__":
    server.run_stdio()
