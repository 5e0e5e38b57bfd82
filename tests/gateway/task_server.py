"""A stdio peer with 2025-11-25 tasks, for the gateway tests: ``slow(seconds)`` must run as a
task and answers after ``seconds``; ``echo(text)`` is a plain tool.

    python task_server.py [MARKER]   (MARKER: ignored, lets a test find the process)
"""

from __future__ import annotations

import os
import time

from mcp_lite.server import Server

server = Server("tasks", versions=["2025-11-25"])


@server.tool(task_support="required")
def slow(seconds: float = 0.5) -> str:
    """Answers after ``seconds``."""
    time.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def echo(text: str) -> str:
    """Returns ``text``."""
    return text


@server.tool()
def die() -> str:
    """Ends the server in the middle of the call."""
    os._exit(3)


@server.tool()
def grow() -> str:
    """Adds the tool ``extra`` and tells the client its tool list changed."""

    @server.tool(name="extra")
    def extra() -> str:
        return "extra"

    server.notify_tools_changed()
    return "grown"


if __name__ == "__main__":
    server.run_stdio()
