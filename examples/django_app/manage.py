#!/usr/bin/env python
"""The demo site's manage.py: ``python manage.py check``, ``python manage.py mcp servers``,
``python manage.py mcp tools``, ``python manage.py mcp call mcp__demo__add '{"a": 1, "b": 2}'``."""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "demo_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
