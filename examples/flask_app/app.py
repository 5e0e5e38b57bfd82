"""A Flask app that uses MCP tools through one process-wide ``mcp_lite.Hub``.

Run it with gunicorn (``--preload`` is fine: after the fork every worker starts its own MCP
server processes on first use, and never touches its parent's)::

    gunicorn --preload -w 3 --threads 4 -b 127.0.0.1:8000 --chdir examples/flask_app app:app
    curl '127.0.0.1:8000/add?a=2&b=3'
    curl 127.0.0.1:8000/tools

The Hub is built once, at import, from a config written in code; ``Hub.from_config()``
would read ``.mcp.json`` and the user's Claude settings instead. ``MCP_DEMO_SERVER`` names
the server script (default: ``examples/demo_server.py``).
"""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path

from flask import Flask, jsonify, request

import mcp_lite

DEMO_SERVER = os.environ.get(
    "MCP_DEMO_SERVER", str(Path(__file__).resolve().parent.parent / "demo_server.py")
)

# One Hub for the whole process, shared by every request thread. Connections are lazy;
# the default permission policy is "deny", so only what the allow list names can run.
hub = mcp_lite.Hub(
    {"mcpServers": {"demo": {"command": sys.executable, "args": [DEMO_SERVER]}}},
    allow=["mcp__demo__add", "mcp__demo__word_count"],
    default_permission="deny",
    client_options={"timeout": 30},
)
atexit.register(hub.close)  # the Clients have a backstop too; this makes it explicit

if os.environ.get("MCP_WARM_UP", "1") == "1":
    hub.tools()  # connect at start-up (in the gunicorn master with --preload)

app = Flask(__name__)


@app.get("/tools")
def tools():  # type: ignore[no-untyped-def]
    """The tool pool, ready for an LLM API."""
    return jsonify(hub.tool_definitions(format="anthropic"))


@app.get("/add")
def add():  # type: ignore[no-untyped-def]
    result = hub.call_tool("mcp__demo__add",
                           {"a": int(request.args["a"]), "b": int(request.args["b"])})
    return jsonify({"result": result.text, "pid": os.getpid()})


@app.post("/call/<name>")
def call(name: str):  # type: ignore[no-untyped-def]
    try:
        result = hub.call_tool(name, request.get_json(silent=True) or {})
    except mcp_lite.PermissionDenied as exc:
        return jsonify({"error": str(exc)}), 403
    except mcp_lite.ConfigError as exc:
        return jsonify({"error": str(exc)}), 404
    except mcp_lite.McpError as exc:
        return jsonify({"error": str(exc)}), 502
    return jsonify({"text": result.text, "isError": result.is_error})


@app.get("/status")
def status():  # type: ignore[no-untyped-def]
    return jsonify({name: {"state": s.state, "error": s.error, "tools": s.tools_count}
                    for name, s in hub.status().items()})
