"""Response bodies read within bounds: ``iter_body`` (decoded piece by piece), ``read_limited``
(never more than the limit plus one byte), ``drain`` (so the connection can be reused), ``abort``
(wakes a reader blocked in ``recv``, from another thread), and the two looks the transports take
at a JSON-RPC body (``answers``, ``rpc_error``).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import zlib
from collections.abc import Iterator
from typing import Any

import requests

from .._accel import decode_message
from ..errors import ConnectionClosed
from . import h1 as _http_wire
from . import unix_client as _http_lean

__all__ = ["abort", "answers", "drain", "iter_body", "read_limited", "rpc_error"]


log = logging.getLogger("mcp_lite.http")


def abort(response: requests.Response | None) -> None:
    """Close a streaming response from another thread, waking its blocked reader.

    Closing the file object alone does not wake a thread blocked in ``recv``; shutting the
    socket down does.
    """
    if response is None:
        return
    sock = _socket_of(response)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(Exception):
        response.close()


def _socket_of(response: requests.Response) -> socket.socket | None:
    raw = response.raw
    conn = getattr(raw, "_connection", None)
    sock = getattr(conn, "sock", None)
    if isinstance(sock, socket.socket):
        return sock
    fp = getattr(getattr(raw, "_fp", None), "fp", None)
    sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def iter_body(response: requests.Response, chunk: int = 65536) -> Iterator[bytes]:
    """Yield the body as it arrives (``read1``: no waiting for a full buffer), decoded when
    the server compressed it (gzip, deflate) in pieces of at most ``chunk`` bytes, so a
    small compressed body never expands in memory at once.

    Raises:
        ConnectionClosed: the body broke off (a truncated or malformed chunked body, fewer
            bytes than ``Content-Length``, a corrupt compressed stream) or the content
            encoding is not one we can decode. A broken body is never a complete message.
    """
    raw = response.raw
    encoding = response.headers.get("content-encoding", "").strip().lower()
    decoder: Any = None
    if encoding in ("gzip", "x-gzip", "deflate"):
        decoder = zlib.decompressobj(wbits=47)  # gzip or zlib header, detected
    elif encoding not in ("", "identity"):
        raise ConnectionClosed(f"the server sent a body in an unsupported encoding {encoding!r}")
    while True:
        try:
            data = raw.read1(chunk, decode_content=False)
        except Exception as exc:
            raise ConnectionClosed(f"the response body broke off: {_reason(exc)}") from exc
        if decoder is None:
            if not data:
                return
            yield data
            continue
        try:
            if not data:
                tail = decoder.flush()
                if tail:
                    yield tail
                if not decoder.eof:
                    raise ConnectionClosed("the compressed response body is truncated")
                return
            while data:
                out = decoder.decompress(data, chunk)
                data = decoder.unconsumed_tail
                if out:
                    yield out
        except zlib.error as exc:
            raise ConnectionClosed(f"the compressed response body is corrupt: {exc}") from exc


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) < 200 else text[:200] + "..."


def answers(data: bytes, request_id: int | str) -> bool:
    """True when ``data`` is the response (or a batch holding the response) to ``request_id``."""
    try:
        message = decode_message(data)
    except ValueError:
        return False
    items = message if isinstance(message, list) else [message]
    return any(
        isinstance(m, dict)
        and m.get("id") == request_id
        and "method" not in m
        and ("result" in m or "error" in m)
        for m in items
    )


def rpc_error(body: bytes) -> dict[str, Any] | None:
    """The ``error`` member when ``body`` is one JSON-RPC error response, else None."""
    try:
        message = decode_message(body) if body.strip() else None
    except ValueError:
        return None
    if isinstance(message, dict) and isinstance(message.get("error"), dict):
        error: dict[str, Any] = message["error"]
        if isinstance(error.get("code"), int):
            return error
    return None


_BUFFERED = (_http_wire._Body, _http_lean._Whole)  # the raws that have ``buffered``


def read_limited(response: requests.Response, limit: int, *, strict: bool = False) -> bytes:
    """Up to ``limit + 1`` bytes of the (decoded) body: one more than allowed shows it is too
    large, and reading stops there, so no more is ever held.

    ``strict``: a body that broke off raises ``ConnectionClosed`` (a message must be whole);
    otherwise (error bodies, quoted in messages) what arrived is returned.
    """
    raw: Any = response.raw
    if type(raw) in _BUFFERED and response.headers.get("content-encoding") in (None, "identity"):
        whole: bytes | None = raw.buffered(limit + 1)  # a small answer, arrived whole
        if whole is not None:
            return whole
    parts: list[bytes] = []
    size = 0
    try:
        for chunk in iter_body(response, min(65536, limit + 1)):
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                break
    except Exception as exc:
        if strict:
            raise
        log.debug("reading a body failed: %s", exc)
    return b"".join(parts)[: limit + 1]


def drain(response: requests.Response, limit: int) -> None:
    """Read and drop a body we do not need (so the connection can be reused), at most
    ``limit`` bytes; a larger or broken one just closes the connection."""
    with contextlib.suppress(Exception):
        if len(read_limited(response, limit)) > limit:
            response.close()
