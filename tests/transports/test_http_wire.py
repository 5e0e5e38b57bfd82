"""The cheap POST (``transports/_http_wire.py``) and the full ``requests`` path it falls
back to: which one carries a call, and that both give the caller the same outcome.

A small keep-alive Streamable HTTP server runs in-process on 127.0.0.1; knobs on its state
make it set a cookie, redirect, close connections, vanish mid-exchange or chunk its answer.
``wire_calls`` counts the POSTs the cheap path carried (and the ones it handed back).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import ssl
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite._http import fast_post
from mcp_lite._http import h1 as _http_wire
from mcp_lite.errors import ConnectionClosed

HANDSHAKE = "2025-11-25"


@dataclass
class State:
    cookie_on: int = 0  # the n-th POST (1-based) answers with a Set-Cookie; 0: never
    redirect: bool = False  # POSTs to /mcp after initialize answer 307 to /moved
    close: str = ""  # after each answer: "header" (Connection: close), "silent", ""
    posts: int = 0
    paths: list[str] = field(default_factory=list)
    cookies: list[str | None] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)  # the client's port, per POST
    closed: set[int] = field(default_factory=set)  # client ports of connections closed
    lock: threading.Lock = field(default_factory=threading.Lock)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        extra = dict(headers or {})
        if self.state.close == "header":
            extra["Connection"] = "close"
        for key, value in extra.items():
            self.send_header(key, value)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if self.state.close:
            self.close_connection = True

    def do_GET(self) -> None:
        self._send(405)

    def do_DELETE(self) -> None:
        self._send(200)

    def do_POST(self) -> None:
        state = self.state
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        message = json.loads(body)
        with state.lock:
            state.posts += 1
            n = state.posts
            state.paths.append(self.path)
            state.cookies.append(self.headers.get("Cookie"))
            state.ports.append(self.client_address[1])
        method, msg_id = message.get("method"), message.get("id")
        headers = {"Set-Cookie": "flavour=oat; Path=/"} if n == state.cookie_on else {}
        if method == "initialize":
            result = {
                "protocolVersion": HANDSHAKE,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "wire-test", "version": "1"},
            }
            headers["Mcp-Session-Id"] = uuid.uuid4().hex
            self._send(200, _answer(msg_id, result), headers)
            return
        if msg_id is None:
            self._send(202, b"", headers)
            return
        if state.redirect and self.path.endswith("/mcp"):
            self._send(307, b"", {"Location": "/moved", **headers})
            return
        name = (message.get("params") or {}).get("name")
        text = (message.get("params") or {}).get("arguments", {}).get("text", "")
        answer = _answer(msg_id, {"content": [{"type": "text", "text": text}]})
        if name == "vanish":  # read the request, then hang up without a word
            self.close_connection = True
            return
        if name == "chunked":  # a chunked answer with a chunk extension and a trailer
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half = len(answer) // 2
            for piece in (answer[:half], answer[half:]):
                self.wfile.write(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\nX-Trailer: 1\r\n\r\n")
            return
        self._send(200, answer, headers)


def _answer(msg_id: Any, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}).encode()


@dataclass
class Server:
    url: str
    state: State


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: State

    def shutdown_request(self, request: Any) -> None:
        try:
            port = request.getpeername()[1]
        except OSError:
            port = None
        super().shutdown_request(request)
        if port is not None:
            self.state.closed.add(port)


@contextlib.contextmanager
def _serving(tls: ssl.SSLContext | None = None) -> Iterator[Server]:
    state = State()
    handler = type("BoundHandler", (Handler,), {"state": state})
    httpd = _Server(("127.0.0.1", 0), handler)
    httpd.state = state
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    scheme = "https" if tls is not None else "http"
    try:
        yield Server(f"{scheme}://127.0.0.1:{httpd.server_address[1]}/mcp", state)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def server() -> Iterator[Server]:
    with _serving() as running:
        yield running


@pytest.fixture
def tls_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """The same server over TLS, with a self-signed certificate for 127.0.0.1 that the
    client trusts through ``REQUESTS_CA_BUNDLE``."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    with _serving(context) as running:
        yield running


