"""The real third-party peers' tests: garbage collected after each test."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _collect_garbage_after_each_test() -> Iterator[None]:
    """Collect garbage at teardown, so that a ResourceWarning (an unclosed pipe or socket,
    an error under ``filterwarnings = error``) is blamed on the test that leaked it."""
    yield
    gc.collect()
