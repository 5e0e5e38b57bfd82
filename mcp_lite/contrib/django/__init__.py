"""Django integration: MCP servers in ``settings.MCP_LITE``, one lazily built Hub per process
(``get_hub()``), a system check and ``manage.py mcp servers|tools|call`` (see
docs/guides/web-apps.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._process import ProcessHub

if TYPE_CHECKING:
    from ...hub import Hub

__all__ = ["close_hub", "get_hub", "settings_mapping"]


def settings_mapping() -> Any:
    """``settings.MCP_LITE`` (None when it is not set)."""
    from django.conf import settings

    return getattr(settings, "MCP_LITE", None)


def _build() -> Hub:
    from ..settings import hub_from_settings

    return hub_from_settings(settings_mapping())


_hub = ProcessHub(_build)


def get_hub() -> Hub:
    """This process's Hub, built from ``settings.MCP_LITE`` on first use.

    Raises:
        ConfigError: ``MCP_LITE`` is missing or invalid.
    """
    return _hub.get()


def close_hub() -> None:
    """Close this process's Hub now (it is rebuilt on next use; e.g. after changing settings
    in a test)."""
    _hub.close()
