"""The keyword options of ``connect()``, ``Hub()`` and ``Hub.from_config()`` as ``TypedDict``s.

``connect(target, **options: Unpack[ConnectOptions])`` lets a type checker (mypy, pyright, an
IDE) catch a misspelt option (``timout=``), a value of the wrong type, or a handler with the
wrong signature, while the options stay plain keyword arguments at run time. Each key mirrors
a keyword parameter of ``Client.__init__`` (``Hub.__init__``, ``load_config``); a test keeps
them in step, so an option added there must be added here too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from .hub._auth_cache import AuthCache
    from .hub._connections import Backoff, ElicitationHook
    from .protocol.types import Params
    from ._http.retry import Retry

__all__ = [
    "ClientOptions",
    "ConnectOptions",
    "FromConfigOptions",
    "HubOptions",
    "LoadConfigOptions",
]


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


class ClientOptions(ConnectOptions, total=False):
    """Options for every client a Hub opens: ``connect()``'s, ``timeout`` included, and
    ``connect_timeout`` (seconds for a server's start and handshake)."""

    timeout: float
    connect_timeout: float


class HubOptions(TypedDict, total=False):
    """``Hub()`` keyword options besides ``allow``, ``deny`` and ``permission_handler``."""

    default_permission: Literal["allow", "deny"]
    elicitation_hooks: Iterable[ElicitationHook]
    elicitation_handler: ElicitationHook | None
    sampling_handler: Callable[[str, Params], Any] | None
    output_dir: str | os.PathLike[str] | None
    max_output_tokens: int | None
    client_options: ClientOptions | None
    backoff: Backoff | None
    auth_cache_path: str | os.PathLike[str] | None
    elicitation_timeout: float
    event_hooks: Mapping[str, Any] | None
    always_load: Iterable[str]
    auth_cache: AuthCache | None
    allowed_servers: Iterable[Mapping[str, Any]] | None
    denied_servers: Iterable[Mapping[str, Any]] | None
    max_output_file_bytes: int | None


class LoadConfigOptions(TypedDict, total=False):
    """``load_config()`` options besides ``project_dir`` and ``trust_project``."""

    user_dir: str | os.PathLike[str] | None
    managed_path: str | os.PathLike[str] | None
    config_files: Iterable[str | Path]
    dynamic: Mapping[str, Any] | None
    remote: Callable[[], Mapping[str, Any]] | str | None
    environ: Mapping[str, str] | None
    managed_settings_path: str | os.PathLike[str] | None
    plugins_dir: str | os.PathLike[str] | None
    trust_hint: str


class FromConfigOptions(HubOptions, LoadConfigOptions, total=False):
    """``Hub.from_config()`` options: the Hub's and ``load_config``'s."""
