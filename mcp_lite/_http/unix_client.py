"""An HTTP/1.1 client for ``unix://`` URLs: the transport's exchanges on a small stack of
kept-alive ``AF_UNIX`` connections per socket path, without ``requests``' adapter or urllib3's
pool, with the same slot, timeouts and errors as the ``requests`` path (``request`` returns None
when it does not apply). Why and how: ``docs/explanation/inside-http.md``.
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import sys
import threading
import weakref
from collections.abc import Mapping
from typing import Any

import requests
from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError, ReadTimeoutError

from .. import _fork
from . import h1 as _http_wire
from . import peer as _http_peer
from . import slots as _http_abort
from . import unix as _http_unix

__all__ = ["Answer", "UnixClient"]

_GLUE = 64 * 1024  # a body up to this size goes out in the head's write
_EAGER = 64 * 1024  # a Content-Length body up to this size is read with its head
_MAX_IDLE = 64  # idle connections kept per socket (beyond: closed when handed back)
_POLLIN = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR


class _Sent:
    """What ``response.request`` shows: method, URL and (built when first read: an error
    message scrubs their values from a server's echo) the headers sent."""

    __slots__ = ("method", "url", "body", "_parts", "_headers")

    def __init__(
        self,
        method: str,
        url: str,
        base: tuple[tuple[str, str, Any], ...],
        ours: Mapping[str, Any],
        length: int | None,
    ) -> None:
        self.method = method
        self.url = url
        self.body = None
        self._parts = (base, ours, length)
        self._headers: dict[str, Any] | None = None

    @property
    def headers(self) -> dict[str, Any]:
        if self._headers is None:
            base, ours, length = self._parts
            low = {k.lower() for k in ours}
            merged = {k: v for k, key, v in base if key not in low}
            merged.update(ours)
            if length is not None:
                merged["Content-Length"] = str(length)
            self._headers = merged
        return self._headers


class _Conn:
    """One ``AF_UNIX`` connection, non-blocking: a write or read that cannot go on at once
    waits in ``poll`` for at most its timeout (no ``settimeout`` per exchange, no poll
    before a write the socket takes whole). ``sock`` is what ``body.abort`` shuts down."""

    __slots__ = ("sock", "poller", "generation", "_writable")

    def __init__(self, sock: socket.socket) -> None:
        sock.settimeout(0.0)
        self.sock = sock
        self.poller = select.poll()
        self.poller.register(sock.fileno(), _POLLIN)
        self.generation = _fork.generation()
        self._writable: Any = None

    def dropped(self) -> bool:
        """True when the server closed it (or sent what nobody asked for) while idle."""
        try:
            return bool(self.poller.poll(0))
        except OSError:
            return True

    def wait(self, timeout: float | None) -> None:
        """Until the socket is readable (or shut down, or at its end); ``TimeoutError`` after
        ``timeout`` seconds of nothing. A timeout ``Slot.settimeout`` set since (the tail
        of an answer's stream) is the one that counts then."""
        own = self.sock.gettimeout()
        if own:  # set by the slot: a blocking read with that timeout follows
            return
        if not self.poller.poll(_ms(timeout)):
            raise TimeoutError("timed out")

    def send(self, data: bytes, timeout: float | None) -> None:
        """All of ``data``; ``TimeoutError`` when the server takes none of it for ``timeout``."""
        sock = self.sock
        view: Any = data
        while True:
            try:
                sent = sock.send(view)
            except BlockingIOError:
                sent = 0
            if sent == len(view):
                return
            if sent:
                view = memoryview(view)[sent:]
            if self._writable is None:
                self._writable = select.poll()
                self._writable.register(sock.fileno(), select.POLLOUT)
            if not self._writable.poll(_ms(timeout)):
                raise TimeoutError("timed out")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _ms(timeout: float | None) -> int:
    """``poll``'s milliseconds for a timeout in seconds (None: no limit), rounded up."""
    return -1 if timeout is None else max(0, int(timeout * 1000.0 + 0.999))


class _PolledWire(_http_wire._Wire):
    """``h1``'s reader on a non-blocking ``_Conn``: each read waits at most the read
    timeout, the longest silence accepted (as a socket timeout would)."""

    __slots__ = ("conn", "timeout")

    def __init__(self, conn: _Conn, timeout: float | None) -> None:
        super().__init__(conn.sock)
        self.conn = conn
        self.timeout = timeout

    def fill(self) -> bool:
        while True:
            self.conn.wait(self.timeout)
            try:
                data = self.sock.recv(_http_wire._RECV)
            except BlockingIOError:  # readable, yet nothing: a wake-up without data
                continue
            if not data:
                return False
            self.buf += data
            return True


class _Pool:
    """The kept-alive connections to one socket path (``_put_conn`` as urllib3's pool, for
    ``h1``'s body reader)."""

    def __init__(self, path: str, peers: frozenset[int] | None = None) -> None:
        self.path = path
        self.peers = peers  # the users the process behind the socket may run as (``peer``)
        self._lock = threading.Lock()
        self._idle: list[_Conn] = []
        self.closed = False
        _pools.add(self)

    def __repr__(self) -> str:
        return f"UnixPool({self.path!r})"

    def take(self) -> _Conn | None:
        """An idle connection still open at the other end, or None."""
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if conn.generation == _fork.generation() and not conn.dropped():
                if conn.sock.gettimeout() != 0.0:  # the tail wait of an SSE answer set one
                    conn.sock.settimeout(0.0)
                return conn
            conn.close()

    def _put_conn(self, conn: _Conn | None) -> None:
        if conn is None:
            return
        with self._lock:
            if (
                not self.closed
                and conn.generation == _fork.generation()
                and len(self._idle) < _MAX_IDLE
            ):
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self.closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def after_fork(self) -> None:
        """In a child: forget the inherited connections (closing the child's descriptors
        only: ``close`` never shuts a socket down, so the parent's stay usable)."""
        self._lock = threading.Lock()
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


_pools: weakref.WeakSet[_Pool] = weakref.WeakSet()


@_fork.on_child
def _reset_after_fork() -> None:
    for pool in list(_pools):
        pool.after_fork()


class UnixClient:
    """The lean exchanges of one transport's session (``session.make_session`` makes it for
    a ``unix://`` URL). ``base`` is the session's headers as ``(name, lowercase, value)``."""

    def __init__(
        self, base: tuple[tuple[str, str, Any], ...], peers: frozenset[int] | None = None
    ) -> None:
        self._base = base
        self._peers = peers
        self._lock = threading.Lock()
        self._pools: dict[str, _Pool] = {}
        self._urls: dict[str, tuple[_Pool, str]] = {}
        self._blocks: dict[tuple[str, ...], tuple[str, bool] | None] = {}
        # The request head up to its Content-Length, per (method, URL, headers) as sent:
        # a call's headers repeat (the session id and version change rarely), so its head
        # is built, checked and encoded once. None: the lean path does not apply.
        self._heads: dict[tuple[Any, ...], tuple[_Pool, bytes] | None] = {}

    def close(self) -> None:
        with self._lock:
            pools = list(self._pools.values())
            self._pools.clear()
            self._urls.clear()
            self._heads.clear()
        for pool in pools:
            pool.close()

    def _route(self, url: str) -> tuple[_Pool, str]:
        route = self._urls.get(url)
        if route is not None and not route[0].closed:
            return route
        path, target = _http_unix.split_url(url)
        with self._lock:
            pool = self._pools.get(path)
            if pool is None or pool.closed:
                if len(self._pools) >= 16:
                    for old in self._pools.values():
                        old.close()
                    self._pools.clear()
                    self._urls.clear()
                pool = self._pools[path] = _Pool(path, self._peers)
            route = (pool, target)
            if len(self._urls) < 64:
                self._urls[url] = route
        return route

    def _block(self, names: tuple[str, ...]) -> tuple[str, bool] | None:
        """The session's header lines not overridden by a request's own ``names``, and
        whether a Host header is among them or in ``names``; None when one of them is not
        something ``http.client`` would send as is."""
        cached = self._blocks.get(names, False)
        if cached is not False:
            return cached  # type: ignore[return-value]
        ours = {name.lower() for name in names}
        kept = [(k, v) for k, low, v in self._base if low not in ours]
        host = "host" in ours or any(k.lower() == "host" for k, _ in kept)
        try:
            lines = "".join(f"{k}: {v}\r\n" for k, v in kept if k.lower() != "content-length")
            block: tuple[str, bool] | None = (lines, host)
            if not _http_wire._HEADER_BLOCK.fullmatch(lines) or not lines.isascii():
                block = None
        except TypeError:
            block = None
        if len(self._blocks) < 64:
            self._blocks[names] = block
        return block

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, Any],
        data: bytes | None,
        timeout: tuple[float, float | None],
        whole: bool = False,
    ) -> requests.Response | Answer | None:
        """One exchange (see the module docstring); None: take the ``requests`` path.
        ``whole``: a small JSON success (2xx, ``application/json``, a ``Content-Length``
        body that arrived whole, no ``Set-Cookie``, no content coding) comes back as an
        ``Answer``, not wrapped in a ``requests.Response``; any other answer as before.

        Raises:
            requests.RequestException: the network failures the adapter would raise.
        """
        known: Any
        try:
            key: tuple[Any, ...] | None = (method, url, *headers.items())
            known = self._heads.get(key, False)  # type: ignore[arg-type]
        except TypeError:  # a value that cannot be a key: built afresh each time
            key, known = None, False
        if known is False:
            known = self._head(method, url, headers)
            if key is not None:
                if len(self._heads) >= 64:  # bounded: the heads of the calls made now win
                    self._heads.clear()
                self._heads[key] = known
        elif known is not None and known[0].closed:  # its pool closed since: route again
            known = self._head(method, url, headers)
            if key is not None:
                self._heads[key] = known
        if known is None:
            return None
        pool, prefix = known
        size = len(data) if data is not None else None if method in ("GET", "HEAD") else 0
        head = (
            prefix + b"\r\n" if size is None else b"%sContent-Length: %d\r\n\r\n" % (prefix, size)
        )
        sent = _Sent(method, url, self._base, headers, size)
        return _exchange(pool, head, data, timeout, sent, whole)

    def _head(
        self, method: str, url: str, headers: Mapping[str, Any]
    ) -> tuple[_Pool, bytes] | None:
        """The route and the head (without Content-Length and the blank line) of a request
        with these ``headers``; None when the lean path does not apply to them."""
        names = tuple(headers)
        block = self._block(names)
        if block is None:
            return None
        base, host = block
        try:
            ours = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        except TypeError:  # a bytes value (requests allows them): the full path sends it
            return None
        if ours and not _http_wire._HEADER_BLOCK.fullmatch(ours):
            return None
        pool, target = self._route(url)
        host_line = "" if host else "Host: localhost\r\n"
        try:
            prefix = f"{method} {target} HTTP/1.1\r\n{host_line}{base}{ours}".encode("latin-1")
        except UnicodeEncodeError:
            return None
        return pool, prefix


