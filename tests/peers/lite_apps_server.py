"""An MCP Apps server built with mcp_lite.Server: ``python lite_apps_server.py [NAME]`` serves
it over stdio; ``apps_server(name)`` builds it in-process (tests/hub/test_mcp_apps.py).

Tools: ``now`` (with an app), ``tick(n)`` (app-only), ``model_only``, ``legacy`` (the flat
``_meta["ui/resourceUri"]``), ``plain`` (no ``_meta.ui``), ``host_sees`` (the client's declared
extensions as JSON); resource ``ui://clock/app.html`` with ``_meta.ui`` (CSP, permissions,
domain). The server declares ``io.modelcontextprotocol/ui``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from mcp_lite import Context, Server

UI = "io.modelcontextprotocol/ui"
UI_SETTINGS = {"mimeTypes": ["text/html;profile=mcp-app"]}
HTML = "<!doctype html><p>clock</p>"
RESOURCE_META = {
    "ui": {
        "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": []},
        "permissions": {"clipboardWrite": {}},
        "domain": "clock.example.com",
        "prefersBorder": True,
    }
}


def apps_server(name: str = "clock") -> Server:
    server = Server(name, extensions={UI: {}})

    @server.tool(meta={"ui": {"resourceUri": "ui://clock/app.html"}})
    def now() -> str:
        """The time, with an app."""
        return "12:00"

    @server.tool(meta={"ui": {"resourceUri": "ui://clock/app.html", "visibility": ["app"]}})
    def tick(n: int) -> str:
        """Only the app calls this."""
        return f"tick {n}"

    @server.tool(meta={"ui": {"visibility": ["model"]}})
    def model_only() -> str:
        return "model"

    @server.tool(meta={"ui/resourceUri": "ui://clock/old.html"})
    def legacy() -> str:
        return "old"

    @server.tool()
    def plain() -> str:
        return "plain"

    @server.tool()
    def host_sees(ctx: Context) -> str:
        return json.dumps(ctx.client_capabilities.get("extensions"), sort_keys=True)

    @server.resource("ui://clock/app.html", mime_type="text/html;profile=mcp-app")
    def app_html() -> dict[str, Any]:
        return {
            "contents": [
                {
                    "uri": "ui://clock/app.html",
                    "mimeType": "text/html;profile=mcp-app",
                    "text": HTML,
                    "_meta": RESOURCE_META,
                }
            ]
        }

    return server


if __name__ == "__main__":
    apps_server(sys.argv[1] if len(sys.argv) > 1 else "clock").run_stdio()
