"""The keyword options of ``Hub()``, ``load_config()`` and ``Hub.from_config()``, typed as
``mcp_lite._options`` types those of ``connect()``: a type checker catches a misspelt option while
the options stay plain keyword arguments at run time. Each key mirrors a keyword parameter of
``Hub.__init__`` (``load_config``); a test keeps them in step."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from .._options import ClientOptions

if TYPE_CHECKING:
    from ..protocol.types import Params
    from ._runtime.auth_cache import AuthCache
    from ._runtime.elicitation import ElicitationHook
    from ._runtime.server_status import Backoff

__all__ = ["FromConfigOptions", "HubOptions", "LoadConfigOptions"]


class HubOptions(TypedDict, total=False):
    """``Hub()`` keyword options besides ``allow``, ``deny`` and ``permission_handler``."""

    default_permission: Literal["allow", "deny"]
    elicitation_hooks: Iterable[ElicitationHook]
    elicitation_handler: ElicitationHook | None
    sampling_handler: Callable[[str, Params], Any] | None
    output_dir: str | os.PathLike[str] | None
    media: Literal["files", "inline"]
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
    idle_timeout: float | None
    max_lifetime: float | None
    gateway: str | bool | None
    gateway_user: str | int | None
    extensions: Mapping[str, Mapping[str, Any]] | None


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