class _Where:
    """The connection a ``NewConnectionError`` names (``causes`` reads its host)."""

    host = "localhost"

    def __init__(self, path: str) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"UnixConnection({self.path!r})"


def _cannot_connect(exc: BaseException, path: str, sent: _Sent) -> requests.RequestException:
    """What the adapter raises for a connect that failed (urllib3's shape, our words)."""
    why = _http_unix._why(exc, path) if isinstance(exc, OSError) else str(exc)
    reason = NewConnectionError(_Where(path), why)  # type: ignore[arg-type]
    reason.args = (why,)
    return requests.ConnectionError(MaxRetryError(None, path, reason), request=sent)  # type: ignore[arg-type]


def _connect(pool: _Pool, seconds: float, slot: _http_abort.Slot | None, sent: _Sent) -> _Conn:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    failure: OSError | None = None
    try:
        sock.settimeout(seconds)
        if slot is not None:
            slot.arm(sock)  # an abort (the deadline, close()) cuts the connect
        sock.connect(pool.path)
    except OSError as exc:
        failure = exc
    if failure is not None:
        # Raised outside the except block: the cause ``causes`` names is our sentence,
        # not the errno's ("[Errno 2] No such file or directory").
        sock.close()
        if slot is not None and slot.aborted:
            raise requests.ConnectTimeout(
                f"connecting to the socket {pool.path} timed out (the deadline passed)",
                request=sent,  # type: ignore[arg-type]
            )
        raise _cannot_connect(failure, pool.path, sent)
    try:
        _http_peer.check(sock, pool.path, pool.peers)  # before the first byte goes out
    except BaseException:
        sock.close()
        raise
    sys.audit("http.client.connect", sock, pool.path, None)
    return _Conn(sock)


