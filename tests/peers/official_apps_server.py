"""An MCP Apps server built with the official Python SDK (PyPI ``mcp`` 2.3), a real peer over
stdio: ``python official_apps_server.py``.

It declares two extensions with settings (``io.modelcontextprotocol/ui`` through the SDK's
``Apps``, and ``com.example/settings`` with nested, arbitrary settings) and offers:

- ``clock()``: bound to ``ui://clock/app.html`` (visible to the model and the app);
- ``tick(n)``: app-only (``visibility: ["app"]``), bound to the same resource;
- ``client_extensions()``: the client's declared extensions, as the server saw them (JSON);
- ``ui://clock/app.html``: the HTML, with ``_meta.ui`` (CSP, permissions, domain).
"""

from __future__ import annotations

import json
import warnings
from typing import Any

warnings.filterwarnings("ignore")

from mcp.server.apps import Apps, ResourceCsp, ResourcePermissions  # noqa: E402
from mcp.server.extension import Extension  # noqa: E402
from mcp.server.mcpserver import Context, MCPServer  # noqa: E402

SETTINGS = {"nested": {"list": [1, "two", None, True], "x-unknown": {"deep": 1.5}}, "flag": False}
HTML = "<!doctype html><html><body><p id='time'></p></body></html>"


class ExampleSettings(Extension):
    identifier = "com.example/settings"

    def settings(self) -> dict[str, Any]:
        return json.loads(json.dumps(SETTINGS))


apps = Apps()


@apps.tool(resource_uri="ui://clock/app.html", description="The time, shown in an app")
def clock() -> str:
    return "12:00"


@apps.tool(resource_uri="ui://clock/app.html", visibility=["app"], description="App-only")
def tick(n: int) -> str:
    return f"tick {n}"


apps.add_html_resource(
    "ui://clock/app.html",
    HTML,
    csp=ResourceCsp(connect_domains=["https://api.example.com"]),
    permissions=ResourcePermissions(clipboard_write={}),
    domain="clock.example.com",
    prefers_border=True,
)

server: MCPServer[Any] = MCPServer("official-apps", extensions=[apps, ExampleSettings()])


@server.tool()
def client_extensions(ctx: Context) -> str:
    """The client's declared extensions, as this server saw them."""
    caps = ctx.client_capabilities
    declared = caps.extensions if caps is not None else None
    return json.dumps(declared or {}, sort_keys=True)


if __name__ == "__main__":
    server.run("stdio")
