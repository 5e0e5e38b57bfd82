"""A WebSocket MCP peer: each WebSocket connection is bridged to a fresh stdio server.

Neither PyPI ``mcp`` 2.3.0 nor ``@modelcontextprotocol/sdk`` ships a WebSocket *server* (only
client transports), so this small stdlib-only RFC 6455 server puts the official-SDK peer
(``official_server.py stdio``, by default) behind a WebSocket: one JSON-RPC message per text
frame, subprotocol ``mcp``. Bound to 127.0.0.1 only::

    python ws_server.py --port N [--token T] [--token-header NAME] [--drop-on TEXT]
                        [--no-pong] [-- COMMAND ...]

- ``--token``: the handshake needs header ``NAME: T`` (default NAME
  ``X-Claude-Code-Ide-Authorization``), else HTTP 401.
- ``--drop-on TEXT``: a client message containing TEXT makes the server drop the TCP
  connection at once (no close frame): the client must notice.
- ``--no-pong``: stop answering pings once the stdio server has spoken (a peer that goes
  silent after the handshake; pings before it, while the server starts, are answered).

The stdio child runs in this process's group, so stopping the group stops everything.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import socket
import socketserver
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TEXT, BINARY, CLOSE, PING, PONG, CONT = 0x1, 0x2, 0x8, 0x9, 0xA, 0x0


def read_frame(stream: BinaryIO) -> tuple[int, bytes]:
    """One whole message (continuations joined): (opcode, payload). EOFError at the end."""
    opcode_first: int | None = None
    payload = b""
    while True:
        head = _exact(stream, 2)
        fin, opcode = head[0] & 0x80, head[0] & 0x0F
        length = head[1] & 0x7F
        if length == 126:
            length = struct.unpack(">H", _exact(stream, 2))[0]
        elif length == 127:
            length = struct.unpack(">Q", _exact(stream, 8))[0]
        mask = _exact(stream, 4) if head[1] & 0x80 else b""
        data = _exact(stream, length)
        if mask:
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        if opcode >= 0x8:  # control frames may come between fragments
            return opcode, data
        if opcode_first is None:
            opcode_first = opcode
        payload += data
        if fin:
            return opcode_first, payload


def _exact(stream: BinaryIO, n: int) -> bytes:
    data = stream.read(n)
    if len(data) < n:
        raise EOFError
    return data


def frame(opcode: int, payload: bytes) -> bytes:
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + struct.pack(">H", n)
    else:
        head += bytes([127]) + struct.pack(">Q", n)
    return head + payload


class Bridge(socketserver.StreamRequestHandler):
    server: Server

    relayed = False  # the stdio server has sent something

    def handle(self) -> None:
        headers = self._handshake()
        if headers is None:
            return
        opts = self.server.opts
        child = subprocess.Popen(
            opts.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr
        )
        lock = threading.Lock()
        pump = threading.Thread(target=self._pump, args=(child, lock), daemon=True)
        pump.start()
        try:
            while True:
                opcode, data = read_frame(self.rfile)
                if opcode == CLOSE:
                    with lock:
                        self.wfile.write(frame(CLOSE, data[:2]))
                    break
                if opcode == PING and not (opts.no_pong and self.relayed):
                    with lock:
                        self.wfile.write(frame(PONG, data))
                elif opcode in (TEXT, BINARY):
                    if opts.drop_on and opts.drop_on.encode() in data:
                        self.connection.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                        self.connection.close()
                        break
                    assert child.stdin is not None
                    child.stdin.write(data.rstrip(b"\n") + b"\n")
                    child.stdin.flush()
        except (EOFError, OSError):
            pass
        finally:
            child.kill()
            child.wait()

    def _handshake(self) -> dict[str, str] | None:
        request_line = self.rfile.readline()
        headers: dict[str, str] = {}
        while True:
            line = self.rfile.readline().decode("latin-1").strip()
            if not line:
                break
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        opts = self.server.opts
        if not request_line.startswith(b"GET ") or "sec-websocket-key" not in headers:
            self.wfile.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return None
        if opts.token and headers.get(opts.token_header.lower()) != opts.token:
            self.wfile.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
            return None
        accept = base64.b64encode(
            hashlib.sha1((headers["sec-websocket-key"] + GUID).encode()).digest()
        ).decode()
        reply = (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n"
        )
        protocols = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",")]
        if "mcp" in protocols:
            reply += "Sec-WebSocket-Protocol: mcp\r\n"
        self.wfile.write((reply + "\r\n").encode())
        return headers

    def _pump(self, child: subprocess.Popen[bytes], lock: threading.Lock) -> None:
        assert child.stdout is not None
        try:
            for line in child.stdout:
                if line.strip():
                    self.relayed = True
                    with lock:
                        self.wfile.write(frame(TEXT, line.rstrip(b"\n")))
        except (OSError, ValueError):
            pass


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, opts: Any) -> None:
        super().__init__(("127.0.0.1", opts.port), Bridge)
        self.opts = opts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token")
    parser.add_argument("--token-header", default="X-Claude-Code-Ide-Authorization")
    parser.add_argument("--drop-on")
    parser.add_argument("--no-pong", action="store_true")
    parser.add_argument("command", nargs="*")
    opts = parser.parse_args()
    if not opts.command:
        opts.command = [
            sys.executable,
            str(Path(__file__).with_name("official_server.py")),
            "stdio",
        ]
    with Server(opts) as server:
        server.serve_forever()


if __name__ == "__main__":
    main()