def _timed_out(pool: _Pool, read_timeout: float | None, sent: _Sent) -> requests.ReadTimeout:
    """What requests raises when the answer's head does not come in time."""
    message = f"Read timed out. (read timeout={read_timeout})"
    return requests.ReadTimeout(
        ReadTimeoutError(pool, sent.url, message),  # type: ignore[arg-type]
        request=sent,  # type: ignore[arg-type]
    )


def _aborted(reason: BaseException, sent: _Sent) -> requests.RequestException:
    """What requests raises when the connection fails before a response (urllib3's shape)."""
    return requests.ConnectionError(ProtocolError("Connection aborted.", reason), request=sent)  # type: ignore[arg-type]


def _exchange(
    pool: _Pool,
    head: bytes,
    body: bytes | None,
    timeout: tuple[float, float | None],
    sent: _Sent,
    whole: bool = False,
) -> requests.Response | Answer:
    slot = _http_abort.current()
    payload = head + body if body and len(body) <= _GLUE else None
    conn = pool.take()
    first = b""
    for attempt in (0, 1):
        if conn is None:
            conn = _connect(pool, timeout[0], slot, sent)
            fresh = True
        else:
            fresh = False
            if slot is not None:
                slot.attach(conn.sock)
        # A kept-alive connection the server closed (its idle timeout) fails our write at
        # once (EPIPE), or, when it closed just after our write landed, our first read
        # (ECONNRESET: a Unix socket closed with our request still unread in it). Either
        # way the server never read the request: it goes out once more, on a new connection.
        again = not (fresh or attempt)
        try:
            if payload is not None:
                conn.send(payload, timeout[0])  # one packet, one wake-up of the server
            else:
                conn.send(head, timeout[0])
                if body:
                    conn.send(body, timeout[0])
        except (BrokenPipeError, ConnectionResetError):
            if again and not (slot is not None and slot.aborted):
                if slot is not None:
                    slot.detach(conn.sock)
                conn.close()
                conn = None
                continue
            # As urllib3: the server may have answered already; reading says how it ended.
        except OSError as exc:  # TimeoutError too: the server reads nothing
            if slot is not None:
                slot.detach(conn.sock)
            conn.close()
            raise _aborted(exc, sent) from exc
        if again:
            try:
                conn.wait(timeout[1])
                first = conn.sock.recv(_http_wire._RECV)
            except BlockingIOError:
                pass  # a wake-up without data: the head's reader waits on
            except ConnectionResetError as exc:
                if slot is not None:
                    slot.detach(conn.sock)
                conn.close()
                if slot is not None and slot.aborted:
                    raise _aborted(exc, sent) from exc
                conn = None
                continue
            except BaseException as exc:
                if slot is not None:
                    slot.detach(conn.sock)
                conn.close()
                if isinstance(exc, TimeoutError):
                    raise _timed_out(pool, timeout[1], sent) from exc
                if isinstance(exc, OSError):
                    raise _aborted(exc, sent) from exc
                raise
        break
    assert conn is not None
    try:
        return _read_head(pool, conn, timeout[1], sent, slot, first, whole)
    except BaseException:
        if slot is not None:
            slot.detach(conn.sock)
        conn.close()
        raise


