"""Resource subscriptions through a gateway: who watches which URI of one server.

The workers' subscriptions are made on the gateway's one upstream connection, once per URI
(``Client.subscribe_resource``, either era upstream), and undone when the last watcher of
it leaves (unsubscribes, closes its listen stream or its session); a worker's
``resources/unsubscribe`` never ends another's. A ``notifications/resources/updated`` goes
to the watchers of its URI only.

A recycle (or a crash) ends the server process and, with it, every subscription made on
it. The gateway re-makes them on the next process as soon as it runs (at the next
forwarded request, which starts it: a stopped server changes nothing to watch), and sends
each watcher a ``notifications/resources/updated`` for its URIs: what it read before may
have changed meanwhile, or the subscription may have failed on the new process (logged),
so it reads again.

A watcher is any hashable the gateway delivers to (a handshake session, or a 2026-07-28
listen stream).
"""

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
