"""client.set_roots: the new list is served and notifications/roots/list_changed sent, so a
server that then lists roots sees it (official Python SDK peer over stdio)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import mcp_lite

POOL = str(Path(__file__).resolve().parents[1] / "peers" / "tool_pool_server.py")


def _seen(client: mcp_lite.Client, changes: int) -> dict[str, object]:
    deadline = time.monotonic() + 30  # the server lists roots after the notification
    while True:
        seen = json.loads(client.call_tool("roots_seen").text)
        if seen["changes"] >= changes or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def test_set_roots_notifies_and_the_server_lists_the_new_roots(tmp_path: Path) -> None:
    cmd = [sys.executable, POOL, "--count", "0"]
    with mcp_lite.connect(cmd, roots=["file:///first"], protocol_version="2025-11-25") as client:
        assert json.loads(client.call_tool("roots_seen").text)["changes"] == 0
        client.set_roots(["file:///second", {"uri": "file:///third", "name": "third"}])
        assert _seen(client, 1) == {"changes": 1, "roots": ["file:///second", "file:///third"]}
        client.set_roots([str(tmp_path)])
        assert _seen(client, 2) == {"changes": 2, "roots": [f"file://{tmp_path}"]}


def test_without_roots_at_connect_the_capability_comes_with_the_next_connection() -> None:
    cmd = [sys.executable, POOL, "--count", "0"]
    with mcp_lite.connect(cmd, protocol_version="2025-11-25") as client:
        client.set_roots(["file:///later"])  # not declared on this connection: no notification
        time.sleep(0.2)
        assert json.loads(client.call_tool("roots_seen").text)["changes"] == 0
        assert client._handlers.capabilities.get("roots") == {"listChanged": True}
