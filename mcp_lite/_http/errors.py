"""Failures of an HTTP exchange as ``mcp_lite.errors``: a non-success status (``status_error``,
quoting a bounded, scrubbed excerpt of the body) and a network failure from ``requests``,
urllib3 or the socket (``map_error``, naming the phase), so nothing from ``requests`` leaves the
transports.
"""

from __future__ import annotations

import errno

import requests

from .._secrets import redact_text, scrub, sent_secrets
from ..errors import (
    AuthRequired,
    ConfigError,
    ConnectError,
    ConnectionClosed,
    McpError,
    RequestTimeout,
)
from .auth import _INSUFFICIENT_SCOPE
from .body import read_limited
from .causes import network_cause

__all__ = ["body_excerpt", "is_terminal_network_error", "map_error", "status_error"]

_EXCERPT = 300


def body_excerpt(response: requests.Response) -> str:
    """At most a few hundred characters of the body, for error messages; never raises."""
    try:
        raw = read_limited(response, _EXCERPT + 1) if response.raw else b""
    except Exception:
        return ""
    text = raw.decode("utf-8", "replace").strip()
    return text[:_EXCERPT] + ("..." if len(text) > _EXCERPT else "")


def status_error(response: requests.Response, what: str, body: str | None = None) -> McpError:
    """The error for a non-success status: ``AuthRequired`` for 401/403-with-challenge,
    else a ``ConnectError`` quoting the status and a bounded excerpt of the body."""
    text = body_excerpt(response) if body is None else body[:_EXCERPT]
    # A server may echo what it was sent: never show our header values or token back.
    request = getattr(response, "request", None)
    text = scrub(text, sent_secrets(getattr(request, "headers", None)))
    status = response.status_code
    detail = f"HTTP {status} {response.reason or ''}".rstrip()
    message = f"{what}: {detail}" + (f": {text}" if text else "")
    after = response.headers.get("Retry-After") if status in (429, 503) else None
    if after:  # not retried: the wait it asks for is past the deadline, or too long
        message += f" (the server asks to retry after {after[:40]!r}; not retried)"
    error: McpError
    if status == 401 or (
        status == 403 and _INSUFFICIENT_SCOPE.search(response.headers.get("WWW-Authenticate", ""))
    ):
        error = AuthRequired(message + " (authorization required)")
    else:
        error = ConnectError(message)
    error._http_status = status
    return error


def is_terminal_network_error(exc: BaseException) -> bool:
    """A reset, timeout or broken pipe: the kind that, repeated, means the link is dead."""
    if isinstance(exc, (requests.Timeout, requests.ConnectionError)):
        return True
    return isinstance(exc, OSError) and exc.errno in (
        errno.ECONNRESET,
        errno.EPIPE,
        errno.ETIMEDOUT,
    )


def map_error(exc: BaseException, what: str) -> McpError:
    """A ``requests`` (or socket) failure as an ``mcp_lite`` error. The library's text
    quotes URLs: their query values and passwords are redacted."""
    if isinstance(exc, McpError):
        return exc
    error = _map_error(exc, what)
    error.message = redact_text(error.message)
    error.args = (error.message, *error.args[1:])
    return error


def _map_error(exc: BaseException, what: str) -> McpError:
    if isinstance(exc, requests.ConnectTimeout):
        return ConnectError(f"{what}: connection timed out")
    if isinstance(exc, requests.Timeout):
        return RequestTimeout(f"{what}: the server stopped sending (timed out)")
    if isinstance(exc, requests.exceptions.SSLError):
        return ConnectError(f"{what}: {network_cause(exc)}")
    if isinstance(exc, requests.ConnectionError):
        cause = network_cause(exc)
        text = str(exc)
        if (
            "refused" in cause
            or "no such host" in cause
            or "Max retries" in text
            or "NameResolution" in text
        ):
            return ConnectError(f"{what}: cannot reach the server: {cause}")
        return ConnectionClosed(f"{what}: connection lost: {cause}")
    if isinstance(
        exc,
        (
            requests.exceptions.InvalidURL,
            requests.exceptions.MissingSchema,
            requests.exceptions.InvalidSchema,
        ),
    ):
        return ConfigError(f"{what}: invalid URL: {exc}")
    if isinstance(exc, (requests.RequestException, OSError)):
        return ConnectionClosed(f"{what}: {network_cause(exc)}")
    return McpError(f"{what}: unexpected {type(exc).__name__}: {exc}")
