"""One live connection (``Connection``): a transport, its pending requests and their
deadlines, and the workers that answer the server. ``handlers`` holds what the client answers,
``call`` one awaited call, ``base`` the state and lifecycle, ``sending`` requests out and their
expiry, ``routing`` what comes back, ``backlog`` the bound on what waits for a worker,
``control_sender`` the thread that writes cancellations, ``observer`` what the connection reports
to, ``task_receiver`` the tasks the server asks the client to run; the mechanism is told in
``docs/explanation/inside-the-connection.md``."""

from .base import LOAD_STATS_KEYS, MAX_QUEUED_NOTIFICATIONS, MAX_QUEUED_SERVER_REQUESTS, OVERLOADED
from .handlers import Handlers
from .routing import Connection

__all__ = [
    "LOAD_STATS_KEYS",
    "MAX_QUEUED_NOTIFICATIONS",
    "MAX_QUEUED_SERVER_REQUESTS",
    "OVERLOADED",
    "Connection",
    "Handlers",
]
