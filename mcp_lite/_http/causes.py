"""Why a connection failed, in words a person acts on: ``network_cause`` walks an exception's chain
to its root and names it (connection refused, no such host, TLS, timed out, reset). It imports only
the standard library, so every transport and the OAuth client can use it (see
docs/explanation/inside-http.md)."""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator

from .resolve import TooManyLookups

__all__ = ["network_cause", "never_connected"]


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it wraps, outermost first, each once."""
    seen: set[int] = set()
    stack = [exc]
    while stack and len(seen) < 32:
        current = stack.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        inner = [getattr(current, "reason", None), current.__cause__, current.__context__]
        inner += [a for a in getattr(current, "args", ()) if isinstance(a, BaseException)]
        stack.extend(e for e in inner if isinstance(e, BaseException))


def _host_of(exc: BaseException) -> str | None:
    """The host urllib3 names in a resolution error (``conn.host``), when it is there."""
    conn = getattr(exc, "conn", None) or getattr(exc, "pool", None)
    host = getattr(conn, "host", None)
    return host if isinstance(host, str) and host else None


def network_cause(exc: BaseException) -> str:
    """``"connection refused"``, ``"no such host 'x.invalid'"``, ``"TLS certificate
    verification failed: ..."``, ``"timed out"``... for a network failure; the innermost
    message (never a bare class name) when the cause is none of those."""
    chain = list(_chain(exc))
    host = next((h for h in map(_host_of, chain) if h), None)
    for e in chain:
        if isinstance(e, ssl.SSLCertVerificationError):
            return f"TLS certificate verification failed: {e.verify_message or e.reason}"
        if isinstance(e, ssl.SSLError):
            return f"TLS handshake failed: {e.reason or e}"
    for e in chain:
        if isinstance(e, TooManyLookups):
            return str(e)
        if isinstance(e, socket.gaierror) or type(e).__name__ == "NameResolutionError":
            return f"no such host {host!r}" if host else "no such host (name resolution failed)"
        if isinstance(e, ConnectionRefusedError):
            return "connection refused (nothing listens on that port)"
        if isinstance(e, ConnectionResetError):
            return "connection reset by the server"
        if isinstance(e, (TimeoutError, socket.timeout)) or "Timeout" in type(e).__name__:
            return "timed out"
        if isinstance(e, OSError) and e.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return "network unreachable"
    for e in chain:
        if "SSL" in type(e).__name__ or "TLS" in str(e)[:40]:
            return f"TLS failure: {_message(e)}"
    return _message(chain[-1])


def _message(exc: BaseException) -> str:
    """The exception's own words, without urllib3's "Max retries exceeded" wrapper text."""
    text = str(exc).strip()
    if not text or "Max retries exceeded" in text:
        return type(exc).__name__.replace("Error", " error").strip().lower()
    if text.startswith("<") and ">: " in text:  # "<urllib3.connection...>: Failed to ..."
        text = text.split(">: ", 1)[1]
    return text


def never_connected(exc: BaseException) -> bool:
    """True when ``exc`` is a failure to open the connection (refused, no such socket or
    host): no byte of the request was written, so it may be sent again."""
    return any(
        any(c.__name__ == "NewConnectionError" for c in type(e).__mro__) for e in _chain(exc)
    )
