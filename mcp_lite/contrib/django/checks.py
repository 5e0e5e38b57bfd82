"""``manage.py check``: ``MCP_LITE`` is validated without connecting to any server."""

from __future__ import annotations

from typing import Any

from django.core import checks


def check_mcp_lite_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from ..settings import check_settings
    from . import settings_mapping

    settings = settings_mapping()
    if settings is None:
        return [
            checks.Error(
                "settings.MCP_LITE is not set",
                hint='MCP_LITE = {"servers": {...}} or {"mcp_json": "<path to .mcp.json>"}',
                id="mcp_lite.E001",
            )
        ]
    messages: list[checks.CheckMessage] = []
    for problem in check_settings(settings):
        if problem.level == "error":
            messages.append(checks.Error(problem.message, hint=problem.hint, id="mcp_lite.E001"))
        else:
            messages.append(checks.Warning(problem.message, hint=problem.hint, id="mcp_lite.W001"))
    return messages
