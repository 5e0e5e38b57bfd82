"""A cheap HTTP/1.1 POST on a kept-alive connection of the adapter's own urllib3 pool: the
request written in one ``sendall``, the response head parsed by ``h1``; ``post`` returns None
(and the caller takes the full ``requests`` path) whenever that common case does not hold. Why
and when: ``docs/explanation/inside-http.md``.
"""

from __future__ import annotations

import http.client
import socket
from collections.abc import Mapping
from typing import Any

import requests
from urllib3.exceptions import ProtocolError, ReadTimeoutError

from . import slots as _http_abort
from .h1 import _GLUE, _HEADER_BLOCK, Headers, _Body, _Cookies, _Wire

__all__ = ["post"]


def post(
    pool: Any,
    path: str,
    headers: Mapping[str, Any],
    body: bytes | None,
    timeout: tuple[float, float | None],
    request: requests.PreparedRequest,
    host: bool = False,
) -> requests.Response | None:
    """POST ``body`` to ``path`` on an idle connection of ``pool``; None when the full path
    must do it (see the module docstring). ``host``: ``headers`` name the Host already.
    The caller holds the exchange's ``Slot``."""
    try:
        conn = pool._get_conn()
    except Exception:  # a closed pool: the full path says so in its own words
        return None
    sock = getattr(conn, "sock", None)
    if sock is None:  # a fresh connection: connecting is the full path's job
        pool._put_conn(conn)
        return None
    head = _request_head(conn, path, headers, host)
    if head is None:
        pool._put_conn(conn)
        return None
    slot = _http_abort.current()
    if slot is not None:
        slot.attach(sock)
    try:
        response = _exchange(pool, conn, sock, head, body, timeout, request, slot)
    except BaseException:
        if slot is not None:
            slot.detach(sock)
        conn.close()
        pool._put_conn(None)
        raise
    return response


def _request_head(
    conn: Any, path: str, headers: Mapping[str, Any], host_given: bool
) -> bytes | None:
    """The request line and headers (``Content-Length`` among them) as http.client would
    send them; None when it would refuse them or encode them otherwise."""
    host = conn.host
    if ":" in host:
        host = f"[{host}]"
    if conn.port is not None and conn.port != conn.default_port:
        host = f"{host}:{conn.port}"
    try:
        # ": ".join refuses a bytes value (requests allows them): the full path sends it.
        lines = "\r\n".join(map(": ".join, headers.items())) + "\r\n" if headers else ""
        if not _HEADER_BLOCK.fullmatch(lines) or not host.isascii():
            return None
        if not host_given:
            lines = f"Host: {host}\r\n{lines}"
        return f"POST {path} HTTP/1.1\r\n{lines}\r\n".encode("latin-1")
    except (TypeError, UnicodeEncodeError):  # not str, or beyond latin-1: http.client's call
        return None


def _aborted(reason: BaseException, request: requests.PreparedRequest) -> requests.RequestException:
    """What requests raises when the connection fails before a response (urllib3's shape)."""
    return requests.ConnectionError(ProtocolError("Connection aborted.", reason), request=request)


def _exchange(
    pool: Any,
    conn: Any,
    sock: socket.socket,
    head: bytes,
    body: bytes | None,
    timeout: tuple[float, float | None],
    request: requests.PreparedRequest,
    slot: _http_abort.Slot | None,
) -> requests.Response:
    sock.settimeout(timeout[0])
    try:
        if body and len(body) <= _GLUE:
            sock.sendall(head + body)  # one packet, one wake-up of the server
        else:
            sock.sendall(head)
            if body:
                sock.sendall(body)
    except (BrokenPipeError, ConnectionResetError):
        pass  # as urllib3: the server may have answered already; reading says how it ended
    except OSError as exc:
        raise _aborted(exc, request) from exc
    read_timeout = timeout[1]
    sock.settimeout(read_timeout)
    wire = _Wire(sock)
    try:
        while True:
            status, reason, version, fields, cookies = wire.head()
            if status != 100:
                break
    except TimeoutError as exc:  # socket.timeout is TimeoutError
        message = f"Read timed out. (read timeout={read_timeout})"
        raise requests.ReadTimeout(
            ReadTimeoutError(pool, request.url, message), request=request
        ) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise _aborted(exc, request) from exc
    response = requests.Response.__new__(requests.Response)
    headers = Headers.of(fields)
    response.__dict__.update(
        _content=False,
        _content_consumed=False,
        _next=None,
        status_code=status,
        headers=headers,
        raw=_Body(pool, conn, wire, status, version, fields, slot),
        url=request.url,
        encoding=None,
        history=[],
        reason=reason,
        cookies=requests.cookies.RequestsCookieJar(),
        elapsed=None,
        request=request,
        connection=None,
    )
    if cookies:  # what requests' cookie extraction reads (``raw._original_response.msg``)
        response.raw._original_response = _Cookies(cookies)
    return response
