"""An MCP server (mcp_lite.Server) whose ``meta`` tool returns the ``_meta`` it got, for the
trace-propagation tests: over stdio, or ``trace_server.py http PORT`` (Streamable HTTP on
127.0.0.1)."""

from __future__ import annotations

from mcp_lite.server import Context, Server

server = Server("trace")


@server.tool()
def meta(ctx: Context) -> dict[str, str]:
    """The request's _meta entries that are strings."""
    return {k: v for k, v in ctx.meta.items() if isinstance(v, str)}


@server.tool()
def broken() -> str:
    """Always fails (a result with isError)."""
    raise ValueError("broken on purpose")


@server.prompt(description="A greeting")
def greet(name: str) -> str:
    return f"Hello {name}"


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["http"]:
        server.run_http("127.0.0.1", int(sys.argv[2]))
    else:
        server.run_stdio()
