"""Fixtures shared by the Hub tests: a fake home, project and enterprise path under tmp_path.

Config tests never read the real ``~`` or ``/etc``: every path ``load_config`` looks at is
passed explicitly from ``hub_paths``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class HubPaths:
    """A home directory, a project directory and a (not yet existing) managed-mcp.json."""

    home: Path
    project: Path
    managed: Path

    def write(self, path: Path, data: Any) -> Path:
        """Write ``data`` as JSON (a ``str`` is written as is) and return ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
        return path


@pytest.fixture
def hub_paths(tmp_path: Path) -> HubPaths:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return HubPaths(home=home, project=project, managed=tmp_path / "etc" / "managed-mcp.json")
