"""Settings of the demo site: no database, no templates, views and MCP servers.

``MCP_LITE`` is read by ``mcp_lite.contrib.django`` (see ``mcp_lite.contrib.settings``); a
project's ``.mcp.json`` works too: ``MCP_LITE = {"mcp_json": BASE_DIR / ".mcp.json",
"trust_project": ["demo"]}`` (its servers run only once trusted).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "demo-only-not-secret")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "demo_site.urls"
INSTALLED_APPS: list[str] = ["mcp_lite.contrib.django"]
MIDDLEWARE: list[str] = []
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True

DEMO_SERVER = os.environ.get(
    "MCP_DEMO_SERVER", str(Path(__file__).resolve().parents[2] / "demo_server.py")
)
# Every process (gunicorn worker, Celery worker, manage.py) builds its own Hub from this on
# first use. The default permission is "deny": only what the allow list names can run.
MCP_LITE = {
    "servers": {"demo": {"command": sys.executable, "args": [DEMO_SERVER]}},
    "allow": ["mcp__demo__add", "mcp__demo__word_count"],
    "default_permission": "deny",
    "client_options": {"timeout": 30},
}
