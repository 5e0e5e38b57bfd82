"""Where a request's body ends (RFC 9112 §6.3), or why its framing is ambiguous; an ambiguous
request is refused with 400 and its connection closed (see docs/explanation/server.md)."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["AmbiguousFraming", "body_length"]

_DIGITS = frozenset("0123456789")  # str.isdigit() takes "²" too, which int() refuses
# No body of ours is anywhere near this many digits: a longer number is just "too large"
# (and int() refuses more than 4300 digits).
_MAX_DIGITS = 18
_TOO_LARGE = 10**18


class AmbiguousFraming(ValueError):
    """The request's body length cannot be told for sure: answer 400 and close."""


class _Headers(Protocol):
    def get_all(self, name: str, failobj: Any = None) -> Any: ...


def body_length(headers: _Headers) -> int | None:
    """The body's length in bytes (0 when there is none), or None when the body is framed
    by ``Transfer-Encoding`` (which this server does not read: the request has no length).

    Raises:
        AmbiguousFraming: more than one ``Content-Length``, ``Content-Length`` together
            with ``Transfer-Encoding``, or a ``Content-Length`` that is not a number.
    """
    lengths: list[str] = headers.get_all("Content-Length") or []
    if headers.get_all("Transfer-Encoding"):
        if lengths:
            raise AmbiguousFraming("both Content-Length and Transfer-Encoding")
        return None
    if not lengths:
        return 0
    if len(lengths) > 1:
        raise AmbiguousFraming(f"{len(lengths)} Content-Length headers")
    value = lengths[0].strip(" \t")
    if not value or not _DIGITS.issuperset(value):
        raise AmbiguousFraming(f"invalid Content-Length {lengths[0][:40]!r}")
    digits = value.lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS:
        return _TOO_LARGE  # larger than any bound: refused as too large
    return int(digits)
