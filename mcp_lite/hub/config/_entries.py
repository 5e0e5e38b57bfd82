"""The records of a loaded configuration: ``Scope``, ``ConfigIssue`` (one problem), ``ServerEntry``
(one configured server) and ``HubConfig`` (the merged result). Kept apart from the loader so
that both the loader (``config``) and the file finder (``_discovery``) fill them in without
importing each other."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..._server_config import (
    SdkServerConfig,
    ServerConfig,
    ServerTarget,
    StdioServerConfig,
    _target_of,
    normalize_url,
)
from ...errors import ConfigError
from .policy import ServerPolicy

if TYPE_CHECKING:
    from ...server import Server

__all__ = ["ConfigIssue", "HubConfig", "Scope", "ServerEntry"]

Scope = Literal["enterprise", "local", "project", "user", "dynamic", "remote"]


@dataclass(frozen=True)
class ConfigIssue:
    """A problem with a source or one of its entries; the rest of the config still loads.

    ``server`` is ``None`` when the whole source is affected (unreadable file, not JSON,
    remote failure).
    """

    source: str
    server: str | None
    message: str

    def __str__(self) -> str:
        where = self.source if self.server is None else f"{self.source}: server {self.server!r}"
        return f"{where}: {self.message}"


@dataclass
class ServerEntry:
    """One configured server. ``config`` is ``None`` exactly when ``error`` is set.

    ``usable`` entries (valid, not disabled) may be connected with
    ``mcp_lite.connect(entry.target())``.
    """

    name: str
    scope: Scope
    config: ServerConfig | None
    source: str
    disabled_reason: str | None = None
    error: str | None = None

    @property
    def usable(self) -> bool:
        """Valid and not disabled: the Hub may connect it."""
        return self.config is not None and self.error is None and self.disabled_reason is None

    def target(self) -> ServerTarget | Server:
        """What to pass to ``mcp_lite.connect()``.

        stdio: ``{"command", "args", "env", "cwd"}``; remote: ``{"type", "url", "headers",
        ...}`` with the type's fields and any unknown fields kept (``ws-ide`` gives its
        header name as ``authHeaderName``, the key the transport reads); sdk: the
        ``mcp_lite.Server`` itself (its entry's ``extensions`` only a Hub applies).
        ``timeout`` and ``disabled`` are Hub settings and are left out; ``extensions`` is
        kept (``connect`` declares it).

        Raises:
            ConfigError: the entry has no valid config (see ``error``).
        """
        config = self.config
        if config is None:
            raise ConfigError(f"server {self.name!r} has no valid config: {self.error}")
        return _target_of(config)

    def signature(self) -> str | None:
        """The content signature used to find duplicates across scopes.

        ``"stdio:" + json([command, *args])`` for stdio, ``"url:" + normalized url`` for
        remote types, ``None`` for in-process servers and invalid entries.
        """
        config = self.config
        if config is None or isinstance(config, SdkServerConfig):
            return None
        if isinstance(config, StdioServerConfig):
            return "stdio:" + json.dumps([config.command, *config.args])
        return "url:" + normalize_url(config.url)


@dataclass
class HubConfig:
    """The merged configuration.

    Attributes:
        servers: the winning entry per name, ordered by name (including invalid,
            untrusted and disabled entries: check ``ServerEntry.usable``).
        issues: bad sources and bad entries.
        exclusive: ``managed-mcp.json`` exists and is the only source.
        dropped: entries that lost (overridden, duplicate signature, reserved name, excluded
            by the enterprise file), each with ``disabled_reason`` saying why.
        sources: every file or source that was read, in order.
        policies: the managed server policy (``allowedMcpServers`` / ``deniedMcpServers``).
        allow_rules, deny_rules: ``permissions`` rules (``mcp__...``) of the settings files.
        local_settings: where an "always allow" answer is saved.
    """

    servers: dict[str, ServerEntry] = field(default_factory=dict)
    issues: list[ConfigIssue] = field(default_factory=list)
    exclusive: bool = False
    dropped: list[ServerEntry] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    policies: list[ServerPolicy] = field(default_factory=list)
    allow_rules: list[str] = field(default_factory=list)
    deny_rules: list[str] = field(default_factory=list)
    local_settings: Path | None = None