@dataclass
class WireCalls:
    carried: int = 0  # POSTs the cheap path carried
    handed_back: int = 0  # POSTs it left to the full requests path
    failed: int = 0  # POSTs it carried that failed (raised)


@pytest.fixture
def wire_calls(monkeypatch: pytest.MonkeyPatch) -> WireCalls:
    calls = WireCalls()
    real = fast_post.post

    def counting(*args: Any, **kwargs: Any) -> Any:
        try:
            response = real(*args, **kwargs)
        except BaseException:
            calls.failed += 1
            raise
        if response is None:
            calls.handed_back += 1
        else:
            calls.carried += 1
        return response

    monkeypatch.setattr(fast_post, "post", counting)
    return calls


def connect(url: str, **options: Any) -> mcp_lite.Client:
    options.setdefault("protocol_version", HANDSHAKE)
    options.setdefault("timeout", 10)
    return mcp_lite.connect(url, **options)


def test_calls_on_a_kept_alive_connection_take_the_cheap_path(
    server: Server, wire_calls: WireCalls
) -> None:
    with connect(server.url) as client:
        for i in range(5):
            assert client.call_tool("echo", {"text": f"hi {i}"}).text == f"hi {i}"
    assert wire_calls.carried >= 5
    assert wire_calls.handed_back >= 1  # initialize: no open connection yet, the full path
    assert len(set(server.state.ports[-5:])) == 1  # one connection for all five


def test_tls_calls_take_the_cheap_path_once_the_connection_is_open(
    tls_server: Server, wire_calls: WireCalls
) -> None:
    with connect(tls_server.url) as client:
        for i in range(5):
            assert client.call_tool("chunked", {"text": f"tls {i}"}).text == f"tls {i}"
    assert wire_calls.carried >= 5
    assert len(set(tls_server.state.ports[-5:])) == 1


