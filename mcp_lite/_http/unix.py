"""HTTP over a Unix domain socket: the ``unix://`` URLs of the Streamable HTTP transport, how they
split into a socket file and an HTTP path, and ``UnixAdapter``, the ``AbortingAdapter`` of one
socket (see docs/explanation/inside-http.md)."""

from __future__ import annotations

import errno
import os
import socket
import sys
import threading
from typing import Any
from urllib.parse import unquote, urlsplit

from urllib3.connectionpool import HTTPConnectionPool
from urllib3.exceptions import NewConnectionError

from .._secrets import redact_url
from ..errors import ConfigError
from .peer import check as check_peer
from .slots import AbortingAdapter, _Connection

__all__ = ["UnixAdapter", "is_unix_url", "split_url"]

DEFAULT_PATH = "/mcp"
_MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the terminating NUL


def is_unix_url(url: object) -> bool:
    return isinstance(url, str) and url[:7].lower() == "unix://"


def split_url(url: str) -> tuple[str, str]:
    """``(socket path, HTTP path with query)`` of a ``unix://`` URL (see the module docstring).

    Raises:
        ConfigError: not an absolute socket path, one with a NUL byte, or one too long for
            ``AF_UNIX``.
    """
    parts = urlsplit(url)
    if parts.netloc:
        sock, path = unquote(parts.netloc), parts.path or DEFAULT_PATH
    else:
        names = parts.path.split("/")
        cut = next((i for i, n in enumerate(names) if n.endswith(".sock")), len(names) - 1)
        sock = "/".join(names[: cut + 1])
        path = "/" + "/".join(names[cut + 1 :]) if cut + 1 < len(names) else DEFAULT_PATH
    if "\x00" in sock:  # the kernel would cut the path at the NUL: another socket
        raise ConfigError(f"a unix:// socket path cannot hold a NUL byte, got {redact_url(url)!r}")
    if not sock.startswith("/") or sock.rstrip("/") == "":
        raise ConfigError(
            "a unix:// URL names an absolute socket path (unix:///path/to.sock), got "
            f"{redact_url(url)!r}"
        )
    if len(os.fsencode(sock)) > _MAX_SOCKET_PATH:
        raise ConfigError(
            f"the socket path {sock!r} is longer than a Unix socket allows "
            f"({_MAX_SOCKET_PATH} bytes)"
        )
    if parts.query:
        path += "?" + parts.query
    return sock, path


def _why(exc: OSError, path: str) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"no such socket {path}"
    if isinstance(exc, ConnectionRefusedError):
        return f"connection refused (nothing listens on the socket {path})"
    if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
        return f"the server on {path} accepts no more connections (its listen queue is full)"
    if exc.errno == errno.EACCES:
        return f"permission denied on the socket {path}"
    if exc.errno == errno.ENOTSOCK:
        return f"{path} is not a socket"
    return f"cannot connect to the socket {path}: {exc.strerror or exc}"


class UnixConnection(_Connection):
    """urllib3's HTTP connection on an ``AF_UNIX`` socket; registers with the ``Slot``."""

    def __init__(
        self, *args: Any, socket_path: str, peers: frozenset[int] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.socket_path = socket_path
        self.peers = peers

    def _new_conn(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        timeout = self.timeout if isinstance(self.timeout, (int, float)) else None
        failure: OSError | None = None
        try:
            sock.settimeout(timeout)
            sock.connect(self.socket_path)
        except OSError as exc:
            failure = exc
        if failure is not None:
            sock.close()
            # Raised outside the except block: the cause mcp_lite names is this message
            # (network_cause reads the innermost exception), not "[Errno 2] No such file".
            why = _why(failure, self.socket_path)
            error = NewConnectionError(self, why)
            error.args = (why,)  # without urllib3's "UnixConnection(host='localhost'...)"
            raise error
        try:
            check_peer(sock, self.socket_path, self.peers)  # before the first byte goes out
        except BaseException:
            sock.close()
            raise
        sys.audit("http.client.connect", self, self.socket_path, None)
        return sock


class _UnixPool(HTTPConnectionPool):
    ConnectionCls = UnixConnection


class UnixAdapter(AbortingAdapter):
    """The adapter mounted on ``unix://`` in a transport's session (``make_session``).

    Every ``unix://`` URL the session sends goes to the socket its URL names (one pool per
    socket path); the request line carries only the HTTP path. Each new connection's peer
    is checked before anything is sent on it (``peer.check``; ``peers``: the uids allowed).
    """

    def __init__(self, *args: Any, peers: frozenset[int] | None = None, **kwargs: Any) -> None:
        self._lock = threading.Lock()
        self._unix_pools: dict[str, _UnixPool] = {}
        self._maxsize = int(kwargs.get("pool_maxsize", 10))
        self._peers = peers
        super().__init__(*args, **kwargs)

    def get_connection_with_tls_context(
        self, request: Any, verify: Any, proxies: Any = None, cert: Any = None
    ) -> Any:
        sock, _ = split_url(request.url)
        with self._lock:
            pool = self._unix_pools.get(sock)
            if pool is None or pool.pool is None:  # new, or closed
                if len(self._unix_pools) >= 16:
                    for old in self._unix_pools.values():
                        old.close()
                    self._unix_pools.clear()
                pool = _UnixPool(
                    "localhost",
                    maxsize=self._maxsize,
                    block=False,
                    socket_path=sock,
                    peers=self._peers,
                )
                self._unix_pools[sock] = pool
        return pool

    def request_url(self, request: Any, proxies: Any) -> str:
        return split_url(request.url)[1]

    def close(self) -> None:
        with self._lock:
            pools = list(self._unix_pools.values())
            self._unix_pools.clear()
        for pool in pools:
            pool.close()
        super().close()
