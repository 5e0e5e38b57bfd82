"""The needs-auth cache: servers that answered 401 recently, kept in a small JSON file for ``ttl``
seconds (15 minutes by default), so a server found here starts as ``needs-auth`` without a
connection attempt (see docs/explanation/inside-the-hub.md)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

__all__ = ["DEFAULT_TTL", "AuthCache", "NeedsAuthCache", "default_path"]

log = logging.getLogger("mcp_lite.hub")

DEFAULT_TTL = 15 * 60.0


class AuthCache(Protocol):
    """What the Hub needs of a needs-auth cache (this file, or
    ``RedisTokenStore.needs_auth_cache()`` shared by a fleet)."""

    ttl: float

    def contains(self, key: str) -> bool: ...

    def add(self, key: str) -> None: ...

    def discard(self, key: str) -> None: ...


def default_path() -> Path:
    """``$XDG_CACHE_HOME/mcp-lite/needs-auth.json``, else ``~/.cache/mcp-lite/needs-auth.json``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mcp-lite" / "needs-auth.json"


class NeedsAuthCache:
    """A TTL set of server keys stored in one JSON file; thread-safe.

    Args:
        path: the file (created with its folder on first write); None for the default.
        ttl: seconds an entry counts (default 15 minutes).
        clock: ``time.time``-like, for tests.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.ttl = float(ttl)
        self._clock = clock or time.time
        self._lock = threading.Lock()

    def contains(self, key: str) -> bool:
        """True when ``key`` was added less than ``ttl`` seconds ago."""
        stamp = self._read().get(key)
        return stamp is not None and self._clock() - stamp < self.ttl

    def add(self, key: str) -> None:
        """Record ``key`` now (and drop expired entries)."""
        with self._lock:
            data = self._fresh(self._read())
            data[key] = self._clock()
            self._write(data)

    def discard(self, key: str) -> None:
        """Forget ``key`` (after the user authorized, or to force a new attempt)."""
        with self._lock:
            data = self._read()
            if key in data:
                del data[key]
                self._write(self._fresh(data))

    def _fresh(self, data: dict[str, float]) -> dict[str, float]:
        now = self._clock()
        return {k: t for k, t in data.items() if now - t < self.ttl}

    def _read(self) -> dict[str, float]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(raw, dict):
            return {}
        out: dict[str, float] = {}
        for key, value in raw.items():
            stamp = value.get("timestamp") if isinstance(value, dict) else value
            if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
                out[str(key)] = float(stamp)
        return out

    def _write(self, data: dict[str, float]) -> None:
        body = json.dumps({k: {"timestamp": t} for k, t in sorted(data.items())}, indent=1)
        tmp = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".needs-auth-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(body)
            os.replace(tmp, self.path)
            tmp = None
        except OSError as exc:
            log.warning("could not write the needs-auth cache %s: %s", self.path, exc)
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
