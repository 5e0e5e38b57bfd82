"""A WSGI app for gunicorn ``--preload``: one module-level Hub, built (and warmed up) at import,
i.e. in the preloaded master, then used by every forked worker: the fork case.

    FLEET_CONFIG=mcp.json [MCP_LITE_GATEWAY=unix:///path.sock] \
        gunicorn --preload -w 8 -b 127.0.0.1:PORT fleet_wsgi:app

``GET /call?tool=mcp__plain__add&a=1&b=2`` (or ``&text=...`` for an echo) answers
``{"text", "is_error", "pid", "via"}``; a failed call answers 502 with ``{"error", "type",
"pid"}``. Each call has a bounded timeout (``&timeout=S``, else ``FLEET_CALL_TIMEOUT``, default
10 s).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

from mcp_lite import Hub
from mcp_lite.errors import McpError

CALL_TIMEOUT = float(os.environ.get("FLEET_CALL_TIMEOUT", "10"))

hub = Hub.from_config(config_files=[os.environ["FLEET_CONFIG"]])
if os.environ.get("FLEET_WARM_UP", "1") == "1":
    hub.call_tool("mcp__plain__add", {"a": 0, "b": 0}, timeout=60)  # the master's connection


def _arguments(query: dict[str, list[str]]) -> dict[str, Any]:
    if "text" in query:
        return {"text": query["text"][0]}
    return {"a": int(query["a"][0]), "b": int(query["b"][0])}


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    query = parse_qs(environ.get("QUERY_STRING", ""))
    tool = query["tool"][0]
    server = tool.split("__")[1]
    try:
        timeout = float(query.get("timeout", [CALL_TIMEOUT])[0])
        result = hub.call_tool(tool, _arguments(query), timeout=timeout)
        status = "200 OK"
        body = {"text": result.text, "is_error": result.is_error, "pid": os.getpid(),
                "via": hub.status()[server].via}
    except McpError as exc:
        status = "502 Bad Gateway"
        body = {"error": str(exc), "type": type(exc).__name__, "pid": os.getpid()}
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(data)))])
    return [data]
