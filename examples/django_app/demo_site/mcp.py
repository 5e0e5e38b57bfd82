"""The process-wide Hub: import ``hub`` from here in views, tasks and management commands.

Connections are lazy, so importing this module starts nothing; the first call (in each
process: gunicorn workers, Celery workers) starts that process's own MCP servers.
"""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path

import mcp_lite

DEMO_SERVER = os.environ.get(
    "MCP_DEMO_SERVER", str(Path(__file__).resolve().parents[2] / "demo_server.py")
)

hub = mcp_lite.Hub(
    {"mcpServers": {"demo": {"command": sys.executable, "args": [DEMO_SERVER]}}},
    allow=["mcp__demo__add", "mcp__demo__word_count"],
    default_permission="deny",
    client_options={"timeout": 30},
)
atexit.register(hub.close)
