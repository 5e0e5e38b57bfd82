"""Flask integration: the ``McpLite`` extension (``init_app``), the same ``MCP_LITE`` mapping as
Django's in ``app.config`` and one lazily built Hub per process, ``mcp.hub`` being the current
app's (see docs/guides/web-apps.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ._process import ProcessHub
from .settings import check_settings, hub_from_settings

if TYPE_CHECKING:
    from flask import Flask

    from ..hub import Hub

__all__ = ["McpLite"]

log = logging.getLogger("mcp_lite.contrib.flask")


class McpLite:
    """The extension: ``McpLite(app)`` or ``McpLite()`` then ``init_app(app)``."""

    def __init__(self, app: Flask | None = None) -> None:
        self._hubs: dict[int, ProcessHub] = {}  # id(app) -> that app's per-process Hub
        self._app: Flask | None = None
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Check ``app.config["MCP_LITE"]`` and attach the per-process Hub to ``app``.

        Raises:
            ConfigError: ``MCP_LITE`` is missing or has errors.
        """
        settings = app.config.get("MCP_LITE")
        if settings is None:
            raise ConfigError('app.config["MCP_LITE"] is not set')
        problems = check_settings(settings)
        errors = [p for p in problems if p.level == "error"]
        if errors:
            raise ConfigError(
                "; ".join(p.message + (f" ({p.hint})" if p.hint else "") for p in errors)
            )
        for warning in problems:
            log.warning("%s%s", warning.message, f" ({warning.hint})" if warning.hint else "")
        frozen = dict(settings)
        process_hub = ProcessHub(lambda: hub_from_settings(frozen))
        self._hubs[id(app)] = process_hub
        app.extensions["mcp_lite"] = process_hub
        if self._app is None:
            self._app = app

    @property
    def hub(self) -> Hub:
        """This process's Hub of the current app (or of the only app, outside a context)."""
        return self._process_hub().get()

    def close(self) -> None:
        """Close this process's Hub of the current app (rebuilt on next use)."""
        self._process_hub().close()

    def _process_hub(self) -> ProcessHub:
        app: Any = None
        try:
            from flask import current_app

            app = current_app._get_current_object()  # type: ignore[attr-defined]
        except RuntimeError:  # outside an app context
            app = self._app
        if app is None or id(app) not in self._hubs:
            raise ConfigError("McpLite.init_app(app) has not been called for this app")
        return self._hubs[id(app)]
