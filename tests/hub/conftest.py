"""Fixtures shared by the Hub tests: a fake home, project and enterprise path under tmp_path,
and the demo server in-process (for tests whose subject is not a process).

Config tests never read the real ``~`` or ``/etc``: every path ``load_config`` looks at is
passed explicitly from ``hub_paths``.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
import mcp_lite.demo


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


@pytest.fixture
def inprocess_demo() -> Callable[[], mcp_lite.Server]:
    """``inprocess_demo()``: a fresh in-process copy of the demo server (the tools, resources
    and prompts of ``examples/demo_server.py``), for a Hub entry where no process is the
    subject of the test."""

    def make() -> mcp_lite.Server:
        spec = importlib.util.spec_from_file_location("mcp_lite.demo_copy", mcp_lite.demo.__file__)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        server: mcp_lite.Server = module.server
        return server

    return make
