"""Integrations with the frameworks that run mcp_lite at scale (``contrib.django``,
``contrib.flask``, the agent-framework adapters, ``examples/celery_app/``) and the parts they
share: ``hub_from_settings`` / ``check_settings`` for the ``MCP_LITE`` mapping and
``ProcessHub``. Importing this package imports no framework.
"""

from __future__ import annotations

from ._process import ProcessHub
from .settings import Problem, check_settings, hub_from_settings

__all__ = ["Problem", "ProcessHub", "check_settings", "hub_from_settings"]
