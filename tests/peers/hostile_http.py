"""Hostile MCP peers over HTTP, legacy SSE and WebSocket (stdlib only), for the deadline matrix.

``HostileServer(peer, at_connect=...).start()`` listens on 127.0.0.1 (a free port) and serves
the three remote transports at once:

- ``/mcp``: Streamable HTTP of the handshake era (``server/discover`` is "no such method";
  ``/modern`` answers it as a 2026-07-28 server, stateless);
- ``/sse``: legacy HTTP+SSE (the ``endpoint`` event names ``/messages?s=<id>``);
- ``/ws``: WebSocket, subprotocol ``mcp``.

``peer`` is how it misbehaves:

- ``silent``: accepts TCP, reads the request, never sends a byte (holds the socket);
- ``handshake``: answers the handshake (``initialize`` and its notification,
  ``server/discover``), then nothing;
- ``drip``: sends its whole answer (status line and headers included) one byte every
  ``DRIP`` seconds;
- ``pages``: every ``*/list`` answer carries a new ``nextCursor`` (after ``PAGE_DELAY``);
- ``busy429`` / ``busy503``: ``429`` / ``503`` with ``Retry-After: 3600``;
- ``ignore_close``: a normal server that never answers (nor acts on) a WebSocket close frame;
- ``normal``: behaves.

With ``at_connect=True`` the misbehaviour starts with the first request (the handshake, the
SSE ``GET``, the WebSocket upgrade); else only after the handshake. ``stop()`` closes every
socket it holds. Nothing here leaves 127.0.0.1.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import os
import queue
import select
import shutil
import socket
import struct
import tempfile
import threading
import time
from typing import Any

DRIP = 0.1  # seconds between two bytes of a dripped answer
PAGE_DELAY = 0.05  # seconds before each page of a never-ending list
RETRY_AFTER = 3600
PEERS = ("silent", "handshake", "drip", "pages", "busy429", "busy503")
_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_HANDSHAKE = frozenset({"initialize", "notifications/initialized", "server/discover"})
_LISTS = {
    "tools/list": ("tools", lambda n: {"name": f"t{n}", "inputSchema": {"type": "object"}}),
    "resources/list": ("resources", lambda n: {"uri": f"mem://r{n}", "name": f"r{n}"}),
    "resources/templates/list": (
        "resourceTemplates",
        lambda n: {"uriTemplate": f"mem://t{n}/{{x}}", "name": f"t{n}"},
    ),
    "prompts/list": ("prompts", lambda n: {"name": f"p{n}"}),
}
_STATUS = {"busy429": b"429 Too Many Requests", "busy503": b"503 Service Unavailable"}
_CAPABILITIES = {"tools": {}, "resources": {}, "prompts": {}, "completions": {}, "logging": {}}


def _result(request_id: Any, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def _error(request_id: Any, code: int, message: str) -> bytes:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(body).encode()


def _ws_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 126]) + struct.pack(">H", n)
    else:
        head = bytes([0x80 | opcode, 127]) + struct.pack(">Q", n)
    return head + payload


class _Closed(Exception):
    pass


def _drip_quietly(conn: _Conn, data: bytes) -> None:
    with contextlib.suppress(_Closed, OSError):
        conn.drip(data)


class _Conn:
    """One accepted socket, read with a small buffer (the server's side of one connection)."""

    def __init__(self, sock: socket.socket, stop: threading.Event) -> None:
        self.sock = sock
        self.stop = stop
        self.buffer = b""
        self.write_lock = threading.Lock()

    def _fill(self) -> None:
        while not self.stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.1)
            if ready:
                data = self.sock.recv(65536)
                if not data:
                    raise _Closed
                self.buffer += data
                return
        raise _Closed

    def read_until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            self._fill()
        head, _, self.buffer = self.buffer.partition(marker)
        return head

    def read_exact(self, n: int) -> bytes:
        while len(self.buffer) < n:
            self._fill()
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def write(self, data: bytes) -> None:
        with self.write_lock:
            self.sock.sendall(data)

    def drip(self, data: bytes) -> None:
        for i in range(len(data)):
            if self.stop.wait(DRIP):
                raise _Closed
            self.write(data[i : i + 1])

    def hold(self) -> None:
        """Send nothing, read (and drop) whatever comes, until the client hangs up."""
        while True:
            self._fill()
            self.buffer = b""


