"""``RedisTokenStore``: OAuth tokens and the needs-auth cache shared by every worker that points
at the same Redis, with a Redis lock so a rotating refresh token is used by one worker at a
time (see docs/explanation/oauth.md, "Token stores"). Needs the ``redis`` extra.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from typing import Any

from .._http.causes import network_cause
from ..errors import ConfigError, ConnectError, RequestTimeout

__all__ = ["RedisNeedsAuthCache", "RedisTokenStore"]

log = logging.getLogger("mcp_lite.auth")

DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "mcp-lite:"
# Released only if still ours: a holder that outlived its expiry never frees another's lock.
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]


def _safe_url(url: str) -> str:
    """The URL without its user and password (for messages)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


class RedisTokenStore:
    """A ``TokenStore`` in Redis (see the module docstring). Thread-safe and fork-safe (the
    Redis client drops its parent's connections in a forked child).

    Args:
        url: ``redis://[user:password@]host:port/db`` or ``rediss://`` (TLS).
        prefix: put before every key, so several apps can share one Redis.
        lock_ttl: seconds a lock lives if its holder dies without releasing it (a refresh
            must finish within it).
        socket_timeout: seconds for one Redis command (a stalled Redis fails the caller
            instead of hanging it).
        client: an existing ``redis.Redis`` to use instead of ``url``.

    Raises:
        ConfigError: the ``redis`` package is not installed.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        prefix: str = DEFAULT_PREFIX,
        *,
        lock_ttl: float = 30.0,
        socket_timeout: float = 10.0,
        client: Any = None,
    ) -> None:
        self.url = _safe_url(url)
        self.prefix = prefix
        self.lock_ttl = float(lock_ttl)
        if client is None:
            try:
                import redis
            except ImportError:
                raise ConfigError(
                    "RedisTokenStore needs the redis package: pip install 'mcp-lite-client[redis]'"
                ) from None
            client = redis.Redis.from_url(
                url, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout
            )
        self._redis = client
        self._release = client.register_script(_RELEASE)

    # --- TokenStore -------------------------------------------------------------------------------

    def load(self, key: str) -> dict[str, Any] | None:
        raw = self._call("read", self._redis.get, self._key("oauth:", key))
        if raw is None:
            return None
        try:
            record = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(record, dict) or record.get("key") != key:
            return None  # a hash collision or someone else's value: never hand it out
        value = record.get("value")
        return value if isinstance(value, dict) else None

    def save(self, key: str, value: dict[str, Any]) -> None:
        body = json.dumps({"key": key, "value": value})
        self._call("write", self._redis.set, self._key("oauth:", key), body)

    def delete(self, key: str) -> None:
        self._call("delete", self._redis.delete, self._key("oauth:", key))

    @contextlib.contextmanager
    def lock(self, key: str, timeout: float) -> Iterator[None]:
        """Hold the fleet-wide lock of ``key`` (read-refresh-write of its tokens).

        Raises:
            RequestTimeout: another holder kept it for ``timeout`` seconds.
            ConnectError: Redis cannot be reached.
        """
        name = self._key("lock:", key)
        token = f"{os.getpid()}-{uuid.uuid4().hex}"
        ttl_ms = max(1, int(self.lock_ttl * 1000))
        deadline = time.monotonic() + max(0.0, timeout)
        pause = 0.005
        while not self._call("lock", self._redis.set, name, token, nx=True, px=ttl_ms):
            left = deadline - time.monotonic()
            if left <= 0:
                raise RequestTimeout(
                    f"the token store lock was held by another worker for {timeout:g} s", timeout
                )
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.1)
        try:
            yield
        finally:
            try:
                self._call("unlock", self._release, keys=[name], args=[token])
            except ConnectError as exc:  # it expires by itself after lock_ttl
                log.warning("could not release a token store lock: %s", exc)

    # --- the needs-auth cache ---------------------------------------------------------------------

    def needs_auth_cache(self, ttl: float = 15 * 60.0) -> RedisNeedsAuthCache:
        """The Hub's needs-auth cache in this Redis: ``Hub(..., auth_cache=store.needs_auth_cache())``
        so a server that asked for authorization is not retried by every worker."""
        return RedisNeedsAuthCache(self, ttl)

    # --- internals --------------------------------------------------------------------------------

    def _key(self, kind: str, key: str) -> str:
        return f"{self.prefix}{kind}{_digest(key)}"

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if type(exc).__module__.split(".")[0] != "redis":
                raise
            # the cause in words (refused, no such host, timed out), not the class name
            connection = type(exc).__name__ in ("ConnectionError", "TimeoutError")
            cause = network_cause(exc) if connection else None
            raise ConnectError(
                f"token store {self.url}: {what} failed ({cause or type(exc).__name__})"
            ) from None

    def __repr__(self) -> str:
        return f"RedisTokenStore({self.url!r}, prefix={self.prefix!r})"


class RedisNeedsAuthCache:
    """The needs-auth TTL set (see ``mcp_lite.hub._runtime.auth_cache``) in Redis: one key per server
    with an expiry, so every worker of the fleet skips a server that needs a login."""

    def __init__(self, store: RedisTokenStore, ttl: float) -> None:
        self._store = store
        self.ttl = float(ttl)

    def contains(self, key: str) -> bool:
        try:
            found = self._store._call(
                "read", self._store._redis.exists, self._store._key("needs-auth:", key)
            )
        except ConnectError as exc:  # an optimisation, never a reason to fail
            log.warning("needs-auth cache: %s", exc)
            return False
        return bool(found)

    def add(self, key: str) -> None:
        try:
            self._store._call(
                "write",
                self._store._redis.set,
                self._store._key("needs-auth:", key),
                str(time.time()),
                px=max(1, int(self.ttl * 1000)),
            )
        except ConnectError as exc:
            log.warning("needs-auth cache: %s", exc)

    def discard(self, key: str) -> None:
        try:
            self._store._call(
                "delete", self._store._redis.delete, self._store._key("needs-auth:", key)
            )
        except ConnectError as exc:
            log.warning("needs-auth cache: %s", exc)

    def __repr__(self) -> str:
        return f"RedisNeedsAuthCache({self._store!r}, ttl={self.ttl:g})"
