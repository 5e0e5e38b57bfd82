"""The tool pool of ``tool_pool_server.py`` on ``mcp_lite.Server``, for the Hub's LLM-facing
tests that are about names, search, deferred loading and permissions, not about a process:
``pool_server(count, long=, resources=)`` builds it in-process (tests/hub/), and
``python lite_pool_server.py [--count N] [--long] [--resources]`` serves it over stdio.

The same tools, ``_meta`` and resources as the official-SDK pool (see its docstring), except
that ``roots_seen`` answers the roots the client has now (tests/client/test_set_roots.py uses
the SDK pool for the roots notifications).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from mcp_lite import Context, Server

LONG_PREFIX = "a_very_long_generated_operation_name_from_an_openapi_document_" * 2


def _echo(name: str) -> Callable[[str], str]:
    def tool(text: str = "") -> str:
        return f"{name}:{text}"

    return tool


def pool_server(count: int, long: bool = False, resources: bool = False) -> Server:
    server = Server("tool-pool")
    for i in range(count):
        name = f"{LONG_PREFIX if long else ''}tool_{i:03d}"
        server.tool(name=name, description=f"Filler operation number {i}")(_echo(name))
    server.tool(
        name="weather_lookup",
        description="Current conditions for a city",
        meta={"anthropic/searchHint": "forecast  temperature\nrain umbrella"},
    )(_echo("weather_lookup"))
    server.tool(
        name="deploy_service",
        description="Deploy a service to production",
        meta={"anthropic/alwaysLoad": True},
    )(_echo("deploy_service"))
    for name in ("report.daily", "report_daily"):
        server.tool(name=name, description=f"The daily report ({name})")(_echo(name))

    @server.tool()
    def roots_seen(ctx: Context) -> str:
        """What the roots notifications brought."""
        return json.dumps({"roots": [r["uri"] for r in ctx.list_roots()]})

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
    pool_server(args.count, args.long, args.resources).run_stdio()


if __name__ == "__main__":
    main()
