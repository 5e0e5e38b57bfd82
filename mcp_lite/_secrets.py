"""Keeping secrets out of text and off a broken wire: the helpers every layer uses to show a URL
without its password or query values, never to show a header value, and to refuse header
values with CR, LF or NUL when configured (see docs/explanation/security.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from .errors import ConfigError

__all__ = [
    "REDACTED",
    "check_headers",
    "header_problem",
    "is_loopback_host",
    "plain_text_off_loopback",
    "redact_text",
    "redact_url",
    "scrub",
    "sent_secrets",
]

REDACTED = "[redacted]"
_BAD = ("\r", "\n", "\x00")


def redact_url(url: str) -> str:
    """``url`` without its userinfo password and with every query value replaced by
    ``[redacted]``; the fragment is dropped. Never raises (garbage comes back shortened)."""
    try:
        parts = urlsplit(str(url))
        netloc = parts.netloc
        if "@" in netloc:
            user, _, host = netloc.rpartition("@")
            name = user.split(":", 1)[0]
            netloc = f"{name}:{REDACTED}@{host}" if ":" in user else f"{REDACTED}@{host}"
        query = "&".join(
            f"{item.split('=', 1)[0]}={REDACTED}" if "=" in item else REDACTED
            for item in parts.query.split("&")
            if item
        )
        shown = urlunsplit((parts.scheme, netloc, parts.path, query, ""))
        cut = len(parts.scheme)
        if str(url)[cut : cut + 3] == "://" and shown[cut : cut + 3] != "://":
            shown = f"{parts.scheme}://{shown[len(parts.scheme) + 1 :]}"  # unix:///path.sock
        return shown
    except Exception:
        return "<unparsable URL>"


_QUERY_VALUE = re.compile(r"([?&][^=&?#\s'\"<>]+=)[^&#\s'\"<>)]+")
_PASSWORD = re.compile(r"(://[^:/@\s'\"]+:)[^@/\s'\"]+@")


def redact_text(text: str) -> str:
    """``text`` (an error from a library, quoting a URL) with every URL query value and
    userinfo password replaced by ``[redacted]``."""
    text = _PASSWORD.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    return _QUERY_VALUE.sub(lambda m: f"{m.group(1)}{REDACTED}", text)


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (longer than 3 characters) replaced by ``[redacted]``."""
    for secret in sorted((s for s in secrets if s and len(s) > 3), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


# Request headers whose values are not secrets (everything else may be: an API key header,
# an Authorization header, a cookie, a session id...).
_PLAIN_HEADERS = frozenset(
    (
        "accept",
        "accept-encoding",
        "connection",
        "content-length",
        "content-type",
        "host",
        "last-event-id",
        "mcp-method",
        "mcp-protocol-version",
        "user-agent",
    )
)


def sent_secrets(headers: Mapping[str, object] | None) -> list[str]:
    """The values of the request headers that may be secret, and their credential part
    (``Bearer <token>`` gives the token too): what a server's error text must not echo."""
    out: list[str] = []
    for name, value in (headers or {}).items():
        if str(name).lower() in _PLAIN_HEADERS:
            continue
        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        out.append(text)
        scheme, _, credential = text.partition(" ")
        if credential and scheme.isalpha():
            out.append(credential)
    return out


def is_loopback_host(host: str | None) -> bool:
    """True for ``localhost`` (and ``*.localhost``) and loopback IP literals
    (``127.0.0.0/8``, ``::1``, and ``::ffff:127.x`` written as IPv6)."""
    if not host:
        return False
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    import ipaddress  # here: only remote targets need it, and a stdio start-up is timed

    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def plain_text_off_loopback(url: str) -> bool:
    """True when ``url`` travels unencrypted (``http``/``ws``) to a host that is not this
    machine: anything sent there (a header, a token) can be read on the way."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "ws") and not is_loopback_host(parts.hostname)


def header_problem(name: object, value: object) -> str | None:
    """Why the header ``name: value`` cannot be sent, or None. Never quotes the value."""
    if not isinstance(name, str) or not name or any(c in name for c in ":\r\n\x00 \t"):
        return f"invalid header name {name!r}"
    if not isinstance(value, str):
        return f"header {name!r} must have a string value, not {type(value).__name__}"
    if any(c in value for c in _BAD):
        return f"header {name!r} has a line break or NUL in its value (refused)"
    return None


def check_headers(headers: Mapping[str, object] | None, where: str = "") -> None:
    """Raise ``ConfigError`` naming the first header that cannot be sent (see
    ``header_problem``)."""
    for name, value in (headers or {}).items():
        problem = header_problem(name, value)
        if problem is not None:
            raise ConfigError(f"{where}: {problem}" if where else problem)
