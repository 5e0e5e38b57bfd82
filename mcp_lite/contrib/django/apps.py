"""The Django app of mcp_lite: registers the ``MCP_LITE`` system check."""

from __future__ import annotations

from django.apps import AppConfig


class McpLiteConfig(AppConfig):  # type: ignore[misc]
    name = "mcp_lite.contrib.django"
    label = "mcp_lite"
    verbose_name = "MCP (mcp_lite)"

    def ready(self) -> None:
        from django.core import checks

        from .checks import check_mcp_lite_settings

        checks.register(check_mcp_lite_settings, "mcp_lite")
