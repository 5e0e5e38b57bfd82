"""Starts a task through the gateway, prints its id and exits (the task lives on).

python task_starter.py URL SECONDS
"""

from __future__ import annotations

import sys

import mcp_lite

with mcp_lite.connect(sys.argv[1], timeout=20) as client:
    task = client.call_tool_as_task("slow", {"seconds": float(sys.argv[2])}, ttl=60_000)
    print(task.id, flush=True)
