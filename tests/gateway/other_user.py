"""Another user's raw MCP client of a gateway, run under ``setpriv`` as that user (stdlib only:
the test's interpreter may live where that user cannot read).

    python other_user.py SOCKET SERVER TASK_ID

Over one 2025-11-25 session of ``/servers/SERVER/mcp``: starts a task of its own (``slow``),
lists tasks, asks ``tasks/get`` and ``tasks/result`` about TASK_ID (another user's), and
prints ``{"own": id, "listed": [ids], "get": response, "result": response}`` as JSON.
"""

from __future__ import annotations

import http.client
import json
import socket
import sys
from typing import Any


class _Unix(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=20)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(20)
        self.sock.connect(self._path)


def main() -> None:
    path, server, task_id = sys.argv[1:4]
    conn = _Unix(path)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    ids = iter(range(1, 100))

    def post(method: str, params: dict[str, Any], notify: bool = False) -> Any:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            msg["id"] = next(ids)
        conn.request("POST", f"/servers/{server}/mcp", json.dumps(msg), headers)
        response = conn.getresponse()
        body = response.read().decode()
        if "mcp-session-id" in {k.lower() for k in response.headers}:
            headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
            headers["MCP-Protocol-Version"] = "2025-11-25"
        if notify:
            return None
        for line in body.splitlines():  # an SSE stream: its last data line is the answer
            if line.startswith("data:"):
                body = line[5:]
        return json.loads(body)

    post("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "other", "version": "1"}})  # fmt: skip
    post("notifications/initialized", {}, notify=True)
    own = post("tools/call", {"name": "slow", "arguments": {"seconds": 30}, "task": {}})
    listed = post("tasks/list", {})
    out = {
        "own": own["result"]["task"]["taskId"],
        "listed": [t["taskId"] for t in listed["result"]["tasks"]],
        "get": post("tasks/get", {"taskId": task_id}),
        "result": post("tasks/result", {"taskId": task_id}),
        "cancel": post("tasks/cancel", {"taskId": task_id}),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
