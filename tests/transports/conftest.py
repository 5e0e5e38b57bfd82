"""Fixtures for the transport tests: the in-process fault HTTP server (127.0.0.1 only)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_PATH = Path(__file__).resolve().parent.parent / "peers" / "fault_http_server.py"


def _load() -> Any:
    name = "fault_http_server"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _PATH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
def fault_server() -> Iterator[Any]:
    """A running ``FaultHttpServer``: ``.url(path)``, ``.state`` (what it saw)."""
    server = _load().FaultHttpServer().start()
    yield server
    server.stop()