class HostileServer:
    def __init__(self, peer: str = "normal", *, at_connect: bool = False) -> None:
        self.peer = peer
        self.at_connect = at_connect
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port = self._listener.getsockname()[1]
        # The same server on a Unix socket too (``unix_url``): HTTP over ``unix://``.
        self._unix_dir = tempfile.mkdtemp(prefix="mcph-", dir="/tmp")
        self.socket_path = os.path.join(self._unix_dir, "h.sock")
        self._unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._unix.bind(self.socket_path)
        self._unix.listen(64)
        self._unix.setblocking(False)
        self._socks: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._streams: dict[str, queue.Queue[bytes | None]] = {}
        self._ids = itertools.count(1)
        self.hung_up = 0  # connections the client closed while we held them
        # Misbehaving yet? From the first request with ``at_connect``, else once ``arm()``ed.
        self.armed = at_connect
        self._pid = os.getpid()

    def behave(self, peer: str, *, at_connect: bool = False) -> None:
        """Behave as ``peer`` from now on (one server shared by many cells, re-armed per cell;
        connections of earlier cells are closed by their clients)."""
        self.peer, self.at_connect, self.armed = peer, at_connect, at_connect

    def held_fds(self) -> set[str]:
        """The fds of the sockets this server holds (the server's side, not the client's)."""
        with self._lock:
            return {str(s.fileno()) for s in self._socks if s.fileno() >= 0}

    def arm(self) -> None:
        """Misbehave from now on (called by the test once the client is connected; from a
        forked child too, which tells the server's process over its own socket)."""
        if os.getpid() == self._pid:
            self.armed = True
            return
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(b"POST /__arm HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
            sock.recv(1024)

    def unix_url(self, path: str = "/mcp") -> str:
        return f"unix://{self.socket_path}{path}"

    def url(self, path: str = "/mcp") -> str:
        scheme = "ws" if path.startswith("/ws") else "http"
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def start(self) -> HostileServer:
        thread = threading.Thread(target=self._accept, daemon=True, name="hostile-accept")
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        for q in list(self._streams.values()):
            q.put(None)
        with self._lock:
            socks = list(self._socks)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(5)
        self._listener.close()
        self._unix.close()
        shutil.rmtree(self._unix_dir, ignore_errors=True)
        for sock in socks:
            sock.close()

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- plumbing --------------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._listener, self._unix], [], [], 0.1)
                if not ready:
                    continue
                sock, _ = ready[0].accept()
                sock.setblocking(True)
            except (TimeoutError, OSError):
                continue
            with self._lock:
                self._socks.add(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, sock: socket.socket) -> None:
        conn = _Conn(sock, self._stop)
        try:
            while not self._stop.is_set():
                head = conn.read_until(b"\r\n\r\n").decode("latin-1")
                line, *lines = head.split("\r\n")
                method, path, _ = line.split(" ", 2)
                headers = {}
                for item in lines:
                    key, _, value = item.partition(":")
                    headers[key.strip().lower()] = value.strip()
                body = conn.read_exact(int(headers.get("content-length") or 0))
                if not self._http(conn, method, path, headers, body):
                    return
        except _Closed:
            if not self._stop.is_set():
                self.hung_up += 1
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._socks.discard(sock)
            with contextlib.suppress(OSError):
                sock.close()

    def _behaviour(self, method: str | None) -> str:
        """What to do with one request (``None``: the SSE GET, the WebSocket upgrade)."""
        if self.peer == "pages":
            return "page" if method in _LISTS else "normal"
        if self.peer in ("normal", "ignore_close") or not self.armed:
            return "normal"
        if self.peer == "handshake":  # answers the handshake, then nothing
            return "normal" if method is None or method in _HANDSHAKE else "silent"
        return self.peer

    def _respond(
        self, conn: _Conn, how: str, status: bytes, ctype: str, body: bytes, extra: str = ""
    ) -> bool:
        """Answer one HTTP request the way ``how`` says; False: the connection is over."""
        if how == "silent":
            conn.hold()
            return False
        if how in _STATUS:
            text = b"retry later"
            conn.write(
                b"HTTP/1.1 " + _STATUS[how] + b"\r\nRetry-After: %d\r\nContent-Type: text/plain"
                b"\r\nContent-Length: %d\r\n\r\n" % (RETRY_AFTER, len(text)) + text
            )
            return True
        head = f"HTTP/1.1 {status.decode()}\r\n{extra}"
        if ctype:
            head += f"Content-Type: {ctype}\r\n"
        data = (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        if how == "drip":
            conn.drip(data)
            return True
        conn.write(data)
        return True

    def _answer(self, message: dict[str, Any], how: str, modern: bool) -> bytes | None:
        """The JSON-RPC answer of a normal (or paging) server to ``message``."""
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            return None
        params = message.get("params") or {}
        if how == "page" and method in _LISTS:
            time.sleep(PAGE_DELAY)
            key, item = _LISTS[method]
            n = next(self._ids)
            return _result(rid, {key: [item(n)], "nextCursor": f"c{n}"})
        if method == "server/discover":
            if not modern:
                return _error(rid, -32601, "no method server/discover")
            meta = {"io.modelcontextprotocol/serverInfo": {"name": "hostile", "version": "1"}}
            return _result(
                rid,
                {"supportedVersions": ["2026-07-28"], "capabilities": _CAPABILITIES, "_meta": meta},
            )
        if method == "initialize":
            return _result(
                rid,
                {
                    "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                    "capabilities": _CAPABILITIES,
                    "serverInfo": {"name": "hostile", "version": "1"},
                },
            )
        if method in _LISTS:
            return _result(rid, {_LISTS[method][0]: []})
        if method == "tools/call":
            return _result(rid, {"content": [{"type": "text", "text": "ok"}]})
        if method == "resources/read":
            return _result(rid, {"contents": [{"uri": params.get("uri"), "text": "ok"}]})
        if method == "prompts/get":
            return _result(rid, {"messages": []})
        if method == "completion/complete":
            return _result(rid, {"completion": {"values": []}})
        return _result(rid, {})

    # --- HTTP ------------------------------------------------------------------------------------

    def _http(
        self, conn: _Conn, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> bool:
        if method == "GET" and headers.get("upgrade", "").lower() == "websocket":
            self._websocket(conn, headers)
            return False
        if method == "GET" and path.startswith("/sse"):
            self._sse_stream(conn)
            return False
        if method == "GET":
            return self._respond(conn, "normal", b"405 Method Not Allowed", "", b"")
        if path == "/__arm":
            self.armed = True
            return self._respond(conn, "normal", b"200 OK", "", b"")
        if method == "DELETE":
            return self._respond(conn, "normal", b"200 OK", "", b"")
        message = json.loads(body or b"null")
        if not isinstance(message, dict):
            return self._respond(conn, "normal", b"400 Bad Request", "", b"")
        how = self._behaviour(message.get("method"))
        if path.startswith("/messages"):
            return self._sse_post(conn, path, message, how)
        modern = path.startswith("/modern")
        answer = self._answer(message, how, modern)
        if answer is None:
            return self._respond(conn, "normal", b"202 Accepted", "", b"")
        extra = "Mcp-Session-Id: s1\r\n" if message.get("method") == "initialize" else ""
        return self._respond(conn, how, b"200 OK", "application/json", answer, extra)

    def _sse_stream(self, conn: _Conn) -> None:
        how = self._behaviour(None)
        if how == "silent":
            conn.hold()
            return
        if how in _STATUS:
            self._respond(conn, how, b"", "", b"")
            return
        sid = str(next(self._ids))
        events: queue.Queue[bytes | None] = queue.Queue()
        self._streams[sid] = events
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
        )
        endpoint = f"event: endpoint\ndata: /messages?s={sid}\n\n".encode()
        if how == "drip":
            conn.drip(head + endpoint)
        else:
            conn.write(head + endpoint)
        while not self._stop.is_set():
            item = events.get()
            if item is None:
                return
            conn.write(b"event: message\ndata: " + item + b"\n\n")

    def _sse_post(self, conn: _Conn, path: str, message: dict[str, Any], how: str) -> bool:
        events = self._streams.get(path.rpartition("=")[2])
        if how in ("silent", "drip") or how in _STATUS:
            return self._respond(conn, how, b"202 Accepted", "", b"")
        if not self._respond(conn, "normal", b"202 Accepted", "", b""):
            return False
        answer = self._answer(message, how, False)
        if answer is not None and events is not None:
            events.put(answer)
        return True

    # --- WebSocket -------------------------------------------------------------------------------

    def _websocket(self, conn: _Conn, headers: dict[str, str]) -> None:
        how = self._behaviour(None)
        if how == "silent":
            conn.hold()
            return
        if how in _STATUS:
            self._respond(conn, how, b"", "", b"")
            return
        accept = base64.b64encode(
            hashlib.sha1((headers.get("sec-websocket-key", "") + _GUID).encode()).digest()
        ).decode()
        head = (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: mcp\r\n\r\n"
        ).encode()
        if how == "drip":
            conn.drip(head)
        else:
            conn.write(head)
        while True:
            first, second = conn.read_exact(2)
            opcode, length = first & 0x0F, second & 0x7F
            if length == 126:
                (length,) = struct.unpack(">H", conn.read_exact(2))
            elif length == 127:
                (length,) = struct.unpack(">Q", conn.read_exact(8))
            mask = conn.read_exact(4) if second & 0x80 else b"\0\0\0\0"
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(conn.read_exact(length)))
            if opcode == 0x8:  # close
                if self.peer == "ignore_close":
                    continue
                conn.write(_ws_frame(payload[:2], 0x8))
                return
            if opcode == 0x9:  # ping
                conn.write(_ws_frame(payload, 0xA))
                continue
            if opcode != 0x1:
                continue
            message = json.loads(payload)
            step = self._behaviour(message.get("method"))
            if step in ("silent",) or step in _STATUS:
                continue  # no HTTP status inside a WebSocket: a busy server just says nothing
            answer = self._answer(message, step, False)
            if answer is None:
                continue
            if step == "drip":
                dripper = threading.Thread(target=_drip_quietly, args=(conn, _ws_frame(answer)))
                self._threads.append(dripper)
                dripper.start()
            else:
                conn.write(_ws_frame(answer))