def test_a_proxy_takes_the_full_path(
    server: Server, wire_calls: WireCalls, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The test server is the proxy: it answers absolute-form requests for a URL on a port
    # where nothing listens, so a call only succeeds when it went through the proxy.
    proxy = server.url.rsplit("/", 1)[0]
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    target = "http://127.0.0.1:9/mcp"
    with connect(target) as client:
        for _ in range(3):
            assert client.call_tool("echo", {"text": "via proxy"}).text == "via proxy"
    assert wire_calls.carried == 0 and wire_calls.handed_back == 0
    assert server.state.paths and all(p == target for p in server.state.paths)


def test_a_cookie_set_on_the_cheap_path_is_sent_back_by_the_full_path(
    server: Server, wire_calls: WireCalls
) -> None:
    server.state.cookie_on = 4  # initialize, initialized, a call: the 4th POST (a call)
    with connect(server.url) as client:
        for _ in range(3):
            client.call_tool("echo", {"text": "x"})
        carried = wire_calls.carried
        for _ in range(3):
            client.call_tool("echo", {"text": "x"})
    assert carried >= 2  # the cookie came on the cheap path
    assert wire_calls.carried == carried  # from then on the full path sends the cookie
    assert server.state.cookies[:4] == [None] * 4
    assert server.state.cookies[4:] == ["flavour=oat"] * (len(server.state.cookies) - 4)


def test_a_same_origin_redirect_on_the_cheap_path_is_followed(
    server: Server, wire_calls: WireCalls
) -> None:
    with connect(server.url) as client:
        server.state.redirect = True
        for i in range(3):
            assert client.call_tool("echo", {"text": str(i)}).text == str(i)
    assert wire_calls.carried >= 6  # each 307 and each POST to /moved
    assert server.state.paths[-6:] == ["/mcp", "/moved"] * 3


@pytest.mark.parametrize("how", ["header", "silent"])
def test_a_server_closing_kept_alive_connections_between_calls(
    server: Server, wire_calls: WireCalls, how: str, wait_until: Callable[..., bool]
) -> None:
    state = server.state
    with connect(server.url) as client:
        client.call_tool("echo", {"text": "first"})
        state.close = how
        for i in range(4):
            assert client.call_tool("echo", {"text": str(i)}).text == str(i)
            # "silent": the server hung up without saying so; once it has, a kept-alive
            # connection is seen to be closed and not used again.
            assert wait_until(lambda: state.ports[-1] in state.closed)
    assert len(set(server.state.ports[-4:])) == 4  # a new connection after each close


def test_a_chunked_answer_with_extensions_and_trailers(
    server: Server, wire_calls: WireCalls
) -> None:
    with connect(server.url) as client:
        for _ in range(3):
            assert client.call_tool("chunked", {"text": "in pieces"}).text == "in pieces"
        assert client.call_tool("echo", {"text": "after"}).text == "after"
    assert wire_calls.carried >= 4
    assert len(set(server.state.ports[-4:])) == 1  # each chunked body was read to its end


def _vanish_error(url: str) -> tuple[type[BaseException], str]:
    with connect(url) as client:
        for _ in range(3):  # the connection is kept alive and idle in the pool
            client.call_tool("echo", {"text": "before"})
        with pytest.raises(ConnectionClosed) as info:
            client.call_tool("vanish", {})
        assert client.call_tool("echo", {"text": "again"}).text == "again"
    return type(info.value), str(info.value)


def test_a_server_hanging_up_without_an_answer_fails_the_call_as_the_full_path_does(
    server: Server, wire_calls: WireCalls, monkeypatch: pytest.MonkeyPatch
) -> None:
    cheap = _vanish_error(server.url)
    assert wire_calls.failed == 1  # the cheap path carried the call that failed
    monkeypatch.setattr(fast_post, "post", lambda *args, **kwargs: None)
    full = _vanish_error(server.url)
    assert cheap == full


def test_eight_callers_share_one_client(server: Server, wire_calls: WireCalls) -> None:
    errors: list[BaseException] = []
    with connect(server.url) as client:

        def caller(k: int) -> None:
            try:
                for i in range(25):
                    text = f"{k}-{i}"
                    assert client.call_tool("echo", {"text": text}).text == text
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=caller, args=(k,)) for k in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert not errors
    assert wire_calls.carried >= 100
    assert len(set(server.state.ports)) <= 10  # connections are reused, not one per call


class _Drip:
    """A socket stand-in whose ``recv`` gives a few bytes at a time (a slow server)."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step = data, step

    def recv(self, n: int) -> bytes:
        piece, self.data = self.data[: min(n, self.step)], self.data[min(n, self.step) :]
        return piece


@pytest.mark.parametrize("step", [1, 2, 3, 5, 7])
def test_a_head_and_chunks_dripping_in_are_read_exactly(step: int) -> None:
    # The end of the head ("\r\n\r\n") and each chunk-size line arrive split across reads
    # at every offset; the parser searches only what is new and must still find them.
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"v" * i) for i in range(40))
        + b"Transfer-Encoding: chunked\r\n\r\n"
    )
    body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    chunked = b"%x;ext=1\r\n%s\r\n0\r\nTrailer: t\r\n\r\n" % (len(body), body)
    wire = _http_wire._Wire(_Drip(head + chunked, step))  # type: ignore[arg-type]
    status, _, version, fields, _ = wire.head()
    assert (status, version) == (200, 11)
    assert fields["x-pad-39"] == ("X-Pad-39", "v" * 39)
    returned: list[object] = []

    class Pool:
        def _put_conn(self, conn: object) -> None:
            returned.append(conn)

    conn = object()
    reader = _http_wire._Body(Pool(), conn, wire, status, version, fields, None)
    got = b""
    while piece := reader.read1(1 << 16):
        got += piece
    assert got == body
    assert returned == [conn]  # read to its end, trailers included: the connection is reused
