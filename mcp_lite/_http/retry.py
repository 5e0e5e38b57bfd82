"""When an HTTP request is tried again after a transient error (issue 10 §7). ``Retry`` is the
per-server setting (``connect(..., retry=...)``, ``"retry"`` in a Hub config entry); ``retry=False``
turns it off. The rules are in docs/explanation/inside-http.md."""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

__all__ = ["NO_RETRY", "Retry", "as_retry", "is_read_only", "retry_delay"]

_READ_ONLY = frozenset({"ping", "server/discover", "completion/complete"})
_READ_ONLY_SUFFIXES = ("/list", "/read", "/get")


@dataclass(frozen=True)
class Retry:
    """How a server's transient HTTP errors are retried (an immutable value).

    Args:
        attempts: retries after the first try (0: never retry).
        backoff: first delay in seconds for 5xx retries, doubled each time, with jitter.
        max_backoff: the longest delay between two tries.
        max_retry_after: the longest ``Retry-After`` honoured; a longer one is final.
    """

    attempts: int = 3
    backoff: float = 0.25
    max_backoff: float = 5.0
    max_retry_after: float = 30.0

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or isinstance(self.attempts, bool):
            raise ConfigError("Retry(attempts=...) must be an integer")
        if self.attempts < 0 or self.attempts > 100:
            raise ConfigError("Retry(attempts=...) must be between 0 and 100")
        for name in ("backoff", "max_backoff", "max_retry_after"):
            value = getattr(self, name)
            if (
                not isinstance(value, (int, float))
                or isinstance(value, bool)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ConfigError(f"Retry({name}=...) must be a non-negative number of seconds")


NO_RETRY = Retry(attempts=0)


def as_retry(value: Any) -> Retry:
    """The ``retry`` option as given: None/True (defaults), False (off), a ``Retry``, or a
    mapping of its fields (from a config file)."""
    if value is None or value is True:
        return Retry()
    if value is False:
        return NO_RETRY
    if isinstance(value, Retry):
        return value
    if isinstance(value, Mapping):
        known = {"attempts", "backoff", "max_backoff", "max_retry_after"}
        unknown = sorted(set(map(str, value)) - known)
        if unknown:
            raise ConfigError(
                f"unknown retry setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return Retry(**{str(k): v for k, v in value.items()})
    raise ConfigError(
        f"retry must be True, False, a mcp_lite.Retry or a mapping, not {type(value).__name__}"
    )


def is_read_only(method: str) -> bool:
    return method in _READ_ONLY or method.endswith(_READ_ONLY_SUFFIXES)


def retry_delay(
    policy: Retry,
    method: str,
    status: int,
    headers: Mapping[str, str],
    attempt: int,
    remaining: float | None,
) -> float | None:
    """Seconds to wait before try number ``attempt + 1`` (``attempt`` counts retries made so
    far), or None when the answer is final: not transient, out of attempts, or the wait
    would not fit in ``remaining`` seconds."""
    if attempt >= policy.attempts or status < 429:
        return None
    after = _retry_after(headers.get("Retry-After"))
    if status in (429, 503) and after is not None:
        if after > policy.max_retry_after:
            return None
        delay = after
    elif status >= 500 and is_read_only(method):
        delay = min(policy.backoff * 2.0**attempt, policy.max_backoff)
        delay *= 0.5 + random.random() / 2  # jitter: many clients do not retry in step
    else:
        return None
    if remaining is not None and delay >= remaining - 0.05:
        return None
    return delay


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


MAX_RECONNECT_MS = 3_600_000


def reconnect_delay(retry_ms: int | None, failures: int) -> float:
    """Seconds before reconnecting: at least the server's ``retry``, with exponential backoff
    (0.25 s doubling, capped at 10 s) and jitter after failures."""
    # A server's retry is capped at an hour: a longer one (or one of hundreds of digits) would
    # overflow the wait, and a stream that long gone is better re-opened.
    floor = min(retry_ms, MAX_RECONNECT_MS) / 1000.0 if retry_ms is not None else 0.0
    if failures == 0:
        return max(floor, 0.1)
    backoff = min(0.25 * 2.0 ** (failures - 1), 10.0) * (0.5 + random.random() / 2)
    return max(floor, backoff)
