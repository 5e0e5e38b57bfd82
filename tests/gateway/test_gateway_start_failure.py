"""A failure to start a server behind the gateway goes to the request that made that start
attempt, never to a later one: the next request tries the start again. The server's command
fails the first time (it leaves a marker file) and works from then on."""

from __future__ import annotations

import http.client
import json
import socket
import sys
from pathlib import Path
from typing import Any

from gateway_helpers import PEERS

import mcp_lite
from mcp_lite import Gateway, Hub
from mcp_lite.errors import McpError
from mcp_lite.hub import Backoff

# fails (exit 3) while the marker file is missing, creating it; then runs the plain server
FAILS_ONCE = """
import os, sys
marker, server = sys.argv[1], sys.argv[2]
if not os.path.exists(marker):
    open(marker, "w").close()
    sys.exit(3)
os.execv(sys.executable, [sys.executable, server])
"""


def _post(sock: str, path: str, message: dict[str, Any]) -> int:
    class Conn(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(20)
            self.sock.connect(sock)

    conn = Conn("localhost", timeout=20)
    try:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        conn.request("POST", path, body=json.dumps(message), headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _gateway(short_dir: Path) -> tuple[Gateway, Path]:
    marker = short_dir / "started-once"
    entry = {
        "command": sys.executable,
        "args": ["-c", FAILS_ONCE, str(marker), str(PEERS / "plain_server.py")],
    }
    # one attempt per use and no cool-down: only the gateway's handling decides what a
    # request after the failed start gets
    hub = Hub(
        {"mcpServers": {"flaky": entry}},
        gateway=False,
        backoff=Backoff(max_attempts=1, cooldown=0),
    )
    return Gateway(hub, connect_timeout=20).start(str(short_dir / "s.sock")), marker


def test_a_failed_start_is_not_handed_to_a_later_request(short_dir: Path) -> None:
    gw, marker = _gateway(short_dir)
    with gw:
        # a request refused before it is forwarded (no session id) still made the gateway
        # try to start the server (to know its era): that start fails
        status = _post(gw.socket_path or "", "/servers/flaky/mcp", {
            "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {},
        })  # fmt: skip
        assert status == 400
        assert marker.exists(), "the refused request did not try to start the server"
        assert gw.hub.status()["flaky"].state == "failed"
        # the next request starts it again, and it works now
        url = f"{gw.url}/servers/flaky/mcp"
        with mcp_lite.connect(url, protocol_version="2025-11-25", timeout=20) as client:
            assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
        assert gw.hub.status()["flaky"].state == "connected"


def test_the_request_that_made_the_start_gets_its_failure_and_the_next_retries(
    short_dir: Path,
) -> None:
    gw, marker = _gateway(short_dir)
    with gw:
        url = f"{gw.url}/servers/flaky/mcp"
        try:
            with mcp_lite.connect(url, protocol_version="2025-11-25", timeout=20):
                pass
        except McpError as exc:
            assert "'flaky'" in str(exc) and "connecting" in str(exc)
        else:
            raise AssertionError("the first start did not fail")
        assert marker.exists()
        with mcp_lite.connect(url, protocol_version="2025-11-25", timeout=20) as client:
            assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
