"""A misbehaving Streamable HTTP MCP server (stdlib only), for the transport fault tests.

Import it and call ``FaultHttpServer().start()`` (tests do, in-process, so they can read its
counters), or run ``python fault_http_server.py --port N``. Always bound to 127.0.0.1.

Paths (each is a Streamable HTTP endpoint of the handshake era, sessions required):

- ``/mcp``: GET answers 405 (counted).
- ``/poll``: GET sends ``retry: 10``, one event with an id (a log notification) and ends the
  stream cleanly: the 2025-11-25 polling pattern. Records each ``Last-Event-ID``.
- ``/get500``: GET always answers 500.
- ``/auth``: every request needs ``Authorization: Bearer <state.token>`` (else
  ``state.auth_status``, 401 by default).
- ``/redirect``: POST answers 307 to the same path on ``localhost`` (another origin).
- ``/modern``: also answers ``server/discover`` as a 2026-07-28 server (stateless requests).
- ``/sse``: legacy HTTP+SSE whose ``endpoint`` event names another origin.

Tools (``tools/call`` by name): ``echo`` (JSON answer), ``stream`` (SSE: a progress
notification, then the answer), ``drop`` (SSE with event ids, the connection closed before the
answer; GET with ``Last-Event-ID`` replays it), ``boom`` (HTTP 500 with a body), ``slow`` (an
SSE stream of keep-alives until the client cancels or disconnects), ``reset`` (the first
``state.resets`` calls reset the TCP connection), ``garbage`` (a malformed event, then the
answer), ``garbage_close`` (a malformed event, then the end), ``expire`` (the first call forgets
every session and answers 404).

Hostile tools (hardening, issue 9): ``hang`` (never sends response headers; records the request
id in ``state.disconnected`` once the client hangs up), ``drip`` (headers, then one byte of the
body every 50 ms, forever), ``gzip`` (a gzip-encoded JSON answer), ``bomb`` (a gzip body of a
few hundred KiB that inflates to ``state.bomb_size`` bytes), ``chunked_broken`` (a chunked body
cut off mid-chunk), ``truncated`` (fewer bytes than ``Content-Length``), ``busy`` (429 with
``Retry-After: 0`` for the first ``state.busy`` calls, then the answer), ``unavailable`` (503
without ``Retry-After``, always). ``tools/list`` answers 503 for the first ``state.list_503``
lists. ``/slowdelete``: DELETE waits 20 s before answering. ``/slowack``: legacy HTTP+SSE
whose POSTs of ``tools/call`` ``hang`` are never acknowledged (``/silentsse``: its GET never
answers at all) (no response headers) and
``big202`` gets a 202 with a body of ``state.big202_size`` bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import queue
import select
import socket
import socketserver
import struct
import sys
import threading
import time
import uuid
import zlib
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HEADERED_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
        "note": {"type": "string"},
        "nested": {
            "type": "object",
            "properties": {"id": {"type": "string", "x-mcp-header": "Id"}},
        },
    },
}
SCHEMAS = {"headered": HEADERED_SCHEMA}
TOOLS = [
    "echo",
    "stream",
    "drop",
    "boom",
    "slow",
    "reset",
    "garbage",
    "garbage_close",
    "expire",
    "headered",
    "hang",
    "drip",
    "gzip",
    "bomb",
    "chunked_broken",
    "truncated",
    "busy",
    "unavailable",
]


@dataclass
class State:
    """What the server saw and how it behaves; read by tests."""

    sessions: set[str] = field(default_factory=set)
    counts: Counter[str] = field(default_factory=Counter)
    last_event_ids: list[str] = field(default_factory=list)
    cancelled: list[Any] = field(default_factory=list)
    disconnected: list[Any] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    replay: dict[str, bytes] = field(default_factory=dict)
    token: str = "good"
    auth_status: int = 401
    resets: int = 3
    expired_once: bool = False
    busy: int = 2
    list_503: int = 0
    bomb_size: int = 64 * 1024 * 1024
    big202_size: int = 300 * 1024 * 1024
    sent202: int = 0  # bytes of the big 202 body the client took
    hanging: int = 0  # requests currently held without an answer
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, key: str) -> None:
        with self.lock:
            self.counts[key] += 1


def _sse(data: Any, event_id: str | None = None) -> bytes:
    out = f"id: {event_id}\n" if event_id else ""
    text = data if isinstance(data, str) else json.dumps(data)
    return (out + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n").encode()


def _result(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _text(request_id: Any, text: str) -> dict[str, Any]:
    return _result(request_id, {"content": [{"type": "text", "text": text}], "isError": False})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FaultHttpServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def state(self) -> State:
        return self.server.state

    # --- plumbing -----------------------------------------------------------------------------

    def _send(
        self,
        status: int,
        body: bytes = b"",
        ctype: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, message: Any, headers: dict[str, str] | None = None, status: int = 200) -> None:
        self._send(status, json.dumps(message).encode(), headers=headers)

    def _open_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _reset(self) -> None:
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def _authorized(self) -> bool:
        if not self.path.startswith("/auth"):
            return True
        if self.headers.get("Authorization") == f"Bearer {self.state.token}":
            return True
        status = self.state.auth_status
        self.state.count(str(status))
        self._send(status, b'{"error": "invalid_token"}', headers={"WWW-Authenticate": "Bearer"})
        return False

    # --- GET and DELETE -------------------------------------------------------------------------

    def do_GET(self) -> None:
        self.state.count("GET " + self.path)
        if self.path.startswith("/slowack"):
            self._legacy_stream()
            return
        if self.path.startswith("/silentsse"):
            self._hold("GET")
            return
        if self.path.startswith("/sse"):
            self._open_stream()
            self.wfile.write(b"event: endpoint\ndata: http://localhost:1/messages\n\n")
            self.wfile.flush()
            return
        if not self._authorized():
            return
        last = self.headers.get("Last-Event-ID")
        if last:
            self.state.last_event_ids.append(last)
        if last and last in self.state.replay:
            self._open_stream()
            self.wfile.write(self.state.replay.pop(last))
            return
        if self.path.startswith("/poll"):
            n = self.state.counts["GET " + self.path]
            self._open_stream()
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": f"poll {n}"},
            }
            self.wfile.write(b"retry: 10\n\n" + _sse(note, f"p{n}"))
            return
        if self.path.startswith("/get500"):
            self._send(500, b"no stream today", "text/plain")
            return
        self._send(405, b"", "text/plain", {"Allow": "POST, DELETE"})

    def do_DELETE(self) -> None:
        if self.path.startswith("/slowdelete"):
            self.state.count("slow DELETE")
            self.state.stopping.wait(20)
        sid = self.headers.get("Mcp-Session-Id", "")
        self.state.deleted.append(sid)
        self.state.sessions.discard(sid)
        self._send(204 if sid else 400)

    # --- POST ---------------------------------------------------------------------------------

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        if self.path.startswith("/slowack/messages"):
            self._legacy_post(body)
            return
        if self.path.startswith("/redirect"):
            port = self.server.server_address[1]
            self._send(307, b"", "text/plain", {"Location": f"http://localhost:{port}/mcp"})
            return
        if not self._authorized():
            return
        method = body.get("method")
        request_id = body.get("id")
        self.state.count(f"POST {method}")
        self.state.headers.append({k.lower(): v for k, v in self.headers.items()})
        if method == "server/discover" and self.path.startswith("/modern"):
            self._json(
                _result(
                    request_id,
                    {
                        "supportedVersions": ["2026-07-28"],
                        "capabilities": {"tools": {}},
                        "_meta": {
                            "io.modelcontextprotocol/serverInfo": {"name": "fault", "version": "1"}
                        },
                    },
                )
            )
            return
        modern = self.headers.get("MCP-Protocol-Version") == "2026-07-28"
        if method == "initialize":
            sid = uuid.uuid4().hex
            self.state.sessions.add(sid)
            self._json(
                _result(
                    request_id,
                    {
                        "protocolVersion": body["params"]["protocolVersion"],
                        "capabilities": {"tools": {}, "logging": {}},
                        "serverInfo": {"name": "fault-http", "version": "1.0"},
                    },
                ),
                headers={"Mcp-Session-Id": sid},
            )
            return
        if not modern and self.headers.get("Mcp-Session-Id") not in self.state.sessions:
            self._send(404, b"session not found", "text/plain")
            return
        if request_id is None or method is None:
            if method == "notifications/cancelled":
                self.state.cancelled.append(body["params"].get("requestId"))
            self._send(202)
            return
        if method == "tools/list" and self.state.list_503 > 0:
            with self.state.lock:
                self.state.list_503 -= 1
            self.state.count("503 tools/list")
            self._send(503, b"try later", "text/plain")
        elif method == "tools/list":
            self._json(
                _result(
                    request_id,
                    {
                        "tools": [
                            {"name": n, "inputSchema": SCHEMAS.get(n, {"type": "object"})}
                            for n in TOOLS
                        ]
                    },
                )
            )
        elif method == "tools/call":
            self._tool(body["params"]["name"], request_id)
        else:
            self._json(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": -32601, "message": f"no method {method}"},
                }
            )

    def _tool(self, name: str, request_id: Any) -> None:
        state = self.state
        state.count(f"tool {name}")
        if name == "echo":
            self._json(_text(request_id, "echo"))
        elif name == "stream":
            self._open_stream()
            progress = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": request_id, "progress": 1, "total": 2},
            }
            self.wfile.write(_sse(progress) + _sse(_text(request_id, "streamed")))
        elif name == "drop":
            key = f"d{request_id}"
            state.replay[f"{key}-2"] = _sse(_text(request_id, "resumed"), f"{key}-3")
            self._open_stream()
            progress = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": request_id, "progress": 1},
            }
            self.wfile.write(b"retry: 10\n" + _sse("", f"{key}-1") + _sse(progress, f"{key}-2"))
        elif name == "boom":
            self._send(500, b"kaboom: the tool server fell over", "text/plain")
        elif name == "reset" and state.counts["tool reset"] <= state.resets:
            self._reset()
        elif name == "reset":
            self._json(_text(request_id, "no reset"))
        elif name == "garbage":
            self._open_stream()
            self.wfile.write(b"data: {not json\n\n" + _sse(_text(request_id, "after garbage")))
        elif name == "garbage_close":
            self._open_stream()
            self.wfile.write(b"data: {not json\n\n")
        elif name == "expire" and not state.expired_once:
            state.expired_once = True
            state.sessions.clear()
            self._send(404, b"session expired", "text/plain")
        elif name == "expire":
            self._json(_text(request_id, "fresh session"))
        elif name == "headered":
            self._json(_text(request_id, "headered"))
        elif name == "slow":
            self._slow(request_id)
        elif name == "hang":
            self._hold(request_id)
        elif name == "drip":
            self._drip(request_id)
        elif name == "gzip":
            data = gzip.compress(json.dumps(_text(request_id, "unzipped")).encode())
            self._send(200, data, headers={"Content-Encoding": "gzip"})
        elif name == "bomb":
            self._send(200, _bomb(state.bomb_size), headers={"Content-Encoding": "gzip"})
        elif name == "chunked_broken":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"100\r\n" + json.dumps(_text(request_id, "cut")).encode()[:40])
            self.wfile.flush()
            self._reset()
        elif name == "truncated":
            data = json.dumps(_text(request_id, "truncated")).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data) + 100))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.close_connection = True
        elif name == "busy" and state.counts["tool busy"] <= state.busy:
            self._send(429, b"slow down", "text/plain", {"Retry-After": "0"})
        elif name == "busy":
            self._json(_text(request_id, "not busy"))
        elif name == "unavailable":
            self._send(503, b"unavailable", "text/plain")

    def _hold(self, request_id: Any) -> None:
        """Never answer; note when the client hangs up (or the server stops)."""
        with self.state.lock:
            self.state.hanging += 1
        self.close_connection = True
        try:
            while not self.state.stopping.is_set():
                readable, _, _ = select.select([self.connection], [], [], 0.05)
                if not readable:
                    continue
                try:
                    data = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    data = b""
                if not data:
                    self.state.disconnected.append(request_id)
                    return
                time.sleep(0.05)
        finally:
            with self.state.lock:
                self.state.hanging -= 1

    def _drip(self, request_id: Any) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        self.close_connection = True
        with self.state.lock:
            self.state.hanging += 1
        try:
            while not self.state.stopping.is_set():
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    self.state.disconnected.append(request_id)
                    return
                time.sleep(0.05)
        finally:
            with self.state.lock:
                self.state.hanging -= 1

    # --- legacy HTTP+SSE with slow acknowledgements (/slowack) -----------------------------------

    def _legacy_stream(self) -> None:
        sid = uuid.uuid4().hex
        outbox: queue.Queue[bytes] = queue.Queue()
        self.server.outboxes[sid] = outbox
        self._open_stream()
        self.wfile.write(f"event: endpoint\ndata: /slowack/messages?sid={sid}\n\n".encode())
        self.wfile.flush()
        while not self.state.stopping.is_set():
            try:
                item = outbox.get(timeout=0.05)
            except queue.Empty:
                continue
            try:
                self.wfile.write(item)
                self.wfile.flush()
            except OSError:
                return

    def _legacy_post(self, body: Any) -> None:
        sid = self.path.split("sid=", 1)[-1]
        outbox = self.server.outboxes.get(sid)
        if outbox is None:
            self._send(404, b"no such session", "text/plain")
            return
        method = body.get("method")
        request_id = body.get("id")
        self.state.count(f"legacy {method}")
        name = (body.get("params") or {}).get("name")
        if method == "tools/call" and name == "hang":
            self._hold(request_id)
            return
        if method == "tools/call" and name == "big202":
            self._big202()
            return
        if method == "tools/call" and name == "busy" and self.state.counts["legacy busy"] < 2:
            self.state.count("legacy busy")
            self._send(503, b"busy", "text/plain", {"Retry-After": "0"})
            return
        self._send(202, b"Accepted", "text/plain")
        if request_id is None:
            if method == "notifications/cancelled":
                self.state.cancelled.append(body["params"].get("requestId"))
            return
        if method == "initialize":
            answer = _result(
                request_id,
                {
                    "protocolVersion": "2024-11-05",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fault-legacy", "version": "1.0"},
                },
            )
        elif method == "tools/list":
            answer = _result(
                request_id,
                {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in TOOLS]},
            )
        elif method == "tools/call":
            answer = _text(request_id, f"legacy {name}")
        else:
            answer = {"jsonrpc": "2.0", "id": request_id, "result": {}}
        outbox.put(_sse(answer).replace(b"data:", b"event: message\ndata:", 1))

    def _big202(self) -> None:
        size = self.state.big202_size
        self.send_response(202)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        self.close_connection = True
        block = b"x" * 65536
        sent = 0
        try:
            while sent < size and not self.state.stopping.is_set():
                self.wfile.write(block)
                sent += len(block)
                self.state.sent202 = sent
        except OSError:
            pass

    def _slow(self, request_id: Any) -> None:
        self._open_stream()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not self.state.stopping.is_set():
            if request_id in self.state.cancelled:
                return
            try:
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
            except OSError:
                self.state.disconnected.append(request_id)
                return
            time.sleep(0.05)


_BOMBS: dict[int, bytes] = {}


def _bomb(size: int) -> bytes:
    """``size`` bytes of spaces, gzip-compressed (about 1000:1)."""
    if size not in _BOMBS:
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = b" " * (1024 * 1024)
        parts = [packer.compress(block) for _ in range(size // len(block))]
        _BOMBS[size] = b"".join(parts) + packer.flush()
    return _BOMBS[size]


class _Running:
    """``start`` (its own serving thread) and ``stop`` of both servers below."""

    state: State
    _thread: threading.Thread | None
    thread_name = "fault-http-server"

    def start(self) -> Any:
        self._thread = threading.Thread(
            target=self.serve_forever,  # type: ignore[attr-defined]
            kwargs={"poll_interval": 0.05},
            name=self.thread_name,
            daemon=True,
        )
        self._thread.start()
        return self

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that left before its answer was written (the fault tests do) is no
        error worth a traceback in the test output; anything else is."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)  # type: ignore[misc]

    def stop(self) -> None:
        self.state.stopping.set()
        self.shutdown()  # type: ignore[attr-defined]
        self.server_close()  # type: ignore[attr-defined]
        if self._thread is not None:
            self._thread.join(5)


class FaultHttpServer(_Running, ThreadingHTTPServer):
    """The server; ``url(path)`` gives a full URL, ``state`` what it saw."""

    daemon_threads = True
    allow_reuse_address = True
    # a real server's backlog: with the stdlib's 5, a burst of 16 connects loses SYNs and each
    # lost one waits out the kernel's 1 s retry, so the caller sees a connect timeout
    request_queue_size = 128

    def __init__(self, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.state = State()
        self.outboxes: dict[str, queue.Queue[bytes]] = {}
        self._thread: threading.Thread | None = None

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


class _OneShot(Handler):
    """Answers one request, then the server closes the connection (a kept-alive
    connection's idle timeout, as the client meets it)."""

    def handle(self) -> None:
        self.handle_one_request()


class UnixFaultHttpServer(_Running, socketserver.ThreadingUnixStreamServer):
    """The same server on a Unix socket at ``path``: ``url(path)`` is a ``unix://`` URL (the
    client's lean HTTP path, ``mcp_lite/_http/unix_client.py``), ``state`` what it saw."""

    daemon_threads = True
    request_queue_size = 128
    thread_name = "fault-http-server-unix"

    def __init__(self, path: str) -> None:
        super().__init__(path, Handler)
        self.socket_path = path
        self.accepted = 0  # connections accepted
        self.finished = 0  # connections closed by the server
        self.one_shot = False  # True: close each connection after one answer (no header says so)
        self.server_address = ("localhost", 0)  # what /redirect names (another origin)
        self.state = State()
        self.outboxes: dict[str, queue.Queue[bytes]] = {}
        self._thread: threading.Thread | None = None

    def url(self, path: str = "/mcp") -> str:
        return f"unix://{self.socket_path}{path}"

    def get_request(self) -> Any:
        request = super().get_request()
        self.accepted += 1
        return request

    def finish_request(self, request: Any, client_address: Any) -> None:
        (_OneShot if self.one_shot else Handler)(request, client_address, self)

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)  # closes it
        self.finished += 1

    def stop(self) -> None:
        super().stop()
        with contextlib.suppress(OSError):
            os.unlink(self.socket_path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    server = FaultHttpServer(args.port)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
