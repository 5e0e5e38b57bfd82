"""The keyword options of ``connect()`` (and of every client a Hub opens) as ``TypedDict``s,
so that a type checker catches a misspelt option, a wrong type or a handler with the wrong
signature while the options stay plain keyword arguments; each key mirrors a parameter of
``Client.__init__`` (a test keeps them in step; the Hub's own are in ``hub._options``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from ._http.retry import Retry
    from .protocol.types import Params

__all__ = ["ClientOptions", "ConnectOptions"]


class ConnectOptions(TypedDict, total=False):
    """``connect()`` / ``Client()`` options besides ``timeout`` (see ``Client`` for each)."""

    protocol_version: str
    client_info: Mapping[str, Any] | None
    env: Mapping[str, str] | None
    cwd: str | os.PathLike[str] | None
    max_message_size: int | None
    sampling_handler: Callable[[Params], Any] | None
    elicitation_handler: Callable[[Params], Any] | None
    roots: Iterable[str | Mapping[str, Any]] | None
    roots_handler: Callable[[], Any] | None
    log_handler: Callable[[Params], Any] | None
    notification_handler: Callable[[str, Params], Any] | None
    reset_timeout_on_progress: bool
    max_total_timeout: float | None
    auto_reconnect: bool
    discover_timeout: float
    max_pages: int
    max_workers: int
    cache_results: bool
    name: str | None
    headers: Mapping[str, str] | None
    auth: Any
    retry: bool | Retry | Mapping[str, Any] | None
    event_hooks: Mapping[str, Any] | None
    task_receiver: bool
    extensions: Mapping[str, Mapping[str, Any]] | None


class ClientOptions(ConnectOptions, total=False):
    """Options for every client a Hub opens: ``connect()``'s, ``timeout`` included, and
    ``connect_timeout`` (seconds for a server's start and handshake)."""

    timeout: float
    connect_timeout: float
