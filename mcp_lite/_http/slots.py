"""Deadlines on sockets: the ``Slot`` of one exchange (its socket, registered before it
connects, shut down by ``abort()`` from any thread; with a deadline, one entry on the process
timer) and ``AbortingAdapter``, ``requests``' adapter whose connections register with the slot
of the exchange running on their thread. ``Workers`` is re-exported for the transports. See
``docs/explanation/inside-http.md`` ("Socket slots").
"""

from __future__ import annotations

import contextlib
import logging
import math
import socket
import sys
import threading
import time
from typing import Any

import urllib3
from requests import Response
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util.connection import allowed_gai_family

from .. import _timer
from .._deadline import Deadline
from .._workers import Workers
from .resolve import LookupTimeout, TooManyLookups, connect_to, is_literal, lookup

__all__ = ["AbortingAdapter", "Slot", "Workers", "current"]

log = logging.getLogger("mcp_lite.http")
_local = threading.local()


class Slot:
    """The socket of one exchange, abortable from another thread until ``release()``.

    With a deadline, the slot puts one entry on the process timer: ``abort()`` at
    ``deadline.at + grace``, withdrawn by ``release()`` or ``disarm()``. ``release()`` must run
    before the connection goes back to the pool, so that a late abort never hits the next
    exchange on the same keep-alive connection.
    """

    __slots__ = ("_lock", "_sock", "aborted", "released", "deadline", "_timer")

    def __init__(self, deadline: Deadline | None = None, *, grace: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self.aborted = False
        self.released = False
        # "No deadline" (at = inf) is None here: nothing to schedule, no socket timeout cut.
        self.deadline = deadline if deadline is not None and deadline.at < math.inf else None
        self._timer: _timer.Handle | None = None
        if self.deadline is not None:
            self._timer = _timer.schedule(self.deadline.at + grace, self.abort)

    def attach(self, sock: Any) -> None:
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            if self.released:
                return
            self._sock = sock
            aborted = self.aborted
        if aborted:
            _shutdown(sock)

    def arm(self, sock: socket.socket) -> None:
        """Register ``sock`` before it connects (an abort then cuts the connect); raises
        ``TimeoutError`` when the slot was already aborted (nothing is connected)."""
        self.attach(sock)
        if self.aborted:
            raise TimeoutError("the deadline passed before connecting")

    def abort(self) -> None:
        """Shut the exchange's socket down (now, or as soon as it has one). On the timer
        thread too: it only calls ``shutdown``, never reads or writes."""
        with self._lock:
            if self.released or self.aborted:
                return
            self.aborted = True
            sock = self._sock
        if sock is not None:
            _shutdown(sock)

    def detach(self, sock: Any) -> None:
        """Forget ``sock`` (its connection goes back to the pool): a later abort leaves it."""
        with self._lock:
            if self._sock is sock:
                self._sock = None

    def release(self) -> None:
        with self._lock:
            self.released = True
            self._sock = None
        self.disarm()

    def settimeout(self, seconds: float | None) -> None:
        """Set the socket's timeout for the reads still to come in this exchange (None:
        no timeout)."""
        with self._lock:
            sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.settimeout(seconds)

    def disarm(self) -> None:
        """No deadline any more: the timer entry is withdrawn."""
        self.deadline = None
        handle = self._timer
        if handle is not None:
            self._timer = None
            handle.cancel()

    def remaining(self) -> float | None:
        """Seconds left before the deadline, negative once past (None: no deadline)."""
        deadline = self.deadline
        return None if deadline is None else deadline.at - time.monotonic()

    def socket_timeouts(self, connect: float, read: float | None) -> tuple[float, float | None]:
        """``Deadline.socket_timeouts`` of the slot's deadline (as given without one)."""
        deadline = self.deadline
        return (connect, read) if deadline is None else deadline.socket_timeouts(connect, read)

    def active(self) -> _Active:
        """Connections opened or reused on this thread inside the block register here."""
        return _Active(self)


class _Active:
    __slots__ = ("_slot", "_previous")

    def __init__(self, slot: Slot) -> None:
        self._slot = slot
        self._previous: Slot | None = None

    def __enter__(self) -> Slot:
        self._previous = getattr(_local, "slot", None)
        _local.slot = self._slot
        return self._slot

    def __exit__(self, *exc: object) -> None:
        _local.slot = self._previous


def _origin(url: str) -> str:
    """``scheme://host:port`` of a prepared URL (the part that picks the pool)."""
    scheme, _, rest = url.partition("://")
    return scheme.lower() + "://" + rest.split("/", 1)[0].split("?", 1)[0].lower()


def current() -> Slot | None:
    return getattr(_local, "slot", None)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _register(conn: Any) -> None:
    slot = getattr(_local, "slot", None)
    if slot is not None:
        slot.attach(getattr(conn, "sock", None))


class _Registering:
    """Registers the socket with the current ``Slot``; sends a small request's headers and
    body in one write (urllib3 sends them apart: two packets, two wake-ups of the server)."""

    sock: Any
    _glue: bytes | None = None
    _dns_host: str
    host: str
    port: int
    timeout: Any
    source_address: Any
    socket_options: Any

    def _new_conn(self) -> socket.socket:
        """urllib3's, bounded by the exchange's deadline: the host-name lookup
        (``getaddrinfo`` takes no timeout) waits at most until then, and the socket is
        registered with the ``Slot`` *before* the TCP connect, so an abort (the deadline,
        ``close()``) cuts a connect that gets no answer too. Same errors as urllib3's for the
        same failures; a lookup or connect cut short by the deadline is a connect timeout."""
        slot = current()
        remaining = None if slot is None else slot.remaining()
        if slot is None or remaining is None:
            return super()._new_conn()  # type: ignore[misc,no-any-return]
        try:
            if is_literal(self._dns_host):  # answered at once, no resolver involved
                addresses = socket.getaddrinfo(
                    self._dns_host, self.port, allowed_gai_family(), socket.SOCK_STREAM
                )
            else:
                addresses = lookup(self._dns_host, self.port, allowed_gai_family(), remaining)
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc  # type: ignore[arg-type]
        except LookupTimeout as exc:
            raise ConnectTimeoutError(self, f"Connection to {self.host} timed out: {exc}") from exc
        except TooManyLookups as exc:  # refused at once: a connection failure, not a timeout
            raise NewConnectionError(self, str(exc)) from exc  # type: ignore[arg-type]
        timeout = self.timeout if isinstance(self.timeout, (int, float)) else None
        try:
            sock = connect_to(
                addresses, timeout, self.source_address, self.socket_options, arm=slot.arm
            )
        except TimeoutError as exc:
            raise ConnectTimeoutError(
                self, f"Connection to {self.host} timed out. (connect timeout={timeout})"
            ) from exc
        except OSError as exc:
            if slot.aborted:  # shut down under the connect by the deadline or close()
                raise ConnectTimeoutError(
                    self, f"Connection to {self.host} timed out (the deadline passed)"
                ) from exc
            raise NewConnectionError(
                self,  # type: ignore[arg-type]
                f"Failed to establish a new connection: {exc}",
            ) from exc
        sys.audit("http.client.connect", self, self.host, self.port)
        return sock

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        _register(self)

    def request(
        self, method: str, url: str, body: Any = None, headers: Any = None, **kw: Any
    ) -> None:
        if self.sock is not None:  # a reused keep-alive connection
            _register(self)
        if (
            isinstance(body, bytes)
            and len(body) <= _GLUE_LIMIT
            and headers is not None
            and "Content-Length" in headers
            and not kw.get("chunked")
        ):
            self._glue = body
            body = None
        try:
            super().request(method, url, body, headers, **kw)  # type: ignore[misc]
        finally:
            self._glue = None

    def send(self, data: Any) -> None:
        glue = self._glue
        if glue is not None:  # the headers' write: the body goes with it
            self._glue = None
            data = bytes(data) + glue
        super().send(data)  # type: ignore[misc]


_GLUE_LIMIT = 64 * 1024


class _Connection(_Registering, HTTPConnection):
    pass


class _TlsConnection(_Registering, HTTPSConnection):
    pass


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TlsPool(HTTPSConnectionPool):
    ConnectionCls = _TlsConnection


_POOLS = {"http": _Pool, "https": _TlsPool}


class AbortingAdapter(HTTPAdapter):
    """``requests``' own adapter whose connections register with the current ``Slot``.

    Its ``send`` (and so its error mapping, TLS settings and proxies) is requests'; three of
    its documented hooks are made cheaper for the one server a transport talks to: the pool
    for a URL is looked up once (again when the pool manager dropped it, or for a proxied
    URL), the request path is computed once per URL, and ``build_response`` skips the
    cookie jar unless the server sets a cookie.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._pools: dict[tuple[str, Any, Any], Any] = {}
        self._paths: dict[str, str] = {}
        super().__init__(*args, **kwargs)

    def get_connection_with_tls_context(
        self, request: Any, verify: Any, proxies: Any = None, cert: Any = None
    ) -> Any:
        if (
            proxies
            or not isinstance(verify, (bool, str))
            or not isinstance(cert, (str, type(None)))
        ):
            return super().get_connection_with_tls_context(request, verify, proxies, cert)
        key = (_origin(request.url), verify, cert)
        pool = self._pools.get(key)
        if pool is None or pool.pool is None:  # new, or closed by the pool manager's LRU
            pool = super().get_connection_with_tls_context(request, verify, proxies, cert)
            if len(self._pools) >= 16:
                self._pools.clear()
            self._pools[key] = pool
        return pool

    def request_url(self, request: Any, proxies: Any) -> str:
        if proxies:
            return str(super().request_url(request, proxies))
        url = request.url
        path = self._paths.get(url)
        if path is None:
            path = str(super().request_url(request, proxies))
            if len(self._paths) < 64:
                self._paths[url] = path
        return path

    def build_response(self, req: Any, resp: Any) -> Any:
        if "set-cookie" in resp.headers:
            return super().build_response(req, resp)
        response = Response()
        response.status_code = resp.status
        response.headers = CaseInsensitiveDict(resp.headers)
        response.encoding = get_encoding_from_headers(response.headers)
        response.raw = resp
        response.reason = resp.reason
        response.url = req.url
        response.request = req
        response.connection = self
        return response

    def close(self) -> None:
        # urllib3 2.x only forgets its pools on clear(): their idle sockets would wait for
        # the garbage collector. Close every pool now (a connection still in use is closed
        # when it comes back to its closed pool).
        managers = [self.poolmanager, *self.proxy_manager.values()]
        pools = [*self._pools.values()]
        for manager in managers:
            container = manager.pools
            pools.extend(container[key] for key in list(container.keys()) if key in container)
        self._pools.clear()
        super().close()
        for pool in pools:
            with contextlib.suppress(Exception):
                pool.close()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if type(manager) is urllib3.ProxyManager:  # SOCKS keeps its own pools
            manager.pool_classes_by_scheme = dict(_POOLS)
        return manager