def _read_head(
    pool: _Pool,
    conn: _Conn,
    read_timeout: float | None,
    sent: _Sent,
    slot: _http_abort.Slot | None,
    first: bytes = b"",
    whole: bool = False,
) -> requests.Response | Answer:
    wire = _PolledWire(conn, read_timeout)
    if first:
        wire.buf += first
    try:
        while True:
            status, reason, version, fields, cookies = wire.head()
            if status != 100:
                break
    except TimeoutError as exc:  # socket.timeout is TimeoutError
        raise _timed_out(pool, read_timeout, sent) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise _aborted(exc, sent) from exc
    raw: Any = _eager(pool, conn, wire, status, version, fields, slot)
    if (
        whole
        and raw is not None
        and 200 <= status < 300
        and not cookies
        and "content-encoding" not in fields
        and _json_type(fields)
    ):
        return Answer(status, fields, raw._data or b"")
    headers = _http_wire.Headers.of(fields)
    if raw is None:
        raw = _http_wire._Body(pool, conn, wire, status, version, fields, slot)
    response = requests.Response.__new__(requests.Response)
    response.__dict__.update(
        _content=False,
        _content_consumed=False,
        _next=None,
        status_code=status,
        headers=headers,
        raw=raw,
        url=sent.url,
        encoding=None,
        history=[],
        reason=reason,
        cookies=_NoCookies,
        elapsed=None,
        request=sent,
        connection=None,
    )
    if cookies:  # what requests' cookie extraction reads (``raw._original_response.msg``)
        response.cookies = requests.cookies.RequestsCookieJar()
        response.raw._original_response = _http_wire._Cookies(cookies)
    return response


