"""Integrations with the frameworks that run mcp_lite at scale.

- ``mcp_lite.contrib.django``: servers in ``settings.MCP_LITE``, one lazily created Hub per
  process, a system check, ``manage.py mcp servers|tools|call``;
- ``mcp_lite.contrib.flask``: the ``McpLite`` extension (``init_app``), same settings in
  ``app.config["MCP_LITE"]``, same per-process Hub;
- ``examples/celery_app/``: Celery tasks on a per-worker-process Hub.

The shared parts live here: ``hub_from_settings`` / ``check_settings`` (the ``MCP_LITE``
mapping) and ``ProcessHub`` (one Hub per process, created on first use, never shared across
``fork()``). Importing this package imports no framework.
"""

from __future__ import annotations

from ._process import ProcessHub
from .settings import Problem, check_settings, hub_from_settings

__all__ = ["Problem", "ProcessHub", "check_settings", "hub_from_settings"]
