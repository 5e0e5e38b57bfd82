"""One live connection: a transport, its pending requests, their deadlines, and the workers
that answer the server (``Connection``); the package's modules hold one concept each."""

from .sending import (
    LOAD_STATS_KEYS,
    MAX_QUEUED_NOTIFICATIONS,
    MAX_QUEUED_SERVER_REQUESTS,
    OVERLOADED,
    Connection,
    Handlers,
)

__all__ = [
    "LOAD_STATS_KEYS",
    "MAX_QUEUED_NOTIFICATIONS",
    "MAX_QUEUED_SERVER_REQUESTS",
    "OVERLOADED",
    "Connection",
    "Handlers",
]