def _eager(
    pool: _Pool,
    conn: _Conn,
    wire: _http_wire._Wire,
    status: int,
    version: int,
    fields: dict[str, tuple[str, str]],
    slot: _http_abort.Slot | None,
) -> _Whole | None:
    """The body of a response with a small ``Content-Length`` (at most ``_EAGER`` bytes),
    read now, the connection handed back at once; None (read it as it comes) for any other
    body, or when it did not arrive whole: its reader then meets the same end or failure."""
    if "transfer-encoding" in fields:
        return None
    if status in (204, 304) or status < 200:
        size = 0
    else:
        length = fields.get("content-length")
        if length is None or not length[1].isdigit():
            return None
        size = int(length[1])
        if size > _EAGER:
            return None
    buf = wire.buf
    while len(buf) < size:
        try:
            if not wire.fill():
                return None
        except Exception:  # a timeout, an abort: the body's reader raises it as before
            return None
    data = bytes(buf) if len(buf) == size else bytes(buf[:size])
    tokens = fields.get("connection", ("", ""))[1].lower()
    reusable = ("keep-alive" in tokens) if version == 10 else ("close" not in tokens)
    if slot is not None:  # a late deadline must not hit the connection's next user
        slot.detach(conn.sock)
    if reusable and len(buf) == size:
        pool._put_conn(conn)
    else:
        conn.close()
    return _Whole(data)


def _json_type(fields: dict[str, tuple[str, str]]) -> bool:
    """The answer's Content-Type is ``application/json`` (parameters aside), as the
    transport reads it."""
    ctype = fields.get("content-type")
    return ctype is not None and ctype[1].split(";")[0].strip().lower() == "application/json"


class Answer:
    """A small JSON success read whole (``UnixClient.request(whole=True)``): its status,
    its header fields (``{lowercase name: (name, value)}``) and its body; the connection
    is back in its pool already."""

    __slots__ = ("status", "fields", "body")

    def __init__(self, status: int, fields: dict[str, tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.fields = fields
        self.body = body

    def header(self, name: str) -> str | None:
        item = self.fields.get(name)
        return None if item is None else item[1]


class _Whole:
    """The ``raw`` of a response whose body was read whole (``_eager``)."""

    __slots__ = ("_data", "_connection", "_original_response")

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data
        self._connection = None  # nothing left for ``body.abort`` to shut down
        self._original_response: Any = None  # its Set-Cookie values, for requests' jar

    def buffered(self, amount: int) -> bytes | None:
        return self.read1(amount)

    def read1(self, amount: int = 65536, decode_content: bool = False) -> bytes:
        data = self._data
        if not data:
            self._data = None
            return b""
        if len(data) <= amount:
            self._data = None
            return data
        self._data = data[amount:]
        return data[:amount]

    def read(self, amount: int | None = None, decode_content: bool = False) -> bytes:
        if amount is None:
            data, self._data = self._data or b"", None
            return data
        return self.read1(amount)

    def close(self) -> None:
        self._data = None

    def release_conn(self) -> None:
        self._data = None

    @property
    def closed(self) -> bool:
        return self._data is None


# Responses without Set-Cookie share one empty jar (nothing here writes a response's jar:
# cookies go to the session's, from ``raw``).
_NoCookies = requests.cookies.RequestsCookieJar()
