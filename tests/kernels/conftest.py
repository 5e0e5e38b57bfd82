"""Fixtures for the kernel tests: every test runs against both implementations.

``speedups`` is the compiled module (``mcp_lite._speedups``) or the pure-Python twin
(``mcp_lite._speedups_py``); the compiled case is skipped, saying why, when the extension is
not built or ``MCP_LITE_NO_EXTENSIONS`` is set. Parity tests take ``compiled`` and ``pure``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from types import ModuleType

import pytest

NO_EXTENSIONS = os.environ.get("MCP_LITE_NO_EXTENSIONS", "") not in ("", "0")


def load_compiled() -> ModuleType:
    if NO_EXTENSIONS:
        pytest.skip("MCP_LITE_NO_EXTENSIONS is set: the compiled kernels are not tested here")
    try:
        return importlib.import_module("mcp_lite._speedups")
    except ImportError as exc:
        pytest.skip(f"compiled mcp_lite._speedups is not built ({exc}); run `make build-ext`")


def load_pure() -> ModuleType:
    return importlib.import_module("mcp_lite._speedups_py")


@pytest.fixture(scope="session", params=["compiled", "pure"])
def speedups(request: pytest.FixtureRequest) -> ModuleType:
    """The kernel module under test: compiled or pure Python."""
    return load_compiled() if request.param == "compiled" else load_pure()


@pytest.fixture(scope="session")
def compiled() -> ModuleType:
    return load_compiled()


@pytest.fixture(scope="session")
def pure() -> ModuleType:
    return load_pure()


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    """A pipe (read end non-blocking, as the stdio transport keeps it), closed afterwards."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass
