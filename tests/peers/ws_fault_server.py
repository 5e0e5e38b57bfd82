"""A hostile WebSocket MCP server (stdlib only), for the WebSocket fault tests. Bound to
127.0.0.1::

    python ws_fault_server.py --port N [--token T] [--record PATH]

It speaks just enough MCP (handshake era): ``initialize``, ``ping``, ``tools/list``
(``echo``) and ``tools/call``. ``tools/call`` by tool name:

- ``echo``: answers with the ``text`` argument.
- ``huge``: sends the header of a 300 MiB text frame and a few KiB of it, then nothing more
  (keeps the socket open, reading): a client that assembles frames before checking their
  size would wait, and hold what it got.
- ``fragments``: sends 1 MiB continuation fragments, never the final one, until the client
  closes: the message grows past any limit only by its fragments.
- ``stop``: stops reading the socket for good (no answer): the client's writes fill the
  socket buffers.
- ``bad-utf8``: answers with a text frame that is not valid UTF-8.

``--token T``: the handshake needs ``Authorization: Bearer T``, else HTTP 401.
``--record PATH``: appends the ``Authorization`` header of every handshake (or ``null``) as a
JSON line.
"""

from __future__ import annotations

import argparse
import json
import socketserver
import struct
import threading
import time
from typing import Any

from ws_server import CLOSE, CONT, PING, PONG, TEXT, frame, read_frame
from ws_server import GUID as _GUID

HUGE = 300 * 1024 * 1024
FRAGMENT = 1024 * 1024


def accept_key(key: str) -> str:
    import base64
    import hashlib

    return base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()


class Handler(socketserver.StreamRequestHandler):
    server: Server

    def handle(self) -> None:
        request_line = self.rfile.readline()
        headers: dict[str, str] = {}
        while True:
            line = self.rfile.readline().decode("latin-1").strip()
            if not line:
                break
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        opts = self.server.opts
        if opts.record:
            with open(opts.record, "a", encoding="utf-8") as f:
                f.write(json.dumps(headers.get("authorization")) + "\n")
        if not request_line.startswith(b"GET ") or "sec-websocket-key" not in headers:
            self.wfile.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return
        if opts.token and headers.get("authorization") != f"Bearer {opts.token}":
            self.wfile.write(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n"
                b"Content-Length: 0\r\n\r\n"
            )
            return
        self.wfile.write(
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {accept_key(headers['sec-websocket-key'])}\r\n"
                "Sec-WebSocket-Protocol: mcp\r\n\r\n"
            ).encode()
        )
        self.lock = threading.Lock()
        try:
            while True:
                opcode, data = read_frame(self.rfile)
                if opcode == CLOSE:
                    self.send(frame(CLOSE, data[:2]))
                    return
                if opcode == PING:
                    self.send(frame(PONG, data))
                elif opcode == TEXT:
                    self.on_message(json.loads(data))
        except (EOFError, OSError):
            pass

    def send(self, data: bytes) -> None:
        with self.lock:
            self.wfile.write(data)
            self.wfile.flush()

    def reply(self, rid: Any, result: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "id": rid, "result": result}
        self.send(frame(TEXT, json.dumps(message).encode()))

    def on_message(self, msg: dict[str, Any]) -> None:
        method, rid = msg.get("method"), msg.get("id")
        if method is None or rid is None:
            return
        params = msg.get("params") or {}
        if method == "initialize":
            self.reply(
                rid,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "ws-fault", "version": "1"},
                },
            )
        elif method == "tools/list":
            tool = {"name": "echo", "inputSchema": {"type": "object"}}
            self.reply(rid, {"tools": [tool]})
        elif method == "tools/call":
            name = params.get("name")
            if name == "huge":
                header = bytes([0x80 | TEXT, 127]) + struct.pack(">Q", HUGE)
                self.send(header + b'{"jsonrpc":"2.0","id":%d,"result":{"x":"' % rid)
                self.send(b"x" * 4096)
            elif name == "fragments":
                self.send(bytes([TEXT, 127]) + struct.pack(">Q", FRAGMENT) + b" " * FRAGMENT)
                while True:
                    piece = bytes([CONT, 127]) + struct.pack(">Q", FRAGMENT) + b" " * FRAGMENT
                    self.send(piece)
            elif name == "bad-utf8":
                raw = b'{"jsonrpc":"2.0","id":%d,"result":{"text":"caf\xc3\x28"}}' % rid
                self.send(frame(TEXT, raw))
            elif name == "stop":
                time.sleep(3600)
            else:
                text = (params.get("arguments") or {}).get("text", "")
                self.reply(rid, {"content": [{"type": "text", "text": text}]})
        else:
            self.reply(rid, {})


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, opts: Any) -> None:
        super().__init__(("127.0.0.1", opts.port), Handler)
        self.opts = opts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token")
    parser.add_argument("--record")
    opts = parser.parse_args()
    with Server(opts) as server:
        server.serve_forever()


if __name__ == "__main__":
    main()
