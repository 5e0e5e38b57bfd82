"""Small parts of the HTTP exchange the handler reuses: a request line's
``HTTP/x.y`` parsed as the stdlib would accept it, status lines made once per
version and status, and the ``Date`` header made once a second."""

from __future__ import annotations

import email.utils
import time

_STATUS_LINES: dict[tuple[str, str, str, int], str] = {}  # (versions, status): its line


def _http_version(version: str) -> tuple[int, int] | None:
    """``HTTP/x.y`` as numbers, or None where the stdlib's parse_request refuses it."""
    if version == "HTTP/1.1":
        return 1, 1
    if not version.startswith("HTTP/"):
        return None
    parts = version[5:].split(".")
    if len(parts) != 2 or any(not p.isdigit() or len(p) > 10 for p in parts):
        return None
    try:
        return int(parts[0]), int(parts[1])
    except ValueError:  # a digit int() does not take (e.g. a superscript): the stdlib's 400
        return None


_date_cache: tuple[int, str] = (0, "")


def _http_date() -> str:
    """The ``Date`` header's value, made once a second."""
    global _date_cache
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache = (now, email.utils.formatdate(now, usegmt=True))
    return _date_cache[1]
