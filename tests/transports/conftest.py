"""Fixtures of the transport tests."""

from __future__ import annotations

import gc
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    """A short-named temporary folder for Unix sockets (their paths are limited to ~100 bytes)."""
    with tempfile.TemporaryDirectory(prefix="mcpl-", dir="/tmp") as name:
        yield Path(name)


@pytest.fixture(autouse=True)
def _collect_garbage_after_each_test() -> Iterator[None]:
    """Collect garbage at teardown, so that a ResourceWarning (an unclosed pipe or socket,
    an error under ``filterwarnings = error``) is blamed on the test that leaked it."""
    yield
    gc.collect()
