"""WSGI entry point::

    gunicorn --preload -w 3 --threads 4 -b 127.0.0.1:8000 --chdir examples/django_app \\
        demo_site.wsgi:application
"""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "demo_site.settings")
application = get_wsgi_application()

if os.environ.get("MCP_WARM_UP", "1") == "1":
    from mcp_lite.contrib.django import get_hub

    get_hub().tools()  # connect at start-up (the gunicorn master's own Hub with --preload)
