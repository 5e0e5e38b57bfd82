"""Result caching of the 2026-07-28 revision (``ttlMs`` / ``cacheScope``, checklist §8.9),
sans-IO: one cache per client, keyed by method and the params that shape the result, the clock
reading passed in (see docs/explanation/protocol.md, "Result caching").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CACHEABLE", "ResultCache", "cache_key"]

CACHEABLE = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
_DROPPED_BY = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}


def cache_key(method: str, params: dict[str, Any] | None) -> str | None:
    """The cache key of a request, or None when its result must not be cached."""
    if method not in CACHEABLE:
        return None
    params = params or {}
    if "inputResponses" in params or "requestState" in params:
        return None
    shaping = {k: v for k, v in params.items() if k != "_meta"}
    return method + " " + json.dumps(shaping, sort_keys=True, separators=(",", ":"))


@dataclass
class ResultCache:
    """Fresh results by key; see the module docstring."""

    _entries: dict[str, tuple[float, dict[str, Any]]] = field(default_factory=dict)

    def get(self, key: str, now: float) -> dict[str, Any] | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= now:
            del self._entries[key]  # stale: fetch again
            return None
        return entry[1]

    def put(self, key: str, result: dict[str, Any], now: float) -> None:
        """Keep ``result`` while its ``ttlMs`` (a positive integer) says it is fresh."""
        ttl = result.get("ttlMs")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
            return  # 0, absent or negative: stale at once
        if result.get("resultType", "complete") != "complete":
            return
        self._entries[key] = (now + ttl / 1000.0, result)

    def invalidate(self, notification: str, params: dict[str, Any]) -> None:
        """Drop what a notification says has changed."""
        if notification == "notifications/resources/updated":
            uri = params.get("uri")
            prefix = "resources/read "
            for key in [k for k in self._entries if k.startswith(prefix)]:
                if json.loads(key[len(prefix) :]).get("uri") == uri:
                    del self._entries[key]
            return
        for method in _DROPPED_BY.get(notification, ()):
            for key in [k for k in self._entries if k.startswith(method + " ")]:
                del self._entries[key]

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
