"""A large tool pool served by the official Python SDK over stdio, for the Hub's LLM-facing
tests (names, search, deferred loading).

    python tool_pool_server.py [--count N] [--long] [--resources]

Tools (each answers ``<its name>:<text>``):

- ``tool_000`` … ``tool_<N-1>``, each described as "Filler operation number i"; with
  ``--long`` their names are over 100 characters (``a_very_long_..._tool_000``);
- ``weather_lookup``: "Current conditions for a city", ``_meta`` search hint
  "forecast temperature rain umbrella";
- ``deploy_service``: ``_meta["anthropic/alwaysLoad"] = true``;
- ``report.daily`` and ``report_daily``: two names that normalize to the same LLM name.

With ``--resources``: ``pool://notes`` (text) and ``pool://blob`` (binary).

Always: on ``notifications/roots/list_changed`` the server asks the client for its roots
(``roots/list``); the tool ``roots_seen`` answers ``{"changes": N, "roots": [uri, ...]}``,
the count of notifications and the roots it got last.
"""

from __future__ import annotations

import argparse
import json
import logging
import warnings
from collections.abc import Callable
from typing import Any

warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)  # the SDK warns about every long name: thousands of lines

from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp_types import NotificationParams  # noqa: E402

LONG_PREFIX = "a_very_long_generated_operation_name_from_an_openapi_document_" * 2


def _echo(name: str) -> Callable[[str], str]:
    def tool(text: str = "") -> str:
        return f"{name}:{text}"

    return tool


def build(count: int, long: bool, resources: bool) -> MCPServer:
    server = MCPServer("tool-pool")
    for i in range(count):
        name = f"{LONG_PREFIX if long else ''}tool_{i:03d}"
        server.add_tool(_echo(name), name=name, description=f"Filler operation number {i}")
    server.add_tool(
        _echo("weather_lookup"),
        name="weather_lookup",
        description="Current conditions for a city",
        meta={"anthropic/searchHint": "forecast  temperature\nrain umbrella"},
    )
    server.add_tool(
        _echo("deploy_service"),
        name="deploy_service",
        description="Deploy a service to production",
        meta={"anthropic/alwaysLoad": True},
    )
    for name in ("report.daily", "report_daily"):
        server.add_tool(_echo(name), name=name, description=f"The daily report ({name})")
    seen: dict[str, object] = {"changes": 0, "roots": []}

    async def on_roots_changed(ctx: Any, params: Any) -> None:
        result = await ctx.session.list_roots()
        seen["roots"] = [str(root.uri) for root in result.roots]
        seen["changes"] = int(str(seen["changes"])) + 1

    server._lowlevel_server.add_notification_handler(
        "notifications/roots/list_changed", NotificationParams, on_roots_changed
    )

    @server.tool()
    def roots_seen() -> str:
        """What the roots notifications brought."""
        return json.dumps(seen)

    if resources:

        @server.resource("pool://notes", name="notes", mime_type="text/plain")
        def notes() -> str:
            return "remember the milk"

        @server.resource("pool://blob", name="blob", mime_type="application/octet-stream")
        def blob() -> bytes:
            return bytes(range(256)) * 4

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--long", action="store_true")
    parser.add_argument("--resources", action="store_true")
    args = parser.parse_args()
    build(args.count, args.long, args.resources).run("stdio")


if __name__ == "__main__":
    main()
