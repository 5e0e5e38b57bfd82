"""Streamable HTTP over a Unix domain socket: ``unix://`` targets and ``serve_http(socket=...)``.

Real peers only: a mcp_lite ``Server`` on a socket in ``tmp_path``, and raw ``AF_UNIX``
listeners for what a server must not do (never answer) or to see the request it was sent.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite import Hub, Server
from mcp_lite._http.unix import split_url
from mcp_lite.auth import OAuth
from mcp_lite.errors import ConfigError, ConnectError, RequestTimeout

ERAS = ("2025-11-25", "2026-07-28")


def _server() -> Server:
    server = Server("unix-demo")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return server


@pytest.fixture
def served(sock_dir: Path) -> Iterator[tuple[str, str]]:
    path = str(sock_dir / "srv.sock")
    http = _server().serve_http(socket=path)
    try:
        yield path, http.url
    finally:
        http.close()


class _Raw:
    """A raw AF_UNIX listener: records each request head; ``answer`` (or nothing) goes back."""

    def __init__(self, path: str, answer: bytes | None) -> None:
        self.heads: list[bytes] = []
        self._answer = answer
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(path)
        self._sock.listen(8)
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            data = b""
            while b"\r\n\r\n" not in data:
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    break
                if not chunk:
                    break
                data += chunk
            self.heads.append(data.split(b"\r\n\r\n", 1)[0])
            if self._answer is not None:
                conn.sendall(self._answer)
                conn.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not)
        self._sock.close()
        for conn in self._conns:
            conn.close()
        self._thread.join(timeout=5)


@pytest.mark.parametrize("era", ERAS)
def test_list_and_call_tools_over_a_unix_socket_in_both_eras(
    served: tuple[str, str], era: str
) -> None:
    _, url = served
    assert url.startswith("unix:///")
    with mcp_lite.connect(url, protocol_version=era, timeout=5) as client:
        assert client.protocol_version == era
        assert [tool.name for tool in client.list_tools()] == ["add"]
        result = client.call_tool("add", {"a": 2, "b": 3})
        assert result.structured_content == {"result": 5}


@pytest.mark.parametrize("era", ERAS)
def test_a_call_past_its_deadline_is_a_timeout_and_the_connection_stays_usable(
    sock_dir: Path, era: str
) -> None:
    release = threading.Event()
    server = _server()

    @server.tool()
    def stall() -> str:
        """Block until the test ends."""
        release.wait(10)
        return "late"

    try:
        with (
            server.serve_http(socket=sock_dir / "slow.sock") as http,
            mcp_lite.connect(http.url, protocol_version=era, timeout=5) as client,
        ):
            start = time.monotonic()
            with pytest.raises(RequestTimeout):
                client.call_tool("stall", {}, timeout=1.0)
            assert time.monotonic() - start < 1.0 + 1.0
            assert client.call_tool("add", {"a": 1, "b": 1}).structured_content == {"result": 2}
    finally:
        release.set()


@pytest.mark.parametrize("era", ERAS)
def test_a_restarted_server_is_reached_again_and_a_closed_one_is_gone(
    sock_dir: Path, era: str
) -> None:
    path = sock_dir / "srv.sock"
    server = _server()
    http = server.serve_http(socket=path)
    with mcp_lite.connect(http.url, protocol_version=era, timeout=5) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
        http.close()
        http = server.serve_http(socket=path)  # a new server (and session) on the same file
        assert client.call_tool("add", {"a": 2, "b": 2}).structured_content == {"result": 4}
        http.close()  # also ends the kept-alive connection the client holds
        start = time.monotonic()
        with pytest.raises(ConnectError, match="no such socket"):
            client.call_tool("add", {"a": 3, "b": 3})
        assert time.monotonic() - start < 1.0


def test_the_url_names_the_socket_and_the_http_path() -> None:
    assert split_url("unix:///run/g.sock") == ("/run/g.sock", "/mcp")
    assert split_url("unix:///run/g.sock/servers/db/mcp") == ("/run/g.sock", "/servers/db/mcp")
    assert split_url("unix:///run/socket") == ("/run/socket", "/mcp")  # no .sock: all of it
    assert split_url("unix://%2Frun%2Fsocket/servers/db/mcp") == ("/run/socket", "/servers/db/mcp")
    with pytest.raises(ConfigError, match="absolute socket path"):
        split_url("unix://relative")
    with pytest.raises(ConfigError, match="longer than a Unix socket allows"):
        split_url("unix:///" + "x" * 120 + ".sock")


def test_a_socket_whose_name_does_not_end_in_sock(sock_dir: Path) -> None:
    path = str(sock_dir / "endpoint")
    with _server().serve_http(socket=path) as http:
        encoded = path.replace("/", "%2F")
        for url in (http.url, f"unix://{encoded}", f"unix://{encoded}/mcp"):
            with mcp_lite.connect(url, timeout=5) as client:
                assert [tool.name for tool in client.list_tools()] == ["add"]


def test_a_path_after_the_socket_is_the_request_path(sock_dir: Path) -> None:
    path = str(sock_dir / "gw.sock")
    raw = _Raw(path, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    try:
        with pytest.raises(ConnectError, match="404"):
            mcp_lite.connect(f"unix://{path}/servers/x/mcp", timeout=2)
    finally:
        raw.close()
    head = raw.heads[0].decode("latin-1").split("\r\n")
    assert head[0] == "POST /servers/x/mcp HTTP/1.1"
    assert "host: localhost" in [line.lower() for line in head[1:]]


def test_a_missing_socket_is_a_connect_error_at_once(sock_dir: Path) -> None:
    start = time.monotonic()
    with pytest.raises(ConnectError, match="cannot reach the server: no such socket"):
        mcp_lite.connect(f"unix://{sock_dir}/none.sock", timeout=10)
    assert time.monotonic() - start < 1.0


def test_a_socket_nobody_listens_on_is_refused_at_once(sock_dir: Path) -> None:
    path = str(sock_dir / "stale.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()  # the file stays, nobody listens
    start = time.monotonic()
    with pytest.raises(ConnectError, match="nothing listens on the socket"):
        mcp_lite.connect(f"unix://{path}", timeout=10)
    assert time.monotonic() - start < 1.0


def test_a_server_that_never_answers_times_out_naming_the_phase(sock_dir: Path) -> None:
    # The handshake era, pinned: "auto" would spend the timeout twice (probe, then
    # initialize), as it does on TCP; a pinned 2026-07-28 says "does not speak" instead.
    era, phase = ERAS[0], "initialize"
    path = str(sock_dir / "mute.sock")
    raw = _Raw(path, None)  # accepts, reads the request, never answers
    try:
        start = time.monotonic()
        with pytest.raises(RequestTimeout, match=f"{phase} .*got no answer") as caught:
            mcp_lite.connect(f"unix://{path}", protocol_version=era, timeout=1.0)
        elapsed = time.monotonic() - start
    finally:
        raw.close()
    assert elapsed < 1.0 + 1.0, elapsed
    assert "1 s" in str(caught.value)


def test_the_socket_file_is_private_and_removed_at_close(sock_dir: Path) -> None:
    path = sock_dir / "srv.sock"
    old = os.umask(0)  # the mode must not depend on the process's umask
    try:
        http = _server().serve_http(socket=path)
    finally:
        os.umask(old)
    try:
        info = os.stat(path)
        assert stat.S_ISSOCK(info.st_mode)
        assert stat.S_IMODE(info.st_mode) == 0o600
        with pytest.raises(FileExistsError, match="listens"):
            _server().serve_http(socket=path)  # a live server is never replaced
    finally:
        http.close()
    assert not path.exists()


def test_a_stale_socket_is_replaced_and_other_files_are_refused(sock_dir: Path) -> None:
    path = sock_dir / "srv.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()
    with _server().serve_http(socket=path) as http, mcp_lite.connect(http.url, timeout=5) as c:
        assert [tool.name for tool in c.list_tools()] == ["add"]
    plain = sock_dir / "plain.sock"
    plain.write_text("not a socket")
    with pytest.raises(FileExistsError, match="not a socket"):
        _server().serve_http(socket=plain)
    assert plain.read_text() == "not a socket"


def test_a_hub_config_entry_with_a_unix_url(served: tuple[str, str]) -> None:
    _, url = served
    config = {"typed": {"type": "http", "url": url}, "bare": {"url": url}}
    with Hub(config) as hub:
        assert hub.call_tool("mcp__typed__add", {"a": 1, "b": 2}).structured_content == {
            "result": 3
        }
        assert hub.call_tool("mcp__bare__add", {"a": 4, "b": 5}).structured_content == {"result": 9}


def test_oauth_is_refused_over_a_unix_socket_and_static_headers_are_sent(
    sock_dir: Path,
) -> None:
    url = f"unix://{sock_dir}/gw.sock"
    with pytest.raises(ConfigError, match="OAuth is not used over a Unix socket"):
        mcp_lite.connect(url, auth=OAuth("https://as.example/mcp"), timeout=2)
    raw = _Raw(str(sock_dir / "gw.sock"), b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    try:
        with pytest.raises(ConnectError):
            mcp_lite.connect(url, headers={"X-Team": "blue"}, timeout=2)
    finally:
        raw.close()
    assert b"X-Team: blue" in raw.heads[0]


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_close_leaves_no_descriptor_open(served: tuple[str, str]) -> None:
    _, url = served
    with mcp_lite.connect(url, timeout=5) as warm:  # imports, pools and threads of the first use
        warm.list_tools()
    before = _fds()
    for era in ERAS:
        client = mcp_lite.connect(url, protocol_version=era, timeout=5)
        client.call_tool("add", {"a": 1, "b": 1})
        client.close()
    end = time.monotonic() + 5
    while _fds() - before and time.monotonic() < end:
        time.sleep(0.05)  # the server side closes its end on its own thread
    assert _fds() - before == set()


def test_a_bad_unix_url_error_shows_no_query_secret() -> None:
    with pytest.raises(ConfigError) as caught:
        mcp_lite.connect("unix://relative.sock/mcp?token=SECRET-123", timeout=2)
    assert "SECRET-123" not in str(caught.value)


def test_a_nul_in_the_socket_path_is_refused_not_cut(sock_dir: Path) -> None:
    """The kernel reads a socket path up to its first NUL: ``<dir>/a%00x`` would reach the
    socket ``<dir>/a``, another one than the URL names. Refused before any connect."""
    path = str(sock_dir / "a")
    with _server().serve_http(socket=path):
        encoded = path.replace("/", "%2F")
        for url in (f"unix://{encoded}%00x/mcp", f"unix://{encoded}%00x", f"unix://{path}\x00x"):
            with pytest.raises(ConfigError, match="NUL"):
                mcp_lite.connect(url, timeout=5)
            with pytest.raises(ConfigError, match="NUL"):
                Hub({"s": {"type": "http", "url": url}}, gateway=url)
