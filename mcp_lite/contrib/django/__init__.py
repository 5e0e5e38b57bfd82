"""Django integration: MCP servers in settings, one Hub per process.

1. ``INSTALLED_APPS += ["mcp_lite.contrib.django"]``
2. ``MCP_LITE = {...}`` in settings (see ``mcp_lite.contrib.settings``: ``servers`` written
   there, or ``mcp_json`` pointing at a project's ``.mcp.json`` plus ``trust_project``);
3. in views, tasks and commands: ``from mcp_lite.contrib.django import get_hub`` then
   ``get_hub().call_tool("mcp__demo__add", {"a": 1, "b": 2})``.

The Hub is built on first use in each process (so gunicorn ``--preload`` masters and Celery
parents start nothing they do not use; each forked worker has its own) and closed when the
process exits. ``manage.py check`` validates ``MCP_LITE`` (ids ``mcp_lite.E001`` errors,
``mcp_lite.W001`` warnings, e.g. an untrusted project server); ``manage.py mcp servers``,
``manage.py mcp tools [SERVER]`` and ``manage.py mcp call TOOL '{json}'`` use the same Hub.
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
