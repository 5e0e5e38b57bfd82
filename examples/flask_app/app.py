"""A Flask app that uses MCP tools through ``mcp_lite.contrib.flask`` (one Hub per process).

Run it with gunicorn (``--preload`` is fine: each worker builds its own Hub, and starts its
own MCP server processes, on first use; it never touches its parent's)::

    gunicorn --preload -w 3 --threads 4 -b 127.0.0.1:8000 --chdir examples/flask_app app:app
    curl '127.0.0.1:8000/add?a=2&b=3'
    curl 127.0.0.1:8000/tools

The servers are in ``app.config["MCP_LITE"]`` (see ``mcp_lite.contrib.settings``; a project's
``.mcp.json`` works too: ``{"mcp_json": ".../.mcp.json", "trust_project": ["demo"]}``).
``MCP_DEMO_SERVER`` names the server script (default: ``examples/demo_server.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from flask import Flask, jsonify, request

import mcp_lite
from mcp_lite.contrib.flask import McpLite

DEMO_SERVER = os.environ.get(
    "MCP_DEMO_SERVER", str(Path(__file__).resolve().parent.parent / "demo_server.py")
)

app = Flask(__name__)
# The default permission is "deny", so only what the allow list names can run.
app.config["MCP_LITE"] = {
    "servers": {"demo": {"command": sys.executable, "args": [DEMO_SERVER]}},
    "allow": ["mcp__demo__add", "mcp__demo__word_count"],
    "default_permission": "deny",
    "client_options": {"timeout": 30},
}
mcp = McpLite(app)

if os.environ.get("MCP_WARM_UP", "1") == "1":
    with app.app_context():
        mcp.hub.tools()  # connect at start-up (the gunicorn master's own Hub with --preload)


@app.get("/tools")
def tools():  # type: ignore[no-untyped-def]
    """The tool pool, ready for an LLM API."""
    return jsonify(mcp.hub.tool_definitions(format="anthropic"))


@app.get("/add")
def add():  # type: ignore[no-untyped-def]
    result = mcp.hub.call_tool(
        "mcp__demo__add", {"a": int(request.args["a"]), "b": int(request.args["b"])}
    )
    return jsonify({"result": result.text, "pid": os.getpid()})


@app.post("/call/<name>")
def call(name: str):  # type: ignore[no-untyped-def]
    try:
        result = mcp.hub.call_tool(name, request.get_json(silent=True) or {})
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
                    for name, s in mcp.hub.status().items()})
