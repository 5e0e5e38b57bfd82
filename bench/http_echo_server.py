"""A minimal Streamable HTTP MCP server for the remote-transport benchmark (stdlib only).

    python bench/http_echo_server.py [--port PORT]

Binds 127.0.0.1 only (``--port 0``, the default, picks a free port) and prints one line,
``listening on http://127.0.0.1:PORT/mcp``, once it accepts connections. One thread per
connection (``http.server.ThreadingHTTPServer``), HTTP/1.1 keep-alive, every answer with a
``Content-Length``. It speaks the handshake era like a legacy (2025) Streamable HTTP server,
answering every request with one JSON body (``Content-Type: application/json``, no SSE):

- ``POST initialize``: the requested version when it is one of 2024-11-05 / 2025-03-26 /
  2025-06-18 / 2025-11-25 (else 2025-11-25), and a new ``Mcp-Session-Id``.
- ``POST`` of any other request without a session id: HTTP 400 with the JSON-RPC error
  -32600 "Bad Request: Missing session ID" (id null), which is how the official SDK's stateful
  Streamable HTTP server answers a request that precedes ``initialize``; so a 2026-07-28
  ``server/discover`` probe sent before the handshake is refused and the client falls back to
  ``initialize``. An unknown session id: HTTP 404 (-32001 "Session not found"). An
  ``MCP-Protocol-Version`` header naming no handshake version: HTTP 400.
- With a session: ``ping`` -> ``{}``; ``tools/list`` -> one tool, ``echo``; ``tools/call`` of
  ``echo`` -> its ``text`` argument as a text block (the arguments as compact JSON when there
  is no ``text``); any other method (``server/discover`` included) -> HTTP 200 with the
  JSON-RPC error -32601.
- Notifications and client responses: HTTP 202, empty body.
- ``GET``: HTTP 405 (no server-initiated stream); ``DELETE``: ends the session, HTTP 200.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOST = "127.0.0.1"
PATH = "/mcp"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = "2025-11-25"
ECHO_TOOL = {
    "name": "echo",
    "description": "Echoes its text argument.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}
SERVER_INFO = {"name": "http-echo-server", "version": "1.0"}

INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
PARSE_ERROR = -32700
SESSION_NOT_FOUND = -32001

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class State:
    """The live session ids (a set behind a lock: one thread per connection)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sessions: set[str] = set()

    def open(self) -> str:
        sid = uuid.uuid4().hex
        with self.lock:
            self.sessions.add(sid)
        return sid

    def known(self, sid: str) -> bool:
        return sid in self.sessions

    def end(self, sid: str) -> bool:
        with self.lock:
            if sid in self.sessions:
                self.sessions.discard(sid)
                return True
        return False


STATE = State()


def echo_text(arguments: Any) -> str:
    if isinstance(arguments, dict) and isinstance(arguments.get("text"), str):
        return arguments["text"]
    return _dumps(arguments)


def result(msg_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": value}


def error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def answer(method: str, msg_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC answer to one request inside a session."""
    if method == "tools/call":
        if params.get("name") != "echo":
            return error(msg_id, INVALID_PARAMS, f"unknown tool {params.get('name')!r}")
        text = echo_text(params.get("arguments") or {})
        return result(msg_id, {"content": [{"type": "text", "text": text}], "isError": False})
    if method == "tools/list":
        return result(msg_id, {"tools": [ECHO_TOOL]})
    if method == "ping":
        return result(msg_id, {})
    return error(msg_id, METHOD_NOT_FOUND, f"Method not found: {method}")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server_version = "http-echo-server/1.0"

    def version_string(self) -> str:
        return self.server_version
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # --- replies ------------------------------------------------------------------------------

    def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None
               ) -> None:
        self.send_response(status)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _json(self, status: int, message: dict[str, Any], headers: dict[str, str] | None = None
              ) -> None:
        self._reply(status, _dumps(message).encode("utf-8"), headers)

    def _read_body(self) -> bytes | None:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._json(411, error(None, INVALID_REQUEST, "Length Required"))
            self.close_connection = True
            return None
        return self.rfile.read(int(length))

    # --- methods ------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._json(405, error(None, INVALID_REQUEST, "Method Not Allowed"),
                   {"Allow": "POST, DELETE"})

    def do_DELETE(self) -> None:
        sid = self.headers.get("Mcp-Session-Id")
        if not sid:
            self._json(400, error(None, INVALID_REQUEST, "Bad Request: Missing session ID"))
        elif STATE.end(sid):
            self._reply(200)
        else:
            self._json(404, error(None, SESSION_NOT_FOUND, "Session not found"))

    def do_POST(self) -> None:
        raw = self._read_body()
        if raw is None:
            return
        if self.path.split("?", 1)[0] != PATH:
            self._json(404, error(None, INVALID_REQUEST, f"Not Found: {self.path}"))
            return
        try:
            message = json.loads(raw)
        except ValueError as exc:
            self._json(400, error(None, PARSE_ERROR, f"Parse error: {exc}"))
            return
        if not isinstance(message, dict):
            self._json(400, error(None, INVALID_REQUEST, "Invalid Request: one JSON-RPC "
                                                         "message per POST"))
            return
        method = message.get("method")
        msg_id = message.get("id")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "initialize" and msg_id is not None:
            requested = params.get("protocolVersion")
            version = requested if requested in HANDSHAKE_VERSIONS else LATEST
            sid = STATE.open()
            self._json(200, result(msg_id, {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": SERVER_INFO,
            }), {"Mcp-Session-Id": sid})
            return
        sid = self.headers.get("Mcp-Session-Id")
        if not sid:
            self._json(400, error(None, INVALID_REQUEST, "Bad Request: Missing session ID"))
            return
        if not STATE.known(sid):
            self._json(404, error(None, SESSION_NOT_FOUND, "Session not found"))
            return
        version = self.headers.get("MCP-Protocol-Version")
        if version is not None and version not in HANDSHAKE_VERSIONS:
            self._json(400, error(None, INVALID_REQUEST,
                                  f"Bad Request: Unsupported protocol version: {version}"))
            return
        if not isinstance(method, str) or msg_id is None:
            self._reply(202)  # a notification, or our answer to a server request
            return
        self._json(200, answer(method, msg_id, params))


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any)")
    args = parser.parse_args(argv)
    httpd = Server((HOST, args.port), Handler)
    port = httpd.server_address[1]
    print(f"listening on http://{HOST}:{port}{PATH}", flush=True)
    try:
        httpd.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
