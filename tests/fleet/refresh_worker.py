"""One worker of a fleet sharing OAuth tokens in Redis: it finds the shared token expired,
refreshes it (or takes the one another worker just got), and calls the server a few times.
It never logs in: being asked to is a failure (the fleet lost its authorization).

    python refresh_worker.py MCP_URL REDIS_URL START_AT
"""

from __future__ import annotations

import sys
import time

import mcp_lite
from mcp_lite.auth import OAuth, RedisTokenStore

url, redis_url, start_at = sys.argv[1], sys.argv[2], float(sys.argv[3])


def refuse(authorization_url: str) -> str:
    raise RuntimeError("asked to log in again: the fleet lost its authorization")


oauth = OAuth(url, store=RedisTokenStore(redis_url, prefix="fleet:"),
              authorization_handler=refuse, open_browser=False)
while time.time() < start_at:  # every worker starts its refresh at the same moment
    time.sleep(0.002)
with mcp_lite.connect(url, auth=oauth, timeout=30, protocol_version="2025-11-25") as client:
    for _ in range(3):
        assert client.call_tool("echo", {}).text == "ok"
print("authorized")
