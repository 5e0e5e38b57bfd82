"""Fixtures shared by the Hub tests: a fake home, project and enterprise path under tmp_path,
and servers in this process for tests whose subject is not a process: the demo server, the
tool pool, and any ``mcp_lite.Server`` served over HTTP on a thread (``served``).

Config tests never read the real ``~`` or ``/etc``: every path ``load_config`` looks at is
passed explicitly from ``hub_paths``.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
import mcp_lite.demo

PEERS = Path(__file__).resolve().parents[1] / "peers"


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


@pytest.fixture(scope="session")
def inprocess_pool() -> Callable[..., mcp_lite.Server]:
    """``inprocess_pool(count, long=False, resources=False)``: the tool pool of
    ``tests/peers/tool_pool_server.py`` built on ``mcp_lite.Server`` (``lite_pool_server.py``)."""
    spec = importlib.util.spec_from_file_location("lite_pool_server", PEERS / "lite_pool_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    build: Callable[..., mcp_lite.Server] = module.pool_server
    return build


@pytest.fixture
def served() -> Iterator[Callable[[mcp_lite.Server], dict[str, Any]]]:
    """``served(server)``: a config entry (``{"type": "http", "url": ...}``) reaching
    ``server`` over Streamable HTTP on a thread of this process, closed at teardown.

    For tests of the permission handler, rules and server policy: those trust an in-process
    (``sdk``) entry without asking, so the server must be remote to them, and no process is
    needed for that."""
    running: list[Any] = []

    def serve(server: mcp_lite.Server) -> dict[str, Any]:
        http = server.serve_http(port=0)
        running.append(http)
        return {"type": "http", "url": http.url}

    yield serve
    for http in running:
        http.close()
