"""Where tokens live between processes: the ``TokenStore`` interface and ``FileTokenStore``
(a private folder, one atomically written file per hashed key, a cross-process lock around
read-refresh-write) (see docs/explanation/oauth.md, "Token stores").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .. import _fork
from ..errors import ConfigError, RequestTimeout

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the lock is process-local there
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FileTokenStore",
    "MemoryTokenStore",
    "TokenSet",
    "TokenStore",
    "default_store_dir",
    "store_lock",
]

# A token is renewed this long before it expires (at most half its lifetime), so a request
# never carries one that runs out on the way.
_MARGIN = 60.0


@runtime_checkable
class TokenStore(Protocol):
    """What ``OAuth`` needs from a store. Implementations must be thread-safe."""

    def load(self, key: str) -> dict[str, Any] | None: ...

    def save(self, key: str, value: dict[str, Any]) -> None: ...

    def delete(self, key: str) -> None: ...

    def lock(self, key: str, timeout: float) -> contextlib.AbstractContextManager[None]:
        """An exclusive lock on ``key`` across processes, held around read-refresh-write.

        Raises ``RequestTimeout`` (an ``McpError``) when not acquired within ``timeout``
        seconds. A store written before this method existed still works: ``OAuth`` then
        locks within its own process only (``store_lock``).
        """
        ...


def store_lock(store: Any, key: str, timeout: float) -> contextlib.AbstractContextManager[None]:
    """``store.lock(key, timeout)`` when the store has one, else a no-op context (the
    caller's own process-local lock is then all there is)."""
    lock = getattr(store, "lock", None)
    if lock is None:
        return contextlib.nullcontext()
    return lock(key, timeout)  # type: ignore[no-any-return]


# Every object here holding in-process locks, so a forked child can replace them.
_with_locks: weakref.WeakSet[Any] = weakref.WeakSet()


def _reset_after_fork() -> None:
    for owner in list(_with_locks):
        owner._new_locks()


_fork.on_child(_reset_after_fork)


class _KeyLocks:
    """One ``threading.Lock`` per key, acquired with a timeout (``RequestTimeout``)."""

    def __init__(self) -> None:
        self._new_locks()
        _with_locks.add(self)

    def _new_locks(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    @contextlib.contextmanager
    def hold(self, key: str, timeout: float) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        if not lock.acquire(timeout=max(0.0, timeout)):
            raise RequestTimeout(
                f"the token store lock was not free within {timeout:g} seconds", timeout
            )
        try:
            yield
        finally:
            lock.release()


@dataclass
class TokenSet:
    """An access token and what came with it. ``repr`` never shows a token."""

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scope: str | None = None
    # the seconds it was issued for (expires_in): what the refresh margin scales with
    _lifetime: float | None = field(default=None, repr=False)

    @classmethod
    def from_response(
        cls, data: dict[str, Any], previous: TokenSet | None = None, now: float | None = None
    ) -> TokenSet:
        """Build from a token-endpoint answer. A refresh answer without a new refresh token
        keeps the previous one (RFC 6749 §6); without ``scope`` the previous scope stays."""
        now = time.time() if now is None else now
        expires_in = data.get("expires_in")
        expires_at = lifetime = None
        if (
            isinstance(expires_in, (int, float))
            and not isinstance(expires_in, bool)
            or isinstance(expires_in, str)
            and expires_in.isdigit()
        ):
            lifetime = float(expires_in)
            expires_at = now + lifetime
        refresh = data.get("refresh_token")
        scope = data.get("scope")
        return cls(
            access_token=str(data["access_token"]),
            token_type=str(data.get("token_type") or "Bearer"),
            expires_at=expires_at,
            refresh_token=str(refresh)
            if refresh
            else (previous.refresh_token if previous else None),
            scope=str(scope) if scope else (previous.scope if previous else None),
            _lifetime=lifetime,
        )

    def expired(self, skew: float | None = None, now: float | None = None) -> bool:
        """True when the token expires within ``skew`` seconds (unknown expiry: never).

        The default margin is 60 s, but at most half the token's lifetime: a token issued
        for 30 s is renewed after 15 s, not before every request."""
        if self.expires_at is None:
            return False
        if skew is None:
            life = self._lifetime
            skew = _MARGIN if life is None else min(_MARGIN, life / 2)
        return (time.time() if now is None else now) >= self.expires_at - skew

    def to_json(self) -> dict[str, Any]:
        return {
            "access_token": self.access_token,
            "token_type": self.token_type,
            "expires_at": self.expires_at,
            "refresh_token": self.refresh_token,
            "scope": self.scope,
            "lifetime": self._lifetime,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TokenSet | None:
        if not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
            return None
        expires = data.get("expires_at")
        lifetime = data.get("lifetime")
        return cls(
            access_token=data["access_token"],
            token_type=str(data.get("token_type") or "Bearer"),
            expires_at=float(expires) if isinstance(expires, (int, float)) else None,
            refresh_token=data.get("refresh_token") or None,
            scope=data.get("scope") or None,
            _lifetime=float(lifetime)
            if isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool)
            else None,
        )


class MemoryTokenStore:
    """A store in this process only (tests, short scripts, the conformance client)."""

    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()
        self._keys = _KeyLocks()
        _with_locks.add(self)

    def _new_locks(self) -> None:
        self._lock = threading.Lock()

    def lock(self, key: str, timeout: float) -> contextlib.AbstractContextManager[None]:
        """An exclusive lock on ``key`` among this store's users (one process).

        Raises:
            RequestTimeout: not acquired within ``timeout`` seconds.
        """
        return self._keys.hold(key, timeout)

    def load(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            raw = self._data.get(key)
        return json.loads(raw) if raw is not None else None

    def save(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._data[key] = json.dumps(value)

    def delete(self, key: str) -> None:
        with self._lock:
            self._data.pop(key, None)

    def __repr__(self) -> str:
        return f"MemoryTokenStore({len(self._data)} records)"


def default_store_dir() -> Path:
    """``$MCP_LITE_AUTH_DIR``, else ``$XDG_STATE_HOME/mcp-lite/oauth``, else
    ``~/.local/state/mcp-lite/oauth`` (under the user's home: one folder per user)."""
    explicit = os.environ.get("MCP_LITE_AUTH_DIR")
    if explicit:
        return Path(explicit)
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "mcp-lite" / "oauth"


class FileTokenStore:
    """One 0600 JSON file per key in a 0700 folder (see the module docstring).

    Args:
        directory: the folder; created (mode 0700) when missing. On POSIX an existing folder
            that other users can read, write or enter, or that another user owns, is refused
            with ``ConfigError`` (by ``load``, ``save`` and ``lock``), never chmodded.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_store_dir()
        self._lock = threading.Lock()
        self._keys = _KeyLocks()
        _with_locks.add(self)

    def _new_locks(self) -> None:
        self._lock = threading.Lock()

    def _name(self, key: str) -> str:
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]

    def _path(self, key: str) -> Path:
        return self.directory / (self._name(key) + ".json")

    def _check_dir(self) -> bool:
        """True when the folder exists and is private; ``ConfigError`` when it is not."""
        try:
            info = self.directory.stat()
        except FileNotFoundError:
            return False
        if os.name == "posix":
            mode = info.st_mode & 0o777
            if mode & 0o077 or info.st_uid != os.geteuid():
                whose = "" if info.st_uid == os.geteuid() else ", owned by another user"
                raise ConfigError(
                    f"refusing the token folder {str(self.directory)!r}: other users can "
                    f"reach it (mode {mode:o}{whose}); make it private with "
                    f"`chmod 700 {self.directory}` or choose another folder "
                    "(MCP_LITE_AUTH_DIR)"
                )
        return True

    def _ensure_dir(self) -> None:
        if not self._check_dir():
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._check_dir()

    def lock(self, key: str, timeout: float) -> contextlib.AbstractContextManager[None]:
        """An exclusive lock on ``key`` across threads and processes: ``fcntl.flock`` on
        ``<hash>.lock`` beside the entry, polled until ``timeout`` (process-local where
        there is no ``fcntl``).

        Raises:
            RequestTimeout: not acquired within ``timeout`` seconds.
            ConfigError: the folder is not private (see the class docstring).
        """
        return self._flock(key, timeout)

    @contextlib.contextmanager
    def _flock(self, key: str, timeout: float) -> Iterator[None]:
        deadline = time.monotonic() + max(0.0, timeout)
        # Threads of this process queue on a plain lock first: flock alone would also
        # work (one open file each), but this keeps the polling to one thread per process.
        with self._keys.hold(key, timeout):
            if fcntl is None:  # pragma: no cover - Windows
                yield
                return
            self._ensure_dir()
            path = self.directory / (self._name(key) + ".lock")
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                delay = 0.005
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise RequestTimeout(
                                f"the token store lock was not free within {timeout:g} "
                                "seconds (another process is refreshing)",
                                timeout,
                            ) from None
                        time.sleep(min(delay, left))
                        delay = min(delay * 2, 0.1)
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def load(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        with self._lock:
            if not self._check_dir():
                return None
            try:
                raw = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                return None
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(value, dict) or value.get("key") != key:
            return None
        data = value.get("value")
        return data if isinstance(data, dict) else None

    def save(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._ensure_dir()
            path = self._path(key)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
            try:
                os.fchmod(fd, 0o600) if hasattr(os, "fchmod") else None
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"key": key, "value": value}, fh)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise

    def delete(self, key: str) -> None:
        with self._lock, contextlib.suppress(FileNotFoundError):
            self._path(key).unlink()

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.directory)!r})"
