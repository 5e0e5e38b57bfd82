"""Fixtures of the transport tests."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    """A short-named temporary folder for Unix sockets (their paths are limited to ~100 bytes)."""
    with tempfile.TemporaryDirectory(prefix="mcpl-", dir="/tmp") as name:
        yield Path(name)
