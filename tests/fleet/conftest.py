"""A real Redis for the fleet tests: Debian's ``redis-server`` (``make test`` installs it),
started on a free 127.0.0.1 port with no persistence, stopped at the end of the session."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# The auth tests' authorization server (tests/auth/authserver.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "auth"))

NO_REDIS = (
    "redis-server is not installed and could not be (make test installs Debian's redis-server "
    "with apt-get, which needs root and the Debian package mirror)"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _die_with_parent() -> None:
    """In the child: SIGTERM when the test process dies, even killed before its teardown,
    so no redis-server is ever left behind (Linux; elsewhere the teardown alone)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a private Redis (``redis://127.0.0.1:<port>``, no database number)."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip(NO_REDIS)
    folder = tmp_path_factory.mktemp("redis")
    port = _free_port()
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder), "--daemonize", "no", "--loglevel", "warning"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=_die_with_parent,
    )
    deadline = time.monotonic() + 30
    while not _ping(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            pytest.fail(f"redis-server did not start on port {port}: {err[-2000:]}")
        time.sleep(0.05)
    try:
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stderr:
            proc.stderr.close()


@pytest.fixture
def redis_url(redis_server: str) -> Iterator[str]:
    """A fresh, empty database of the session's Redis for one test."""
    redis = pytest.importorskip("redis")
    url = f"{redis_server}/1"
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        client.close()


@pytest.fixture
def auth_server() -> Iterator[object]:
    """``auth_server(**behaviour)``: tests/auth/authserver.py on 127.0.0.1, stopped after."""
    from authserver import AuthServer, Behaviour

    started: list[AuthServer] = []

    def start(**behaviour: object) -> AuthServer:
        server = AuthServer(Behaviour(**behaviour)).start()  # type: ignore[arg-type]
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
