"""mcp_lite's small server with task tools, for the resume tests (both eras).

    python task_server.py stdio [VERSION] [MARKER]

VERSION: the one protocol version to speak (default: all); MARKER: ignored, lets a test find
the process. Tools (all ``taskSupport: "required"``): ``build`` (ends at once with "built"),
``slow`` (answers after ``seconds``), ``hold`` (runs until cancelled: a task that never
finishes). The resume tests serve the same tools
over HTTP inside the test process (``tools(server)``).
"""

from __future__ import annotations

import sys
import time

from mcp_lite.server import Context, Server


def tools(server: Server) -> Server:
    @server.tool(task_support="required")
    def build(steps: int = 1) -> str:
        """A short job."""
        return f"built in {steps} steps"

    @server.tool(task_support="required")
    def slow(seconds: float = 0.5) -> str:
        """Answers after ``seconds``."""
        time.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(task_support="required")
    def hold(ctx: Context) -> str:
        """Runs until cancelled."""
        while not ctx.cancelled.is_set():
            time.sleep(0.02)
        return "held"

    return server


if __name__ == "__main__" and sys.argv[1:2] == ["stdio"]:
    versions = sys.argv[2:3] if len(sys.argv) > 2 and sys.argv[2] != "all" else None
    tools(Server("tasks", versions=versions)).run_stdio()
