"""Resource subscriptions through a gateway: who watches which URI of one server, made once per URI
on the upstream connection and made again after a recycle. A watcher is any hashable the gateway
delivers to (a handshake session, or a 2026-07-28 listen stream); see
docs/explanation/inside-the-hub.md."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["Subscriptions"]


class Subscriptions:
    """One server's watchers by URI, and the upstream client their subscriptions are on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watchers: dict[str, set[Any]] = {}
        self._client: Any = None  # the client the subscriptions were last made on

    def watch(self, watcher: Any, uri: str, client: Any) -> bool:
        """``watcher`` subscribes to ``uri``, made on ``client`` (see ``lost`` first); True
        when the URI needs its subscription made upstream (its first watcher)."""
        with self._lock:
            watchers = self._watchers.setdefault(uri, set())
            first = not watchers
            watchers.add(watcher)
            self._client = client
            return first

    def unwatch(self, watcher: Any, uri: str | None = None) -> list[str]:
        """``watcher`` leaves ``uri`` (None: every URI); returns the URIs left unwatched
        (to unsubscribe upstream)."""
        left = []
        with self._lock:
            for each in [uri] if uri is not None else list(self._watchers):
                watchers = self._watchers.get(each)
                if watchers is None or watcher not in watchers:
                    continue
                watchers.discard(watcher)
                if not watchers:
                    del self._watchers[each]
                    left.append(each)
        return left

    def watchers(self, uri: str) -> list[Any]:
        with self._lock:
            return list(self._watchers.get(uri, ()))

    def lost(self, client: Any) -> list[str]:
        """The URIs to subscribe again when ``client`` is not the one they were made on
        (the server restarted); [] when nothing is watched or nothing changed."""
        with self._lock:
            if client is self._client or not self._watchers:
                return []
            self._client = client
            return sorted(self._watchers)
