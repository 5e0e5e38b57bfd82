"""A worker that leaves while the gateway writes its answer: the gateway (``mcp-lite gateway``,
a real process) goes on serving and writes no ``BrokenPipeError`` traceback on its stderr."""

from __future__ import annotations

import http.client
import json
import os
import socket
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway_helpers import GatewayProcess, wait_for

ROOT = Path(__file__).resolve().parents[2]
BIG = 2 * 1024 * 1024  # far more than a Unix socket holds: the write blocks until read

BIG_SERVER = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from mcp_lite.server import Server

server = Server("big")

@server.tool()
def big(size: int) -> str:
    return "x" * size

server.run_stdio()
"""


def _post(sock_path: str, body: dict[str, Any], session: str | None) -> tuple[int, Any, str]:
    class Conn(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(30)
            self.sock.connect(sock_path)

    conn = Conn("localhost", timeout=30)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if session:
        headers["Mcp-Session-Id"] = session
    try:
        conn.request("POST", "/servers/big/mcp", json.dumps(body), headers)
        response = conn.getresponse()
        data = response.read()
        return (
            response.status,
            json.loads(data) if data else None,
            response.getheader("Mcp-Session-Id") or (session or ""),
        )
    finally:
        conn.close()


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_a_worker_that_leaves_mid_answer_leaves_no_traceback(
    short_dir: Path, gateway_process: Callable[..., GatewayProcess]
) -> None:
    (short_dir / "big.py").write_text(BIG_SERVER)
    config = short_dir / "mcp.json"
    entry = {"command": sys.executable, "args": [str(short_dir / "big.py")]}
    config.write_text(json.dumps({"mcpServers": {"big": entry}}))
    gw = gateway_process(config)
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "leaver", "version": "1"},
        },
    }
    status, _, session = _post(gw.socket, init, None)
    assert status == 200 and session
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert _post(gw.socket, note, session)[0] == 202
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "big", "arguments": {"size": 16}},
    }
    status, answer, _ = _post(gw.socket, call, session)  # the server runs: its fds are open
    assert status == 200 and answer["result"]["content"][0]["text"] == "x" * 16
    settled = _fds(gw.proc.pid)

    body = json.dumps({**call, "id": 3, "params": {"name": "big", "arguments": {"size": BIG}}})
    raw = (
        "POST /servers/big/mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Accept: application/json\r\nMcp-Session-Id: {session}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n{body}"
    ).encode()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(gw.socket)
    sock.sendall(raw)
    assert sock.recv(16).startswith(b"HTTP/1.1 200")  # the answer is being written
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()  # gone with the rest unread: the gateway's write breaks
    # the gateway closed its end of that connection: it handled the failed write
    assert wait_for(lambda: _fds(gw.proc.pid) <= settled, timeout=30)
    assert _post(gw.socket, {**call, "id": 4}, session)[0] == 200  # still serving
    gw.stop()
    assert gw.proc.stderr is not None
    err = gw.proc.stderr.read()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
